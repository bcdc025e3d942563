"""MLPerf Inference's LLM results (MLCommons, datacenter, closed division) next to the in-flight serving model.

MLPerf Inference runs a fixed model on a fixed dataset under LoadGen, MLCommons' load generator. In the Offline
scenario every sample is sent at once and the score is the throughput (output tokens per second of the whole
system); in the Server scenario requests arrive as a Poisson process and the score is the highest rate whose 99th
percentiles of time to first token (TTFT) and time per output token (TPOT) stay within the benchmark's limits
(MLCommons, "MLPerf Inference Rules", the datacenter table: Llama 2 70B and Mixtral 8x7B 2,000 ms / 200 ms,
Llama 3.1 8B 2,000 ms / 100 ms, Llama 3.1 405B 6,000 ms / 175 ms); Interactive is the Server scenario under tighter
limits (Llama 2 70B 450 ms / 40 ms, Llama 3.1 8B 500 ms / 30 ms, Llama 3.1 405B 4,500 ms / 80 ms). The
closed division fixes the model and the accuracy target; the submitter picks the engine, the parallel layout and
the precision, and says which in its configuration files.

Each result (mlcalc/data/mlperf_inference.json) is predicted with :func:`mlcalc.servemeasured.inflight`, the model
the TensorRT-LLM v0.17 and v1.0 in-flight rows are checked with: one replica of ``tp`` GPUs at the submission's
KV fraction, batch and token caps, times the replicas in the system. Offline is that replica at full load. Server
and Interactive are scored as LoadGen scores them (:func:`server_rate`): the submitter sets a Poisson rate
(``server_target_qps``, which each log's scheduled samples per second matches) and the run is valid only if LoadGen's
early stopping holds for TTFT and for TPOT, a test stricter than the 99th percentiles within the limits (at most
:func:`allowed_over` of the run's queries beyond each limit: 0.75 % of Nebius's 8,313, about 0.95 % of the
Llama 2 70B runs' 196,608-294,912). The model's figure is the largest rate per replica that holds, found by a
bisection over seeded runs of the book's continuous-batching simulator (:func:`mlcalc.serving.simulate_replica`) on the
same replica as a :class:`mlcalc.serving.StepModel` (:func:`step_model`), with prompts in LoadGen's equal-issue order
(shuffled whole passes of the dataset's measured lengths) and each output the run's mean; the throughput is that rate
times the mean output times the replicas. A submitter may run below the largest rate that holds; none of these
configurations says by how much. TPOT is LoadGen's:
a request's latency less its first token's, over its tokens less one (mlcommons/inference @ b66003e,
loadgen/logging.cc; the rules' footnote llm_ttft_tpot: "the average interval between all the tokens generated"),
which is the simulator's. For those rows the mean TPOT is a second case: the iteration at the number of requests the
run kept in flight (Little's law: completed samples per second x mean latency, both in the log).

What a submission's configuration sets beyond its caps is priced as its engine runs it, the same for every row
that sets it: an engine built with TensorRT-LLM's GEMM + all-reduce fusion (``gemm_allreduce_plugin``: Nebius's
Llama 3.1 405B) runs each tensor-parallel all-reduce inside the row-parallel product before it
(:func:`gemm_allreduce`, :func:`mlcalc.serving.gemm_allreduce_comm_s`), and a mixed-precision checkpoint
(ModelOpt's ``auto_quantize`` under an ``effective_bits`` constraint: ASUSTeK's Mixtral 8x7B) keeps a share of its
weights at 16 bits (:func:`wide_share`). The simulated replica's iteration is the in-flight model's at all its rows
(:func:`step_model` by rows: TensorRT-LLM runs an iteration's prompt chunks and decode tokens as one pass, so a chunk
added to a decode batch pays the tiles of every row; with the Interactive runs' 256-token budget, one past the
128-row tile step).

The datasets' input lengths, which MLCommons states nowhere but in its dataset files, are measured on those files:
openshift-psap/performance-dashboard (mlperf-data/summaries/) holds one row per sample of each MLPerf LLM dataset,
extracted from MLCommons' files, and mlcalc/data/mlperf_lengths.json keeps their counts, means and exact frequency
tables (scripts/mlperf_lengths.py writes it; :func:`lengths`). Every case runs the model at the dataset's mean input
(:func:`input_tokens`) and the run's own mean output (its log's tokens over samples).
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from itertools import accumulate
from importlib import resources
from types import MappingProxyType
from typing import Any, Callable, Mapping, NamedTuple

from mlcalc import _check, memory, serving, steptime
from mlcalc.accelerators import spec
from mlcalc import servemeasured as sm

SCENARIOS = ("Offline", "Server", "Interactive")
#: What a case checks: the system's output tokens per second, or (Server, Interactive) the mean time per output token.
QUANTITIES = ("throughput", "tpot")


@lru_cache(maxsize=None)
def data() -> Mapping[str, Any]:
    """The MLPerf results checked here, with the rules and dataset facts they are read with."""
    return MappingProxyType(json.loads(resources.files("mlcalc.data").joinpath("mlperf_inference.json").read_text()))


def results() -> tuple[Mapping[str, Any], ...]:
    """Every result row, in the data file's order."""
    return tuple(data()["results"])


@lru_cache(maxsize=None)
def lengths() -> Mapping[str, Any]:
    """The datasets' token lengths (mlcalc/data/mlperf_lengths.json): per benchmark the source CSV (repository @
    commit : path, and the MLCommons file it was extracted from), the sample count, and for the input and the output
    lengths their sum, mean, quantiles and exact frequency table."""
    return MappingProxyType(json.loads(resources.files("mlcalc.data").joinpath("mlperf_lengths.json").read_text()))


def mean_input(benchmark: str) -> float:
    """``benchmark``'s mean input length in tokens, computed from its frequency table (every sample's prompt).

    >>> round(mean_input("llama2-70b"), 2), round(mean_input("mixtral-8x7b"), 2)
    (222.33, 427.39)
    """
    ds = lengths()["datasets"]
    _check.choice("benchmark", benchmark, tuple(ds))
    counts = ds[benchmark]["input"]["counts"]
    return sum(length * n for length, n in counts) / sum(n for _, n in counts)


def input_tokens(benchmark: str) -> int:
    """The mean input a case runs the model at: :func:`mean_input`, rounded to whole tokens.

    >>> input_tokens("llama2-70b"), input_tokens("mixtral-8x7b")
    (222, 427)
    """
    return round(mean_input(benchmark))


def lengths_source(benchmark: str) -> str:
    """Where ``benchmark``'s lengths were read: repository @ commit : path of the CSV."""
    ds = lengths()["datasets"]
    _check.choice("benchmark", benchmark, tuple(ds))
    return f"{lengths()['repo']} @ {ds[benchmark]['commit'][:7]}: {ds[benchmark]['path']}"


def output_tokens(row: Mapping[str, Any]) -> int:
    """A result's mean output per sample: its tokens per second over its samples per second (both in its log)."""
    return max(1, round(float(row["tokens_per_s"]) / float(row["samples_per_s"])))


def replicas(row: Mapping[str, Any]) -> int:
    """Engine replicas in the system: GPUs over the tensor-parallel size."""
    gpus, tp = int(row["gpus"]), int(row["tp"])
    if gpus % tp:
        raise ValueError(f"tp={tp!r} is not allowed for {gpus} GPUs: replicas of {tp} GPUs must fill the system")
    return gpus // tp


def _caps(row: Mapping[str, Any], batch: int | None = None) -> tuple[int, int]:
    max_tokens = row.get("max_tokens") or sm.TRTLLM_MAX_TOKENS  # not stated: trtllm-bench's own ceiling
    return (int(batch if batch is not None else row["max_batch"]), int(max_tokens))


def _replica(row: Mapping[str, Any], prompt: int, output: int, batch: int | None = None) -> sm.Inflight:
    ds = data()["datasets"][row["benchmark"]]
    return sm.inflight(memory.model_preset(ds["model"]), row["chip"], int(row["tp"]), prompt, output,
                       row["precision"], float(row["kv_fraction"]), caps=_caps(row, batch),
                       gemm_allreduce=gemm_allreduce(row), wide_share=wide_share(row))


def gemm_allreduce(row: Mapping[str, Any]) -> bool:
    """Whether the submission built its engine with TensorRT-LLM's GEMM + all-reduce fusion (its configuration's
    ``trtllm_build_flags`` ``'gemm_allreduce_plugin'``; the row's ``gemm_allreduce``, false where its configuration
    does not set it). An engine built without the flag has none: the plugin configuration's default is None
    (tensorrt_llm/plugin/plugin.py, ``gemm_allreduce_plugin``: "The GEMM + AllReduce kernel fusion plugin"), as
    trtllm-bench builds the engines of TensorRT-LLM's published tables (serve-published)."""
    return bool(row.get("gemm_allreduce", False))


def wide_share(row: Mapping[str, Any]) -> float:
    """The share of the layers' quantized weights (by element) the submission's checkpoint keeps at 16 bits: 0
    unless its configuration gives ModelOpt's ``auto_quantize`` an ``effective_bits`` constraint (the row's
    ``effective_bits``). ModelOpt counts a format's bits as 16 x its compression (NVIDIA/TensorRT-Model-Optimizer @
    17e0c3f, modelopt/torch/quantization/algorithms.py, ``estimate_quant_compression``: FP8's (4, 3) bits are
    (4 + 3 + 1) / 16 = 0.5; no quantization, 1.0) and a checkpoint's effective bits as 16 x the compression of its
    quantizable weights weighted by their elements (``_print_recipe_summary``), so that at ``effective_bits`` ``e``
    with formats FP8 or none a share ``(e - 8) / (16 - 8)`` stays 16-bit: Mixtral 8x7B at 8.75, 9.375 %.

    >>> wide_share({"precision": "fp8", "effective_bits": 8.75})
    0.09375
    """
    bits = row.get("effective_bits")
    if bits is None:
        return 0.0
    narrow = 8.0 * memory.dtype_bytes(row["precision"])
    e = _check.positive("effective_bits", bits)
    if not narrow <= e <= 16.0:
        raise ValueError(f"effective_bits={bits!r} is not allowed for {row['precision']} weights: from {narrow:g} "
                         "(every layer quantized) to 16 (none)")
    return (e - narrow) / (16.0 - narrow)


def tpot_limit_s(row: Mapping[str, Any]) -> float:
    """The TPOT limit of a Server or Interactive run (the rules' datacenter table), seconds."""
    limits = data()["limits"][row["benchmark"]]
    _check.choice("scenario", row["scenario"], tuple(limits))
    return float(limits[row["scenario"]]["tpot_ms"]) / 1e3


def replica_at_load(row: Mapping[str, Any], prompt: int | None = None) -> sm.Inflight:
    """One replica as the scenario loads it. Offline: full load (the KV room's requests within the submission's
    caps). Server, Interactive: the largest batch whose iteration is within the TPOT limit (full load when it
    already is)."""
    p = input_tokens(row["benchmark"]) if prompt is None else _check.positive_int("prompt", prompt)
    o = output_tokens(row)
    _check.choice("scenario", row["scenario"], SCENARIOS)
    full = _replica(row, p, o)
    if row["scenario"] == "Offline" or full.iteration_s <= tpot_limit_s(row):
        return full
    lo, hi = 1, full.batch  # the iteration grows with the batch: the largest batch within the limit
    if _replica(row, p, o, 1).iteration_s > tpot_limit_s(row):
        raise ValueError(f"prompt={p!r} is not allowed for {row['system']}: one request's iteration already exceeds "
                         f"the {tpot_limit_s(row) * 1e3:.0f} ms TPOT limit")
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _replica(row, p, o, mid).iteration_s <= tpot_limit_s(row):
            lo = mid
        else:
            hi = mid - 1
    return _replica(row, p, o, lo)


# ------------------------------------------------------------------ the Server scenario as LoadGen runs it

#: The bounds of :func:`server_rate`'s search, fixed so that it is quick and gives the same answer every time. Each
#: simulation draws ten times the requests the replica holds at full load (ten request lifetimes at that rate, so
#: that the simulator's first 10 % left out of the percentiles is the ramp from the empty start) and enough that
#: :data:`SEARCH_TAIL` measured requests are expected beyond a limit at the share LoadGen allows
#: (:func:`allowed_over`): were the requests independent, the count beyond would be known to ``1 / sqrt(SEARCH_TAIL)``
#: (18 %) of itself; bursts of Poisson arrivals make them not, and the rate found moves by up to 10 % between seeds
#: 0-3 on these rows (the Llama 3.1 405B Server row: 18.7 % with 2,000 requests drawn with replacement). At least
#: :data:`SEARCH_MIN_REQUESTS`, at most the queries the run itself issued and
#: :data:`mlcalc.serving.SIM_MAX_REQUESTS_CHECK`. The search (:func:`bisect_rate`) tries the full-load rate, then
#: :data:`SEARCH_FIRST` of it (most runs pass just below full load), then halves the bracket until it is within
#: :data:`SEARCH_TOL` of the rate that passes (at most :data:`SEARCH_STEPS` halvings); a simulation that already has
#: more requests beyond a limit than LoadGen allows stops there (``give_up_over``). One seed.
SEARCH_LIFETIMES = 10
SEARCH_TAIL = 30
SEARCH_MIN_REQUESTS = 2000
SEARCH_STEPS = 8
SEARCH_TOL = 0.02
SEARCH_FIRST = 15 / 16
SEARCH_SEED = 0
#: LoadGen's early stopping in the Server scenario (mlcommons/inference @ b66003e, loadgen/results.cc
#: PerformanceSummary::EarlyStopping and loadgen/early_stopping.cc): the percentile (mlperf.conf
#: ``*.Server.target_latency_percentile = 99``) and the confidence (``double confidence = 0.99``, tolerance 0).
EARLY_STOP_PERCENTILE = 0.99
EARLY_STOP_CONFIDENCE = 0.99


@lru_cache(maxsize=None)
def allowed_over(queries: int, percentile: float = EARLY_STOP_PERCENTILE,
                 confidence: float = EARLY_STOP_CONFIDENCE) -> int:
    """The most of a Server run's ``queries`` that may exceed a latency limit with the run still valid: LoadGen's
    early stopping (loadgen/results.cc, ``EarlyStopping``, applied to TTFT and to TPOT each) counts the ``t``
    requests over the limit and passes the run only if ``queries >= h + t``, ``h`` the fewest requests within it
    for which ``t`` or fewer over would happen with probability at most ``1 - confidence`` were the true share over
    exactly ``1 - percentile`` (early_stopping.cc, ``find_min_passing`` over the binomial's ``odds``). Since that
    probability falls as the requests grow, the condition is ``P(Binomial(queries, 1 - percentile) <= t) <= 1 -
    confidence``; this returns the largest such ``t`` (-1 when even none over is too few requests to be sure).

    >>> allowed_over(8313), allowed_over(245_760)
    (62, 2343)
    """
    n = _check.positive_int("queries", queries)
    q = 1.0 - _check.fraction("percentile", percentile)
    c = _check.fraction("confidence", confidence)
    if not 0.0 < q < 1.0 or not 0.0 < c < 1.0:
        raise ValueError(f"percentile={percentile!r}, confidence={confidence!r} are not allowed: each strictly "
                         "between 0 and 1")
    head = math.lgamma(n + 1)
    cdf, t = 0.0, -1
    for k in range(n + 1):
        cdf += math.exp(head - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * math.log(q)
                        + (n - k) * math.log1p(-q))
        if cdf > 1.0 - c:
            break
        t = k
    return t


def run_queries(row: Mapping[str, Any]) -> int:
    """The queries a Server or Interactive run issued (its detail log's result_query_count)."""
    _check.choice("scenario", row["scenario"], SCENARIOS[1:])
    return int(row["queries"])


def allowed_share(row: Mapping[str, Any]) -> float:
    """The share of requests a run of :func:`run_queries` may have beyond a limit (:func:`allowed_over`)."""
    n = run_queries(row)
    return max(0, allowed_over(n)) / n


def _model(row: Mapping[str, Any]) -> memory.ModelConfig:
    return memory.model_preset(data()["datasets"][row["benchmark"]]["model"])


def token_work_s(row: Mapping[str, Any], tokens: float, sampled: float) -> float:
    """Seconds of one in-flight iteration of ``tokens`` tokens, ``sampled`` of which compute logits, without its
    attention: :func:`mlcalc.servemeasured.inflight`'s matmuls (the weights those tokens touch, their inputs and
    outputs, their FLOPs), tensor-parallel all-reduces (:func:`mlcalc.servemeasured.inflight_comm_s`, fused into
    the row-parallel products where the submission built its engine so: :func:`gemm_allreduce`), MoE routing
    passes and norms, the same arithmetic term by term (a test holds the two equal on every row)."""
    model, chip, tp, dtype = _model(row), row["chip"], int(row["tp"]), row["precision"]
    t = _check.non_negative("tokens", tokens)
    s = _check.non_negative("sampled", sampled)
    wb = memory.dtype_bytes(dtype)
    bw = serving.read_bandwidth(chip)
    whole = max(1, round(t))
    gemm = sm.inflight_gemm_s(model, chip, tp, t, s, dtype, wide_share(row))
    comm = sm.inflight_comm_s(model, chip, whole, tp, dtype, gemm_allreduce(row))
    return (gemm + comm + t * sm.moe_routing_bytes_per_token(model, wb) / bw
            + t * sm.inflight_elementwise_bytes_per_token(model, tp, dtype) / bw)


def sim_batch(row: Mapping[str, Any]) -> tuple[int, int]:
    """``(max_batch, chunk_tokens)`` the simulated replica runs with: the submission's token cap is the budget of
    one iteration, prompt chunks and decode tokens together (TensorRT-LLM's ``max_num_tokens`` with chunked
    context, which a cap shorter than the dataset's longest prompts requires), and every running request takes a
    token of it, so the batch is at most the cap."""
    mb, mt = _caps(row)
    return min(mb, mt), mt


#: The row counts :func:`rows_table` prices an iteration at: every count up to :data:`ROWS_FINE`, then every
#: ``ROWS_FINE`` rows and the row after each (the tile rule's steps fall just past a multiple of a tile's rows, 16 to
#: 128, and every tile height divides 64 rows or is a multiple of it), and any interval whose midpoint lies off the
#: straight line between its ends by more than :data:`ROWS_TOL` halved until none does (an MoE model's experts each
#: take a share of the rows, so their tiles step where those shares cross a multiple of a tile: Mixtral 8x7B's
#: iteration, FP8 on one H200, goes from 16.7 to 24.5 ms between 513 and 515 rows).
ROWS_FINE = 64
ROWS_TOL = 1e-3


@lru_cache(maxsize=None)
def rows_table(row_key: tuple[Any, ...]) -> tuple[tuple[int, ...], tuple[float, ...], tuple[float, ...]]:
    """``(rows, layers_s, head_s)``: at each row count from 1 to the chunk budget (:func:`sim_batch`) that
    :data:`ROWS_FINE` and :data:`ROWS_TOL` pick, an iteration's work without the output projection
    (:func:`token_work_s` of that many tokens, none sampled) and the output projection's at that many rows that
    compute logits (:func:`token_work_s` with every row sampled, less the first); each linear between its points
    within :data:`ROWS_TOL` of the function at every midpoint tried. ``row_key``: the row's items, sorted (a cache
    key)."""
    row = dict(row_key)
    _, ck = sim_batch(row)
    memo: dict[int, tuple[float, float]] = {}

    def work(n: int) -> tuple[float, float]:
        if n not in memo:
            bare = token_work_s(row, n, 0)
            memo[n] = (bare, token_work_s(row, n, n) - bare)
        return memo[n]

    def off(a: int, b: int, mid: int, i: int) -> bool:
        line = work(a)[i] + (work(b)[i] - work(a)[i]) * (mid - a) / (b - a)
        return abs(line - work(mid)[i]) > ROWS_TOL * work(mid)[i]

    pts = {ck} | set(range(1, min(ck, ROWS_FINE) + 1))
    pts |= {ROWS_FINE * j + e for j in range(1, ck // ROWS_FINE + 1) for e in (0, 1) if ROWS_FINE * j + e <= ck}
    xs = sorted(pts)
    todo = list(zip(xs, xs[1:]))
    while todo:
        a, b = todo.pop()
        if b - a < 2:
            continue
        mid = (a + b) // 2
        if off(a, b, mid, 0) or off(a, b, mid, 1):
            pts.add(mid)
            todo += [(a, mid), (mid, b)]
    xs = sorted(pts)
    return tuple(xs), tuple(work(x)[0] for x in xs), tuple(work(x)[1] for x in xs)


def _row_key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(sorted((k, v) for k, v in row.items() if not isinstance(v, (dict, list))))


def step_model(row: Mapping[str, Any], prompt: int | None = None) -> serving.StepModel:
    """The replica of :func:`replica_at_load` (same engine, KV room and caps) as the simulator's
    :class:`mlcalc.serving.StepModel`, from :func:`token_work_s` and the attention terms of
    :func:`mlcalc.servemeasured.inflight`, by rows (``by_rows``): the work of an iteration of ``n`` rows through the
    layers, decode and prompt tokens alike, and the output projection's at the rows that compute logits, at the row
    counts :func:`rows_table` picks up to the chunk budget, so that an iteration that adds a prompt chunk to its
    decode batch pays the tiles of all its rows (TensorRT-LLM's in-flight batching runs the context and the
    generation requests of an iteration as one pass over their tokens); each cached token read once a step; each
    query-key pair of the prompts' causal attention. ``prefill_per_token_s`` (the simulator does not read it by
    rows): the secant of :func:`token_work_s` from the full-load batch alone to that batch with its prompt tokens,
    per prompt token. Held to :func:`mlcalc.servemeasured.inflight` at full load by a test: the same iteration
    within 0.3 %."""
    p = input_tokens(row["benchmark"]) if prompt is None else _check.positive_int("prompt", prompt)
    o = output_tokens(row)
    model, chip, tp, dtype = _model(row), row["chip"], int(row["tp"]), row["precision"]
    full = _replica(row, p, o)
    batches, base, head = rows_table(_row_key(row))
    bw, rate = serving.read_bandwidth(chip), serving.matmul_rate(chip, dtype)
    ctx = p + o // 2
    kv = serving.sequence_kv_bytes(model, ctx, memory.dtype_bytes(dtype))
    per_cached = kv / ctx / serving.kv_split(model, tp) / bw
    b, pre = full.batch, full.prefill_tokens
    per_prompt = (token_work_s(row, b + pre, b) - token_work_s(row, b, b)) / pre
    lay = memory.kv_layout(model)
    pair = 2.0 * model.n_heads * (model.qk_head_dim + model.v_dim) * lay.global_layers / (tp * rate)
    ratio = memory.kv_cache_bytes(model, ctx) / (ctx * memory.model_kv_bytes_per_token(model))
    return serving.StepModel(batches, base, per_cached, per_prompt, pair, token_work_s(row, 0, 0), full.kv_tokens,
                             ratio, dtype in serving.SERIAL_MATMUL_DTYPES, by_rows=True, head_s=head)


@lru_cache(maxsize=None)
def _draw(benchmark: str, n: int, seed: int) -> tuple[tuple[float, ...], tuple[int, ...]]:
    """``n`` unit-rate exponential gaps and ``n`` prompts in LoadGen's equal-issue order, seeded: whole shuffled
    passes of the dataset's measured input lengths, every sample once a pass (mlcommons/inference @ b66003e,
    loadgen/loadgen.cc: with ``sample_concatenate_permutation``, which mlperf.conf sets for every LLM benchmark, a
    Server run's queries are padded to whole passes of the dataset and drawn by ``sample_distribution_equal_issue``),
    the last pass cut at ``n``; every rate of one search scales the same gaps, so that two rates differ only in the
    rate."""
    import random
    ds = lengths()["datasets"]
    _check.choice("benchmark", benchmark, tuple(ds))
    rng = random.Random(seed)
    every = [size for size, count in ds[benchmark]["input"]["counts"] for _ in range(count)]
    prompts: list[int] = []
    while len(prompts) < n:
        one = every[:]
        rng.shuffle(one)
        prompts.extend(one)
    gaps = tuple(rng.expovariate(1.0) for _ in range(n))
    return gaps, tuple(prompts[:n])


def search_requests(row: Mapping[str, Any]) -> int:
    """Requests each simulation of ``row``'s search draws: :data:`SEARCH_LIFETIMES` times the batch the replica
    holds at full load (Little's law: the full-load rate times a request's lifetime at full load) and
    ``SEARCH_TAIL / (allowed share x measured share)`` (:data:`SEARCH_TAIL` requests expected beyond a limit at
    the share LoadGen allows, :func:`allowed_share`; the simulator measures all but its first
    :data:`mlcalc.serving.SIM_WARMUP`), whichever is more, at least :data:`SEARCH_MIN_REQUESTS`, at most the queries
    the run issued (:func:`run_queries`) and :data:`mlcalc.serving.SIM_MAX_REQUESTS_CHECK`."""
    full = replica_at_load(dict(row, scenario="Offline")).batch
    tail = math.ceil(SEARCH_TAIL / (allowed_share(row) * (1.0 - serving.SIM_WARMUP)))
    want = max(SEARCH_MIN_REQUESTS, SEARCH_LIFETIMES * full, tail)
    return min(serving.SIM_MAX_REQUESTS_CHECK, run_queries(row), want)


def poisson_requests(row: Mapping[str, Any], rate_per_s: float, n: int | None = None,
                     seed: int = SEARCH_SEED) -> list[tuple[float, int, int]]:
    """``n`` requests (arrival s, prompt, output; :func:`search_requests` when ``None``) at ``rate_per_s``
    Poisson arrivals to one replica: prompts from the dataset's measured input lengths, each output the row's
    mean output (:func:`output_tokens`, as every case takes it)."""
    r = _check.positive("rate_per_s", rate_per_s)
    n = search_requests(row) if n is None else _check.positive_int("n", n)
    if n > serving.SIM_MAX_REQUESTS_CHECK:
        raise ValueError(f"n={n!r} is not allowed: at most {serving.SIM_MAX_REQUESTS_CHECK:,} requests a simulation")
    gaps, prompts = _draw(row["benchmark"], n, int(seed))
    o = output_tokens(row)
    return [(t, p, o) for t, p in zip(accumulate(g / r for g in gaps), prompts)]


def limits_s(row: Mapping[str, Any]) -> tuple[float, float]:
    """``(TTFT, TPOT)`` 99th-percentile limits of a Server or Interactive run (the rules' datacenter table), s."""
    lim = data()["limits"][row["benchmark"]]
    _check.choice("scenario", row["scenario"], tuple(lim))
    return float(lim[row["scenario"]]["ttft_ms"]) / 1e3, float(lim[row["scenario"]]["tpot_ms"]) / 1e3


def simulate(row: Mapping[str, Any], rate_per_s: float, n: int | None = None,
             seed: int = SEARCH_SEED) -> serving.LoadResult:
    """One replica of the row's system at ``rate_per_s`` (:func:`mlcalc.serving.simulate_replica` over
    :func:`step_model`, :func:`sim_batch`'s batch and chunk budget and :func:`poisson_requests`)."""
    return _simulate(row, rate_per_s, n, seed, step_model(row))


def _simulate(row: Mapping[str, Any], rate_per_s: float, n: int | None, seed: int,
              st: serving.StepModel, give_up: int = 0) -> serving.LoadResult:
    mb, ck = sim_batch(row)
    reqs = poisson_requests(row, rate_per_s, n, seed)
    ttft, tpot = limits_s(row)
    return serving.simulate_replica(st, reqs, mb, ck, ttft, tpot,
                                    max_requests=max(len(reqs), serving.SIM_MAX_REQUESTS), give_up_over=give_up)


def passes(row: Mapping[str, Any], got: serving.LoadResult) -> bool:
    """Whether a simulated run is valid as LoadGen judges one: the shares of its measured requests beyond the TTFT
    limit and beyond the TPOT limit each at most what LoadGen's early stopping allows a run of the queries this one
    issued (:func:`allowed_share`: a run is valid only if early stopping is met, and its bound is the stricter of
    the two tests, the other being the 99th percentile within the limit), and its queue not growing (the real run
    lasts far beyond the simulated requests: a rate whose queue grows in the simulation would break the TTFT limit
    there)."""
    share = allowed_share(row) * got.measured
    return got.ttft_over <= share and got.tpot_over <= share and not got.queue_growing


def bisect_rate(ok: Callable[[float], bool], hi: float, steps: int = SEARCH_STEPS,
                tol: float = 0.0, first: float = 0.0) -> tuple[float, float]:
    """``(lo, above)``: the largest rate of ``(0, hi]`` that ``ok`` accepts, by ``steps`` halvings of the bracket
    at most, fewer once a passing ``lo`` is within ``tol`` of ``above`` (``above - lo <= tol x lo``); ``above`` is
    the nearest rate tried above it that ``ok`` refused (``hi`` itself when ``ok(hi)``: then ``lo == above ==
    hi``). ``lo`` is 0 when no rate tried passes. ``first`` (0: none): a share of ``hi`` tried before the
    halvings, which then halve ``(first hi, hi]`` when it passes and ``(0, first hi]`` when it does not."""
    h = _check.positive("hi", hi)
    k = _check.positive_int("steps", steps)
    rel = _check.non_negative("tol", tol)
    f = _check.non_negative("first", first)
    if f >= 1.0:
        raise ValueError(f"first={first!r} is not allowed: a share of hi below 1 (0: none)")
    if k > 40:
        raise ValueError(f"steps={steps!r} is not allowed: at most 40 halvings")
    if ok(h):
        return h, h
    lo = 0.0
    if 0.0 < f < 1.0:
        if ok(f * h):
            lo = f * h
        else:
            h = f * h
    for _ in range(k):
        if lo > 0.0 and h - lo <= rel * lo:
            break
        mid = (lo + h) / 2.0
        if ok(mid):
            lo = mid
        else:
            h = mid
    return lo, h


class ServerRate(NamedTuple):
    """The largest Poisson rate one replica holds within the scenario's limits, from the simulation."""

    rate_per_s: float  # requests per second a replica is offered at the rate found
    above_per_s: float  # the nearest rate tried above it (refused); equal to rate_per_s when capacity binds
    capacity_per_s: float  # the bracket's top: the replica's requests per second at full load (Offline's model)
    at: serving.LoadResult  # the simulation at the rate found
    above: serving.LoadResult  # the simulation at above_per_s
    binds: str  # what stops the rate: "TTFT", "TPOT", "queue" (grows) or "capacity"
    requests: int
    steps: int
    seed: int


def _binds(row: Mapping[str, Any], got: serving.LoadResult) -> str:
    share = allowed_share(row) * got.measured
    return ("TTFT" if got.ttft_over > share else "TPOT" if got.tpot_over > share else
            "queue" if got.queue_growing else "")


def server_rate(row: Mapping[str, Any], n: int | None = None, steps: int = SEARCH_STEPS,
                seed: int = SEARCH_SEED) -> ServerRate:
    """The Server (or Interactive) scenario as LoadGen defines it: the largest Poisson rate per replica at which
    the simulated 99th percentiles of TTFT and TPOT stay within the limits (:func:`passes`), searched by
    :func:`bisect_rate` between 0 and the replica's full-load rate (:func:`replica_at_load` of the same row as
    Offline: a rate above what the replica serves at full load cannot be held for LoadGen's 40 minutes)."""
    _check.choice("scenario", row["scenario"], SCENARIOS[1:])
    n = search_requests(row) if n is None else n
    # everything the search reads: two systems alike in these (Cisco's and Dell's Interactive runs) share one
    key = (tuple(row.get(k) for k in _SEARCH_KEYS), output_tokens(row), n, steps, seed)
    if key not in _SEARCHES:
        cap = replica_at_load(dict(row, scenario="Offline")).tokens_per_s / output_tokens(row)
        runs: dict[float, serving.LoadResult] = {}
        st = step_model(row)
        give_up = math.floor(allowed_share(row) * (n - int(n * serving.SIM_WARMUP)))

        def ok(r: float) -> bool:
            runs[r] = _simulate(row, r, n, seed, st, give_up)
            return passes(row, runs[r])

        lo, above = bisect_rate(ok, cap, steps, SEARCH_TOL, SEARCH_FIRST)
        if lo <= 0:
            raise ValueError(f"row={row['system']!r} is not allowed: no rate down to {cap / 2 ** steps:.3g}/s keeps "
                             "the limits")
        _SEARCHES[key] = ServerRate(lo, above, cap, runs[lo], runs[above],
                                    "capacity" if lo == above else _binds(row, runs[above]), n, steps, seed)
    return _SEARCHES[key]


_SEARCHES: dict[tuple[Any, ...], ServerRate] = {}
_SEARCH_KEYS = ("benchmark", "scenario", "chip", "tp", "precision", "kv_fraction", "max_batch", "max_tokens",
                "gemm_allreduce", "effective_bits")


def predicted_tokens_per_s(row: Mapping[str, Any], prompt: int | None = None) -> float:
    """The system's output tokens per second. Offline: one replica at full load (at ``prompt`` tokens in, the
    dataset's mean when ``None``) times the replicas. Server, Interactive: the largest Poisson rate a replica holds
    within the scenario's 99th-percentile limits (:func:`server_rate`, every prompt drawn from the dataset's
    measured lengths: ``prompt`` is refused) times the mean output per request times the replicas."""
    if row["scenario"] == "Offline":
        return replica_at_load(row, prompt).tokens_per_s * replicas(row)
    if prompt is not None:
        raise ValueError(f"prompt={prompt!r} is not allowed for a {row['scenario']} run: its simulation draws every "
                         "prompt from the dataset's measured lengths")
    return server_rate(row).rate_per_s * output_tokens(row) * replicas(row)


def in_flight(row: Mapping[str, Any]) -> int:
    """Requests one replica held on average in a Server or Interactive run (Little's law on its log: completed
    samples per second x mean latency, over the replicas)."""
    if row["scenario"] == "Offline":
        raise ValueError(f"scenario={row['scenario']!r} is not allowed: an Offline log's latencies are of one query "
                         "holding every sample, not of requests in flight")
    return max(1, round(float(row["samples_per_s"]) * float(row["latency_mean_ms"]) / 1e3 / replicas(row)))


def predicted_tpot_s(row: Mapping[str, Any], prompt: int | None = None) -> float:
    """A Server or Interactive run's mean time per output token: one replica's iteration at the requests it held (:func:`in_flight`),
    each iteration also carrying the prompts of the requests that replace those that finish."""
    p = input_tokens(row["benchmark"]) if prompt is None else _check.positive_int("prompt", prompt)
    return _replica(row, p, output_tokens(row), in_flight(row)).iteration_s


def _predict(row: Mapping[str, Any], quantity: str, prompt: int) -> float:
    if quantity == "throughput":
        return predicted_tokens_per_s(row, prompt if row["scenario"] == "Offline" else None)
    return predicted_tpot_s(row, prompt)


def _observed(row: Mapping[str, Any], quantity: str) -> float:
    return float(row["tokens_per_s"]) if quantity == "throughput" else float(row["tpot_mean_ms"]) / 1e3


class MlperfCheck(NamedTuple):
    """One MLPerf figure next to the model's."""

    where: str  # repository @ commit : path of the LoadGen summary
    round: str
    submitter: str
    system: str
    chip: str
    gpus: int
    tp: int
    model: str
    benchmark: str
    scenario: str
    quantity: str  # "throughput" (output tokens/s of the system) or "tpot" (mean time per output token, s)
    precision: str
    input: int  # the dataset's mean input (input_tokens)
    output: int  # the row's mean output per sample
    batch: int  # requests a replica runs in the modelled iteration
    published: float
    predicted: float
    error: float  # predicted / published - 1
    cause: str
    note: str


#: The tolerance the cases are judged by (the serving families' published-result target).
TARGET = 0.25


def _modelled(row: Mapping[str, Any], quantity: str) -> sm.Inflight:
    """The replica iteration a case's prediction is: at the scenario's load (throughput) or at the requests the run
    held (TPOT)."""
    if quantity == "throughput":
        return replica_at_load(row)
    return _replica(row, input_tokens(row["benchmark"]), output_tokens(row), in_flight(row))


def leftover(row: Mapping[str, Any], quantity: str) -> tuple[float, float]:
    """``(left, modelled)``: seconds per token of the modelled iteration and per layer that the published figure
    leaves beyond the model (negative where the model is the slower), and the modelled iteration's own seconds per
    token and layer. Throughput: :func:`mlcalc.servemeasured.inflight_leftover` at one replica's share of the
    published figure; TPOT: the published mean TPOT less the modelled iteration."""
    _check.choice("quantity", quantity, QUANTITIES)
    got = _modelled(row, quantity)
    model = memory.model_preset(data()["datasets"][row["benchmark"]]["model"])
    per = (got.batch + got.prefill_tokens) * model.n_layers
    if quantity == "throughput":
        left = sm.inflight_leftover(model, got, float(row["tokens_per_s"]) / replicas(row))
    else:
        left = (float(row["tpot_mean_ms"]) / 1e3 - got.iteration_s) / per
    return left, got.iteration_s / per


def _twin(row: Mapping[str, Any], **differ: str) -> Mapping[str, Any] | None:
    """The result of the same submitter, system and round that differs from ``row`` only in the keys given."""
    keys = ("round", "submitter", "system", "benchmark", "scenario")
    want = {k: differ.get(k, row[k]) for k in keys}
    return next((r for r in results() if all(r[k] == want[k] for k in keys)), None)


def _search_note(row: Mapping[str, Any]) -> str:
    """What the Server search ran and found, for a case's note."""
    got, (ttft, tpot) = server_rate(row), limits_s(row)
    at = got.at
    allowed = math.floor(allowed_share(row) * got.at.measured)
    above = ("the replica's full-load rate passes, so it is the answer" if got.binds == "capacity" else
             f"at {got.above_per_s:.4g}/s, the next rate tried above, "
             + {"TTFT": f"more than {allowed:,} measured requests exceed the TTFT limit",
                "TPOT": f"more than {allowed:,} measured requests exceed the TPOT limit",
                "queue": "the queue grows"}[got.binds])
    return (f"the Server search (mlcalc.serving.simulate_replica over the replica's step model; batch at most "
            f"{sim_batch(row)[0]:,}, {sim_batch(row)[1]:,} tokens an iteration with chunked prompts): "
            f"{got.requests:,} Poisson requests (seed {got.seed}) with prompts in LoadGen's equal-issue order "
            f"(shuffled passes of the dataset's measured lengths), from the full-load rate "
            f"{got.capacity_per_s:.4g}/s a replica down to within {SEARCH_TOL:.0%}; valid as LoadGen's early "
            f"stopping judges a run of the {run_queries(row):,} queries this one issued: at most "
            f"{allowed_share(row):.2%} of requests beyond TTFT {ttft * 1e3:,.0f} ms, and as many beyond TPOT "
            f"{tpot * 1e3:.0f} ms ({allowed:,} of the {got.at.measured:,} measured); the largest rate that holds "
            f"is {got.rate_per_s:.4g}/s ({got.rate_per_s / got.capacity_per_s:.1%} of full load; {above}); at it the "
            f"replica runs {at.mean_batch:,.0f} requests on average, p99 TTFT {at.ttft_p99_s:.2f} s, p99 TPOT "
            f"{at.tpot_p99_s * 1e3:.0f} ms, mean TTFT {at.ttft_mean_s * 1e3:,.0f} ms and TPOT "
            f"{at.tpot_mean_s * 1e3:.0f} ms")


def _check_row(row: Mapping[str, Any], quantity: str) -> MlperfCheck:
    bench = row["benchmark"]
    p, o = input_tokens(bench), output_tokens(row)
    got = _modelled(row, quantity)
    pred = _predict(row, quantity, p)
    obs = _observed(row, quantity)
    err = pred / obs - 1.0
    load = (f"{replicas(row)} replica{'s' if replicas(row) > 1 else ''} of TP {row['tp']}, {got.batch:,} requests a "
            f"replica, iteration {got.iteration_s * 1e3:.0f} ms")
    if quantity == "tpot":
        held = in_flight(row)
        load += (f" (the {held:,} a replica held: Little's law on the log)" if held == got.batch else
                 f" (the run held {held:,} a replica by Little's law on the log; at these lengths the KV room "
                 f"and the submission's caps hold {got.batch:,})")
    elif row["scenario"] != "Offline":
        load = f"{replicas(row)} replica{'s' if replicas(row) > 1 else ''} of TP {row['tp']}; " + _search_note(row)
    batch = got.batch
    if quantity == "throughput" and row["scenario"] != "Offline":
        batch = round(server_rate(row).at.mean_batch)
    note = (f"mean input {p} tokens, the dataset's measured mean ({mean_input(bench):.2f} over "
            f"{lengths()['datasets'][bench]['samples']:,} samples; {lengths_source(bench)}), mean output {o} "
            f"(the log's tokens over samples); {load}")
    if gemm_allreduce(row):
        note += ("; the engine fuses each tensor-parallel all-reduce into the row-parallel product before it "
                 "(its build flag gemm_allreduce_plugin; mlcalc.serving.gemm_allreduce_comm_s)")
    if wide_share(row):
        note += (f"; its checkpoint keeps {wide_share(row):.2%} of the layers' quantized weights at 16 bits "
                 f"(effective_bits {float(row['effective_bits']):g}; mlperf.wide_share), priced as that share of "
                 "every layer's matmuls in bf16")
    if "tpot_mean_ms" in row and quantity == "throughput":
        note += (f"; the run's mean TPOT {float(row['tpot_mean_ms']):.0f} ms (99th percentile "
                 f"{float(row['tpot_p99_ms']):.0f}), TTFT {float(row['ttft_mean_ms']):.0f} ms "
                 f"({float(row['ttft_p99_ms']):.0f})")
    cause = _miss_cause(row, quantity) if abs(err) > TARGET else ""
    return MlperfCheck(f"{row['repo']} @ {row['commit'][:7]}: {row['path']}", row["round"], row["submitter"],
                       row["system"], row["chip"], int(row["gpus"]), int(row["tp"]),
                       data()["datasets"][bench]["model"], bench, row["scenario"], quantity, row["precision"], p, o,
                       batch, obs, pred, err, cause, note)


def _err(row: Mapping[str, Any], quantity: str) -> float:
    return _predict(row, quantity, input_tokens(row["benchmark"])) / _observed(row, quantity) - 1.0


def _miss_cause(row: Mapping[str, Any], quantity: str) -> str:
    """A miss's cause, from the numbers: none of these sources states one (a LoadGen log gives the figure, not its
    parts)."""
    head = "no cause stated by the source (the LoadGen log gives the figure, not its parts); ours: "
    model = memory.model_preset(data()["datasets"][row["benchmark"]]["model"])
    left, mod = leftover(row, quantity)
    offline = _twin(row, scenario="Offline") if row["scenario"] != "Offline" else None
    if model.is_moe:
        dense = _twin(row, benchmark="llama2-70b")
        text = head + (f"not found. The published figure leaves {left * 1e9:.0f} ns per token of the iteration and "
                       f"per layer beyond the modelled iteration ({mod * 1e9:.0f} ns per token and layer modelled, "
                       f"{model.n_layers} layers)")
        if dense is not None:
            d_left, d_mod = leftover(dense, quantity)
            text += (f"; the same system's Llama 2 70B {row['scenario']} run, same engine and round, leaves "
                     f"{d_left * 1e9:.0f} ns against {d_mod * 1e9:.0f} modelled ({left / d_left:.1f}x the "
                     f"leftover): the excess is in what Mixtral runs and Llama 2 does not (the experts and their "
                     f"routing) or in a narrower model's per-token costs (hidden {model.hidden:,} against "
                     f"{memory.model_preset(data()['datasets']['llama2-70b']['model']).hidden:,}), since the "
                     f"engine, the chip and the system are the same")
        errs = [c.error for c in sm.check_inflight() if c.model == model.name and c.gpus == int(row["tp"])
                and c.chip == row["chip"] and c.source.endswith("fp8")]
        if errs:
            text += (f"; TensorRT-LLM v0.17's own Mixtral rows on {row['tp']} {row['chip']} in FP8 (serve-published) "
                     f"are over by {min(errs):+.0%} to {max(errs):+.0%}")
        if row["scenario"] == "Offline":
            got = _modelled(row, quantity)
            text += sm.gemm_evidence_text(model, row["chip"], int(row["tp"]), got,
                                          got.batch / got.iteration_s / (1 + _err(row, quantity)), row["precision"])
        spread = lengths()["datasets"][row["benchmark"]]["input"]
        return text + (f"; the model runs every request at the mean input ({mean_input(row['benchmark']):.0f} "
                       f"tokens) where this mixed set's prompts spread from {spread['min']} to {spread['max']:,} "
                       f"(median {spread['median']}, 99th percentile {spread['p99']:,})")
    if quantity == "throughput" and row["scenario"] != "Offline":
        search, held = server_rate(row), in_flight(row)
        at = search.at
        text = head + (f"the simulated replica at the rate found runs {at.mean_batch:,.0f} requests on average "
                       f"against the {held:,} the run held (Little's law on its log), with mean TTFT "
                       f"{at.ttft_mean_s * 1e3:,.0f} ms and TPOT {at.tpot_mean_s * 1e3:.0f} ms against the log's "
                       f"{float(row['ttft_mean_ms']):,.0f} and {float(row['tpot_mean_ms']):.0f} (99th percentiles "
                       f"{at.ttft_p99_s * 1e3:,.0f} and {at.tpot_p99_s * 1e3:.0f} ms against "
                       f"{float(row['ttft_p99_ms']):,.0f} and {float(row['tpot_p99_ms']):.0f})")
        if search.binds == "capacity":
            text += ("; no limit binds below the replica's full-load rate in the model, so the figure is the "
                     "full-load throughput")
        else:
            text += (f"; the {search.binds} limit binds at {search.rate_per_s / search.capacity_per_s:.0%} of the "
                     "full-load rate")
        own = float(row["samples_per_s"]) / replicas(row)
        run = simulate(row, own, search.requests, search.seed)
        text += (f"; at the run's own rate ({own:.4g}/s a replica, its scheduled samples per second) the simulated "
                 f"replica holds {run.mean_batch:,.0f} requests, with mean TTFT {run.ttft_mean_s * 1e3:,.0f} ms "
                 f"(99th percentile {run.ttft_p99_s * 1e3:,.0f}) and TPOT {run.tpot_mean_s * 1e3:.0f} ms "
                 f"({run.tpot_p99_s * 1e3:.0f}): the run's "
                 + ("first tokens came sooner than the model's" if run.ttft_p99_s > float(row["ttft_p99_ms"]) / 1e3
                    else "iterations were slower than the model's, so it held more requests"))
        if run.ttft_p99_s > float(row["ttft_p99_ms"]) / 1e3 and int(row["tp"]) > 1:
            st, chunk = step_model(row), sim_batch(row)[1]

            def comm_at(n: int) -> float:
                return sm.inflight_comm_s(_model(row), row["chip"], n, int(row["tp"]), row["precision"],
                                          gemm_allreduce(row))

            comm = comm_at(chunk) / chunk
            hid = _simulate(row, own, search.requests, search.seed,
                            st._replace(base_s=tuple(b - comm_at(n) for n, b in zip(st.batches, st.base_s))))
            text += (f"; a prompt token of a {chunk:,}-token chunk costs the model "
                     f"{token_work_s(row, chunk, chunk) / chunk * 1e6:.0f} µs, {comm * 1e6:.0f} of them the "
                     f"tensor-parallel all-reduces (mlcalc.servemeasured.inflight_comm_s) left beyond the matmuls; "
                     f"with those hidden the simulated replica at the run's rate has mean TTFT "
                     f"{hid.ttft_mean_s * 1e3:,.0f} ms (99th "
                     f"percentile {hid.ttft_p99_s * 1e3:,.0f}) and TPOT {hid.tpot_mean_s * 1e3:.0f} ms against the "
                     f"log's {float(row['ttft_mean_ms']):,.0f} ms ({float(row['ttft_p99_ms']):,.0f})")
            if hid.ttft_mean_s < float(row["ttft_mean_ms"]) / 1e3 < run.ttft_mean_s:
                text += (", between the two: the run overlapped part of its prompts' communication, which the "
                         "model does not")
        text += (f"; at the {held:,} requests the run held, the model's mean TPOT is {_err(row, 'tpot'):+.0%} on the "
                 "log's")
        if offline is not None:
            text += (f"; the same system's Offline run is {float(offline['tokens_per_s']):,.0f} tokens/s, and the "
                     f"model gives it {_err(offline, 'throughput'):+.0%}")
        return text
    got = _modelled(row, quantity)
    per_iteration = left * (got.batch + got.prefill_tokens) * model.n_layers
    text = head + (f"the published figure leaves {left * 1e9:.0f} ns per token of the iteration and per "
                   f"layer beyond the modelled iteration ({mod * 1e9:.0f} ns modelled), "
                   f"{per_iteration * 1e3:.1f} ms an iteration of {got.batch + got.prefill_tokens:,.0f} tokens "
                   f"against {got.iteration_s * 1e3:.1f} ms modelled")
    eff, extra = shape_slowdown(row, got)
    return text + (f"; the model runs the layers' matmuls at the large-shape rate (mlcalc.serving.matmul_rate, "
                   f"{serving.matmul_rate(row['chip'], row['precision']) / 1e12:,.0f} TFLOPS), where at "
                   f"{round(got.batch + got.prefill_tokens):,} tokens an iteration the book's tile rule "
                   f"(mlcalc.compute.gemm_kernel: the tile a Hopper library picks by shape, on "
                   f"{spec(row['chip']).sm_count} SMs) keeps {eff:.0%} of that work useful; at that share the "
                   f"iteration would be {extra * 1e3:.1f} ms longer and the prediction "
                   f"{(got.iteration_s / (got.iteration_s + extra)) * (1 + _err(row, quantity)) - 1:+.0%}"
                   + sm.gemm_evidence_text(model, row["chip"], int(row["tp"]), got,
                                           got.batch / got.iteration_s / (1 + _err(row, quantity)), row["precision"],
                                           rule=False)
                   + ": the shapes' own cost does not account for the miss")


def shape_slowdown(row: Mapping[str, Any], got: sm.Inflight) -> tuple[float, float]:
    """``(useful, extra_s)`` of a dense model's modelled iteration: the FLOP-weighted share of its layers' matmul
    work that the tile its library picks leaves useful (:func:`mlcalc.servemeasured.layers_gemm_useful`:
    :func:`mlcalc.compute.gemm_kernel` at M = the iteration's tokens for the fused QKV, the attention output, the
    gate and up, and the down projections, each split ``tp`` ways as tensor parallelism splits them, on the chip's
    SMs), and the seconds it adds to the iteration at the model's matmul rate."""
    model, tp = _model(row), int(row["tp"])
    if model.is_moe:
        raise ValueError(f"row={row['system']!r} with {model.name} is not allowed: a dense model's matmuls only")
    m = max(1, round(got.batch + got.prefill_tokens))
    work = sum(float(n) * k * count for _, n, k, count, _ in steptime.layer_products(model, m, False, tp,
                                                                                     fused_qkv=True))
    useful = sm.layers_gemm_useful(model, m, tp, row["chip"], row["precision"])
    flops_s = 2.0 * work * model.n_layers * m / serving.matmul_rate(row["chip"], row["precision"])
    return useful, flops_s * (1.0 / useful - 1.0)


@lru_cache(maxsize=None)
def check() -> tuple[MlperfCheck, ...]:
    """Every result's throughput, and every Server and Interactive result's mean TPOT, against the model."""
    out = []
    for row in results():
        out.append(_check_row(row, "throughput"))
        if row["scenario"] != "Offline":
            out.append(_check_row(row, "tpot"))
    return tuple(out)


__all__ = ["MlperfCheck", "QUANTITIES", "SCENARIOS", "TARGET", "check", "data", "in_flight", "input_tokens",
           "leftover", "lengths", "lengths_source", "mean_input", "output_tokens", "predicted_tokens_per_s",
           "predicted_tpot_s", "replica_at_load", "replicas", "results", "tpot_limit_s", "gemm_allreduce", "wide_share",
           "rows_table", "ROWS_FINE", "ROWS_TOL"]
