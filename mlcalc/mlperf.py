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
and Interactive are the same replica at the largest batch whose iteration (every running request's next token: the
TPOT) stays within the scenario's TPOT limit; no queue is modelled, so the TTFT limit is not checked (the logs show
the 99th percentile inside it). For those rows the mean TPOT is a second case: the iteration at the number of
requests the run kept in flight (Little's law: completed samples per second x mean latency, both in the log).

The datasets' input lengths, which MLCommons states nowhere but in its dataset files, are measured on those files:
openshift-psap/performance-dashboard (mlperf-data/summaries/) holds one row per sample of each MLPerf LLM dataset,
extracted from MLCommons' files, and mlcalc/data/mlperf_lengths.json keeps their counts, means and exact frequency
tables (scripts/mlperf_lengths.py writes it; :func:`lengths`). Every case runs the model at the dataset's mean input
(:func:`input_tokens`) and the run's own mean output (its log's tokens over samples).
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Any, Mapping, NamedTuple

from mlcalc import _check, memory
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
                       row["precision"], float(row["kv_fraction"]), caps=_caps(row, batch))


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


def predicted_tokens_per_s(row: Mapping[str, Any], prompt: int | None = None) -> float:
    """The system's output tokens per second: one replica at the scenario's load times the replicas."""
    return replica_at_load(row, prompt).tokens_per_s * replicas(row)


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
    return predicted_tokens_per_s(row, prompt) if quantity == "throughput" else predicted_tpot_s(row, prompt)


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
        full = _replica(row, p, o)
        load += (f" (full load meets the {tpot_limit_s(row) * 1e3:.0f} ms TPOT limit)" if full.batch == got.batch
                 else f" (full load's {full.iteration_s * 1e3:.0f} ms is over the {tpot_limit_s(row) * 1e3:.0f} ms "
                      "TPOT limit: batch cut to meet it)")
    note = (f"mean input {p} tokens, the dataset's measured mean ({mean_input(bench):.2f} over "
            f"{lengths()['datasets'][bench]['samples']:,} samples; {lengths_source(bench)}), mean output {o} "
            f"(the log's tokens over samples); {load}")
    if "tpot_mean_ms" in row and quantity == "throughput":
        note += (f"; the run's mean TPOT {float(row['tpot_mean_ms']):.0f} ms (99th percentile "
                 f"{float(row['tpot_p99_ms']):.0f}), TTFT {float(row['ttft_mean_ms']):.0f} ms "
                 f"({float(row['ttft_p99_ms']):.0f})")
    cause = _miss_cause(row, quantity) if abs(err) > TARGET else ""
    return MlperfCheck(f"{row['repo']} @ {row['commit'][:7]}: {row['path']}", row["round"], row["submitter"],
                       row["system"], row["chip"], int(row["gpus"]), int(row["tp"]),
                       data()["datasets"][bench]["model"], bench, row["scenario"], quantity, row["precision"], p, o,
                       got.batch, obs, pred, err, cause, note)


def _err(row: Mapping[str, Any], quantity: str) -> float:
    return _predict(row, quantity, input_tokens(row["benchmark"])) / _observed(row, quantity) - 1.0


def _miss_cause(row: Mapping[str, Any], quantity: str) -> str:
    """A miss's cause, from the numbers: none of these sources states one (a LoadGen log gives the figure, not its
    parts)."""
    head = "no cause stated by the source (the LoadGen log gives the figure, not its parts); ours: "
    model = memory.model_preset(data()["datasets"][row["benchmark"]]["model"])
    left, mod = leftover(row, quantity)
    offline = _twin(row, scenario="Offline") if row["scenario"] != "Offline" else None
    full = _replica(row, input_tokens(row["benchmark"]), output_tokens(row))
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
        spread = lengths()["datasets"][row["benchmark"]]["input"]
        return text + (f"; the model runs every request at the mean input ({mean_input(row['benchmark']):.0f} "
                       f"tokens) where this mixed set's prompts spread from {spread['min']} to {spread['max']:,} "
                       f"(median {spread['median']}, 99th percentile {spread['p99']:,})")
    if quantity == "throughput" and row["scenario"] != "Offline":
        got, held = replica_at_load(row), in_flight(row)
        limits = data()["limits"][row["benchmark"]][row["scenario"]]
        at_held = _err(row, "tpot")
        how = ("full load" if got.batch == full.batch else f"the largest batch within the "
               f"{tpot_limit_s(row) * 1e3:.0f} ms TPOT limit")
        text = head + (f"the load, which the model does not set from a queue. It runs this {row['scenario']} run at {how}, "
                       f"{got.batch:,} requests a replica (iteration {got.iteration_s * 1e3:.0f} ms), while the run "
                       f"held {held:,} (Little's law on its log) at the rate its submitter set for Poisson arrivals "
                       f"under the 99th-percentile limits (TTFT {float(row['ttft_p99_ms']):,.0f} ms of "
                       f"{limits['ttft_ms']:,}, TPOT {float(row['tpot_p99_ms']):.0f} ms of {limits['tpot_ms']}); at "
                       f"the {held:,} it held, the model's mean TPOT is {at_held:+.0%} on the log's")
        if offline is not None:
            ratio = float(row["tokens_per_s"]) / float(offline["tokens_per_s"])
            text += (f"; the same system's Offline run, {float(offline['tokens_per_s']):,.0f} tokens/s, is "
                     f"{1 / ratio - 1:.0%} above this run's, and the model gives it {_err(offline, 'throughput'):+.0%}")
        return text
    got = _modelled(row, quantity)
    per_iteration = left * (got.batch + got.prefill_tokens) * model.n_layers
    return head + (f"not found: the published figure leaves {left * 1e9:.0f} ns per token of the iteration and per "
                   f"layer beyond the modelled iteration ({mod * 1e9:.0f} ns modelled), "
                   f"{per_iteration * 1e3:.1f} ms an iteration of {got.batch + got.prefill_tokens:,.0f} tokens "
                   f"against {got.iteration_s * 1e3:.1f} ms modelled")


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
           "predicted_tpot_s", "replica_at_load", "replicas", "results", "tpot_limit_s"]
