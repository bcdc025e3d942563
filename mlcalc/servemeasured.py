"""Serving measured on our GPUs (``scripts/gpu/run_serve.sh``) and published serving results, each point next
to :mod:`mlcalc.serving`'s prediction.

Measured run ``h200x2-2026-11-26-serve`` (2 x NVIDIA H200, one call): five architectures through transformers
5.17 (random weights, bf16, static cache) on two paths -- ``eager`` (one eager forward per step, as ``generate``
calls the model) and ``graph`` (the same step captured once in a CUDA graph and replayed: the HF kernels without
the host) --, decode and prefill; a plain-PyTorch tensor-parallel engine (``scripts/gpu/serve_engine.py``) on 1
and 2 GPUs; a continuous-batching load test; floor probes at the start and the end of every process.

The prediction takes from the same call only the machine: the read bandwidth and the matmul rate (probes), and
for each architecture its floor measured on a tiny model of the same class (2 and 8 layers, width 64): eager
step time per layer and outside the layers, and the CUDA-graph replay time per layer (the GPU time of a layer's
kernels when they do almost nothing). None of the checked points enters it.

Published results (mlcalc/data/serving_published.json): TensorRT-LLM's static-batch tables of v0.9.0
(:func:`check_published`, :func:`check_first_token`) and its in-flight-batching tables of v0.17
(:func:`check_inflight`: the benchmark run as it runs, :func:`inflight`), and DeepGEMM's FP8 matmul times
(:func:`check_fp8_gemm`), which check the FP8 matmul law those use (:func:`fp8_gemm_s`).

Base units: seconds, bytes, FLOP/s.
"""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Any, Callable, Mapping, NamedTuple

from mlcalc import _check, compute, memory, serving

RUN = "h200x2-2026-11-26-serve"
#: The second call (same scripts plus the kernel probe, scripts/gpu/bench_kernels.py): 2 x H200 again (the
#: lender gave H200s for an H100 ask).
RUN2 = "h200x2-2026-11-26-serve2"
#: The third call (scripts/gpu/run_serve4.sh, 4 x H200, asked for 4 x H100): tensor-parallel decode on 1, 2 and 4
#: GPUs, every architecture at batch x context points no earlier call measured (predicted before the call:
#: scripts/gpu/serve4_predictions.json), a host probe timed next to every eager timing group, the 32-layer floor
#: probe over and over (while the other GPUs worked and alone), decode attention as transformers and the engine call
#: it, transformers' grouped experts at prefill sizes.
RUN4 = "h200x4-2026-11-26-serve4"
#: The seventh call (scripts/gpu/run_serve7.sh, one H200, asked for one): the eager decode and prefill points that
#: missed in the first two calls (no probe next to them) and passing controls, at the same batch x context, each
#: timing group (5 a point) next to the host probe, one process per architecture (its first point kept apart), the
#: floor probe at the start, middle and end; transformers ``generate`` decode of the Llama-shaped 1B and 8B at batch 1,
#: the first point of each process kept apart (predicted before the call: scripts/gpu/serve7_predictions.json).
RUN7 = "h200-2026-11-27-serve7"
#: The eighth call (scripts/gpu/run_serve8.sh, one H200, asked for one): EVERY eager decode and prefill point the
#: earlier calls measured (the first calls' 8 decode and 5 prefill points per architecture, the serve4 call's 5 and 3)
#: in one protocol: one process per architecture pinned to the vCPU found fastest just before it started
#: (scripts/gpu/pace_scan.py) with that vCPU's pace metered all along, five timing groups a point each next to the host
#: probe, the first point of each process kept apart, the floor probe at the start, middle and end (predicted before
#: the call: scripts/gpu/serve8_predictions.json). The eager records (:data:`EAGER_RUN`) are this call's points.
RUN8 = "h200-2026-11-27-serve8"
RUNS = (RUN, RUN2, RUN4, RUN7, RUN8)
#: The run whose eager decode and prefill points are the eager records (mlcalc.accuracy's serve-eager and
#: serve-prefill): every point in one protocol. The other runs' eager points are history, each with its own score
#: (:func:`eager_scores`); their CUDA-graph points stay in the graph record.
EAGER_RUN = RUN8
#: How each run measured the host beside its eager points.
EAGER_PROTOCOL = MappingProxyType({
    RUN: "no host probe beside the points (each architecture's floor from its tiny models, timed once a process)",
    RUN2: "no host probe beside the points (each architecture's floor from its tiny models, timed once a process)",
    RUN4: "the host probe beside every timing group (3 a point), not pinned; 5 decode and 3 prefill points an "
          "architecture that no earlier call measured",
    RUN7: "the host probe beside every timing group (5 a point), not pinned; the first two calls' misses and controls",
    RUN8: "every point of the calls above, one protocol: each process pinned to the vCPU found fastest, that vCPU's "
          "pace metered, the host probe beside every timing group (5 a point), the first point of a process apart",
})
#: The fifth call (scripts/gpu/run_serve5.sh, one H200, asked for one): the plain engine's decode matmuls as it runs
#: them (``x @ W``, ``W`` stored (in, out)) next to ``F.linear`` at every engine shape of Llama 3 8B and 70B and their
#: tp 2 / tp 4 shards, batch 1-128; the engine's decode step at tp 1 and one GPU's shard of tp 2 / tp 4, replayed
#: from a CUDA graph and profiled; DeepSeek-V2-Lite's prefill timed by module and profiled (predicted before the call:
#: scripts/gpu/serve5_predictions.json). Its files differ from the other runs' (``serve5_*.json``): not in RUNS.
RUN5 = "h200-2026-11-27-serve5"
#: The sixth call (one H200, ``serve5_probe.py --sections small``): the engine layer's kernels other than its matmuls
#: and attention, at full width, every shape / shard, batch 1-128 (predicted before: scripts/gpu/serve5b_predictions.json).
RUN5B = "h200-2026-11-27-serve5b"
#: Streaming multiprocessors of an H100 SXM and of an H200 (both the GH100 die with 132 SMs enabled: NVIDIA H100
#: Tensor Core GPU Architecture whitepaper, Table 3; the H200 product brief: the same Hopper GPU with HBM3e).
HOPPER_SMS = 132
#: The run whose kernel probe measured decode attention as the engine and transformers call it (kernels4_gpu*.json).
ATTN_RUN = RUN4
ARCHS = ("llama8b", "mha7b", "gemma3_4b", "mixtral_8l", "dsv2lite_8l")
PATHS = ("eager", "graph")
#: The issue's targets: every CUDA-graph point within 20 %, every eager point within 25 %.
TARGET = MappingProxyType({"graph": 0.20, "eager": 0.25})


def _read(name: str, run: str) -> Any:
    return json.loads(resources.files("mlcalc.data").joinpath("measured").joinpath(run).joinpath(name).read_text())


@lru_cache(maxsize=None)
def run_data(run: str = RUN) -> Mapping[str, Any]:
    """Every file of a run: ``probes`` (start and end of each process), ``archs`` (one record per
    architecture), ``tp`` (tensor-parallel engine), ``load`` (load test), ``generate_probe``."""
    _check.choice("run", run, RUNS)
    folder = resources.files("mlcalc.data").joinpath("measured").joinpath(run)
    names = sorted(p.name for p in folder.iterdir() if p.name.endswith(".json"))
    probes = [_read(n, run) for n in names if n.startswith("probe_")]
    archs: dict[str, Any] = {}
    for n in names:
        if n.startswith("arch_"):
            archs.update(_read(n, run)["archs"])
    load = next((_read(n, run)["load"] for n in names if n.startswith("load_")), None)
    gen = next((_read(n, run) for n in names if n.startswith("genprobe_")), None)
    tp = _read("tp.json", run) if "tp.json" in names else {"decode": [], "allreduce": []}  # RUN7: no engine part
    return MappingProxyType({"probes": tuple(probes), "archs": MappingProxyType(archs), "tp": tp,
                             "load": load, "generate_probe": gen, "names": tuple(names)})


def card(run: str = RUN) -> str:
    """The GPU the run measured (every file names it)."""
    return str(run_data(run)["probes"][0]["env"]["device_name"])


def chip(run: str = RUN) -> str:
    """The catalogue key of :func:`card`."""
    return "H200-SXM" if "H200" in card(run) else "H100-SXM"


def read_bandwidth(run: str = RUN) -> float:
    """Bytes/s of a 4 GiB bf16 reduction, mean over every probe of the run."""
    return statistics.fmean(float(p["probe"]["read_bandwidth"]["bytes_per_s"]) for p in run_data(run)["probes"])


def matmul_rate(run: str = RUN) -> float:
    """FLOP/s of an 8192^3 bf16 matmul, mean over every probe of the run."""
    return statistics.fmean(float(p["probe"]["matmul"]["flops_per_s"]) for p in run_data(run)["probes"])


class FloorSpread(NamedTuple):
    """The eager launch floor of the same tiny model (Llama class, 32 layers) probed several times in one call."""

    n_probes: int
    min_s: float
    max_s: float
    spread: float  # max / min - 1
    graph_min_s: float  # the same step replayed from a CUDA graph
    graph_max_s: float


def floor_spread(run: str = RUN, layers: int = 32) -> FloorSpread:
    """How much the host's floor moved within the call (start and end of every process)."""
    eager, graph = [], []
    for p in run_data(run)["probes"]:
        for t in p["probe"]["tiny_llama"]:
            if t["n_layers"] == layers:
                eager.append(float(t["eager_s"]))
                graph.append(float(t["graph_s"]))
    if not eager:
        raise ValueError(f"layers={layers!r} is not allowed: the probes ran 2, 8 and 32 layers")
    return FloorSpread(len(eager), min(eager), max(eager), max(eager) / min(eager) - 1.0, min(graph), max(graph))


class HostSpread(NamedTuple):
    """The host probe (a tiny 8-layer Llama's eager decode step, ``bench_serve.HostProbe``) over one call: every
    sample timed next to a timing group (runs made with ``--adjacent-probe``)."""

    n_samples: int
    min_s: float
    median_s: float
    max_s: float
    ratio: float  # max / min


def host_probe_spread(run: str = RUN7) -> HostSpread | None:
    """How far the host's pace moved over a call, by the probe timed next to every eager timing group (None for a
    call without it). The serve7 call: 324 samples, 5.9 to 18.0 ms, 3.0 x."""
    xs = sorted(float(x["s"]) for n in run_data(run)["names"] if n.startswith("arch_")
                for x in _read(n, run).get("host_probe", {}).get("samples", ()))
    if not xs:
        return None
    return HostSpread(len(xs), xs[0], statistics.median(xs), xs[-1], xs[-1] / xs[0])


def generate_floor(run: str = RUN) -> serving.Floor:
    """The floor of transformers ``generate`` (scripts/gpu/bench_decode.py's probe, run once in the same call):
    the least-squares line through its 2-, 8- and 32-layer tiny models, comparable with earlier hosts' floors
    (mlcalc.serving.measured_floor)."""
    pts = [(float(o["n_layers"]), float(o["decode_step_s"])) for o in run_data(run)["generate_probe"]["overhead"]]
    mx = statistics.fmean(x for x, _ in pts)
    my = statistics.fmean(y for _, y in pts)
    slope = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
    return serving.Floor(max(0.0, my - slope * mx), max(0.0, slope), f"generate, tiny Llama models, {card(run)}")


class FirstPoint(NamedTuple):
    """The first decode point of a process (measured once and kept apart) next to the same point measured again."""

    arch: str
    path: str
    first_s: float
    again_s: float
    ratio: float  # first / again


def first_points(run: str = RUN) -> list[FirstPoint]:
    """Each architecture's process-warm-up point against its repeat, both paths."""
    out = []
    for arch in ARCHS:
        rec = run_data(run)["archs"][arch]
        w, f = rec["warmup_discarded"], rec["decode"][0]
        for path in PATHS:
            k = f"{path}_s"
            if k in w and k in f:
                out.append(FirstPoint(arch, path, float(w[k]), float(f[k]), float(w[k]) / float(f[k])))
    return out


def arch_model(arch: str, run: str = RUN) -> memory.ModelConfig:
    """The measured architecture as a ModelConfig, from the Hugging Face config the run recorded."""
    _check.choice("arch", arch, ARCHS)
    c = run_data(run)["archs"][arch]["config"]
    common = dict(name=f"{arch} (measured shape)", n_layers=c["num_hidden_layers"], hidden=c["hidden_size"],
                  n_heads=c["num_attention_heads"], n_kv_heads=c["num_key_value_heads"], ffn_hidden=c["intermediate_size"],
                  vocab=c["vocab_size"], tied_embeddings=bool(c.get("tie_word_embeddings", False)))
    if arch == "gemma3_4b":
        return memory.ModelConfig(head_dim=c["head_dim"], norms_per_layer=4, qk_norm=True, activation="gelu",
                                  sliding_window=c["sliding_window"], sliding_window_pattern=6, **common)
    if arch == "mixtral_8l":
        return memory.ModelConfig(head_dim=c["head_dim"], n_experts=c["num_local_experts"],
                                  experts_per_token=c["num_experts_per_tok"], moe_ffn_hidden=c["intermediate_size"],
                                  **common)
    if arch == "dsv2lite_8l":
        return memory.ModelConfig(head_dim=c["qk_nope_head_dim"], attention="mla", kv_lora_rank=c["kv_lora_rank"],
                                  qk_rope_head_dim=c["qk_rope_head_dim"], v_head_dim=c["v_head_dim"],
                                  n_experts=c["n_routed_experts"], experts_per_token=c["num_experts_per_tok"],
                                  n_shared_experts=c["n_shared_experts"], moe_ffn_hidden=c["moe_intermediate_size"],
                                  first_dense_layers=c["first_k_dense_replace"], **common)
    return memory.ModelConfig(head_dim=c["head_dim"], **common)


def host_units(timing: Mapping[str, Any]) -> float | None:
    """An eager time in units of the host probe timed next to it (runs made with ``--adjacent-probe``): each timing
    group over the mean of the probes before and after it, the median over the groups; None without probes."""
    g, p = timing.get("groups_in_order_s"), timing.get("host_probe_s")
    if not g or not p or len(p) != len(g) + 1:
        return None
    return statistics.median(float(x) / ((float(p[i]) + float(p[i + 1])) / 2.0) for i, x in enumerate(g))


def point_host_s(timing: Mapping[str, Any]) -> float | None:
    """The host probe's time next to a measurement (the mean of its probes); None without probes."""
    p = timing.get("host_probe_s")
    return statistics.fmean(float(x) for x in p) if p else None


def arch_floor(arch: str, path: str, run: str = RUN, host_s: float | None = None) -> serving.Floor:
    """The floor of ``arch`` on ``path`` from its tiny model (2 and 8 layers, batch 1, cache 64), same process:
    per layer the 8-layer step less the 2-layer step over 6; outside the layers the rest.

    ``host_s`` (eager, runs with a host probe next to every timing group): the tiny steps are first put in units
    of the probe timed next to them (:func:`host_units`), and the floor is given at the host speed ``host_s`` (the
    probe next to the point predicted): the host's time per operation moves, the operations do not."""
    _check.choice("arch", arch, ARCHS)
    _check.choice("path", path, PATHS)
    key = "eager_s" if path == "eager" else "graph_s"
    tiny = run_data(run)["archs"][arch]["tiny"]
    t = {int(x["n_layers"]): float(x[key]) for x in tiny}
    how = ""
    if path == "eager" and host_s is not None:
        units = {int(x["n_layers"]): host_units(x["eager"]) for x in tiny}
        known = {n: u for n, u in units.items() if u is not None}
        if len(known) == len(units):
            t = {n: u * _check.positive("host_s", host_s) for n, u in known.items()}
            how = f", at the host speed next to the point ({host_s * 1e3:.2f} ms probe)"
    per = max(0.0, (t[8] - t[2]) / 6.0)
    return serving.Floor(max(0.0, t[2] - 2.0 * per), per, f"tiny {arch} (2 and 8 layers), {path}, {card(run)}{how}")


class MeasuredCheck(NamedTuple):
    """A measured step next to the prediction."""

    what: str  # "decode" or "prefill"
    arch: str
    path: str  # "eager", "graph"
    batch: int
    context: int  # cache length attended (decode) or prompt (prefill)
    tp: int
    measured_s: float
    predicted_s: float
    error: float  # predicted / measured - 1
    target: float  # the tolerance the issue sets for this path
    bound: str
    card: str
    engine: str = "transformers"  # "transformers" (5.17 forward) or "serve_engine" (scripts/gpu/serve_engine.py)


def matmul_law(run: str = RUN) -> serving.MatmulLaw:
    """The decode-matmul law (:class:`mlcalc.serving.MatmulLaw`, probed once in run ``serving.KERNEL_RUN`` on the
    same card type) at this run's read rate."""
    return serving.measured_matmul_law().on_card(read_bandwidth(run))


def graph_layer_floor_s(arch: str, run: str = RUN, fused: bool = False, batch: int = 1) -> float:
    """GPU seconds per layer of the kernels that are not weight-reading matmuls when they do almost nothing: the
    tiny model's replayed layer (:func:`arch_floor`, "graph") less its matmuls, each an empty matmul of the
    kernel probe (the law charges every matmul its own time)."""
    law = matmul_law(run)
    n = serving.kernel_weight_s(arch_model(arch, run), batch, law, fused)[1]
    return max(0.0, arch_floor(arch, "graph", run).per_layer_s - n * law.empty_s)


@lru_cache(maxsize=None)
def _kernel_probes(run: str) -> tuple[Any, ...]:
    """The run's kernel-probe files (``kernels4_gpu*.json``), each read once."""
    return tuple(_read(n, run) for n in run_data(run)["names"] if n.startswith("kernels4_"))


@lru_cache(maxsize=None)
def _hf_attention_probe(run: str = ATTN_RUN) -> dict[tuple[int, int, int], dict[tuple[int, int], tuple[float, float]]]:
    """The kernel probe's SDPA calls as transformers makes them at decode, by head shape (heads, q/k dim, v dim):
    {(batch, length): (seconds, bytes of K and V read)}."""
    out: dict[tuple[int, int, int], dict[tuple[int, int], tuple[float, float]]] = {}
    for probe in _kernel_probes(run):
        for r in probe["decode_attention"]:
            if r.get("kind") == "hf" and "s" in r:
                key = (int(r["kv_heads"]), int(r["head_dim"]), int(r["v_head_dim"]))
                out.setdefault(key, {})[(int(r["batch"]), int(r["length"]))] = (float(r["s"]), float(r["kv_bytes"]))
    return out


def _log_between(pts: list[tuple[float, float]], x: float) -> float:
    """Linear in log x between the two points ``(x, y)`` around x (sorted by x, x > 0); the end point's y beyond
    them."""
    if x <= pts[0][0]:
        return pts[0][1]
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if x <= x1:
            w = math.log(x / x0) / math.log(x1 / x0)
            return (1.0 - w) * y0 + w * y1
    return pts[-1][1]


def hf_sdpa_excess_table(arch: str, run: str = RUN) -> Mapping[tuple[int, int], float]:
    """The kernel probe's measured table for the architecture's head shape (``decode_attention``, kind "hf", run
    :data:`ATTN_RUN`: one query row per head, K and V expanded to every query head, a boolean mask of batch x length):
    {(batch, length): GPU seconds of the SDPA call beyond the K and V bytes it reads at the run's read rate, less a
    null kernel's time (:func:`mlcalc.serving.null_kernel_s`: the tiny model's SDPA call, which does almost nothing,
    is already in its replayed layer)}, never below 0. Empty for a head shape the probe did not run.

    What the table shows of the kernel (an H200, 132 SMs): where batch x heads is small the call costs a fixed time
    beyond its bytes, about 9 us at head dim 128 and 11-19 us at 192 / 256, whatever the length (Gemma 3's shape, 8
    heads of 256: 18.8 us at 1 x 512, 19.3 us at 1 x 8192, the bytes 16x more); once batch x heads passes the SM
    count the call runs in waves of one block per (batch, head), and at head dim 192 / 256 a block streams its keys
    below the card's read rate (Gemma's shape: about 26 GB/s a block, so 24 x 4096, 192 blocks in 2 waves, takes
    107 us beyond its bytes, 16 x 8192, 128 blocks in one wave, 58 us), while at head dim 128 the call reads at the
    read rate (0 beyond). The boolean mask, batch x length bytes (64 KiB at 128 x 512), is too small to show."""
    model = arch_model(arch, run)
    dq, dv = (model.qk_head_dim, model.v_dim) if model.attention == "mla" else (model.head_dim, model.head_dim)
    pts = _hf_attention_probe().get((model.n_heads, dq, dv), {})
    floor, bw = serving.null_kernel_s(), read_bandwidth(run)
    return MappingProxyType({k: max(0.0, t - floor - kv / bw) for k, (t, kv) in sorted(pts.items())})


def hf_sdpa_excess_at(table: Mapping[tuple[int, int], float], batch: int, length: int) -> float:
    """The excess of :func:`hf_sdpa_excess_table` at any batch and length, read along the call's work: its tokens,
    batch x length (its K and V bytes over the head shape's bytes a token). At equal tokens the probed excess hardly
    depends on how they split into batch and length (the kernel spreads a call's keys over the SMs; Gemma 3's shape
    at 16,384 tokens: 23, 23, 17 and 20 us at 4 x 4096, 8 x 2048, 16 x 1024, 32 x 512), so: among the probed points
    of equal tokens linear in log batch, between the probed token counts linear in log tokens. Read so, each probed
    point left out and read from the others misses its own excess by less than read at each probed length in log
    batch and log length (the test keeps both). A probed point gives its own value; any other point lies between
    the (at most four) probed neighbours it is taken from. Beyond the probe the end value is held: below the least or
    above the most tokens probed (512 and 131,072) that end's value, which at few tokens is the fixed time a call the
    table shows, and at many tokens of head dim 192 / 256, where the excess grows with the bytes, a lower bound. Not
    followed: the wave count of blocks (one per (batch, head), 132 SMs) steps where batch x heads crosses a multiple
    of 132; Gemma's 24 x 4096 (192 blocks, 2 waves) costs 107 us beyond its bytes, 16 x 8192 (128 blocks, more tokens)
    58 us, and a point between them is taken between the two. 0 for an empty table."""
    b, c = _check.positive_int("batch", batch), _check.positive_int("length", length)
    if not table:
        return 0.0
    rows: dict[int, list[tuple[float, float]]] = {}
    for (pb, pl), e in sorted(table.items()):
        rows.setdefault(pb * pl, []).append((float(pb), e))
    return _log_between([(float(n), _log_between(rows[n], b)) for n in sorted(rows)], b * c)


def hf_sdpa_excess_s(arch: str, batch: int, context: int, run: str = RUN) -> float:
    """GPU seconds per layer (mean over the layers) that transformers' SDPA call at decode takes beyond the K and V
    bytes it reads at the run's read rate: the kernel probe's table (:func:`hf_sdpa_excess_table`) at this batch and
    cache length (:func:`hf_sdpa_excess_at`: the probed value at a probed point, between the probed neighbours of
    about as many tokens elsewhere, the end value beyond the probe). A layer that attends to a window attends to
    min(context, window) positions. 0 for a head shape the probe did not run (the bytes at the read rate stand)."""
    model = arch_model(arch, run)
    b, c = _check.positive_int("batch", batch), _check.positive_int("context", context)
    table = hf_sdpa_excess_table(arch, run)
    if not table:
        return 0.0
    lay = memory.kv_layout(model)
    total = 0.0
    for n, length in ((lay.global_layers, c), (lay.local_layers, min(c, lay.window) if lay.window else c)):
        if n:
            total += n * hf_sdpa_excess_at(table, b, length)
    return total / model.n_layers


def predict_hf(arch: str, path: str, batch: int, context: int, run: str = RUN,
               host_s: float | None = None) -> serving.DecodeStep:
    """transformers' decode step as the run made it: the card's read bandwidth and matmul rate, ``repeat_kv``'s
    copy for grouped heads at the copy rate measured on this card type (:func:`mlcalc.serving.measured_copy_bandwidth`),
    the cache as transformers 5.17 stores and attends it (``cache_layout="transformers"``: the MLA latent
    decompressed every step, a full sliding buffer rolled). ``eager``: the tiny
    model's eager floor (max with the GPU per layer) plus the counted small kernels; ``graph``: no host floor, each
    layer's kernels cost at least what the tiny model's replayed layer costs."""
    _check.choice("path", path, PATHS)
    model = arch_model(arch, run)
    bw, rate = read_bandwidth(run), matmul_rate(run)
    copy = serving.measured_copy_bandwidth()
    law = matmul_law(run)
    sdpa = hf_sdpa_excess_s(arch, batch, context, run)
    if path == "eager":
        return serving.decode_step(model, batch, context, bw, rate, 1, arch_floor(arch, "eager", run, host_s), copy,
                                   small_kernels_s=serving.engine_small_kernels_s("hf-eager", model) + sdpa,
                                   cache_layout="transformers", matmul_law=law, fused=False)
    return serving.decode_step(model, batch, context, bw, rate, 1, None, copy,
                               small_kernels_s=graph_layer_floor_s(arch, run, False, batch) + sdpa,
                               cache_layout="transformers", matmul_law=law, fused=False)


def check_hf_decode(run: str = RUN) -> list[MeasuredCheck]:
    """Every transformers decode point of the run (both paths) against :func:`predict_hf`."""
    out = []
    for arch in ARCHS:
        rec = run_data(run)["archs"].get(arch)
        if rec is None:
            continue
        for pt in rec["decode"]:
            for path in PATHS:
                key = f"{path}_s"
                if key not in pt:
                    continue
                host = point_host_s(pt.get("eager", {})) if path == "eager" else None
                d = predict_hf(arch, path, int(pt["batch"]), int(pt["context"]), run, host)
                m = float(pt[key])
                out.append(MeasuredCheck("decode", arch, path, int(pt["batch"]), int(pt["context"]), 1, m, d.step_s,
                                         d.step_s / m - 1.0, TARGET[path], d.bound, card(run)))
    return out


def elementwise_bytes_per_token(arch: str) -> float:
    """Bytes per prompt token and layer of transformers' eager prefill outside its matmuls and attention (counted,
    mlcalc/data/kernels.json ``hf_prefill_elementwise_bytes_per_token_per_layer``)."""
    _check.choice("arch", arch, ARCHS)
    return float(serving._kernels()["hf_prefill_elementwise_bytes_per_token_per_layer"]["value"][arch])


class Prefill(NamedTuple):
    """transformers' eager prefill, part by part (seconds)."""

    matmul_s: float  # every projection at the card's matmul rate (the output projection for the last token only)
    attention_s: float  # SDPA at the probed rate of the kernel transformers' call picks
    elementwise_s: float  # the counted element-wise bytes at the card's read rate
    host_s: float  # the eager floor of the whole model (launching every kernel from Python)
    total_s: float  # max(GPU parts together, host)
    bound: str


@lru_cache(maxsize=None)
def _grouped_prefill_probe(run: str = ATTN_RUN) -> tuple[tuple[int, int, int, float, float], ...]:
    """The kernel probe's grouped expert matmuls at prefill sizes: (experts, n, k, rows per expert, FLOP/s)."""
    return tuple((int(r["experts"]), int(r["n"]), int(r["k"]), float(r["rows"]) / int(r["experts"]),
                  float(r["flops_per_s"]))
                 for probe in _kernel_probes(run) for r in probe.get("grouped_prefill", ()) if "s" in r)


def grouped_prefill_rate(model: memory.ModelConfig, tokens: int, run: str = ATTN_RUN) -> float:
    """FLOP/s of transformers' grouped expert matmul (every expert's weights in one kernel, tokens sorted by
    expert) over ``tokens`` prompt tokens, each sent to ``experts_per_token`` of the experts: the kernel probe's
    rate for the same number of experts (Mixtral's 8, DeepSeek-V2-Lite's 64), FLOP-weighted over its two expert
    matrices, interpolated on log rows per expert (held at the probed ends). A few hundred rows per expert run at
    a fraction of a dense matmul's rate."""
    t = _check.positive_int("tokens", tokens)
    pts = [x for x in _grouped_prefill_probe(run) if x[0] == model.n_experts]
    if not pts:
        raise ValueError(f"model.n_experts={model.n_experts!r} is not allowed: the probe ran "
                         f"{sorted({x[0] for x in _grouped_prefill_probe(run)})} experts")
    x = math.log(t * model.experts_per_token / model.n_experts)
    secs = flops = 0.0
    for nk in sorted({(e[1], e[2]) for e in pts}):
        xs = sorted((math.log(e[3]), e[4]) for e in pts if (e[1], e[2]) == nk)
        r = serving.interpolate(xs, x)
        fl = float(nk[0] * nk[1])
        secs += fl / r
        flops += fl
    return flops / secs


def expert_rows_bytes_per_token(model: memory.ModelConfig) -> float:
    """Bytes one prompt token moves per MoE layer through the element-wise passes of transformers 5.17's grouped
    experts (integrations/moe.py ``grouped_mm_experts_forward``) over its ``k`` sorted expert rows (``k`` =
    experts_per_token, ``h`` hidden, ``f`` expert width, bf16 unless said): the gather into expert order (read and
    write ``k h``: ``4 k h``), the pre-mask ``masked_fill_`` (``4 k h``), the post-mask of the gate-and-up output
    (a copy and an in-place fill of ``2 k f`` values: ``16 k f``), the gate (SiLU of one strided half and its product
    with the other: ``10 k f``), the post-mask of the down output (``8 k h``), the routing-weight product (fp32 out:
    ``6 k h``), the un-permute gather in fp32 (``8 k h``) and the fp32 sum over the ``k`` rows (``4 k h + 4 h``):
    ``34 k h + 26 k f + 4 h``. 0 for a dense model.

    DeepSeek-V2-Lite (6 of 64 experts, hidden 2,048, expert width 1,408): 646 KB a token and MoE layer:

    >>> expert_rows_bytes_per_token(arch_model("dsv2lite_8l"))
    645632.0
    """
    if not model.is_moe:
        return 0.0
    k, h, f = model.experts_per_token, model.hidden, model.expert_ffn
    return float(34 * k * h + 26 * k * f + 4 * h)


@lru_cache(maxsize=None)
def expert_rows_rate() -> float:
    """Bytes/s of transformers' element-wise passes over the sorted expert rows (:func:`expert_rows_bytes_per_token`),
    from :data:`RUN5`'s profiled DeepSeek-V2-Lite prefills (6 points, 2,048-8,192 tokens): those bytes over the GPU
    time of every ATen operation on the expert rows (the ``tokens x k`` rows, and the ``tokens x k x hidden`` sum)
    other than the grouped matmuls. PyTorch runs most of them through its non-vectorised element-wise kernel (a
    broadcast mask or routing weight, a strided half, a dtype change): about half the card's read rate."""
    import re
    model = arch_model("dsv2lite_8l", RUN4)
    k, h = model.experts_per_token, model.hidden
    moved = secs = 0.0
    for p in _serve5("mla")["prefill"]:
        if "profile" not in p:
            continue
        t = int(p["batch"]) * int(p["prompt"])
        for o in p["profile"]["ops"]:
            m = re.match(r"\[\[(\d+)", o["shapes"])
            if o["op"] != "aten::_grouped_mm" and ((m and int(m.group(1)) == t * k)
                                                   or o["shapes"].startswith(f"[[{t}, {k}, {h}]")):
                secs += float(o["self_device_us"]) * 1e-6
        moved += expert_rows_bytes_per_token(model) * t * model.n_moe_layers
    return moved / secs


def predict_hf_prefill(arch: str, batch: int, prompt: int, run: str = RUN, host_s: float | None = None) -> Prefill:
    """One eager prefill of ``batch`` prompts of ``prompt`` tokens in transformers 5.17 (``logits_to_keep=1``):
    matmuls ``2 N`` per token at the card's matmul rate (the output projection for one token per prompt);
    attention per layer at the rate the kernel probe measured (:func:`mlcalc.serving.sdpa_prefill_s`) for the
    way transformers calls SDPA: no mask and ``is_causal`` (flash) when the layer attends to the whole prompt,
    a boolean mask (memory-efficient kernel, every block computed) when a sliding window is shorter than the
    prompt; the element-wise passes (norms, rotary, activations, casts, cache writes: counted bytes,
    :func:`elementwise_bytes_per_token`) at the card's read rate. The GPU parts run one after another; the host
    launches them meanwhile, so the step is the longer of the two."""
    model = arch_model(arch, run)
    b, p = _check.positive_int("batch", batch), _check.positive_int("prompt", prompt)
    rate, bw = matmul_rate(run), read_bandwidth(run)
    head = model.vocab * model.hidden
    body = model.n_active_params() - model.params_breakdown()["embeddings"] - (0 if model.tied_embeddings else head)
    mm = (2.0 * body * b * p + 2.0 * head * b) / rate
    if model.is_moe:  # the routed experts run as transformers' grouped matmul, at its probed rate for these rows
        routed = model.n_moe_layers * model.experts_per_token * model.mlp_params_per_expert()
        mm += 2.0 * routed * b * p * (1.0 / grouped_prefill_rate(model, b * p) - 1.0 / rate)
    lay = memory.kv_layout(model)
    att = 0.0
    for local, n in ((False, lay.global_layers), (True, lay.local_layers)):
        if n:
            how = "mask" if local and p > lay.window else "causal"
            att += n * serving.sdpa_prefill_s(how, b, model.n_heads, p, model.qk_head_dim, model.v_dim)
    el = elementwise_bytes_per_token(arch) * b * p * model.n_layers / bw
    if model.is_moe:  # the expert rows' element-wise passes at their kernels' rate (carried to this card's reads)
        rows = expert_rows_bytes_per_token(model) * b * p * model.n_moe_layers
        el += rows * (run5_read_bandwidth() / (expert_rows_rate() * bw) - 1.0 / bw)
    fl = arch_floor(arch, "eager", run, host_s)
    host = fl.fixed_s + model.n_layers * fl.per_layer_s
    gpu = mm + att + el
    return Prefill(mm, att, el, host, max(gpu, host), "launch floor" if host > gpu else "compute")


def check_hf_prefill(run: str = RUN) -> list[MeasuredCheck]:
    """Every transformers prefill point (eager) against :func:`mlcalc.serving.predict_prefill` at the card's
    matmul rate, or the eager floor of the whole model when that is longer (a prefill is one forward)."""
    out = []
    for arch in ARCHS:
        rec = run_data(run)["archs"].get(arch)
        if rec is None:
            continue
        for pt in rec["prefill"]:
            if "prefill_s" not in pt:
                continue
            b, p = int(pt["batch"]), int(pt["prompt"])
            pr = predict_hf_prefill(arch, b, p, run, point_host_s(pt.get("timing", {})))
            m = float(pt["prefill_s"])
            out.append(MeasuredCheck("prefill", arch, "eager", b, p, 1, m, pr.total_s, pr.total_s / m - 1.0,
                                     TARGET["eager"], pr.bound, card(run)))
    return out


def tp_model(name: str) -> memory.ModelConfig:
    """The tensor-parallel engine's two shapes (scripts/gpu/serve_engine.py CFGS)."""
    _check.choice("model", name, ("llama8b", "llama70b_20l"))
    if name == "llama8b":
        return memory.model_preset("Llama-3 8B").replace(name="Llama 3 8B shape")
    return memory.model_preset("Llama-3 70B").replace(name="Llama 3 70B shape, 20 of 80 layers", n_layers=20)


#: Operations per decoder layer that launch a kernel (ATen operations less views), one decode step, counted on the
#: CPU with a TorchDispatchMode (difference of an 8- and a 2-layer model, transformers 5.17, PyTorch 2.13):
#: the plain-PyTorch engine (scripts/gpu/serve_engine.py) 41, transformers' Llama layer 43. The GPU profiler in the
#: run counted 48 kernels per Llama layer ((417 - 129) / 6).
ENGINE_OPS_PER_LAYER = 41
HF_LLAMA_OPS_PER_LAYER = 43


def engine_layer_floor_s(run: str = RUN) -> float:
    """GPU seconds per layer of the engine's kernels when they do almost nothing: the replayed tiny Llama layer of
    the same call (:func:`arch_floor`, "graph") scaled by the engine's operation count over transformers'."""
    return arch_floor("llama8b", "graph", run).per_layer_s * ENGINE_OPS_PER_LAYER / HF_LLAMA_OPS_PER_LAYER




class EngineAttentionLaw(NamedTuple):
    """The plain engine's decode attention call (PyTorch's memory-efficient SDPA: the ``g`` query heads of a KV head
    as ``g`` query rows, a boolean mask over the allocated cache): one thread block per (sequence, KV head) streams
    its ``L`` keys in order, at most one block per SM at a time, so the call takes ``fixed_s + waves x L x
    per_key_s`` with ``waves = ceil(batch x kv_heads / SMs)``, and no less than the cache bytes at the read rate.
    Fitted (least squares, two numbers) over every engine shape of the kernel probe (KV heads 2-8 per GPU, 4 or 8
    query rows, batch 1-128, caches of 1,024-8,192)."""

    fixed_s: float
    per_key_s: float
    sms: int
    source: str


@lru_cache(maxsize=None)
def engine_attention_law(run: str = ATTN_RUN) -> EngineAttentionLaw:
    """:class:`EngineAttentionLaw` from the kernel probe of ``run`` (``decode_attention``, kind "engine")."""
    pts = [r for probe in _kernel_probes(run) for r in probe["decode_attention"]
           if r.get("kind") == "engine" and "s" in r]
    if len(pts) < 2:
        raise ValueError(f"run={run!r} is not allowed: its kernel probe has no engine attention points")
    xs = [(-(-int(r["batch"]) * int(r["kv_heads"]) // HOPPER_SMS)) * float(r["length"]) for r in pts]
    ys = [float(r["s"]) for r in pts]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return EngineAttentionLaw(max(0.0, my - slope * mx), slope, HOPPER_SMS,
                              f"decode attention as the engine calls it, {len(pts)} shapes, {card(run)} (run {run})")


def engine_attention_s(batch: int, kv_heads: int, length: int, kv_bytes: float, read_bytes_per_s: float,
                       run: str = ATTN_RUN) -> float:
    """Seconds of one engine attention call (:class:`EngineAttentionLaw`) over ``length`` cached positions of
    ``batch`` sequences with ``kv_heads`` KV heads on this GPU; never less than ``kv_bytes`` at the read rate."""
    law = engine_attention_law(run)
    b, h = _check.positive_int("batch", batch), _check.positive_int("kv_heads", kv_heads)
    n = _check.positive_int("length", length)
    waves = -(-b * h // law.sms)
    return max(law.fixed_s + waves * n * law.per_key_s,
               _check.non_negative("kv_bytes", kv_bytes) / _check.positive("read_bytes_per_s", read_bytes_per_s))


def graph_allreduce_s(tp: int, nbytes: float, run: str = RUN) -> float:
    """Seconds of one all-reduce of ``nbytes`` over ``tp`` GPUs inside a CUDA graph, as the same call measured it
    (tp.json ``allreduce``: decode-sized messages, 20 in one graph), linear in the bytes between the measured sizes
    (held at the ends)."""
    t = _check.positive_int("tp", tp)
    b = _check.non_negative("nbytes", nbytes)
    pts = sorted((float(p["bytes"]), float(p["graph_s"])) for p in run_data(run)["tp"].get("allreduce", ())
                 if int(p["tp"]) == t and "graph_s" in p)
    if not pts:
        raise ValueError(f"tp={tp!r} is not allowed: run {run} measured all-reduces over "
                         f"{sorted({int(p['tp']) for p in run_data(run)['tp'].get('allreduce', ())})} GPUs")
    return serving.interpolate(pts, b)


@lru_cache(maxsize=None)
def _serve5(section: str) -> Mapping[str, Any]:
    """One file of :data:`RUN5` (``serve5_<section>.json``: machine, matmul, engine, mla) or of :data:`RUN5B`
    ("small")."""
    _check.choice("section", section, ("machine", "matmul", "engine", "mla", "small"))
    return MappingProxyType(_read(f"serve5_{section}.json", RUN5B if section == "small" else RUN5))


def engine_small_kernels_s(model: memory.ModelConfig, batch: int, tp: int = 1) -> float:
    """GPU seconds per layer of the engine's kernels that are neither weight matmuls nor attention (RMS norms in
    fp32, rotary, the cache writes, the gate's SiLU and product, residual adds) at full width on one GPU of ``tp``,
    as :data:`RUN5B` timed them: the engine's layer with its matmuls and attention replaced by ready tensors, replayed
    from a CUDA graph at 2 and 8 layers (the difference over 6). Linear on log2 of the batch between the probed
    batches (1-128), held at the ends. They grow with the batch (Llama 3 70B's layer: 61 us at 1 row, 124 at 128),
    where the tiny model's replayed layer (width 64) gives one figure for all.

    >>> round(engine_small_kernels_s(tp_model("llama70b_20l"), 128) * 1e6)
    124
    """
    t = _check.positive_int("tp", tp)
    pts = sorted((math.log2(int(p["batch"])), float(p["per_layer_s"])) for p in _serve5("small")["points"]
                 if "per_layer_s" in p and int(p["hidden"]) == model.hidden and int(p["tp_shard"]) == t
                 and int(p["ffn"]) == model.ffn_hidden // t)
    if not pts:
        raise ValueError(f"model={model.name!r} at tp={tp!r} is not allowed: run {RUN5B} probed the engine's "
                         "Llama 3 8B and 70B layers at tp 1, 2 and 4")
    return serving.interpolate(pts, math.log2(_check.positive_int("batch", batch)))


def run5_read_bandwidth() -> float:
    """Bytes/s of :data:`RUN5`'s 4 GiB bf16 reduction (the same probe as every run's)."""
    return float(_serve5("machine")["read_bandwidth"]["bytes_per_s"])


def run5_matmul_rate() -> float:
    """FLOP/s of :data:`RUN5`'s 8192^3 bf16 matmul."""
    return float(_serve5("machine")["matmul"]["flops_per_s"])


@lru_cache(maxsize=None)
def _engine_matmul_points(layout: str = "hw") -> Mapping[tuple[int, int], tuple[tuple[float, float], ...]]:
    """{(k, n): ((log2 batch, seconds), ...)} of :data:`RUN5`'s matmul probe in ``layout``."""
    pts: dict[tuple[int, int], list[tuple[float, float]]] = {}
    for r in _serve5("matmul")["points"]:
        if r.get("layout") == layout and "s" in r:
            pts.setdefault((int(r["k"]), int(r["n"])), []).append((math.log2(int(r["batch"])), float(r["s"])))
    return MappingProxyType({key: tuple(sorted(v)) for key, v in pts.items()})


def engine_matmul_s(k: int, n: int, batch: int, read_bytes_per_s: float | None = None, layout: str = "hw") -> float:
    """Seconds of one of the plain engine's decode matmuls as :data:`RUN5` timed it: ``x @ W``, ``x`` of ``batch``
    rows, ``W`` of ``k`` inputs by ``n`` outputs stored (in, out) as scripts/gpu/serve_engine.py stores it (``layout``
    "linear": ``F.linear`` with ``W`` stored (out, in)), many distinct copies replayed from one CUDA graph. Linear in
    seconds on log2 of the batch between the probed batches (1, 8, 32, 64, 128), held at the ends; on a card whose
    large reads reach ``read_bytes_per_s``, scaled by the probe card's rate over it.

    cuBLAS picks its kernel by shape and layout: at 128 rows the engine's fused gate-and-up matrix of Llama 3 70B
    (8,192 x 57,344, 940 MB) runs ``x @ W`` at 2.4 TB/s, ``F.linear`` at 3.7 TB/s, the decode-matmul law (probed
    with ``F.linear``, :func:`mlcalc.serving.measured_matmul_law`) says 3.9:

    >>> round(engine_matmul_s(8192, 57344, 128) * 1e6), round(engine_matmul_s(8192, 57344, 128, layout="linear") * 1e6)
    (393, 254)
    """
    _check.choice("layout", layout, ("hw", "linear"))
    pts = _engine_matmul_points(layout).get((_check.positive_int("k", k), _check.positive_int("n", n)))
    if not pts:
        raise ValueError(f"(k, n)={(k, n)!r} is not allowed: run {RUN5} probed "
                         f"{sorted(_engine_matmul_points(layout))}")
    s = serving.interpolate(pts, math.log2(_check.positive_int("batch", batch)))
    if read_bytes_per_s is None:
        return s
    return s * run5_read_bandwidth() / _check.positive("read_bytes_per_s", read_bytes_per_s)


def engine_layer_matmul_s(model: memory.ModelConfig, batch: int, tp: int = 1,
                          read_bytes_per_s: float | None = None) -> float:
    """Seconds of one engine layer's four weight-reading matmuls on one GPU of ``tp`` (:func:`engine_matmul_s`):
    the fused QKV (hidden x (heads + 2 KV heads) x head_dim / tp), the output projection, the fused gate-and-up
    (hidden x 2 ffn / tp) and the down projection (ffn / tp x hidden)."""
    t = _check.positive_int("tp", tp)
    h, hd = model.hidden, model.head_dim
    shapes = ((h, (model.n_heads + 2 * model.n_kv_heads) * hd // t), (model.n_heads * hd // t, h),
              (h, 2 * model.ffn_hidden // t), (model.ffn_hidden // t, h))
    return sum(engine_matmul_s(k, n, batch, read_bytes_per_s) for k, n in shapes)


def predict_engine(model: memory.ModelConfig, batch: int, context: int, tp: int = 1, run: str = RUN,
                   read_bytes_per_s: float | None = None, matmul_flops: float | None = None,
                   allreduce: bool = True) -> serving.DecodeStep:
    """The engine's CUDA-graph decode step: :func:`mlcalc.serving.decode_step` with the engine's attention call
    over the allocated cache (:func:`engine_attention_s`), its matmuls as the engine runs them
    (:func:`engine_layer_matmul_s`: ``x @ W`` as probed, at this card's read rate), the card's bandwidth and matmul
    rate (``run``'s probes unless given), the engine's other kernels per layer at full width
    (:func:`engine_small_kernels_s`, unfused: it is no production engine) and the tensor-parallel all-reduces, two per layer, each as the same call
    measured it inside a CUDA graph (:func:`graph_allreduce_s`; ``allreduce`` False: one GPU's shard of the step
    without them)."""
    law = matmul_law(run)
    bw = read_bandwidth(run) if read_bytes_per_s is None else read_bytes_per_s
    if read_bytes_per_s is not None:
        law = law.on_card(bw)
    rate = matmul_rate(run) if matmul_flops is None else matmul_flops
    kvh = max(1, model.n_kv_heads // tp)
    kv = serving.sequence_kv_bytes(model, context) / model.n_layers * batch / serving.kv_split(model, tp)
    comm = (2 * model.n_layers * graph_allreduce_s(tp, batch * model.hidden * 2.0, run)
            if tp > 1 and allreduce else 0.0)
    return serving.decode_step(model, batch, context, bw, rate, tp, None, None,
                               tp_allreduce_s=comm,
                               small_kernels_s=engine_small_kernels_s(model, batch, tp),
                               matmul_law=law, fused=True,
                               attention_s=engine_attention_s(batch, kvh, context, kv, bw),
                               matmul_layer_s=engine_layer_matmul_s(model, batch, tp, bw))


def check_tp_decode(run: str = RUN) -> list[MeasuredCheck]:
    """The engine's CUDA-graph decode on 1 and 2 GPUs against :func:`predict_engine`."""
    out = []
    for pt in run_data(run)["tp"]["decode"]:
        if "graph_s" not in pt:
            continue
        d = predict_engine(tp_model(pt["model"]), int(pt["batch"]), int(pt["context"]), int(pt["tp"]), run)
        m = float(pt["graph_s"])
        out.append(MeasuredCheck("decode", pt["model"], "graph", int(pt["batch"]), int(pt["context"]), int(pt["tp"]),
                                 m, d.step_s, d.step_s / m - 1.0, TARGET["graph"], d.bound, card(run), "serve_engine"))
    return out


def check_run5_decode() -> list[MeasuredCheck]:
    """:data:`RUN5`'s engine decode steps (one H200, replayed from a CUDA graph): tp 1, and one GPU's shard of the
    tp 2 / tp 4 layouts (``tp`` names the layout; the step of one rank without its all-reduces, ``engine``
    "serve_engine shard") against :func:`predict_engine` at that call's read and matmul rates. That call ran no tiny
    model, so the engine's small-kernel floor is the previous H200 call's (:data:`RUN4`; the replayed 32-layer floor
    probe read 2.0-2.5 ms in each of the three H200 calls)."""
    out = []
    bw, rate = run5_read_bandwidth(), run5_matmul_rate()
    for pt in _serve5("engine")["decode"]:
        if "graph_s" not in pt:
            continue
        tp = int(pt["tp_shard"])
        d = predict_engine(tp_model(pt["model"]), int(pt["batch"]), int(pt["context"]), tp, RUN4, bw, rate,
                           allreduce=False)
        m = float(pt["graph_s"])
        out.append(MeasuredCheck("decode", pt["model"], "graph", int(pt["batch"]), int(pt["context"]), tp, m,
                                 d.step_s, d.step_s / m - 1.0, TARGET["graph"], d.bound,
                                 str(_serve5("engine")["env"]["device_name"]),
                                 "serve_engine" if tp == 1 else "serve_engine shard"))
    return out


class LoadRun(NamedTuple):
    """One request rate of the continuous-batching load test, as measured."""

    rate: float  # requests/s offered (Poisson)
    n_requests: int
    n_finished: int
    output_tokens_per_s: float  # finished requests' output tokens / elapsed
    ttft_p50_s: float
    ttft_p99_s: float
    tpot_p50_s: float
    tpot_p99_s: float


def load_runs(run: str = RUN) -> list[LoadRun]:
    """The load test's rates with their percentiles (see the run's ``load_gpu*.json`` for every request)."""
    out = []
    for r in run_data(run)["load"]["runs"]:
        if "error" in r:
            continue
        out.append(LoadRun(float(r["rate"]), int(r["n_requests"]), int(r["n_finished"]),
                           float(r["output_tokens"]) / float(r["elapsed_s"]), float(r["ttft_p50_s"]),
                           float(r["ttft_p99_s"]), float(r["tpot_p50_s"]), float(r["tpot_p99_s"])))
    return out


def check_load_steps(run: str = RUN) -> list[MeasuredCheck]:
    """The load test's decode iterations: per batch bucket, the median measured step against the engine's step
    (:func:`predict_engine` at the engine's allocated cache length, which every step reads whole)."""
    load = run_data(run)["load"]
    if load is None:  # a run without the load test
        return []
    steps: dict[int, list[float]] = {}
    for r in load["runs"]:
        for it in r.get("iterations", ()):
            if "decode_s" in it:
                steps.setdefault(int(it["decode_bucket"]), []).append(float(it["decode_s"]))
    model = tp_model("llama8b")
    out = []
    for b in sorted(steps):
        if len(steps[b]) < 5:
            continue
        m = statistics.median(steps[b])
        d = predict_engine(model, b, int(load["max_len"]), 1, run)
        out.append(MeasuredCheck("decode", "llama8b", "graph", b, int(load["max_len"]), 1, m, d.step_s,
                                 d.step_s / m - 1.0, TARGET["graph"], d.bound, card(run), "serve_engine"))
    return out


class LoadCheck(NamedTuple):
    """One load-test rate: measured percentiles next to :func:`mlcalc.serving.simulate_replica` on the same arrivals."""

    rate: float
    measured: LoadRun
    simulated: Any  # mlcalc.serving.LoadResult
    ttft_p50_error: float  # simulated / measured - 1
    tpot_p50_error: float


def load_step_model(run: str = RUN) -> serving.StepModel:
    """The load test's engine as :class:`mlcalc.serving.StepModel`: a decode step per batch from
    :func:`predict_engine` at the allocated cache (every step reads it whole, so nothing per cached token), a
    prefill of ``2 N`` FLOPs per token at the card's matmul rate but no shorter than the eager floor of the whole
    model (each prompt is prefilled eagerly; the tiny model's floor, :func:`arch_floor`)."""
    load = run_data(run)["load"]
    model = tp_model("llama8b")
    slots, max_len = int(load["slots"]), int(load["max_len"])
    batches = tuple(2 ** k for k in range(slots.bit_length()) if 2 ** k <= slots)
    base = tuple(predict_engine(model, b, max_len, 1, run).step_s for b in batches)
    fl = arch_floor("llama8b", "eager", run)
    rate = matmul_rate(run)
    return serving.StepModel(batches, base, 0.0, 2.0 * model.n_active_params() / rate,
                             2.0 * model.n_heads * (model.qk_head_dim + model.v_dim) * model.n_layers / rate,
                             fl.fixed_s + model.n_layers * fl.per_layer_s, slots * max_len, 1.0)


def check_load_simulation(run: str = RUN) -> list[LoadCheck]:
    """Each rate's recorded arrivals (time, prompt, output; :func:`mlcalc.serving.trace_requests`) replayed through
    :func:`mlcalc.serving.simulate_replica` with :func:`load_step_model`, the engine's 64 slots and its at most 4
    prompts prefilled per iteration."""
    st = load_step_model(run)
    return _replay_load(run, lambda rate: st)


def _replay_load(run: str, step_model: Callable[[float], serving.StepModel]) -> list[LoadCheck]:
    """Each rate's recorded arrivals replayed through :func:`mlcalc.serving.simulate_replica` with
    ``step_model(rate)``, the engine's slots and its prompts prefilled per iteration, beside what was measured."""
    load = run_data(run)["load"]
    slots, max_prefills = int(load["slots"]), int(load["max_prefill_per_iteration"])
    measured = {r.rate: r for r in load_runs(run)}
    out = []
    for r in load["runs"]:
        if "error" in r:
            continue
        reqs = serving.trace_requests([(float(q["arrival"]), int(q["in"]), int(q["out"])) for q in r["requests"]])
        sim = serving.simulate_replica(step_model(float(r["rate"])), reqs, max_batch=slots, max_prefills=max_prefills)
        m = measured[float(r["rate"])]
        out.append(LoadCheck(m.rate, m, sim, sim.ttft_p50_s / m.ttft_p50_s - 1.0, sim.tpot_p50_s / m.tpot_p50_s - 1.0))
    return out


def measured_step_model(rate: float, run: str = RUN) -> serving.StepModel:
    """The load test's engine as :class:`mlcalc.serving.StepModel` from the run's own iteration trace at ``rate``:
    the median decode step of each batch bucket, the median prefill time per prompt token (each prompt is
    prefilled alone, so ``k`` prompts cost ``k`` times one). Its use is to check the scheduler's arithmetic apart
    from the step model: it takes measured parts, never the percentiles it is checked on."""
    load = run_data(run)["load"]
    r = next((x for x in load["runs"] if float(x["rate"]) == float(rate) and "error" not in x), None)
    if r is None:
        raise ValueError(f"rate={rate!r} is not allowed: the run measured {[x['rate'] for x in load['runs']]}")
    slots = int(load["slots"])
    batches = tuple(2 ** k for k in range(slots.bit_length()) if 2 ** k <= slots)
    dec: dict[int, list[float]] = {}
    for it in r["iterations"]:
        if "decode_s" in it:
            dec.setdefault(int(it["decode_bucket"]), []).append(float(it["decode_s"]))
    base = tuple(statistics.median(dec[min(dec, key=lambda x: (abs(x - b), x))]) for b in batches)
    per_tok = statistics.median(float(it["prefill_s"]) / int(it["prefill_tokens"]) for it in r["iterations"]
                                if it["n_prefill"])
    return serving.StepModel(batches, base, 0.0, per_tok, 0.0, 0.0, slots * int(load["max_len"]), 1.0)


def check_load_scheduler(run: str = RUN) -> list[LoadCheck]:
    """:func:`check_load_simulation` with :func:`measured_step_model`: the scheduler alone."""
    return _replay_load(run, lambda rate: measured_step_model(rate, run))


#: Why the simulation of the load test misses (measured in the run: ``load_gpu1.json``'s iterations).
LOAD_MISS_CAUSE = ("each prompt's eager prefill took 22-72 ms (median per rate, longest at the lightest load) against "
                   "the 31 ms eager floor the step model takes, and every prefill pauses decoding for that long; the "
                   "decode steps themselves are predicted within 20 % (check_load_steps: -8..-13 %)")


def all_checks(run: str = RUN) -> list[MeasuredCheck]:
    """Every measured point of the run that has a prediction."""
    return check_hf_decode(run) + check_hf_prefill(run) + check_tp_decode(run) + check_load_steps(run)


def op_counts(arch: str, run: str = RUN) -> tuple[float, float]:
    """ATen operations (views included) one eager decode step of ``arch`` dispatches: (outside the layers, per
    layer), counted with a dispatch mode on the run's tiny 2- and 8-layer models (batch 1, cache 64; the per-layer
    count is their difference over 6). The count is the program's, not the host's: transformers 5.17 dispatches the
    same sequence on the CPU (scripts/gpu/count_eager_ops.py counts 182 / 560 for the Llama class, 307 / 965 for
    Gemma 3, 248 / 962 for DeepSeek-V2-Lite, as every GPU call recorded)."""
    t = {int(x["n_layers"]): x for x in run_data(run)["archs"][arch]["tiny"]}
    per = (int(t[8]["aten_ops"]) - int(t[2]["aten_ops"])) / 6.0
    return int(t[2]["aten_ops"]) - 2.0 * per, per


def step_ops(arch: str, run: str = RUN) -> float:
    """ATen operations of one eager decode step of the measured model (:func:`op_counts` over its layers)."""
    out, per = op_counts(arch, run)
    return out + per * int(run_data(run)["archs"][arch]["config"]["num_hidden_layers"])


class HostEvidence(NamedTuple):
    """What a floor-bound eager point shows about the host: microseconds per dispatched operation of the step, of
    the call's 32-layer floor probes and of the tiny models that set the architecture's floor."""

    ops: float  # ATen operations of the step (:func:`step_ops`)
    step_us_per_op: float  # the measured step over them
    probe_us_per_op: tuple[float, float]  # the call's 32-layer probes (start and end of each process): least, most
    tiny_us_per_op: tuple[float, float]  # the architecture's 2- and 8-layer tiny models, as timed in this call
    graph_share: float  # the same step replayed from a CUDA graph over the eager step (0 if not replayed)


def host_evidence(c: MeasuredCheck, run: str = RUN) -> HostEvidence:
    """:class:`HostEvidence` of an eager decode point of ``run``."""
    rec = run_data(run)["archs"][c.arch]
    t = {int(x["n_layers"]): x for x in rec["tiny"]}
    probes = [float(x["eager_s"]) / float(x["aten_ops"]) for p in run_data(run)["probes"]
              for x in p["probe"]["tiny_llama"] if int(x["n_layers"]) == 32]
    pt = next(p for p in rec["decode"] if (int(p["batch"]), int(p["context"])) == (c.batch, c.context))
    n = step_ops(c.arch, run)
    tiny2, tiny8 = (float(t[k]["eager_s"]) / int(t[k]["aten_ops"]) * 1e6 for k in (2, 8))
    return HostEvidence(n, c.measured_s / n * 1e6, (min(probes) * 1e6, max(probes) * 1e6), (tiny2, tiny8),
                        float(pt.get("graph_s", 0.0)) / c.measured_s)


def _point_record(c: MeasuredCheck, run: str) -> Mapping[str, Any]:
    """The run's record of a transformers point (decode or prefill)."""
    rec = run_data(run)["archs"][c.arch]
    if c.what == "decode":
        return next(p for p in rec["decode"] if (int(p["batch"]), int(p["context"])) == (c.batch, c.context))
    return next(p for p in rec["prefill"] if (int(p["batch"]), int(p["prompt"])) == (c.batch, c.context))


@lru_cache(maxsize=None)
def _hf_checks(run: str) -> tuple[MeasuredCheck, ...]:
    return tuple(check_hf_decode(run) + check_hf_prefill(run))


def measured_again(c: MeasuredCheck, run: str = RUN7) -> MeasuredCheck | None:
    """The same transformers point (architecture, decode or prefill, path, batch, context) as ``run`` measured it
    (:data:`RUN7` or :data:`RUN8`: each timing group next to the host probe); None where that call did not measure it."""
    _check.choice("run", run, (RUN7, RUN8))
    return next((x for x in _hf_checks(run) if (x.what, x.arch, x.path, x.batch, x.context)
                 == (c.what, c.arch, c.path, c.batch, c.context)), None)


def eager_checks(what: str) -> list[MeasuredCheck]:
    """The eager record of ``what`` ("decode" or "prefill"): every such point of :data:`EAGER_RUN`."""
    _check.choice("what", what, ("decode", "prefill"))
    return [c for c in _hf_checks(EAGER_RUN) if c.what == what and c.path == "eager"]


class EagerScore(NamedTuple):
    """One run's eager points, scored against their own tolerance."""

    run: str
    card: str
    protocol: str  # how it measured the host beside the points (:data:`EAGER_PROTOCOL`)
    decode_within: int
    decode_n: int
    prefill_within: int
    prefill_n: int
    record: bool  # the eager record (:data:`EAGER_RUN`); the others are history


def eager_scores() -> tuple[EagerScore, ...]:
    """Every run's eager decode and prefill points, within their tolerance, run by run: the history and the record."""
    out = []
    for run in RUNS:
        cs = [c for c in _hf_checks(run) if c.path == "eager"]
        d = [c for c in cs if c.what == "decode"]
        p = [c for c in cs if c.what == "prefill"]
        out.append(EagerScore(run, card(run), EAGER_PROTOCOL[run], sum(abs(c.error) <= c.target for c in d), len(d),
                              sum(abs(c.error) <= c.target for c in p), len(p), run == EAGER_RUN))
    return tuple(out)


class HostPace(NamedTuple):
    """One pinned process of the serve8 call: its vCPU's pace (runs per CPU second of ``pacemeter.work``) as the scan
    found it just before, and as the meter on that vCPU found it over the process; for the architecture processes, how
    the host probe beside the timing groups followed the meter (log probe time on log pace)."""

    process: str
    vcpu: int
    scan_chosen: float  # the chosen (fastest) vCPU's pace in the scan
    scan_slowest: float  # the slowest vCPU's pace in the same scan
    meter_p05: float
    meter_p50: float
    meter_p95: float
    probe_samples: int  # 0 for the floor-probe processes (no host probe beside groups)
    corr: float  # correlation of log(probe time) and log(pace); 0.0 without probe samples
    slope: float


def host_pace(run: str = RUN8) -> tuple[HostPace, ...]:
    """:class:`HostPace` of every pinned process of ``run`` (its ``pace_summary.json``, written by
    scripts/gpu/summary_serve8.py from the meter's lines)."""
    _check.choice("run", run, (RUN8,))
    d = _read("pace_summary.json", run)["processes"]
    return tuple(HostPace(k, int(v["vcpu"]), float(v["scan_chosen_runs_per_s"]), float(v["scan_slowest_runs_per_s"]),
                          float(v["meter_p05"]), float(v["meter_p50"]), float(v["meter_p95"]),
                          int(v.get("probe_samples", 0)), float(v.get("corr_log_probe_log_pace", 0.0)),
                          float(v.get("slope_log_probe_on_log_pace", 0.0))) for k, v in d.items())


def miss_cause(c: MeasuredCheck, run: str = RUN) -> str:
    """Why a point outside its tolerance misses, from what the run itself shows ("" for a point within it, and
    for a miss no stated cause covers). Each cause is a condition on the point, never a constant fitted to it."""
    if abs(c.error) <= c.target:
        return ""
    sp = floor_spread(run)
    again = measured_again(c) if run not in (RUN7, RUN8) and c.engine == "transformers" else None
    again_s = (f"; measured again in the serve7 call ({RUN7}) with the host probe next to every timing group: "
               f"{again.measured_s * 1e3:.1f} ms, predicted {again.error:+.0%}" if again else "")
    again8 = measured_again(c, RUN8) if run != RUN8 and c.engine == "transformers" else None
    again_s += (f"; and in the serve8 call ({RUN8}: every point, one protocol, pinned): {again8.measured_s * 1e3:.1f} "
                f"ms, predicted {again8.error:+.0%}" if again8 else "")
    if c.path == "eager" and c.bound == "launch floor":
        timing = _point_record(c, run).get("eager" if c.what == "decode" else "timing", {})
        g, pr = timing.get("groups_in_order_s"), timing.get("host_probe_s")
        if g and pr:  # the probe was timed next to every group: a cause only where the pace moved within the point
            spread = max(g) / min(g) - 1.0
            if spread > 2 * c.target:
                return (f"host pace moved within the point: its {len(g)} timing groups took {min(g) * 1e3:.1f} to "
                        f"{max(g) * 1e3:.1f} ms ({spread:.0%} apart) and the host probes next to them "
                        f"{min(pr) * 1e3:.1f} to {max(pr) * 1e3:.1f} ms; the median group and the probes' mean "
                        "(the prediction's host speed) need not share a pace" + again_s)
        elif abs(c.error) <= 2 * sp.spread:
            text = (f"host floor: the same 32-layer eager probe took {sp.min_s * 1e3:.1f} to {sp.max_s * 1e3:.1f} ms "
                    f"in this call ({sp.spread:.0%} spread); a floor-bound step moves with it (this call timed no "
                    "probe next to each point; the serve4 call did, and with the floor at that host speed all its "
                    "eager decode points fell within 25 %)")
            if c.what == "decode":
                e = host_evidence(c, run)
                text += (f". The step ran at {e.step_us_per_op:.1f} us per dispatched operation ({e.ops:,.0f} ATen "
                         f"operations, the count transformers dispatches on the CPU too), the call's probes at "
                         f"{e.probe_us_per_op[0]:.1f}-{e.probe_us_per_op[1]:.1f}, the tiny 2- and 8-layer models "
                         f"that set this architecture's floor at {e.tiny_us_per_op[0]:.1f} and "
                         f"{e.tiny_us_per_op[1]:.1f}")
            return text + again_s
    if c.what == "prefill" and c.error < 0 and arch_model(c.arch, run).is_moe:
        pr = predict_hf_prefill(c.arch, c.batch, c.context, run)
        gpu = pr.matmul_s + pr.attention_s + pr.elementwise_s
        if pr.host_s >= 0.8 * gpu:
            mla = [p for p in _serve5("mla")["prefill"] if c.arch == "dsv2lite_8l"
                   and (int(p["batch"]), int(p["prompt"])) == (c.batch, c.context) and "profile" in p]
            return (f"host and GPU about even: the GPU parts {gpu * 1e3:.1f} ms, the launch floor "
                    f"{pr.host_s * 1e3:.1f} ms at the call's tiny-model speed, while the same 32-layer probe moved "
                    f"{sp.spread:.0%} within the call and none was timed next to the point"
                    + (f"; run {RUN5} measured the same prefill at {float(mla[0]['prefill_s']) * 1e3:.1f} ms with "
                       f"the GPU busy {float(mla[0]['profile']['gpu_busy_us']) / 1e3:.1f} ms of it" if mla else "")
                    + again_s)
    return ""


@lru_cache(maxsize=None)
def engine_other_kernels_us() -> tuple[float, float, float]:
    """Microseconds a layer of the engine's GPU kernels that are neither matmuls (cuBLAS ``nvjet``) nor attention
    (cuDNN SDPA) in :data:`RUN5`'s profiled graph replays (every profiled step: (least, most)), and the figure the
    tiny model's replayed layer gives for them (:func:`engine_layer_floor_s` less the matmuls' empty kernels, RUN4),
    which the model charged before :data:`RUN5B` probed them at full width (:func:`engine_small_kernels_s`)."""
    per = []
    for pt in _serve5("engine")["decode"]:
        prof = pt.get("profile_graph")
        if not prof:
            continue
        other = sum(float(k["us"]) for k in prof["kernels"]
                    if not str(k["kernel"]).startswith(("nvjet", "cudnn", "void cublasLt")))
        per.append(other / int(pt["cfg"]["layers"]))
    model = tp_model("llama8b")
    law = matmul_law(RUN4)
    n = serving.kernel_weight_s(model, 1, law, True, 1)[1]
    return min(per), max(per), (engine_layer_floor_s(RUN4) - n * law.empty_s) * 1e6


# --------------------------------------------------------------------------------------- published results

@lru_cache(maxsize=None)
def published() -> Mapping[str, Any]:
    """Published serving results (mlcalc/data/serving_published.json): each table with its source and conditions."""
    return MappingProxyType(json.loads(resources.files("mlcalc.data").joinpath("serving_published.json").read_text()))


class PublishedCheck(NamedTuple):
    """A published serving figure next to the prediction."""

    source: str  # key of the table in serving_published.json
    chip: str
    model: str
    gpus: int
    batch: int
    input: int
    output: int
    published: float  # output tokens/s per GPU
    predicted: float
    error: float  # predicted / published - 1
    cause: str  # why a point outside the tolerance misses, as its source explains ("" when none is stated)


#: How an engine release runs a mixture of experts: "routed", each token through its ``experts_per_token`` experts
#: (a grouped-matmul MoE kernel); "all-experts", every expert over every token, the outputs weighted by the router
#: (TensorRT-LLM 0.9.0's FP8 MoE, see :func:`moe_as_run`).
MOE_PATHS = ("routed", "all-experts")


def moe_as_run(model: memory.ModelConfig, moe_path: str = "routed") -> memory.ModelConfig:
    """``model`` as an engine's MoE path computes it. "all-experts": every token passes through all ``n_experts``
    experts (their FLOPs, their weights read every step), a dense model as wide as all the experts; "routed" (or a
    dense model): unchanged.

    TensorRT-LLM 0.9.0 (commit 250d9c2, the release whose performance.md gives the FP8 Mixtral rows) has two MoE
    paths. The MoE plugin (on by default: tensorrt_llm/plugin/plugin.py ``moe_plugin: str = "float16"``) builds a
    runner only for fp16, fp32 or bf16 experts or int8/int4 weight-only ones
    (cpp/tensorrt_llm/plugins/mixtureOfExperts/mixtureOfExpertsPlugin.cpp, ``init``; tensorrt_llm/layers/moe.py
    gives the experts the model's 16-bit dtype): no FP8. Without the plugin, tensorrt_llm/layers/moe.py builds each
    expert as a GatedMLP with the model's quantization (tensorrt_llm/layers/mlp.py: ``FP8Linear`` under FP8) and its
    ``forward`` runs ``out = expert(hidden_states)`` for every expert on every token, weighting each output by the
    router's top-k. Release 0.10.0's notes: "Added FP8 quantization support for Mixtral". So an FP8 table of 0.9.0
    ran its MoE rows through every expert (and its 128-token Mixtral first token, 13.4 ms on two H100s, is below
    the 13.5 ms that reading 16-bit experts alone takes at the datasheet's 3.35 TB/s: not the plugin's path).

    >>> m = moe_as_run(memory.model_preset("Mixtral 8x7B"), "all-experts")
    >>> m.experts_per_token, round(m.n_active_params() / 1e9, 1)
    (8, 46.7)
    """
    path = _check.choice("moe_path", moe_path, MOE_PATHS)
    if path == "routed" or not model.is_moe:
        return model
    return dataclasses.replace(model, experts_per_token=model.n_experts)


def engine_facts(table: Mapping[str, Any]) -> dict[str, Any]:
    """How the engine release behind a published table runs its models, where the table states it with its source,
    as keyword arguments of :func:`static_batch_latency_s` and :func:`mlcalc.serving.predict_prefill`:
    ``attention_dtype``, the dtype of the context (prefill) attention (``context_fmha_dtype``: TensorRT-LLM 0.9.0
    builds its FP8 context FMHA only with ``--use_fp8_context_fmha``, off by default and not in its performance
    page's build commands, so those FP8 engines ran the prompt's attention in 16-bit). A table that states nothing:
    none (the attention in the weights' dtype).

    Another fact of the same release is kept as a record, not charged:
    :func:`mlcalc.serving_record.trtllm_v090_moe_allreduces` (every expert all-reduced under tensor parallelism).

    >>> engine_facts(published()["first_token"]["trtllm-0.9.0-h100-fp8-ttft"])
    {'attention_dtype': 'fp16'}
    """
    kw: dict[str, Any] = {}
    if "context_fmha_dtype" in table:
        kw["attention_dtype"] = table["context_fmha_dtype"]
    return kw


def static_batch_tokens_per_s(model: memory.ModelConfig, chip_key: str, batch: int, tp: int, prompt: int,
                              output: int, dtype: str, **facts: Any) -> float:
    """Output tokens/s per GPU of a static batch (TensorRT-LLM's gptSessionBenchmark): the prefill of
    ``batch x prompt`` tokens, which samples every sequence's first token, then ``output - 1`` decode steps at the
    mean context prompt + output / 2 (decode time is linear in the context), each step
    :func:`mlcalc.serving.predict_decode` ("cuda-graph") with weights and KV in ``dtype``.

    TensorRT-LLM's ``GptSession::generateBatched`` (cpp/tensorrt_llm/runtime/gptSession.cpp, the runtime
    gptSessionBenchmark times) runs the context step and samples from its logits (``executeContextStep`` ends with
    ``decoderStepAsync``); each later ``executeGenerationStep`` first asks the decoder whether every sequence is done
    (``shouldStopSync``) and runs the engine only if not: ``output`` tokens take one context step and ``output - 1``
    generation steps (:func:`check_first_token`: one token is the context step alone). ``facts``: the engine's
    (:func:`engine_facts`), passed to :func:`static_batch_latency_s`."""
    b = _check.positive_int("batch", batch)
    o = _check.positive_int("output", output)
    return b * o / static_batch_latency_s(model, chip_key, b, tp, prompt, o, dtype, **facts) / tp


def static_batch_latency_s(model: memory.ModelConfig, chip_key: str, batch: int, tp: int, prompt: int, output: int,
                           dtype: str, moe_allreduces: int = 1, attention_dtype: str | None = None) -> float:
    """Seconds from the start of a static batch to its last token: the prefill of ``batch x prompt`` tokens (which
    gives every sequence its first token) and ``output - 1`` decode steps at the mean context prompt + output / 2,
    each :func:`mlcalc.serving.predict_decode` ("cuda-graph") with weights and KV in ``dtype``. The GPU's work only:
    no host time between steps. :func:`static_batch_tokens_per_s` is ``batch x output`` over it, per GPU.
    ``attention_dtype``: the engine's context attention (:func:`engine_facts`); ``moe_allreduces``: the all-reduces
    an MoE layer's feed-forward block makes (:func:`mlcalc.serving.comm_s`).

    >>> m = memory.model_preset("Llama-3 70B")
    >>> t = static_batch_latency_s(m, "H200-SXM", 8, 4, 32, 128, "bf16")
    >>> abs(t - 8 * 128 / static_batch_tokens_per_s(m, "H200-SXM", 8, 4, 32, 128, "bf16") / 4) < 1e-12 * t
    True
    """
    b = _check.positive_int("batch", batch)
    o = _check.positive_int("output", output)
    step = serving.predict_decode(model, chip_key, b, prompt + max(1, o // 2), "cuda-graph", tp,
                                  weight_dtype=dtype, kv_dtype=dtype, moe_allreduces=moe_allreduces).step_s
    pre = serving.predict_prefill(model, chip_key, b, prompt, "cuda-graph", tp, weight_dtype=dtype,
                                  moe_allreduces=moe_allreduces, attention_dtype=attention_dtype)
    return pre + (o - 1) * step


def check_published() -> list[PublishedCheck]:
    """Every throughput row of every published table against :func:`static_batch_tokens_per_s`."""
    out = []
    for key, table in published()["tables"].items():
        for r in table["rows"]:
            model = moe_as_run(memory.model_preset(r["model"]), table.get("moe_path", "routed"))
            pred = static_batch_tokens_per_s(model, table["chip"], int(r["batch"]), int(r["tp"]), int(r["input"]),
                                             int(r["output"]), table["dtype"], **engine_facts(table))
            pub = float(r["out_tokens_per_s_per_gpu"])
            out.append(PublishedCheck(key, table["chip"], r["model"], int(r["tp"]), int(r["batch"]), int(r["input"]),
                                      int(r["output"]), pub, pred, pred / pub - 1.0, r.get("cause", "")))
    return out


class FirstTokenCheck(NamedTuple):
    """A published first-token latency next to the prediction."""

    source: str
    chip: str
    model: str
    gpus: int
    input: int
    published_s: float
    predicted_s: float
    error: float  # predicted / published - 1
    cause: str


def check_first_token() -> list[FirstTokenCheck]:
    """Every published batch-1 first-token latency against :func:`mlcalc.serving.predict_prefill` ("cuda-graph",
    weights in the table's dtype): the context step alone, which samples the first token.

    The page measures it with gptSessionBenchmark and one output token (``--input_output_len "128,1"``); TensorRT-LLM's
    ``GptSession`` runs the context step, samples the first token from its logits, and its first generation step
    finds every sequence done (``shouldStopSync``) before it runs the engine (:func:`static_batch_tokens_per_s`).
    No decode step is in the time, as :func:`mlcalc.serving.simulate_replica`'s time to first token (arrival to the
    end of the prefill) has none."""
    out = []
    for key, table in published()["first_token"].items():
        for r in table["rows"]:
            model = moe_as_run(memory.model_preset(r["model"]), table.get("moe_path", "routed"))
            tp, p, dt = int(r["tp"]), int(r["input"]), table["dtype"]
            pred = serving.predict_prefill(model, table["chip"], 1, p, "cuda-graph", tp, weight_dtype=dt,
                                           **engine_facts(table))
            pub = float(r["ttft_ms"]) / 1e3
            out.append(FirstTokenCheck(key, table["chip"], r["model"], tp, p, pub, pred, pred / pub - 1.0,
                                       r.get("cause", "")))
    if any(abs(c.error) > 0.25 for c in out):  # what the engine's kernel launches can add (mlcalc.trtllm_host)
        from mlcalc import trtllm_host

        out = [c._replace(cause=c.cause.rstrip(". ") + "." + trtllm_host.first_token_note(c, out))
               if abs(c.error) > 0.25 else c for c in out]
    return out


# ------------------------------------------------------------------------------- FP8 matmuls on Hopper

def fp8_gemm_s(m: int, n: int, k: int, chip_key: str = "H100-SXM", groups: int = 1) -> float:
    """Seconds of an FP8 matmul of ``m x k`` by ``n x k`` (``groups`` of them, as a grouped MoE matmul runs):
    every byte it moves -- the FP8 weights ``n k`` and inputs ``m k``, the bf16 output ``2 m n`` -- at the card's
    read rate, plus its FLOPs ``2 m n k`` at the achievable FP8 matmul rate, one after the other (not overlapped).

    The roofline's ``max`` of the two is a bound no kernel beats; DeepGEMM's published H800 times (:func:`check_fp8_gemm`)
    sit near this sum from 64 to 8,192 rows: FP8 tensor cores finish a tile's math about as fast as its bytes
    arrive, so at these sizes little of one hides behind the other. DeepGEMM's 128 x 7,168 x 16,384 matmul takes
    46.6 us (645 TFLOPS); this law gives 64.2, the roofline 42.7; its CUTLASS 3.6 baseline took 1.4x DeepGEMM's:

    >>> round(fp8_gemm_s(128, 7168, 16384) * 1e6, 1)
    64.2
    """
    mm, nn, kk = _check.positive_int("m", m), _check.positive_int("n", n), _check.positive_int("k", k)
    g = _check.positive_int("groups", groups)
    moved = g * (nn * kk + mm * kk + 2.0 * mm * nn)
    return serving.matmul_s(moved, g * 2.0 * mm * nn * kk, serving.read_bandwidth(chip_key),
                            serving.matmul_rate(chip_key, "fp8"), overlap=False)


class GemmCheck(NamedTuple):
    """A published FP8 matmul time next to :func:`fp8_gemm_s` and the roofline bound."""

    layout: str  # "dense", "grouped contiguous", "grouped masked"
    groups: int
    m: int
    n: int
    k: int
    published_s: float  # DeepGEMM's time (2 m n k groups / its TFLOPS)
    baseline_s: float  # its CUTLASS 3.6-based baseline (DeepGEMM's time x the speedup)
    predicted_s: float  # :func:`fp8_gemm_s`
    roofline_s: float  # max(bytes / read rate, FLOPs / matmul rate): the bound
    error: float  # predicted / published - 1


def check_fp8_gemm() -> list[GemmCheck]:
    """DeepGEMM's published FP8 matmul table (serving_published.json "fp8_gemm") against :func:`fp8_gemm_s`."""
    t = published()["fp8_gemm"]
    chip_key = t["chip"]
    bw, rate = serving.read_bandwidth(chip_key), serving.matmul_rate(chip_key, "fp8")
    out = []
    for r in t["rows"]:
        g, m, n, k = int(r["groups"]), int(r["m"]), int(r["n"]), int(r["k"])
        flops = g * 2.0 * m * n * k
        pub = flops / (float(r["tflops"]) * 1e12)
        pred = fp8_gemm_s(m, n, k, chip_key, g)
        roof = serving.matmul_s(g * (n * k + m * k + 2.0 * m * n), flops, bw, rate)
        out.append(GemmCheck(r["layout"], g, m, n, k, pub, pub * float(r["speedup"]), pred, roof, pred / pub - 1.0))
    return out


# ------------------------------------------------------------------------ in-flight batching at maximum load

#: trtllm-bench's engine-size heuristic (tensorrt_llm/bench/build/tuning.py, ``finetune_setting``): the batch is
#: capped at 4,096 requests ("to avoid decoder buffer size becoming too large") and the tokens of one iteration at
#: 32,768 ("to avoid TRT activation buffer becoming too large"), at least 2,048.
TRTLLM_MAX_BATCH = 4096
TRTLLM_MAX_TOKENS = 32768
TRTLLM_MIN_TOKENS = 2048
#: ``--kv_cache_free_gpu_mem_fraction 0.95``: the share of the memory left beside the weights given to the KV
#: cache in "the majority of cases" of TensorRT-LLM's performance overview (v0.17).
TRTLLM_KV_FRACTION = 0.95
#: The dtypes an in-flight KV cache may be stored in (:func:`inflight`'s ``kv_dtype``): TensorRT-LLM's FP8 cache, or
#: the model's 16-bit dtype.
KV_DTYPES = ("fp8", "bf16", "fp16")
#: Where an in-flight run's KV-cache dtype comes from, in TensorRT-LLM's PyTorch backend.
KV_DTYPE_EVIDENCE = (
    "TensorRT-LLM's PyTorch backend stores the KV cache in FP8 only where the model's quantization config has an FP8 "
    "cache (KvCacheCreator._create_kv_cache_manager: quant_mode.has_fp8_kv_cache(), else the model's own dtype; "
    "tensorrt_llm/_torch/pyexecutor/_util.py as the code index stores it), and that config takes the checkpoint's "
    "hf_quant_config.json 'kv_cache_quant_algo' unless the options set kv_cache_config.dtype (KvCacheConfig's "
    "default 'auto'); the MoE and dense options files of the v1.0 page set none. NVIDIA's own accuracy test runs its "
    "Llama-3.1-8B-Instruct-FP8 copy both ways, adding KvCacheConfig(dtype='fp8') for the FP8-cache case "
    "(tests/integration/defs/accuracy/test_llm_api_pytorch.py, TestLlama3_1_8BInstruct.test_fp8 'fp8kv'), so an FP8 "
    "checkpoint alone does not imply an FP8 cache")


def moe_routing_bytes_per_token(model: memory.ModelConfig, in_bytes: float = 1.0, out_bytes: float = 2.0) -> float:
    """Bytes one token's MoE layers move on every GPU besides their matmuls, as TensorRT-LLM's MoE plugin runs
    them (cpp/tensorrt_llm/kernels/mixtureOfExperts/moe_kernels.cu, ``runMoe``): ``expandInputRowsKernelLauncher``
    reads the token's hidden state (``in_bytes`` a value: FP8 inputs) and writes one copy for each of the
    ``experts_per_token`` experts it visits, sorted by expert; after the second matmul wrote each visit's hidden-sized
    output (counted with the matmuls, :func:`mlcalc.serving.matmul_activation_bytes_per_token`),
    ``finalizeMoeRoutingKernelLauncher`` reads those ``k`` rows (``out_bytes``: bf16) and writes their weighted sum:
    ``(1 + k) (in_bytes + out_bytes) hidden`` a layer. Not split over tensor-parallel GPUs: with the experts
    tensor-parallel (TensorRT-LLM's default) "each GPU rank in the Tensor Parallel group receives all tokens'
    hidden states for all experts" (TensorRT-LLM docs, "Expert Parallelism in TensorRT-LLM"). 0 for a dense model.

    Mixtral 8x7B (hidden 4,096, 2 of 8 experts, 32 layers), FP8 inputs: 3 x 3 x 4,096 bytes a layer, 1.18 MB a token:

    >>> moe_routing_bytes_per_token(memory.model_preset("Mixtral 8x7B"))
    1179648.0
    """
    if not model.is_moe:
        return 0.0
    k = model.experts_per_token
    return float(model.n_moe_layers * (1 + k) * (in_bytes + out_bytes) * model.hidden)


#: The residual-add + RMSNorm pass is one rule of the serving model (:func:`mlcalc.serving.replicated_norm_bytes_per_token`),
#: counted in both the in-flight iteration here and :func:`mlcalc.serving.decode_step`'s engine layer.
RESIDUAL_NORM_BYTES_PER_VALUE = serving.RESIDUAL_NORM_BYTES_PER_VALUE
replicated_norm_bytes_per_token = serving.replicated_norm_bytes_per_token


class Inflight(NamedTuple):
    """One iteration of in-flight batching in steady state at maximum load, and the throughput it gives."""

    batch: int  # requests decoding together (KV room for prompt + output each, or the engine's caps)
    kv_tokens: int  # KV tokens the replica holds
    prefill_tokens: float  # prompt tokens the iteration carries: batch / output requests enter per iteration
    gemm_s: float  # the matmuls of every token of the iteration, product by product by the one law (inflight_gemm_s)
    attention_s: float  # decode attention: every running sequence's cache read once
    prefill_attention_s: float  # the new prompts' causal attention FLOPs
    comm_s: float  # collectives of every token of the iteration: TP all-reduces, or attention-DP gather/scatter
    routing_s: float  # MoE only: the expert layers' permute and un-permute passes, whole on every GPU (0 if dense)
    norm_s: float  # the residual adds and RMSNorms (whole on every GPU) and the other element-wise passes of every token
    iteration_s: float  # the sum: one forward pass runs its kernels one after another
    tokens_per_s: float  # output tokens/s of the replica: batch / iteration
    context_share: float = 1.0  # share of the iterations that carry prompts (1: every one, the prompts spread evenly);
    # below 1 (``uniform``) the terms above are the mean over a cycle of such iterations and ones that decode alone
    decode_rows: int = 0  # rows an iteration that decodes alone runs (CUDA-graph padding: cuda_graph_batch); 0: batch


def inflight(model: memory.ModelConfig, chip_key: str, tp: int, prompt: int, output: int, dtype: str = "fp8",
             kv_fraction: float = TRTLLM_KV_FRACTION, attention_dp: bool = False,
             caps: tuple[int, int] | None = None, requests: int | None = None,
             gemm_allreduce: bool = False, wide_share: float = 0.0, kv_dtype: str | None = None,
             uniform: bool = False, graph_batch_sizes: tuple[int, ...] = ()) -> Inflight:
    """In-flight (continuous) batching at maximum load, as ``trtllm-bench throughput`` runs it: every request
    queued at once, all of ``prompt`` tokens in and ``output`` out, the scheduler admitting a request only when KV
    room for its prompt and whole output is free ("Guaranteed No Evict").

    Steady state: ``B`` requests decode together, ``B`` = the KV tokens the replica holds (``kv_fraction`` of the
    memory beside the weights, as ``--kv_cache_free_gpu_mem_fraction`` sets it) over ``prompt + output``, capped
    by trtllm-bench's heuristic (:data:`TRTLLM_MAX_BATCH` requests, :data:`TRTLLM_MAX_TOKENS` tokens an
    iteration). Every request stays ``output`` iterations, so each iteration ``B / output`` requests leave and as
    many enter with their prompts: one forward pass carries ``B`` decode tokens and ``B x prompt / output`` prompt
    tokens (the context and generation phases batched together). Its kernels run one after another: the matmuls of
    all its tokens, product by product by one law for every dtype (:func:`inflight_gemm_s`: the longer of each
    product's bytes and its FLOPs at the card's sustained rate over its tile's useful share; the output projection
    only for the tokens that sample), the decode attention reading every running sequence's
    cache (mean context ``prompt + output / 2``), the prompts' causal attention FLOPs, the tensor-parallel
    all-reduces of all its tokens (:func:`mlcalc.serving.comm_s`), the residual adds and RMSNorms of all its tokens
    on every GPU (:func:`replicated_norm_bytes_per_token`) and the layers' other element-wise passes
    (:func:`inflight_elementwise_bytes_per_token`), and for an MoE model its routing passes
    (:func:`moe_routing_bytes_per_token`). Output tokens/s = ``B`` / iteration.

    ``caps``: ``(max_batch, max_tokens)`` as a deployment configured them (the most requests the engine schedules
    at once, the most tokens one iteration carries), in place of trtllm-bench's heuristic: ``B`` = the KV room's
    requests, at most ``max_batch`` and at most ``max_tokens / (1 + prompt / output)``. Not with ``attention_dp``.

    ``attention_dp`` (an MoE model, ``tp`` > 1; TensorRT-LLM's ``enable_attention_dp``): the ``tp`` GPUs are as many
    attention data-parallel ranks, each with its own requests and "its own KV cache" (NVIDIA Dynamo docs, "DP Rank
    Routing (Attention Data Parallelism)": attention DP size = tensor-parallel size) and its own scheduler (the caps
    apply per rank); each holds every weight but the experts, which are split over the ``tp`` GPUs (expert and
    tensor parallel together, each GPU ``1 / tp`` of them). Per GPU an iteration carries its own ``1 / tp`` of the
    tokens through attention, norms and the output projection (their weights read whole), reads its own
    sequences' caches whole (no KV head split, none repeated), and runs every token routed to its share of the
    experts; each MoE layer gathers all ranks' tokens before the experts and reduce-scatters their outputs after
    (:func:`mlcalc.serving.attention_dp_comm_s`: the hidden states gathered in the matmuls' input dtype with each
    token's routing, the bf16 outputs reduce-scattered), in place of the two all-reduces a layer of tensor
    parallelism. Weights and cache per GPU: :func:`mlcalc.serving.weight_params_per_gpu` (``tp=1, ep=tp``) and
    :func:`mlcalc.serving.kv_bytes_per_token_per_gpu` (``tp=1``). The ranks meet at every MoE layer, so the
    iteration is the fullest rank's: with ``requests`` not a multiple of ``tp``, ``ceil(requests / tp)`` requests.

    ``requests``: the requests the run's dataset holds (trtllm-bench queues them all at once): no scheduler runs more
    at once than there are, so ``B`` is at most ``requests`` (with ``attention_dp``, each rank at most its even share).
    None: as many as the caps allow (a steady state that never runs dry).

    ``gemm_allreduce``: the engine was built with TensorRT-LLM's GEMM + all-reduce fusion (``gemm_allreduce_plugin``),
    which runs each tensor-parallel all-reduce inside the row-parallel product before it: the all-reduces then cost
    only what they take beyond those products (:func:`inflight_comm_s`). Not with ``attention_dp``.

    ``wide_share``: the share of the layers' quantized weights a mixed-precision checkpoint keeps at 16 bits
    (:func:`inflight_gemm_s`; ModelOpt's ``auto_quantize`` under an ``effective_bits`` constraint picks which
    layers): those weights take 2 bytes each in memory. Not with ``attention_dp``.

    ``uniform``: every request of the run has the same prompt and output lengths (trtllm-bench's synthetic datasets,
    ``prepare_dataset.py token-norm-dist`` with stdev 0). Requests then enter in groups, whole prompts packed into an
    iteration up to its token budget (``caps[1]``, else trtllm-bench's ``max_num_tokens``,
    :func:`trtllm_bench_caps`): of every ``output`` iterations, :func:`context_iterations` carry the prompts and the
    others decode alone, and the throughput is the cycle's (``batch x output`` tokens over the sum of its
    iterations; the terms returned are the cycle's mean iteration). Without it the prompts are spread evenly over the
    iterations (lengths that vary, so that finishes, and entries, spread). Not with ``attention_dp``.

    ``graph_batch_sizes``: the batch sizes CUDA graphs are captured for, with padding on (TensorRT-LLM's PyTorch
    backend, ``cuda_graph_config: enable_padding: true``): an iteration that decodes alone runs its batch padded to
    a captured size with dummy generation requests (:func:`cuda_graph_batch`; bounded by the batch and token caps), its
    matmuls, collectives and element-wise passes at those rows (the dummies' one-token caches add no attention).
    Iterations that carry prompts run without a graph, at their own rows. Empty: no padding. Not with
    ``attention_dp``.

    ``kv_dtype``: the dtype the KV cache is stored in (None: ``dtype``). TensorRT-LLM's PyTorch backend allocates
    an FP8 cache only where the checkpoint's quantization config states FP8 KV (``kv_cache_quant_algo``) or the
    options set ``kv_cache_config.dtype``; else the cache takes the model's 16-bit dtype (:data:`KV_DTYPE_EVIDENCE`).
    It sets both the KV room's tokens and the bytes decode attention reads.

    TensorRT-LLM v0.17's performance overview gives Llama 3.1 8B on one H100 in FP8, 2,048 tokens in and out,
    9,488 output tokens/s; this gives within 2 % of it:

    >>> round(inflight(memory.model_preset("Llama-3.1 8B"), "H100-SXM", 1, 2048, 2048).tokens_per_s / 9488.42, 2)
    0.98
    """
    tp = _check.positive_int("tp", tp)
    p = _check.positive_int("prompt", prompt)
    o = _check.positive_int("output", output)
    frac = _check.fraction("kv_fraction", kv_fraction)
    wb = memory.dtype_bytes(dtype)
    mem = serving.spec(chip_key).memory_bytes
    if caps is not None:
        max_batch = _check.positive_int("caps[0] (max_batch)", caps[0])
        max_tokens = _check.positive_int("caps[1] (max_tokens)", caps[1])
    n_req = None if requests is None else _check.positive_int("requests", requests)
    wide = _check.in_range("wide_share", wide_share, 0.0, 1.0)
    kvd = dtype if kv_dtype is None else _check.choice("kv_dtype", kv_dtype, KV_DTYPES)
    if attention_dp and model.is_moe and tp > 1:
        if wide:
            raise ValueError(f"wide_share={wide_share!r} is not allowed with attention_dp=True: 0 only")
        if gemm_allreduce:
            raise ValueError("gemm_allreduce=True is not allowed with attention_dp=True: the experts' collectives are "
                             "an all-gather and a reduce-scatter, not the row-parallel all-reduces it fuses")
        if caps is not None:
            raise ValueError(f"caps={caps!r} is not allowed with attention_dp=True: each rank has its own scheduler")
        if uniform or graph_batch_sizes:
            raise ValueError(f"uniform={uniform!r}, graph_batch_sizes={graph_batch_sizes!r} are not allowed with "
                             "attention_dp=True: the attention-DP iteration spreads its prompts evenly, unpadded")
        return _inflight_attention_dp(model, chip_key, tp, p, o, dtype, frac, n_req, kvd)
    free = mem - model.n_params() * (wb + wide * max(0.0, 2.0 - wb)) / tp
    per_tok = memory.model_kv_bytes_per_token(model, kvd) / serving.kv_split(model, tp)
    kv_tokens = int(frac * free // per_tok) if free > 0 else 0
    if kv_tokens < p + o:
        raise ValueError(f"tp={tp!r} is not allowed for {model.name} on {chip_key}: the KV room beside the weights "
                         f"({max(0, kv_tokens):,} tokens) does not hold one request of {p + o:,} tokens")
    share = 1.0 + p / o  # tokens an iteration carries per running request
    if caps is None:
        b = min(kv_tokens // (p + o), TRTLLM_MAX_BATCH, int(max(TRTLLM_MIN_TOKENS, min(TRTLLM_MAX_TOKENS,
                                                                                        TRTLLM_MAX_BATCH * share)) // share))
    else:
        b = min(kv_tokens // (p + o), max_batch, int(max_tokens // share))
    b = max(1, b if n_req is None else min(b, n_req))
    engine_batch, budget = caps if caps is not None else (trtllm_bench_caps(model, chip_key, tp, p, o, dtype,
                                                                            kv_dtype=kvd)
                                                          if uniform or graph_batch_sizes else (0, 0))
    # same-length requests move in groups: a few iterations carry the prompts, the rest decode alone; lengths that
    # vary: finishes, and so entries, spread over the iterations
    n_ctx = context_iterations(b, p, o, budget) if uniform else o
    rows = cuda_graph_batch(b, graph_batch_sizes, engine_batch, budget) if graph_batch_sizes and n_ctx < o else b
    pre = b * p / o
    rate = serving.matmul_rate(chip_key, dtype)
    bw = serving.read_bandwidth(chip_key)
    attn = b * serving.sequence_kv_bytes(model, p + o // 2, memory.dtype_bytes(kvd)) / serving.kv_split(model, tp) / bw
    lay = memory.kv_layout(model)
    mean_ctx = (p + 1) / 2.0
    local = min(mean_ctx, lay.window) if lay.local_layers else 0.0
    pair_s = 2.0 * model.n_heads * (model.qk_head_dim + model.v_dim) * (lay.global_layers * mean_ctx
                                                                       + lay.local_layers * local) / (tp * rate)

    def parts(prompt_tokens: float, first_tokens: float, decode: int) -> tuple[float, float, float, float, float]:
        """(matmuls, prompt attention, all-reduces, routing, element-wise) of one iteration that carries ``decode``
        decode rows and ``prompt_tokens`` prompt tokens, ``first_tokens`` of them sampling a first token."""
        tokens = decode + prompt_tokens
        return (inflight_gemm_s(model, chip_key, tp, tokens, decode + first_tokens, dtype, wide), prompt_tokens * pair_s,
                inflight_comm_s(model, chip_key, max(1, round(tokens)), tp, dtype, gemm_allreduce),
                tokens * moe_routing_bytes_per_token(model, wb) / bw,
                tokens * inflight_elementwise_bytes_per_token(model, tp, dtype) / bw)

    # a cycle of ``o`` iterations: ``n_ctx`` carry the ``b`` prompts that enter, the rest decode alone
    ctx = parts(b * p / n_ctx, b / n_ctx, b)
    gen = parts(0.0, 0.0, rows) if n_ctx < o else ctx
    gemm, pattn, comm, route, norm = (
        (n_ctx * x + (o - n_ctx) * y) / o for x, y in zip(ctx, gen))  # the cycle's mean iteration
    it = gemm + attn + pattn + comm + route + norm
    return Inflight(b, kv_tokens, pre, gemm, attn, pattn, comm, route, norm, it, b / it, n_ctx / o, rows)


def cuda_graph_batch(batch: int, sizes: tuple[int, ...], max_batch_size: int, max_num_tokens: int) -> int:
    """Rows a generation-only iteration of ``batch`` requests runs in TensorRT-LLM's PyTorch backend with CUDA graphs
    captured for ``sizes`` and padding on: the captured sizes are those up to ``min(max_batch_size,
    max_num_tokens)``, that bound added as the last one when a listed size passes it
    (tensorrt_llm/_torch/pyexecutor/model_engine.py, ``_filter_cuda_graph_batch_sizes``), and the batch is padded
    with dummy generation requests to the smallest captured size at or above it (``_round_up_batch_size``); a batch
    above every captured size runs without a graph, at its own rows.

    TensorRT-LLM v1.0's performance page lists 1, 2, 4, ..., 256, 384, 512, 1,024, ..., 8,192; Llama 3.1 70B on one
    H200 at 128 in / 4,096 out holds 109 requests, trtllm-bench's caps 128 requests and 2,048 tokens:

    >>> cuda_graph_batch(109, (1, 2, 4, 8, 16, 32, 64, 128, 256, 384, 512, 1024, 2048, 4096, 8192), 128, 2048)
    128
    """
    b = _check.positive_int("batch", batch)
    top = min(_check.positive_int("max_batch_size", max_batch_size), _check.positive_int("max_num_tokens",
                                                                                          max_num_tokens))
    listed = [_check.positive_int("sizes[]", z) for z in sizes]
    if not listed or listed != sorted(set(listed)):
        raise ValueError(f"sizes={sizes!r} is not allowed: one or more batch sizes, ascending, each once")
    kept = [z for z in listed if z <= top]
    if listed[-1] > top and (not kept or kept[-1] != top):
        kept.append(top)
    return next((z for z in kept if z >= b), b)


def context_iterations(batch: int, prompt: int, output: int, max_num_tokens: int) -> int:
    """Iterations, of the ``output`` a request decodes for, that carry the prompts of the ``batch`` requests entering
    in that time, when every request has the same lengths and the scheduler packs whole prompts into an iteration
    (``max_num_tokens`` less the ``batch`` decode tokens, at least one prompt), as TensorRT-LLM's does for
    trtllm-bench's synthetic datasets; the other ``output - n`` iterations decode alone.

    In steady state ``batch`` requests finish, and as many enter, every ``output`` iterations. TensorRT-LLM's
    micro-batch scheduler (cpp/tensorrt_llm/batch_manager/microBatchScheduler.cpp, ``MicroBatchScheduler::operator()``)
    walks the active requests in order, one token for each running generation request, a whole prompt for each new
    context (without chunking), and stops at the first that would pass ``max_num_tokens``; trtllm-bench queues the
    whole dataset at once, so the first iteration starts as many contexts as fit and every later entry waits for a
    finish: the requests move in groups of ``k = max(1, (max_num_tokens - batch) // prompt)``, and ``ceil(batch /
    k)`` iterations of each ``output`` carry prompts (at most ``output``: then every iteration does, the even spread
    the model charged before). A prompt longer than the budget left (the 20,000-token prompts of TensorRT-LLM
    v1.0's tables) is counted whole in one iteration, as an engine whose budget admits it runs it; chunked over
    ``ceil(prompt / (max_num_tokens - batch))`` iterations instead, those rows come out within 2 points of it.

    Llama 3.1 70B on one H200, 128 in / 4,096 out (109 requests, trtllm-bench's 2,048-token budget): groups of 15,
    so 8 of the 4,096 iterations carry prompts:

    >>> context_iterations(109, 128, 4096, 2048)
    8
    """
    b = _check.positive_int("batch", batch)
    p = _check.positive_int("prompt", prompt)
    o = _check.positive_int("output", output)
    budget = _check.positive_int("max_num_tokens", max_num_tokens)
    k = max(1, (budget - b) // p)
    return min(o, -(-b // k))


def inflight_comm_s(model: memory.ModelConfig, chip_key: str, tokens: int, tp: int, dtype: str = "fp8",
                    gemm_allreduce: bool = False) -> float:
    """Seconds of an in-flight iteration's tensor-parallel all-reduces on its critical path: two a layer after the
    matmuls (:func:`mlcalc.serving.comm_s`), or with ``gemm_allreduce`` what they take beyond the row-parallel
    products they run inside (:func:`mlcalc.serving.gemm_allreduce_comm_s`); 0 on one GPU."""
    if _check.positive_int("tp", tp) == 1:
        return 0.0
    if gemm_allreduce:
        return serving.gemm_allreduce_comm_s(model, chip_key, tokens, tp, dtype)
    return serving.comm_s(model, chip_key, tokens, tp)


def inflight_gemm_s(model: memory.ModelConfig, chip_key: str, tp: int, tokens: float, sampled: float,
                    dtype: str = "fp8", wide_share: float = 0.0) -> float:
    """Seconds of an in-flight iteration's matmuls on one GPU of ``tp``: every layer's products at the iteration's
    ``tokens`` rows and the output projection at the ``sampled`` rows that compute logits, each by the book's one
    matmul law for every dtype (:func:`mlcalc.serving.layers_gemm_law_s`, :func:`mlcalc.serving.gemm_law_s`).

    ``wide_share``: the share of the layers' quantized weights (by element) a mixed-precision checkpoint keeps at 16
    bits. Which layers those are is the quantizer's choice, recorded nowhere the book reads, so they are taken as a
    share of every layer kind alike: the layers' products cost ``(1 - wide_share)`` of their time at ``dtype`` and
    ``wide_share`` of their time in bf16 (:data:`WIDE_DTYPE`), the expected time of a checkpoint whose 16-bit
    layers are spread over the kinds by size. The output projection keeps ``dtype``."""
    t = max(1, round(_check.non_negative("tokens", tokens)))
    s = round(_check.non_negative("sampled", sampled))
    w = _check.in_range("wide_share", wide_share, 0.0, 1.0)
    head = serving.gemm_law_s(s, max(1, round(model.vocab / tp)), model.hidden, chip_key, dtype) if s else 0.0
    layers = serving.layers_gemm_law_s(model, t, tp, chip_key, dtype)
    if w:
        layers = (1.0 - w) * layers + w * serving.layers_gemm_law_s(model, t, tp, chip_key, WIDE_DTYPE)
    return layers + head


#: The dtype a mixed-precision checkpoint's unquantized layers run in (ModelOpt's ``auto_quantize`` format None:
#: the checkpoint's own 16-bit weights, counted as 16 bits by its ``effective_bits``).
WIDE_DTYPE = "bf16"


def inflight_elementwise_bytes_per_token(model: memory.ModelConfig, tp: int, dtype: str = "fp8") -> float:
    """Bytes one token of an in-flight iteration moves on one GPU of ``tp`` outside its matmuls, attention and MoE
    routing: the residual-add + RMSNorm passes (:func:`replicated_norm_bytes_per_token`) and the layers' other
    element-wise passes (:func:`mlcalc.serving.layer_elementwise_bytes_per_token`)."""
    return serving.engine_elementwise_bytes_per_token(model, tp, dtype)


def trtllm_bench_caps(model: memory.ModelConfig, chip_key: str, tp: int, prompt: int, output: int,
                      dtype: str = "fp8", kv_fraction: float = TRTLLM_KV_FRACTION,
                      kv_dtype: str | None = None) -> tuple[int, int]:
    """``(max_batch_size, max_num_tokens)`` as trtllm-bench sets them for a run of ``tp`` GPUs (NVIDIA TensorRT-LLM,
    tensorrt_llm/bench/build/tuning.py, ``calc_engine_setting`` then ``finetune_setting``): the KV room of the whole
    group, estimated as ``tp`` cards' memory (GiB) less the checkpoint's parameters at ``dtype``'s bytes, times
    ``kv_fraction``, over ``max(tp, KV heads)`` heads a layer ("Each GPU in TP group has at least 1 kv head") for
    ``prompt + output`` tokens a request; that many requests, at most 4,096, rounded up (to 32 under 256 requests, at
    least 64; to 128 under 1,024; else to 256), and ``(1 + prompt / output)`` tokens each, at most 32,768, rounded up
    (at least 2,048; to 512 from 4,096; to 1,024 from 8,192). With attention data parallelism every rank's scheduler
    holds both caps (PyExecutor ``_fetch_new_requests``: ``tp x`` the batch cap over the group). ``kv_dtype``: the
    cache dtype the checkpoint's quantization config states (tuning.py's ``byte_per_kv_elem`` from its
    ``kv_cache_quant_algo``: 1 byte for FP8, else 2); None: ``dtype``.

    Qwen3-235B-A22B in FP8 on 8 H100s, 128 tokens in and 2,048 out: 1,024 requests and 2,048 tokens:

    >>> trtllm_bench_caps(memory.model_preset("Qwen3 235B-A22B"), "H100-SXM", 8, 128, 2048)
    (1024, 2048)
    """
    t = _check.positive_int("tp", tp)
    p = _check.positive_int("prompt", prompt)
    o = _check.positive_int("output", output)
    frac = _check.fraction("kv_fraction", kv_fraction)
    gib = 1024.0 ** 3
    heads = max(t, model.n_kv_heads)
    kvd = dtype if kv_dtype is None else _check.choice("kv_dtype", kv_dtype, KV_DTYPES)  # the checkpoint's KV algo
    kv_b = 1.0 if memory.dtype_bytes(kvd) <= 1 else 2.0  # FP8 cache: 1 byte, else 2 (BYTES_PER_ELEM)
    per_tok = 2.0 * memory.kv_layout(model).global_layers * heads * model.head_dim * kv_b / gib
    per_tok += 2.0 * memory.kv_layout(model).local_layers * heads * model.head_dim * kv_b / gib
    avail = t * serving.spec(chip_key).memory_bytes / gib - model.n_params() * memory.dtype_bytes(dtype) / gib
    reqs = avail * frac / (per_tok * (p + o))
    if reqs < 1:
        raise ValueError(f"tp={tp!r} is not allowed for {model.name} on {chip_key}: trtllm-bench estimates KV room "
                         f"for {reqs:.2f} requests of {p + o:,} tokens")
    raw_bs = min(reqs, float(TRTLLM_MAX_BATCH))
    raw_tok = min(raw_bs * (1.0 + p / o), float(TRTLLM_MAX_TOKENS))
    if raw_bs < 256:
        bs = max(64, 32 * math.ceil(raw_bs / 32))
    elif raw_bs < 1024:
        bs = 128 * math.ceil(raw_bs / 128)
    else:
        bs = 256 * math.ceil(raw_bs / 256)
    if raw_tok < 4096:
        tok = max(TRTLLM_MIN_TOKENS, 256 * math.ceil(raw_tok / 256))
    elif raw_tok < 8192:
        tok = 512 * math.ceil(raw_tok / 512)
    else:
        tok = 1024 * math.ceil(raw_tok / 1024)
    return int(bs), int(tok)


def _steady_batch(kv_tokens: int, p: int, o: int) -> int:
    """Requests one scheduler keeps running: KV room for ``p + o`` tokens each, within trtllm-bench's caps."""
    share = 1.0 + p / o  # tokens an iteration carries per running request
    return max(1, min(kv_tokens // (p + o), TRTLLM_MAX_BATCH,
                      int(max(TRTLLM_MIN_TOKENS, min(TRTLLM_MAX_TOKENS, TRTLLM_MAX_BATCH * share)) // share)))


def _inflight_attention_dp(model: memory.ModelConfig, chip_key: str, tp: int, p: int, o: int, dtype: str,
                           frac: float, requests: int | None = None, kv_dtype: str | None = None) -> Inflight:
    """:func:`inflight` with attention data parallelism over the ``tp`` GPUs (see there)."""
    wb = memory.dtype_bytes(dtype)
    kvd = dtype if kv_dtype is None else kv_dtype
    mem = serving.spec(chip_key).memory_bytes
    free = mem - serving.weight_params_per_gpu(model, 1, tp) * wb
    per_tok = serving.kv_bytes_per_token_per_gpu(model, 1, kvd)  # the rank's own sequences, every KV head
    rank_kv = int(frac * free // per_tok) if free > 0 else 0
    if rank_kv < p + o:
        raise ValueError(f"tp={tp!r} is not allowed for {model.name} on {chip_key} with attention data parallelism: "
                         f"the KV room beside the weights ({max(0, rank_kv):,} tokens) does not hold one request of "
                         f"{p + o:,} tokens")
    rb = _steady_batch(rank_kv, p, o)  # requests of one rank
    b = tp * rb
    if requests is not None and requests < b:  # the dataset runs dry: its requests spread evenly over the ranks
        rb, b = -(-requests // tp), requests
    pre = b * p / o
    tokens = b + pre  # all ranks'
    own = rb * (1.0 + p / o)  # the fullest rank's
    rate = serving.matmul_rate(chip_key, dtype)
    bw = serving.read_bandwidth(chip_key)
    serial = dtype == "fp8"  # FP8 inputs gathered
    # one law (:func:`inflight_gemm_s`): attention and the dense parts at the rank's own rows, whole; the routed
    # experts' grouped kernels at all ranks' rows, each expert split over the group
    gemm = (serving.layers_gemm_law_s(model, max(1, round(own)), 1, chip_key, dtype, "rest")
            + serving.layers_gemm_law_s(model, max(1, round(tokens)), tp, chip_key, dtype, "experts")
            + serving.gemm_law_s(max(1, round(rb + rb / o)), model.vocab, model.hidden, chip_key, dtype))
    attn = rb * serving.sequence_kv_bytes(model, p + o // 2, memory.dtype_bytes(kvd)) / bw
    lay = memory.kv_layout(model)
    mean_ctx = (p + 1) / 2.0
    local = min(mean_ctx, lay.window) if lay.local_layers else 0.0
    pattn = rb * p / o * 2.0 * model.n_heads * (model.qk_head_dim + model.v_dim) * (lay.global_layers * mean_ctx
                                                                               + lay.local_layers * local) / rate
    comm = serving.attention_dp_comm_s(model, chip_key, max(1, round(tokens)), tp,
                                       gather_bytes_per_value=1.0 if serial else 2.0)  # FP8 inputs gathered
    route = own * moe_routing_bytes_per_token(model, wb) / bw
    norm = own * inflight_elementwise_bytes_per_token(model, 1, dtype) / bw
    it = gemm + attn + pattn + comm + route + norm
    return Inflight(b, tp * rank_kv, pre, gemm, attn, pattn, comm, route, norm, it, b / it)


class InflightCheck(NamedTuple):
    """A published in-flight-batching throughput next to :func:`inflight`'s."""

    source: str  # key of the table in serving_published.json ("inflight")
    chip: str
    model: str
    gpus: int
    input: int
    output: int
    batch: int  # the steady batch the model finds
    published: float  # output tokens/s of the whole system
    predicted: float
    error: float  # predicted / published - 1
    cause: str
    attention_dp: bool = False  # predicted attention data-parallel, as the source states the run


def stated_layout(table: Mapping[str, Any], model: memory.ModelConfig, prompt: int, output: int) -> dict[str, Any]:
    """How a published in-flight table states its run, as :func:`inflight` arguments: ``attention_dp`` for an MoE
    model where the table's conditions state ``enable_attention_dp`` (TensorRT-LLM v1.0's MoE options file),
    ``kv_dtype`` where the table's ``kv_cache_dtype`` gives the model's checkpoint a cache dtype of its own (from its
    ``hf_quant_config.json``, :data:`KV_DTYPE_EVIDENCE`; a model it does not name keeps the table's dtype),
    ``requests``, the requests of the run's dataset, where the table gives them (its ``requests``, keyed
    ``"input/output"``), ``uniform`` where its conditions state a synthetic dataset of one length ("stdev 0"), and
    ``graph_batch_sizes`` where it gives the CUDA-graph batch sizes its runs padded to (the last two not with
    ``attention_dp``)."""
    kw: dict[str, Any] = {}
    if model.is_moe and "enable_attention_dp" in table["conditions"]:
        kw["attention_dp"] = True
    kv = table.get("kv_cache_dtype", {}).get(model.name)
    if kv is not None:
        kw["kv_dtype"] = str(kv)
    n = table.get("requests", {}).get(f"{prompt}/{output}")
    if n is not None:
        kw["requests"] = int(n)
    if "stdev 0" in table["conditions"] and not kw.get("attention_dp"):
        kw["uniform"] = True
    if "cuda_graph_batch_sizes" in table and not kw.get("attention_dp"):
        kw["graph_batch_sizes"] = tuple(int(z) for z in table["cuda_graph_batch_sizes"])
    return kw


@lru_cache(maxsize=1)
def _inflight_rows() -> tuple[InflightCheck, ...]:
    """Every in-flight row against :func:`inflight`, without causes."""
    out = []
    for key, table in published()["inflight"]["tables"].items():
        for r in table["rows"]:
            model = memory.model_preset(r["model"])
            tp, p, o = int(r["tp"]), int(r["input"]), int(r["output"])
            pub = float(r["out_tokens_per_s"])
            kw = stated_layout(table, model, p, o)
            got = inflight(model, table["chip"], tp, p, o, table["dtype"], **kw)
            out.append(InflightCheck(key, table["chip"], r["model"], tp, p, o, got.batch, pub, got.tokens_per_s,
                                     got.tokens_per_s / pub - 1.0, "", kw.get("attention_dp", False)))
    return tuple(out)


def inflight_as_stated(c: InflightCheck) -> tuple[memory.ModelConfig, Mapping[str, Any], Inflight]:
    """The model, the published table and :func:`inflight`'s answer for one checked row, run as its table states it
    (:func:`stated_layout`): what the row-by-row scripts and tests take apart."""
    table = published()["inflight"]["tables"][c.source]
    model = memory.model_preset(c.model)
    got = inflight(model, table["chip"], c.gpus, c.input, c.output, table["dtype"],
                   **stated_layout(table, model, c.input, c.output))
    return model, table, got


def check_inflight() -> list[InflightCheck]:
    """Every row of the published in-flight-batching tables (serving_published.json "inflight") against
    :func:`inflight`, with the cause of each row outside 25 % (:func:`inflight_miss_cause`; a tensor-parallel MoE row
    set beside the same table's dense row, :func:`dense_twin`)."""
    tables = published()["inflight"]["tables"]
    out = []
    for c in _inflight_rows():
        if abs(c.error) <= 0.25:
            out.append(c)
            continue
        table = tables[c.source]
        model = memory.model_preset(c.model)
        kw = stated_layout(table, model, c.input, c.output)
        dp = kw.get("attention_dp", False)
        got = inflight(model, table["chip"], c.gpus, c.input, c.output, table["dtype"], **kw)
        left = None
        twin = dense_twin(c.source, c.model, c.gpus, c.input, c.output) if model.is_moe and not dp else None
        if twin is not None:
            dm = memory.model_preset(twin.model)
            dg = inflight(dm, table["chip"], c.gpus, c.input, c.output, table["dtype"], uniform=kw.get("uniform", False),
                          graph_batch_sizes=kw.get("graph_batch_sizes", ()))
            left = (inflight_leftover(model, got, c.published), got.iteration_s / ((got.batch + got.prefill_tokens)
                                                                                  * model.n_layers),
                    inflight_leftover(dm, dg, twin.published), dg.iteration_s / ((dg.batch + dg.prefill_tokens)
                                                                                * dm.n_layers))
        if dp:
            tp_got = inflight(model, table["chip"], c.gpus, c.input, c.output, table["dtype"],
                              requests=kw.get("requests"))
            out.append(c._replace(cause=attention_dp_cause(model, c.gpus, got, c.published, tp_got,
                                                           table["chip"], c.input, c.output, table["dtype"],
                                                           kw.get("requests"))))
            continue
        cause = inflight_miss_cause(model, c.gpus, got, left)
        if not cause and not model.is_moe:
            cause = small_iteration_cause(model, got, c.published)
        if cause:
            cause += gemm_evidence_text(model, table["chip"], c.gpus, got, c.published, table["dtype"])
            if model.is_moe and model.n_experts in {x[0] for x in _grouped_prefill_probe()}:
                cause += grouped_evidence_text(model, table["chip"], c.gpus, got, c.published, table["dtype"])
            cause += scheduler_note(model, table, c, got)
        out.append(c._replace(cause=cause))
    return out


#: TensorRT-LLM's dynamic batch-size tuner (cpp/tensorrt_llm/executor/dynamicBatchConfig.cpp,
#: ``DynamicBatchConfig::kDefaultBatchSizeTable``): ``(capacity below, runtime batch)`` pairs, and its fallback
#: (executor/dynamicBatchTuner.h: ``kBatchSizeFallbackGranularity`` 512, ``kBatchSizeFallbackThreshold`` 128).
DYNAMIC_BATCH_TABLE = ((144, 128), (336, 256), (672, 512), (832, 768), (1280, 1024), (1664, 1536))
DYNAMIC_BATCH_GRANULARITY = 512
DYNAMIC_BATCH_THRESHOLD = 128


def dynamic_batch_size(capacity: int) -> int:
    """The runtime batch size TensorRT-LLM's dynamic batch tuner sets for ``capacity``, the requests of the run's mean
    lengths the KV cache holds (cpp/tensorrt_llm/executor/dynamicBatchTuner.cpp, ``getRuntimeBatchSize``): the table's
    batch for the first row whose bound exceeds it (:data:`DYNAMIC_BATCH_TABLE`), else the capacity rounded down to a
    multiple of 512 where it is less than 128 above one, else the capacity. Below the capacity it lowers the batch;
    above it, the KV room still holds the capacity (guaranteed no evict).

    >>> dynamic_batch_size(140), dynamic_batch_size(238), dynamic_batch_size(4218)
    (128, 256, 4096)
    """
    cap = _check.positive_int("capacity", capacity)
    for bound, size in DYNAMIC_BATCH_TABLE:
        if cap < bound:
            return size
    floor = cap // DYNAMIC_BATCH_GRANULARITY * DYNAMIC_BATCH_GRANULARITY
    return floor if cap < floor + DYNAMIC_BATCH_THRESHOLD else cap


def scheduler_note(model: memory.ModelConfig, table: Mapping[str, Any], c: InflightCheck, got: Inflight) -> str:
    """What the scheduler's rules do to a missed row of a published in-flight table, as the model charges them or
    rules them out: its batch (the KV room's requests at prompt + output each: guaranteed no evict), the dynamic
    batch-size tuner's batch for that capacity (:func:`dynamic_batch_size`, not charged: binding on none of the rows
    that miss), for a run of same-length requests the prompts packed into few iterations (:func:`context_iterations`)
    against spreading them evenly, and where the run's CUDA graphs pad the iterations that decode alone
    (:func:`cuda_graph_batch`), the row unpadded."""
    room = got.kv_tokens // (c.input + c.output)
    tuned = dynamic_batch_size(room)
    text = (f". The scheduler's rules: {got.batch:,} requests run together, KV room for {room:,} at prompt + output each "
            "(guaranteed no evict reserves the whole output, as charged)"
            + (f", within trtllm-bench's {TRTLLM_MAX_BATCH:,}-request cap" if got.batch < room else "")
            + f"; TensorRT-LLM's dynamic batch-size tuner (executor/dynamicBatchTuner.cpp getRuntimeBatchSize, "
            f"its default table) gives {tuned:,} for that room, "
            + ("so it would not lower the batch" if tuned >= got.batch else f"which would lower it to {tuned:,}"))
    if got.context_share < 1.0:
        kw = dict(stated_layout(table, model, c.input, c.output), uniform=False)
        spread = inflight(model, table["chip"], c.gpus, c.input, c.output, table["dtype"], **kw)
        text += (f"; the same-length prompts packed as the scheduler packs them ({got.context_share:.1%} of the "
                 f"iterations carry them, mlcalc.servemeasured.context_iterations) are charged: spread over every "
                 f"iteration the row would be {spread.tokens_per_s / c.published - 1:+.0%}")
    if got.decode_rows and got.decode_rows != got.batch:
        kw = dict(stated_layout(table, model, c.input, c.output), graph_batch_sizes=())
        plain = inflight(model, table["chip"], c.gpus, c.input, c.output, table["dtype"], **kw)
        text += (f"; the page's CUDA graphs pad those that decode alone from {got.batch:,} to {got.decode_rows:,} rows "
                 "(enable_padding; model_engine.py _filter_cuda_graph_batch_sizes, _round_up_batch_size), as charged: "
                 f"unpadded the row would be {plain.tokens_per_s / c.published - 1:+.0%}")
    return text


def attention_dp_cause(model: memory.ModelConfig, tp: int, got: Inflight, published_tokens_per_s: float,
                       tp_got: Inflight, chip_key: str | None = None, prompt: int | None = None,
                       output: int | None = None, dtype: str = "fp8", requests: int | None = None) -> str:
    """Why an in-flight MoE row that its page states ran attention data-parallel (``got``: :func:`inflight` with
    ``attention_dp``) misses, from the numbers: the iteration the published throughput implies at the modelled batch
    against the modelled one, what the layout's terms are, the same row predicted tensor-parallel (``tp_got``), and,
    given the run (``chip_key``, ``prompt``, ``output``, ``dtype``, ``requests``), how much of the gap each mechanism
    TensorRT-LLM's attention-DP code has beyond the model explains (:func:`attention_dp_gap_shares`), what the row
    and its siblings would give with a 16-bit KV cache (:func:`adp_rows_with_cache`, item 6, the leading candidate no
    stored source settles) and what the moetp15 probe rules out for the experts' matmuls (item 7)."""
    pub = _check.positive("published_tokens_per_s", published_tokens_per_s)
    implied = got.batch / pub
    rb = -(-got.batch // tp)
    left = (implied - got.iteration_s) / model.n_moe_layers
    shares = ""
    if chip_key is not None and prompt is not None and output is not None:
        g = attention_dp_gap_shares(model, chip_key, tp, prompt, output, pub, dtype, requests)
        mc = moe_mapping_cost(model, chip_key, tp, prompt, output, pub, dtype, requests)
        shares = (f"What TensorRT-LLM's attention-DP code adds, row by row: (1) ranks waiting on the slowest: the "
                  f"{g.requests:,} requests are dealt out by active count (executor_request_queue "
                  f"_balance_requests_across_ranks, a heap), {g.rank_min:,} to {g.rank_max:,} a rank"
                  + (f", all at once (the group admits {tp} x {g.max_batch:,})" if tp * g.max_batch >= g.requests
                     else "") + "; every request is the same length, so the ranks enter and "
                  f"leave context in step and the fullest rank, which the model charges, is {g.sync_s * 1e3:.2f} ms "
                  f"above the mean rank: {g.sync_share:.0%} of the gap. (2) per-rank caps: trtllm-bench's "
                  f"{g.max_batch:,} requests and {g.max_tokens:,} tokens an iteration (tuning.py finetune_setting) "
                  f"against a rank's {g.rank_batch:,} requests ({g.rank_kv_batch:,} fit its KV room) and "
                  f"{g.rank_tokens:,.0f} tokens: {'binding' if g.caps_bind else 'not binding'}, "
                  f"{g.caps_share:.0%} of the gap. (3) the run's end: {g.rank_max:,} requests a rank in waves of "
                  f"{g.rank_batch:,}, the last one smaller: {g.wave_share:.0%} of the gap. (4) the MoE collectives: "
                  "with attention DP the sized all-gather and reduce-scatter are grouped per-root ncclBroadcast / ncclReduce calls (cpp/tensorrt_llm/thop/"
                  "allgatherOp.cpp, reducescatterOp.cpp), each GPU sending the bytes of the ring collectives the "
                  f"model charges: 0% of the gap; the collectives alone would have to take {g.comm_factor:.1f}x their "
                  f"modelled {got.comm_s * 1e3:.1f} ms, or the matmuls {g.gemm_factor:.1f}x their "
                  f"{got.gemm_s * 1e3:.1f} ms. (5) the MoE mapping: without '--ep' every GPU would hold all "
                  f"{model.n_experts} experts {mc.slice_width} wide; each expert's matmuls would still carry "
                  f"{mc.expert_rows:,} rows, with the same tile-and-wave efficiency as {model.n_experts // tp} whole "
                  f"experts a GPU ({mc.shape_efficiency_tp:.0%} vs {mc.shape_efficiency_ep:.0%}, "
                  f"compute.matmul_shape_efficiency; in the tile a Hopper library picks, compute.gemm_kernel, K "
                  f"padded, the {mc.slice_width}-deep down projection leaves {mc.kernel_useful_tp:.0%} of the experts' "
                  f"arithmetic useful against {mc.kernel_useful_ep:.0%}, {mc.kernel_extra_s * 1e3:.1f} ms), "
                  "the same FLOPs and weight bytes, but every GPU would route and run all ranks' "
                  f"{got.batch + got.prefill_tokens:,.0f} tokens: {mc.extra_s * 1e3:.1f} ms more, "
                  f"{mc.gap_share:.0%} of the gap (the row {mc.error_if_charged:+.0%}); the sources point to "
                  f"'--ep {tp}', so it is not charged (below). " + _thin_slice_sentence(model, chip_key, tp, dtype,
                                                                                  mc.expert_rows)
                  + _cache_dtype_sentence(model, chip_key, tp, prompt, output, pub, dtype, requests)
                  + _whole_expert_sentence(model, tp, dtype, mc.expert_rows)
                  + "Unexplained by (1)-(5): "
                  f"{1.0 - g.sync_share - g.caps_share - g.wave_share:.0%} (candidates no source quantifies: how "
                  "evenly the synthetic prompts' tokens load the experts of each GPU; the expert matmuls' tile and "
                  f"wave quantization, under either mapping {mc.shape_extra_s * 1e3:.1f} ms "
                  f"({mc.shape_extra_s / g.gap_s:.0%} of the gap) at the model's default 256 x 128 tiles, "
                  f"{mc.kernel_shape_extra_s * 1e3:.1f} ms ({mc.kernel_shape_extra_s / g.gap_s:.0%}) in the tiles "
                  "compute.gemm_kernel picks; iterations run without CUDA graphs while any rank holds a context). "
                  + MOE_MAPPING_EVIDENCE + ". ")
    return ("no cause stated by the source; ours: not established (the leading candidate, a 16-bit KV cache, is item "
            "(6) below: no stored source gives this checkpoint's cache dtype). Predicted as the page's corrected revision "
            "states the run ("
            f"'enable_attention_dp: true': each of the {tp} GPUs runs attention for its own {rb:,} requests with their "
            f"whole cache, {got.kv_tokens // tp:,} KV tokens a GPU, the experts split over the {tp}, per MoE layer an "
            f"all-gather and a reduce-scatter of the {got.batch + got.prefill_tokens:,.0f} tokens' hidden states, "
            f"{got.comm_s / got.iteration_s:.0%} of the iteration), {got.batch:,} requests decode together and the "
            f"model's iteration is {got.iteration_s * 1e3:.1f} ms; the published throughput implies "
            f"{implied * 1e3:.1f} ms at that batch, {left * 1e6:.0f} us per MoE layer beyond the model "
            "(trtllm-bench sizes its batch and token caps from its own estimate of the whole group's KV room, "
            "bench/build/tuning.py calc_engine_setting, and every rank's scheduler holds them, PyExecutor "
            "_fetch_new_requests admitting tp times the batch cap, so they sit above one rank's share; no source "
            "states a load imbalance between the ranks or the EP size). " + shares +
            f"Predicted tensor-parallel (attention split, each of the {model.n_kv_heads} KV heads held by "
            f"{tp // min(tp, model.n_kv_heads)} GPUs, two all-reduces a layer, {tp_got.batch:,} requests) the row "
            f"comes out {tp_got.tokens_per_s / pub - 1:+.0%}. " + ADP_LAYOUT_EVIDENCE)


def _whole_expert_sentence(model: memory.ModelConfig, tp: int, dtype: str, rows: int) -> str:
    """What the moetp15 probe (one H100) measured for the experts split whole (the layout :func:`inflight` charges
    with ``attention_dp``) at the probed rows nearest ``rows``, against the engine's own law for those matmuls on the
    same card (:func:`mlcalc.serving.layers_gemm_law_s`, "experts", one MoE layer); empty where the probe does not
    apply (another expert shape, another split, another dtype)."""
    if (model.n_experts, model.expert_ffn, model.hidden, tp) != (128, 1536, 4096, 8) or dtype != "fp8":
        return ""
    n, ep_s, _ = min(thin_slice_probe(dtype), key=lambda x: abs(math.log(x[0] / rows)))
    tokens = n * model.n_experts // model.experts_per_token  # the iteration's tokens that give n rows an expert
    law = serving.layers_gemm_law_s(model, tokens, tp, "H100-SXM", dtype, "experts") / model.n_moe_layers
    return (f"(7) ruled out, the experts' matmuls charged too little: in the same probe the {model.n_experts // tp} "
            f"whole experts' two FP8 matmuls of one layer took {ep_s * 1e6:.0f} us at {n:,} rows an expert, "
            f"{ep_s / law:.2f} of the {law * 1e6:.0f} us the engine charges them on an H100 (torch's grouped kernel; "
            "TensorRT-LLM's CUTLASS one is not measured). ")


def adp_rows_with_cache(kv_dtype: str = "bf16") -> tuple[tuple[str, int, int, float], ...]:
    """Every published in-flight row run attention data-parallel (:func:`stated_layout`) predicted with its KV cache
    stored as ``kv_dtype`` instead of the table's dtype: ``(source, input, output, error)`` each."""
    kvd = _check.choice("kv_dtype", kv_dtype, KV_DTYPES)
    return _adp_rows_with_cache(kvd)


@lru_cache(maxsize=None)
def _adp_rows_with_cache(kv_dtype: str) -> tuple[tuple[str, int, int, float], ...]:
    tables = published()["inflight"]["tables"]
    out = []
    for c in _inflight_rows():
        if not c.attention_dp:
            continue
        t = tables[c.source]
        m = memory.model_preset(c.model)
        kw = {**stated_layout(t, m, c.input, c.output), "kv_dtype": kv_dtype}
        got = inflight(m, t["chip"], c.gpus, c.input, c.output, t["dtype"], **kw)
        out.append((c.source, c.input, c.output, got.tokens_per_s / c.published - 1.0))
    return tuple(out)


def _cache_dtype_sentence(model: memory.ModelConfig, chip_key: str, tp: int, prompt: int, output: int,
                          published_tokens_per_s: float, dtype: str, requests: int | None) -> str:
    """Item (6) of :func:`attention_dp_cause`: the row, and every attention-DP row, with a 16-bit KV cache
    (:func:`adp_rows_with_cache`); empty unless the table's dtype is FP8."""
    if dtype != "fp8":
        return ""
    got = inflight(model, chip_key, tp, prompt, output, dtype, attention_dp=True, requests=requests, kv_dtype="bf16")
    rows = adp_rows_with_cache("bf16")
    inside = [r for r in rows if abs(r[3]) <= 0.25]
    outside = sorted(r[3] for r in rows if abs(r[3]) > 0.25)
    err = got.tokens_per_s / published_tokens_per_s - 1.0
    return (f"(6) the KV cache's dtype: the model keeps it in FP8, the table's dtype. In 16 bits a GPU would hold "
            f"{got.kv_tokens // tp:,} tokens, {-(-got.batch // tp):,} requests would decode a rank ({got.batch:,} in "
            f"all) and this row would come out {err:+.0%}; {len(inside)} of the {len(rows)} attention-DP rows would "
            f"come within 25%, the other {len(outside)} at {outside[0]:+.0%} to {outside[-1]:+.0%} (the prompt-heavy "
            "runs, mlcalc.servemeasured.adp_rows_with_cache). Which cache the runs had, the stored sources do not "
            "settle: nvidia/Qwen3-235B-A22B-FP8's hf_quant_config.json is not among them; NVIDIA's accuracy references "
            "list Qwen3-235B-A22B in FP8 only with an FP8 cache (tests/integration/defs/accuracy/references/gsm8k.yaml, "
            "for the checkpoint its test loads, saved_models_Qwen3-235B-A22B_fp8_hf), while the same collection's "
            "Llama-3.1-405B-Instruct-FP8 states none (its rows are predicted with a 16-bit cache). So the FP8 cache "
            "stays. " + KV_DTYPE_EVIDENCE + ". ")


def _thin_slice_sentence(model: memory.ModelConfig, chip_key: str, tp: int, dtype: str, rows: int) -> str:
    """What the moetp15 probe measured for the split layout's matmuls at the probed rows nearest ``rows``, beside the
    book's law for them (:func:`grouped_expert_matmuls_s`); empty where the probe does not apply (another expert
    shape, another split, another dtype)."""
    if (model.n_experts, model.expert_ffn, model.hidden, tp) != (128, 1536, 4096, 8) or dtype != "fp8":
        return ""
    n, ep_s, tp_s = min(thin_slice_probe(dtype), key=lambda x: abs(math.log(x[0] / rows)))
    law = (grouped_expert_matmuls_s(model, "H100-SXM", dtype, model.n_experts, model.expert_ffn // tp, n)
           / grouped_expert_matmuls_s(model, "H100-SXM", dtype, model.n_experts // tp, model.expert_ffn, n))
    return (f"Measured on one H100 (moetp15's probe, {THIN_SLICE_RUN}: torch 2.11's FP8 grouped GEMM, not "
            f"TensorRT-LLM's MoE kernel), at {n:,} rows an expert the split layout's two matmuls took "
            f"{tp_s / ep_s:.1f}x the whole experts' time, where the book's law gives {law:.1f}x: thin FP8 slices cost "
            "more than this rule charges, so the figure above is a floor for that mapping. ")


class AdpGapShares(NamedTuple):
    """How much of an attention-data-parallel row's gap (the published throughput's iteration beyond the modelled
    one) each mechanism of TensorRT-LLM's attention-DP code explains (:func:`attention_dp_gap_shares`)."""

    requests: int  # requests of the run (the dataset's, else the group's steady batch)
    rank_min: int  # fewest requests a rank is dealt
    rank_max: int  # most
    max_batch: int  # trtllm-bench's batch cap, held by every rank
    max_tokens: int  # its token cap an iteration, held by every rank
    rank_batch: int  # requests the fullest rank runs at once in the model
    rank_kv_batch: int  # requests one rank's KV room holds
    rank_tokens: float  # tokens the fullest rank carries an iteration in the model
    caps_bind: bool  # whether either cap lowers the rank's batch below its KV room and its share
    gap_s: float  # published iteration at the modelled batch minus the modelled iteration
    sync_s: float  # the fullest rank's iteration beyond an even split's (already in the model)
    sync_share: float  # of gap_s, explained by waiting on the slowest rank beyond what the model charges
    caps_share: float  # of gap_s, explained by the caps
    wave_share: float  # of gap_s, explained by the run's last, smaller batch (the dataset's requests per rank)
    comm_factor: float  # how many times its modelled time the MoE collectives would need to take to close the gap
    gemm_factor: float  # the same for the matmuls


def attention_dp_gap_shares(model: memory.ModelConfig, chip_key: str, tp: int, prompt: int, output: int,
                            published_tokens_per_s: float, dtype: str = "fp8",
                            requests: int | None = None) -> AdpGapShares:
    """Each candidate mechanism of TensorRT-LLM's attention data parallelism, quantified for one run against the gap
    between the published throughput's iteration and :func:`inflight`'s (``attention_dp=True``):

    (1) the ranks meet at every MoE layer's collective, so an iteration is its slowest rank's (NVIDIA TensorRT-LLM
    tech blog 10, "ADP Balance Strategy": "the iteration time is dominated by the slowest rank"). The executor deals
    new requests to the ranks with the fewest active ones (``_balance_requests_across_ranks``, a heap, up to the
    group's ``tp x max_batch_size``), so a run's requests split ``floor`` / ``ceil(requests / tp)``; the model
    already charges the fullest rank, and with every request the same length (the runs' synthetic datasets) the
    ranks start, chunk and finish their contexts in step: no iteration waits on one rank's context. Its share is
    the fullest rank's excess over an even split not yet charged: zero.
    (2) trtllm-bench's caps (:func:`trtllm_bench_caps`), held per rank: they bind only if below the rank's KV batch
    and share, or below its tokens an iteration; a binding batch cap's share is the iteration its fewer requests
    would add (a binding token cap is flagged in ``caps_bind``, not charged).
    (3) the run's end: a rank's ``ceil(requests / tp)`` requests of one length run in waves of its batch (each
    request's slot freed after ``output`` iterations), the last wave with the remainder; its share is what that
    smaller batch adds to the run's time, counted at the modelled batch (the steady state :func:`inflight` charges
    does not hold it).
    (4) the MoE collectives: the sized all-gather and reduce-scatter are grouped per-root broadcasts and reduces, the
    same bytes a GPU as the ring collectives :func:`mlcalc.serving.attention_dp_comm_s` charges: zero; the factor
    the collectives (and, instead, the matmuls) would need to close the gap is given to say how far off each is."""
    t = _check.positive_int("tp", tp)
    p, o = _check.positive_int("prompt", prompt), _check.positive_int("output", output)
    pub = _check.positive("published_tokens_per_s", published_tokens_per_s)
    got = inflight(model, chip_key, t, p, o, dtype, attention_dp=True, requests=requests)
    bs, tok = trtllm_bench_caps(model, chip_key, t, p, o, dtype)
    n = got.batch if requests is None else _check.positive_int("requests", requests)
    lo, hi = n // t, -(-n // t)
    rank_kv = got.kv_tokens // t // (p + o)
    rb = -(-got.batch // t)
    r_tok = rb * (1.0 + p / o)
    bind = bs < min(rank_kv, hi) or tok < r_tok
    gap = got.batch / pub - got.iteration_s
    even = inflight(model, chip_key, t, p, o, dtype, attention_dp=True, requests=lo * t) if lo >= 1 else got
    sync = max(0.0, got.iteration_s - even.iteration_s)  # the fullest rank's excess, charged by the model
    caps_share = 0.0
    if bind and gap > 0:  # the batch cap as fewer requests a rank (a binding token cap is flagged, not charged)
        capped = inflight(model, chip_key, t, p, o, dtype, attention_dp=True, requests=min(n, bs * t))
        caps_share = max(0.0, got.batch / capped.tokens_per_s - got.iteration_s) / gap
    wave_share = 0.0
    full, rest = divmod(hi, max(1, rb))
    if full >= 1 and rest > 0 and gap > 0:  # the run's last requests run as a smaller batch
        last = inflight(model, chip_key, t, p, o, dtype, attention_dp=True, requests=rest * t)
        run_s = o * (full * got.iteration_s + last.iteration_s)  # one rank's requests, wave after wave
        wave_share = max(0.0, got.batch / (hi * t * o / run_s) - got.iteration_s) / gap
    return AdpGapShares(n, lo, hi, bs, tok, rb, rank_kv, r_tok, bind, gap, sync, 0.0, caps_share, wave_share,
                        1.0 + gap / got.comm_s if got.comm_s > 0 else float("inf"),
                        1.0 + gap / got.gemm_s if got.gemm_s > 0 else float("inf"))


class MoeMappingCost(NamedTuple):
    """What TensorRT-LLM's code-default MoE mapping under attention data parallelism (no ``--ep``: the experts
    tensor-parallel over the ``tp`` GPUs) would add to an in-flight iteration beyond the expert-parallel split that
    :func:`inflight` charges (``--ep tp``), by the book's own rules (:func:`moe_mapping_cost`)."""

    expert_rows: int  # rows each expert's matmuls carry: all ranks' tokens x top-k / experts (the same either way)
    slice_width: int  # each expert's intermediate width a GPU holds with the experts tensor-parallel
    shape_efficiency_ep: float  # tile and wave efficiency of a GPU's grouped expert matmuls, experts split whole
    shape_efficiency_tp: float  # the same with every expert split tp ways
    shape_extra_s: float  # what the split layout's quantization adds to the experts' FLOP time at the model's rate
    kernel_useful_ep: float  # useful share of the experts' arithmetic in the tile a Hopper library picks, split whole
    kernel_useful_tp: float  # the same with every expert split tp ways (K padded: the thin down projection)
    kernel_extra_s: float  # what the tensor-parallel slices' lower useful share adds to the experts' FLOP time
    kernel_shape_extra_s: float  # what the split layout's picked tiles leave idle, as shape_extra_s
    extra_bytes: float  # bytes a GPU moves an iteration beyond the expert-parallel split
    extra_s: float  # those bytes at the chip's read bandwidth
    gap_share: float  # of the published iteration's gap at the modelled batch
    error_if_charged: float  # the row's error with extra_s added to the modelled iteration


def moe_mapping_cost(model: memory.ModelConfig, chip_key: str, tp: int, prompt: int, output: int,
                     published_tokens_per_s: float, dtype: str = "fp8",
                     requests: int | None = None) -> MoeMappingCost:
    """The MoE mapping TensorRT-LLM's code falls back to when trtllm-bench gets no ``--ep`` (``moe_tp_size = tp``,
    ``moe_ep_size = 1``, :data:`MOE_MAPPING_EVIDENCE`), costed against the expert-parallel split :func:`inflight`
    charges with ``attention_dp``, for one run.

    With the experts tensor-parallel every GPU runs all ranks' gathered tokens through every expert at ``1 / tp``
    of its width, so the rule the book applies to tensor-parallel experts (:func:`moe_routing_bytes_per_token`:
    the routing passes not split; :func:`mlcalc.serving.expert_activation_bytes_per_token` at ``tp``: each visit's
    input and hidden-sized output whole) applies to all ``batch + prompt tokens`` of the iteration, where the split
    charges a GPU its own share at full width. The FLOPs and the expert weights a GPU reads are the same either way
    (``1 / tp`` of each), and so is each expert's row count (all tokens x top-k / experts), so
    :func:`mlcalc.compute.matmul_shape_efficiency` (M x N tiles on the chip's SMs; the grouped matmul's tiles summed
    over the GPU's experts) is compared at the two layouts' N: the gate/up (``2 x width``) and down (hidden) outputs.
    The down projection's inner dimension, which the tensor-parallel slice shrinks, is not in that model.
    ``shape_extra_s``: the routed experts' FLOPs a GPU does (the same either way) at the model's matmul rate, times
    ``1 / efficiency - 1`` of the split layout: what that quantization would add, a cost :func:`inflight` leaves out
    under either mapping. ``kernel_useful_*``: the same two grouped matmuls through :func:`mlcalc.compute.gemm_kernel`
    (the tile, orientation and split-K a Hopper GEMM library picks, K padded to its tile depth), FLOP-weighted;
    ``kernel_extra_s``: the experts' FLOP time at the model's rate times ``1 / useful_tp - 1 / useful_ep``, the
    arithmetic the thin slices waste beyond the whole experts'; ``kernel_shape_extra_s``: times ``1 / useful_ep - 1``,
    as ``shape_extra_s`` with the picked tiles."""
    t = _check.positive_int("tp", tp)
    p, o = _check.positive_int("prompt", prompt), _check.positive_int("output", output)
    pub = _check.positive("published_tokens_per_s", published_tokens_per_s)
    if not model.is_moe or t < 2:
        raise ValueError(f"model={model.name!r} with tp={tp!r} is not allowed: an MoE model over 2 or more GPUs")
    if model.n_experts % t or model.expert_ffn % t:
        raise ValueError(f"tp={tp!r} is not allowed: {model.name}'s {model.n_experts} experts of width "
                         f"{model.expert_ffn} do not split evenly")
    got = inflight(model, chip_key, t, p, o, dtype, attention_dp=True, requests=requests)
    wb = memory.dtype_bytes(dtype)
    serial = dtype in serving.SERIAL_MATMUL_DTYPES  # the matmuls' activation bytes are charged only where serial
    tokens = got.batch + got.prefill_tokens  # all ranks'
    own = -(-got.batch // t) * (1.0 + p / o)  # the fullest rank's, as the model charges it
    route = moe_routing_bytes_per_token(model, wb)
    act_tp = serving.expert_activation_bytes_per_token(model, t) if serial else 0.0
    act_ep = serving.expert_activation_bytes_per_token(model, 1) if serial else 0.0
    extra = tokens * (route + act_tp) - own * (route + act_ep)
    extra_s = extra / serving.read_bandwidth(chip_key)
    rows = max(1, round(tokens * model.experts_per_token / model.n_experts))
    sms = serving.spec(chip_key).sm_count
    if sms is None:
        raise ValueError(f"chip_key={chip_key!r} is not allowed: its SM count is not in the catalogue")
    gates = 2 if model.gated_mlp else 1

    def useful(experts: int, width: int, kernel: bool = False) -> float:  # FLOP-weighted: gate/up, then down
        shapes = ((gates * width * experts, model.hidden, gates), (model.hidden * experts, width, 1))
        if kernel:
            return sum(w * compute.gemm_kernel(rows, n, k, sms, dtype).useful for n, k, w in shapes) / (gates + 1)
        return (sum(w * compute.matmul_shape_efficiency(rows, n, k, sms, dtype=dtype).efficiency for n, k, w in shapes)
                / (gates + 1))

    width, whole = model.expert_ffn // t, model.n_experts // t
    eff_ep, eff_tp = useful(whole, model.expert_ffn), useful(model.n_experts, width)
    k_ep, k_tp = useful(whole, model.expert_ffn, True), useful(model.n_experts, width, True)
    routed = model.experts_per_token * model.n_moe_layers * model.mlp_params_per_expert()
    flop_s = 2.0 * routed * tokens / t / serving.matmul_rate(chip_key, dtype)
    gap = got.batch / pub - got.iteration_s
    return MoeMappingCost(rows, width, eff_ep, eff_tp, flop_s * (1.0 / eff_ep - 1.0), k_ep, k_tp,
                          flop_s * (1.0 / k_tp - 1.0 / k_ep), flop_s * (1.0 / k_ep - 1.0), extra, extra_s, extra_s / gap if gap > 0 else 0.0,
                          got.batch / (got.iteration_s + extra_s) / pub - 1.0)


#: moetp15's probe (scripts/gpu/moetp15_grouped.py, one NVIDIA H100 80GB HBM3, torch 2.11.0+cu130): one MoE layer's
#: gate/up and down grouped matmuls with Qwen3-235B-A22B's experts whole (16 a GPU, 1,536 wide) and split 8 ways (all
#: 128, 192 wide), 64 to 1,024 rows an expert, bf16 (torch._grouped_mm) and FP8 row-wise (torch._scaled_grouped_mm).
THIN_SLICE_RUN = "h100-2026-11-27-moetp15"


def grouped_expert_matmuls_s(model: memory.ModelConfig, chip_key: str, dtype: str, experts: int, width: int,
                             rows: int) -> float:
    """The book's time for one MoE layer's two grouped expert matmuls on one GPU (``experts`` experts ``width`` wide,
    ``rows`` rows each): :func:`mlcalc.serving.matmul_s` over the experts' weights and every row's activations (the
    input and gate/up output of the first, the down input and hidden-sized output of the second; inputs in the
    matmuls' dtype, outputs bf16) and their FLOPs over the useful share :func:`mlcalc.compute.gemm_kernel` finds for
    each (tiles summed over the experts, FLOP-weighted), summed for FP8, the longer for bf16: the law the moetp15
    probe's blind predictions used (scripts/gpu/predict_moetp15.py)."""
    e = _check.positive_int("experts", experts)
    w = _check.positive_int("width", width)
    r = _check.positive_int("rows", rows)
    wb = memory.dtype_bytes(dtype)
    h, gates = model.hidden, (2 if model.gated_mlp else 1)
    sms = serving.spec(chip_key).sm_count
    if sms is None:
        raise ValueError(f"chip_key={chip_key!r} is not allowed: its SM count is not in the catalogue")
    moved = e * (gates + 1) * w * h * wb + e * r * (wb * (h + w) + 2.0 * (gates * w + h))
    flops = 2.0 * e * r * (gates + 1) * w * h
    useful = (gates * compute.gemm_kernel(r, gates * w * e, h, sms, dtype).useful
              + compute.gemm_kernel(r, h * e, w, sms, dtype).useful) / (gates + 1)
    return serving.matmul_s(moved, flops / useful, serving.read_bandwidth(chip_key), serving.matmul_rate(chip_key, dtype),
                            overlap=dtype not in serving.SERIAL_MATMUL_DTYPES)


@lru_cache(maxsize=None)
def thin_slice_probe(dtype: str = "fp8", run: str = THIN_SLICE_RUN) -> tuple[tuple[int, float, float], ...]:
    """(rows an expert, measured seconds of the experts whole, of the experts split tp ways) for each row count of
    the moetp15 probe in ``dtype`` (:data:`THIN_SLICE_RUN`)."""
    cases = _read("moetp15_grouped.json", run)["cases"]
    got = {(c["rows_per_expert"], c["layout"]): float(c["both_s"]) for c in cases if c["dtype"] == dtype}
    if not got:
        raise ValueError(f"dtype={dtype!r} is not allowed: the probe measured 'bf16' and 'fp8'")
    return tuple((n, got[(n, "ep")], got[(n, "tp")]) for n in sorted({n for n, _ in got}))


#: Which MoE mapping the v1.0 Qwen3-235B-A22B runs had, from TensorRT-LLM's code and NVIDIA's own tests of the same
#: checkpoint (why :func:`inflight` keeps the experts split whole over the GPUs, :func:`moe_mapping_cost` the other).
MOE_MAPPING_EVIDENCE = (
    "The MoE mapping, from TensorRT-LLM's code: trtllm-bench's '--ep' is an int option defaulting to None "
    "(bench/benchmark/throughput.py); get_settings passes it on as the world config's ep_size "
    "(bench/benchmark/utils/general.py, stored revision 0171265e), RuntimeConfig.get_llm_args as "
    "'moe_expert_parallel_size' (bench/dataclasses/configuration.py, 000a01de); BaseLlmArgs.validate_parallel_config "
    "turns None into -1 (llmapi/llm_args.py); Mapping.__init__ with both MoE sizes -1 sets moe_tp_size = tp_size and "
    "moe_ep_size = 1, a branch that never reads enable_attention_dp (tensorrt_llm/mapping.py, 05ebebb2 and every "
    "later stored revision); Qwen3MoE hands create_moe the whole moe_intermediate_size and that mapping "
    "(_torch/models/modeling_qwen3_moe.py, 03441af1), and with no moe_config in the options file the backend is "
    "MoeConfig's default 'CUTLASS', CutlassFusedMoE (create_moe.get_moe_cls). So without '--ep' every GPU would run "
    "all 128 experts 1536 / 8 = 192 wide. But the page's MoE command passes '--ep $ep_size' (a value, not stated), "
    "and NVIDIA's own runs of this checkpoint use 8: the trtllm-bench perf test "
    "'qwen3_235b_a22b_fp8-bench-pytorch-float8-...-ep:8-gpus:8' with enable_attention_dp "
    "(tests/integration/defs/perf/pytorch_model_config.py, 7cfc1b97), the accuracy test TestQwen3_235B_A22B.test_fp8 "
    "(tp 8, ep 8, attention DP), and a later release's page heads its Qwen3-235B runs 'DEP'. The checkpoint is "
    "nvidia/Qwen3-235B-A22B-FP8 from the Model Optimizer collection (quant_algo FP8, one scale a tensor, by that "
    "collection's convention; its own config is not in the stored sources), not Qwen's 128 x 128 block-scaled one, so "
    "a 192-wide slice meets no block-scale granularity. The rows are predicted with the experts split whole, 16 a GPU")


#: Which layout TensorRT-LLM v1.0's Qwen3-235B-A22B rows ran, from the sources (why :func:`stated_layout` predicts
#: them attention data-parallel).
ADP_LAYOUT_EVIDENCE = (
    "Which layout ran, from TensorRT-LLM's sources: the page as cited (00f37686, "
    "docs/source/performance/perf-overview.md) prints the MoE options file with 'enable_attention_dp: true' nested "
    "inside 'cuda_graph_config'. That file is rejected, not ignored: trtllm-bench hands it to the LLM API unchanged "
    "(bench/dataclasses/configuration.py, RuntimeConfig.get_llm_args -> llmapi/llm_utils "
    "update_llm_args_with_extra_options), update_llm_args_with_extra_dict merges its 'cuda_graph_config' dict as "
    "read, and TorchLlmArgs types that field CudaGraphConfig, a StrictBaseModel whose Config sets extra = 'forbid' "
    "(tensorrt_llm/llmapi/llm_args.py, the mid-2025 revision the code index stores; the current documentation's "
    "CUDA-graph config still sets extra = 'forbid'), so building the LLM raises pydantic's 'Extra inputs are not "
    "permitted': no number on the page came from the file as printed. A later revision of the same page, with the "
    "same '(NEW for v1.0)' tables and the same Qwen3-235B-A22B H100 and H200 figures, prints 'enable_attention_dp: "
    "true' at the top level beside 'cuda_graph_config', where TorchLlmArgs reads it, and a later release's page "
    "heads such runs 'DEP' (attention data parallel, experts parallel) where it had 'TP'; the v1.0 header's 'TP8' is "
    "trtllm-bench's --tp 8, which attention data parallelism keeps (the mapping's tp_size is the number of "
    "attention ranks). So the rows are predicted attention data-parallel, as the corrected page states")


#: Why an in-flight row misses, by what the same table shows (each in its own words).
INFLIGHT_CAUSES = MappingProxyType({
    "compute": ("no cause stated by either page (v0.17, v1.0); ours: 8,192 tokens an iteration at the engine's cap of 4,096 requests (the caps the v0.17 page's own "
                "128/128 example run prints: 'Max Runtime Batch Size: 4096', 'Max Runtime Tokens: 8192'): the tables "
                "give the H200 the H100's throughput (v0.17: 29,526 vs 28,837 tokens/s; v1.0: 27,911 vs 28,312) "
                "although its memory is 1.4x faster, so the time is the FP8 compute of those tokens (matmuls, the "
                "4,096 samplings over a 128,256-word vocabulary), which the model charges by its one matmul law "
                "(the longer of bytes and FLOPs at the sustained rate) beside the bytes the iteration moves, faster on "
                "the H200"),
})


def small_iteration_cause(model: memory.ModelConfig, got: Inflight, published_tokens_per_s: float) -> str:
    """The stated evidence for a dense in-flight row outside 25 % whose iteration carries few tokens: what the
    published throughput leaves per token and layer beyond the model (:func:`inflight_leftover`), and the
    iteration's parts, so that the time missing is seen to be none of the modelled terms' share per token."""
    left = inflight_leftover(model, got, published_tokens_per_s)
    tokens = got.batch + got.prefill_tokens
    it = got.iteration_s
    return ("no cause stated by the page; ours: the iteration carries "
            f"{tokens:,.0f} tokens ({got.batch:,} requests decoding, {got.prefill_tokens:,.0f} prompt tokens), and "
            f"the published throughput leaves {left * 1e9:,.0f} ns per token and layer beyond the modelled "
            f"{it * 1e3:.1f} ms (matmuls {got.gemm_s / it:.0%}, attention {(got.attention_s + got.prefill_attention_s) / it:.0%}"
            f", all-reduces {got.comm_s / it:.0%}, element-wise passes {got.norm_s / it:.0%}); the same tables' rows of "
            "8,000 tokens and more leave under 110 ns, so what is missing here is time per iteration or per request, "
            "not per token")


def inflight_miss_cause(model: memory.ModelConfig, tp: int, got: Inflight,
                        leftover: tuple[float, float, float, float] | None = None) -> str:
    """The stated cause of an in-flight row outside 25 % (empty when none is known; a row predicted attention
    data-parallel gets :func:`attention_dp_cause` instead). ``leftover``: for a
    tensor-parallel MoE row, :func:`inflight_leftover` of the row and of the same table's dense row
    (:func:`dense_twin`), ``(moe_s, moe_iteration_s, dense_s, dense_iteration_s)`` (see :func:`moe_leftover_cause`)."""
    if model.is_moe:
        if leftover is not None:
            return moe_leftover_cause(model, tp, got, *leftover)
        return ""
    if got.batch >= TRTLLM_MAX_BATCH:
        return INFLIGHT_CAUSES["compute"]
    return ""


#: The dense model whose rows each in-flight MoE row is set beside (:func:`dense_twin`): same table, GPUs and lengths.
DENSE_TWIN = MappingProxyType({"Mixtral 8x7B": "Llama-3.1 70B"})


def inflight_leftover(model: memory.ModelConfig, got: Inflight, published_tokens_per_s: float) -> float:
    """Seconds the published throughput leaves per token of an iteration and per layer beyond the modelled iteration:
    ``(batch / published - iteration) / (tokens x layers)``, ``tokens`` the decode and prompt tokens one iteration
    carries (:class:`Inflight`). Negative where the model is the slower."""
    pub = _check.positive("published_tokens_per_s", published_tokens_per_s)
    tokens = got.batch + got.prefill_tokens
    return (got.batch / pub - got.iteration_s) / (tokens * model.n_layers)


#: The book's measured GEMM times at serving row counts: one H100 SXM, 2026-11-27 (scripts/gpu/gemm_tiles.py): the
#: projections of Llama 3.1 8B / Mixtral 8x7B and Llama 3.1 70B split 1-8 ways, M = 1 .. 4,096, bf16 and FP8.
GEMM_TIMES_RUN = "h100-2026-11-27-gemm-tiles"


@lru_cache(maxsize=4)
def measured_gemm_curves(run: str = GEMM_TIMES_RUN) -> Mapping[tuple[str, int, int], tuple[tuple[int, float], ...]]:
    """``(dtype, n, k) -> ((m, seconds), ...)`` of a measured GEMM run (its ``gemm_times.json``), M ascending."""
    d = _read("gemm_times.json", run)
    out: dict[tuple[str, int, int], tuple[tuple[int, float], ...]] = {}
    for key, pts in d["curves_ns"].items():
        dt, shape = key.split(" ")
        n, k = (int(v) for v in shape.split("x"))
        out[(dt, n, k)] = tuple((int(m), float(ns) * 1e-9) for m, ns in pts)
    return MappingProxyType(out)


def measured_gemm_s(m: int, n: int, k: int, dtype: str, run: str = GEMM_TIMES_RUN) -> float | None:
    """Seconds of one ``m x n x k`` product as measured (:func:`measured_gemm_curves`): linear in M between the
    measured row counts, and beyond the largest in proportion to M (the product compute-bound there); None where
    the run did not measure that ``(n, k)`` in that dtype."""
    m = _check.positive_int("m", m)
    pts = measured_gemm_curves(run).get((dtype, _check.positive_int("n", n), _check.positive_int("k", k)))
    if pts is None:
        return None
    if m >= pts[-1][0]:
        return pts[-1][1] * m / pts[-1][0]
    return serving.interpolate([(float(a), b) for a, b in pts], float(m))


def measured_layers_gemm_s(model: memory.ModelConfig, tokens: int, tp: int, dtype: str = "fp8",
                           run: str = GEMM_TIMES_RUN) -> float | None:
    """Seconds of the matmuls of every layer for an iteration of ``tokens`` tokens on one GPU of ``tp``, each product
    at its measured time (:func:`measured_gemm_s`) as an engine runs them: one fused QKV product, the gate and up
    projections as one product twice as wide, the attention output and down projections, split as tensor
    parallelism splits them (:func:`mlcalc.steptime.layer_products`); an MoE layer's experts each at the rows routed
    to it (every expert split over the ``tp`` GPUs, as TensorRT-LLM 0.17 runs them), its router left out (a product
    ``experts`` wide). None where a product was not measured."""
    from mlcalc import steptime

    total = 0.0
    for layers, m, n, k, count, label in steptime.engine_products(model, _check.positive_int("tokens", tokens), tp):
        if label == "router":
            continue
        sec = measured_gemm_s(m, n, k, dtype, run)
        if sec is None:
            return None
        total += layers * count * sec
    return total


def layers_gemm_useful(model: memory.ModelConfig, tokens: int, tp: int, chip_key: str, dtype: str = "fp8") -> float:
    """The FLOP-weighted useful share of the layers' matmul work (the products of :func:`measured_layers_gemm_s`, the
    router too) for an iteration of ``tokens`` tokens: each product at the tile its library picks
    (:func:`mlcalc.compute.gemm_kernel` on the chip's SMs from the catalogue)."""
    from mlcalc import compute, steptime

    sms = serving.spec(chip_key).sm_count
    if sms is None:
        raise ValueError(f"chip_key={chip_key!r} is not allowed: its SM count is not in the catalogue")
    work = useful = 0.0
    for layers, m, n, k, count, _ in steptime.engine_products(model, _check.positive_int("tokens", tokens), tp):
        w = layers * count * float(m) * n * k
        work += w
        useful += w * compute.gemm_kernel(m, n, k, sms, dtype).useful
    return useful / work


class GemmEvidence(NamedTuple):
    """An in-flight iteration with its layers' matmuls at the book's measured GEMM times (:func:`gemm_evidence`)."""

    tokens: int  # tokens the iteration carries (M of the dense products): one that carries prompts, where some do not
    modelled_s: float  # the layers' matmuls as :func:`inflight` prices them (:func:`mlcalc.serving.layers_gemm_law_s`)
    measured_s: float  # the same products at their measured times (:func:`measured_layers_gemm_s`)
    iteration_s: float  # :func:`inflight`'s iteration with the measured matmuls in place of the modelled ones
    tokens_per_s: float  # batch / that iteration


def gemm_evidence(model: memory.ModelConfig, chip_key: str, tp: int, got: Inflight, dtype: str = "fp8",
                  run: str = GEMM_TIMES_RUN) -> GemmEvidence | None:
    """:func:`inflight`'s iteration ``got`` with its layers' matmuls (the output projection keeps its modelled time)
    at the measured times of ``run`` in place of the modelled ones: whether the matmuls' own time, tile and wave
    quantization included, accounts for a row's miss; where only some iterations carry prompts
    (``got.context_share`` below 1), weighted over the cycle's two kinds of iteration. None where a product was not
    measured (or attention data parallel: ``got`` must be a tensor-parallel iteration)."""
    share = got.context_share  # iterations that carry prompts; the others run the decode tokens alone
    tokens = max(1, round(got.batch + got.prefill_tokens / share))
    rows = ((tokens, share),) + (((got.decode_rows or got.batch, 1.0 - share),) if share < 1.0 else ())
    times = [measured_layers_gemm_s(model, m, tp, dtype, run) for m, _ in rows]
    if any(t is None for t in times):
        return None
    measured = sum(w * float(t) for (_, w), t in zip(rows, times) if t is not None)
    modelled = sum(w * serving.layers_gemm_law_s(model, m, tp, chip_key, dtype) for m, w in rows)
    it = got.iteration_s - modelled + measured
    return GemmEvidence(tokens, modelled, measured, it, got.batch / it)


def inflight_gemm_evidence() -> tuple[tuple[InflightCheck, memory.ModelConfig, Mapping[str, Any], GemmEvidence], ...]:
    """Every tensor-parallel in-flight row (:func:`check_inflight`) whose products were all measured, with its model,
    its table and :func:`gemm_evidence` for the iteration its table states (:func:`inflight_as_stated`)."""
    out = []
    for c in check_inflight():
        if c.attention_dp:
            continue
        model, table, got = inflight_as_stated(c)
        ev = gemm_evidence(model, table["chip"], c.gpus, got, table["dtype"])
        if ev is not None:
            out.append((c, model, table, ev))
    return tuple(out)


def gemm_evidence_text(model: memory.ModelConfig, chip_key: str, tp: int, got: Inflight,
                       published_tokens_per_s: float, dtype: str = "fp8", rule: bool = True) -> str:
    """One sentence for a miss's cause: the row predicted with its layers' matmuls at the book's measured times
    (:func:`gemm_evidence`), or "" where they were not measured; ``rule``: with the useful share the book's tile rule
    gives them (:func:`layers_gemm_useful`)."""
    ev = gemm_evidence(model, chip_key, tp, got, dtype)
    if ev is None:
        return ""
    card = measured_gemm_card()
    same = chip_key.startswith("H100")  # the run's card (H100 SXM); an H200 is the same GH100 with faster memory
    beyond = max(m for _, _, _, m in _measured_rows())
    share = layers_gemm_useful(model, ev.tokens, tp, chip_key, dtype)
    at = (f"at this iteration's {ev.tokens:,} tokens" if got.context_share >= 1.0 else
          f"over the cycle ({got.context_share:.0%} of its iterations carry {ev.tokens:,} tokens, the rest the "
          f"{got.batch:,} decode tokens alone)")
    return (f"; the matmuls measured: {at} the layers' {dtype.upper()} products take "
            f"{ev.measured_s * 1e3:.2f} ms on the book's {card} (mlcalc/data/measured/{GEMM_TIMES_RUN}, cuBLAS through "
            "torch; "
            + ("" if ev.tokens <= beyond else f"measured to {beyond:,} rows, beyond in proportion; ")
            + ("" if same else "an H100 has the H200's SMs and clocks with slower memory, so an upper bound here; ")
            + f"the model charges {ev.modelled_s * 1e3:.2f} ms"
            + (f"; the book's tile rule, mlcalc.compute.gemm_kernel, leaves {share:.0%} of their work useful"
               if rule else "")
            + "), and with them in place the prediction is "
            f"{ev.tokens_per_s / _check.positive('published_tokens_per_s', published_tokens_per_s) - 1:+.0%}")


#: The catalogue key of the card that ran :data:`ATTN_RUN`'s kernel probe (its ``device_name``: NVIDIA H200).
ATTN_RUN_CHIP = "H200-SXM"


def grouped_law_factor(model: memory.ModelConfig, rows: float, run: str = ATTN_RUN) -> float:
    """How much longer an MoE layer's routed experts take as one grouped kernel per projection than the book's one
    matmul law charges them (:func:`mlcalc.serving.gemm_law_s` with ``groups``, as :func:`inflight` does), at ``rows``
    rows an expert: the kernel probe's grouped expert matmuls at prefill sizes (transformers' grouped_mm over every
    expert, bf16, on the probe's card, :func:`_grouped_prefill_probe`) over the law's time for the same products on
    that card, FLOP-weighted over the two expert matrices, interpolated on log rows an expert (held at the probed
    ends). Only the model's number of experts is matched: the probe ran each expert whole.

    Mixtral 8x7B at 2,048 rows an expert (an 8,192-token iteration, top-2 of 8): the grouped kernel is 6 % slower
    than the law:

    >>> round(grouped_law_factor(memory.model_preset("Mixtral 8x7B"), 2048), 2)
    1.06
    """
    r = _check.positive("rows", rows)
    pts = [x for x in _grouped_prefill_probe(run) if x[0] == model.n_experts]
    if not pts:
        raise ValueError(f"model.n_experts={model.n_experts!r} is not allowed: the probe ran "
                         f"{sorted({x[0] for x in _grouped_prefill_probe(run)})} experts")
    secs = law = 0.0
    for e, n, k in sorted({(x[0], x[1], x[2]) for x in pts}):
        xs = sorted((math.log(x[3]), 2.0 * x[3] * n * k / x[4]
                     / serving.gemm_law_s(max(1, round(x[3])), n, k, ATTN_RUN_CHIP, "bf16", e) * e)
                    for x in pts if (x[1], x[2]) == (n, k))
        fl = float(n * k)
        secs += fl * serving.interpolate(xs, math.log(r))
        law += fl
    return secs / law


class GroupedEvidence(NamedTuple):
    """An in-flight iteration with its routed experts at the book's measured grouped-kernel times
    (:func:`grouped_evidence`)."""

    rows: float  # rows an expert in the iteration that carries the most tokens
    factor: float  # grouped_law_factor at those rows
    experts_s: float  # the routed experts' matmuls as inflight charges them, mean over the cycle
    grouped_s: float  # the same at the measured grouped-kernel times
    tokens_per_s: float  # batch / the iteration with grouped_s in place of experts_s
    needed: float  # the factor on experts_s alone that would give the published throughput


def grouped_evidence(model: memory.ModelConfig, chip_key: str, tp: int, got: Inflight,
                     published_tokens_per_s: float, dtype: str = "fp8") -> GroupedEvidence:
    """:func:`inflight`'s tensor-parallel iteration ``got`` with its routed experts' kernels charged at the book's
    measured grouped-kernel times (:func:`grouped_law_factor` at each iteration's rows an expert; the cycle's two
    kinds of iteration weighted as :func:`gemm_evidence` weighs them), and the factor on the experts' charged time
    alone that the published throughput would need."""
    if not model.is_moe:
        raise ValueError(f"model={model.name!r} is not allowed: it has no routed experts")
    pub = _check.positive("published_tokens_per_s", published_tokens_per_s)
    share = got.context_share
    tokens = max(1, round(got.batch + got.prefill_tokens / share))
    rows = ((tokens, share),) + (((got.decode_rows or got.batch, 1.0 - share),) if share < 1.0 else ())

    def per_expert(m: int) -> float:
        return m * model.experts_per_token / memory.moe_experts_touched(model.n_experts, model.experts_per_token, m)

    ex = [(w, serving.layers_gemm_law_s(model, m, tp, chip_key, dtype, "experts"), per_expert(m)) for m, w in rows]
    charged = sum(w * t for w, t, _ in ex)
    grouped = sum(w * t * grouped_law_factor(model, r) for w, t, r in ex)
    it = got.iteration_s - charged + grouped
    needed = 1.0 + (got.batch / pub - got.iteration_s) / charged
    return GroupedEvidence(per_expert(tokens), grouped_law_factor(model, per_expert(tokens)), charged, grouped,
                           got.batch / it, needed)


def grouped_evidence_text(model: memory.ModelConfig, chip_key: str, tp: int, got: Inflight,
                          published_tokens_per_s: float, dtype: str = "fp8") -> str:
    """One sentence for a tensor-parallel MoE miss's cause: the row with its experts at the book's measured
    grouped-kernel times (:func:`grouped_evidence`), and the factor the experts alone would need."""
    ev = grouped_evidence(model, chip_key, tp, got, published_tokens_per_s, dtype)
    return (f"; the experts as grouped kernels: the model already runs each MoE projection as one grouped kernel over "
            f"the experts touched, each expert split {tp} ways ({model.expert_ffn // tp:,} of {model.expert_ffn:,} "
            "wide; TensorRT-LLM's MoE plugin runs them as a CUTLASS grouped GEMM, cpp/tensorrt_llm/kernels/"
            "cutlass_kernels/moe_gemm), at the dense law; the book's measured grouped kernel (mlcalc/data/measured/"
            f"{ATTN_RUN}, transformers' grouped_mm, bf16, whole experts, on an H200) takes {ev.factor:.2f}x that law "
            f"at this iteration's {ev.rows:,.0f} rows an expert, and charged so the row is "
            f"{ev.tokens_per_s / _check.positive('published_tokens_per_s', published_tokens_per_s) - 1:+.0%}: ruled "
            f"out, since closing it by the experts alone needs {ev.needed:.2f}x the law "
            f"({ev.experts_s * 1e3:.1f} ms of the {got.iteration_s * 1e3:.1f} ms iteration)")


def measured_gemm_card(run: str = GEMM_TIMES_RUN) -> str:
    """The card that ran a measured GEMM run, as its driver names it."""
    return str(_read("gemm_times.json", run)["card"])


def _measured_rows(run: str = GEMM_TIMES_RUN) -> list[tuple[str, int, int, int]]:
    return [(dt, n, k, pts[-1][0]) for (dt, n, k), pts in measured_gemm_curves(run).items()]


def dense_twin(source: str, model: str, tp: int, prompt: int, output: int) -> InflightCheck | None:
    """The row of the same in-flight table with the dense model of :data:`DENSE_TWIN` on as many GPUs at the same
    lengths (None if the table has none)."""
    twin = DENSE_TWIN.get(model)
    for c in _inflight_rows():
        if (c.source, c.model, c.gpus, c.input, c.output) == (source, twin, tp, prompt, output):
            return c
    return None


def moe_leftover_cause(model: memory.ModelConfig, tp: int, got: Inflight, moe_s: float, moe_it_s: float,
                       dense_s: float, dense_it_s: float) -> str:
    """Why a tensor-parallel MoE in-flight row misses, from the numbers: the time the published throughput leaves per
    token and layer beyond the model (:func:`inflight_leftover`) set beside the same table's dense row at the same GPUs
    and lengths (:func:`dense_twin`), and the modelled iteration per token and layer of each. Where the two leftovers
    are alike, what the model misses is not in the experts (the dense model has none); the MoE row misses by more
    because its modelled layer is cheaper per token, so the same leftover is a larger share of it."""
    tokens = got.batch + got.prefill_tokens
    ratio = moe_s / dense_s if dense_s > 0 else math.inf
    alike = 0.75 <= ratio <= 1.35
    big = tokens >= 8192 and got.comm_s == 0.0
    head = ("no cause stated by the source; ours: "
            + ("not the experts. " if alike else "not found. "))
    body = (f"The published throughput leaves {moe_s * 1e9:.0f} ns per token of the iteration and per layer beyond "
            f"the modelled iteration ({tokens:,.0f} tokens, {model.n_layers} layers, {moe_it_s * 1e9:.0f} ns per token "
            f"and layer modelled); the same table's {DENSE_TWIN.get(model.name, 'dense')} row on {tp} GPU"
            f"{'s' if tp > 1 else ''} at the same lengths leaves {dense_s * 1e9:.0f} ns against {dense_it_s * 1e9:.0f} "
            f"modelled ({ratio:.2f}x the leftover). ")
    if alike:
        body += ("A dense layer has no experts, yet leaves about as much: what the model misses here costs per token "
                 "and layer what it costs the dense model (whatever both run: attention, the norms, the all-reduces "
                 "where there are GPUs to reduce over, the iteration's own overheads), and Mixtral's row misses by more only because its modelled "
                 "layer is cheaper per token, so the same leftover is a larger share. Counted as the source runs them, "
                 "the expert terms are in the model: each expert's weights read once an iteration when any token "
                 "chose it (all 8 at these batches), the expert matmuls' FLOPs at the FP8 rate, and the routing "
                 "passes whole on every GPU (TensorRT-LLM 0.17 splits each expert over the GPUs; "
                 f"{got.routing_s / got.iteration_s:.0%} of this iteration)")
    else:
        body += ("The leftovers differ, so the dense row does not account for this one; no source gives the parts of "
                 "this iteration")
    if big:
        body += (". The iteration carries 8,192 tokens or more on one GPU, the compute-bound case in which the "
                 "same table's Llama 3.1 8B misses on this card as well (the tables give the H200 about the H100's "
                 "throughput there)")
    return head + body


# ------------------------------------------------------------------- end-to-end latency# ------------------------------------------------------------------- end-to-end latency of a static batch (vLLM)

class LatencyCheck(NamedTuple):
    """A published end-to-end latency of one static batch next to :func:`static_batch_latency_s`."""

    source: str  # key of the table in serving_published.json ("latency")
    engine: str
    chip: str
    model: str
    gpus: int
    batch: int
    input: int
    output: int
    published_s: float  # the source's mean latency
    predicted_s: float
    error: float  # predicted / published - 1
    cause: str


def check_latency() -> list[LatencyCheck]:
    """Every row of the published latency tables (serving_published.json "latency") against
    :func:`static_batch_latency_s` (an MoE model as its routed experts: vLLM's fused MoE computes only the experts each
    token is sent to), with the cause of each row outside 25 % (:func:`latency_miss_cause`)."""
    out = []
    for key, table in published()["latency"]["tables"].items():
        b, p, o = int(table["batch"]), int(table["input"]), int(table["output"])
        rows = []
        for r in table["rows"]:
            model = memory.model_preset(r["model"])
            tp = int(r["tp"])
            pred = static_batch_latency_s(model, table["chip"], b, tp, p, o, table["dtype"])
            step = serving.predict_decode(model, table["chip"], b, p + max(1, o // 2), "cuda-graph", tp,
                                          weight_dtype=table["dtype"], kv_dtype=table["dtype"]).step_s
            rows.append((r, tp, pred, float(r["mean_latency_ms"]) / 1e3, step))
        extra = [(pub - pred) / (o - 1) for _, _, pred, pub, _ in rows]  # what each published step leaves beyond ours
        steps = [step for *_, step in rows]
        for r, tp, pred, pub, _ in rows:
            err = pred / pub - 1.0
            cause = (latency_miss_cause(memory.model_preset(r["model"]), table["chip"], b, tp, p, o, pub, pred, extra,
                                        steps, table["dtype"]) if abs(err) > 0.25 else "")
            out.append(LatencyCheck(key, table["engine"], table["chip"], r["model"], tp, b, p, o, pub, pred, err, cause))
    return out


#: What vLLM's nightly latency rows ran: build 9515 of Buildkite's 'performance-benchmark' pipeline is the working
#: benchmark of vLLM pull request #9768 '[perf bench] H200 development' (simon-mo, opened 2024-10-28: "Working
#: benchmark here https://buildkite.com/vllm/performance-benchmark/builds/9515"), so vLLM's main of late October 2024,
#: between v0.6.3.post1 and v0.6.4: the V0 engine. Read in the v0.6.3.post1 wheel on PyPI.
VLLM_LATENCY_BUILD = ("vLLM PR #9768 (opened 2024-10-28; https://github.com/vllm-project/vllm/pull/9768) links build "
                      "9515 as its working benchmark: vLLM's main between v0.6.3.post1 and v0.6.4, the V0 engine")


def latency_miss_cause(model: memory.ModelConfig, chip_key: str, batch: int, tp: int, prompt: int, output: int,
                       published_s: float, predicted_s: float, extra_per_step: list[float],
                       modelled_steps: list[float], dtype: str = "bf16") -> str:
    """Why a latency row misses. The source states no cause; ours: each of the table's rows leaves about the same
    time a step beyond the modelled GPU step, whatever the model and GPU count, which is the mark of host work between
    steps that the "cuda-graph" path does not charge; with what the engine's code (:data:`VLLM_LATENCY_BUILD`) puts
    between two graph replays, and what it is not: the matmuls' fixed time per kernel (our probe's law,
    :func:`mlcalc.serving.kernel_weight_s`), the prefill."""
    o = _check.positive_int("output", output)
    if o < 2:
        raise ValueError(f"output={output!r} is not allowed: a step after the prefill needs at least 2 output tokens")
    published_s = _check.positive("published_s", published_s)
    predicted_s = _check.positive("predicted_s", predicted_s)
    mine = (published_s - predicted_s) / (o - 1)
    step = serving.predict_decode(model, chip_key, batch, prompt + max(1, o // 2), "cuda-graph", tp,
                                  weight_dtype=dtype, kv_dtype=dtype)
    law = serving.chip_matmul_law(chip_key)
    kernels, n_k = serving.kernel_weight_s(model, batch, law, True, tp, 1, memory.dtype_bytes(dtype))
    bw = serving.read_bandwidth(chip_key)
    plain = serving.decode_kernels(model, batch, True, tp, 1, memory.dtype_bytes(dtype))
    add = model.n_layers * max(0.0, kernels - sum(w * n for w, n, _ in plain) / model.n_layers / bw)
    pre = serving.predict_prefill(model, chip_key, batch, prompt, "cuda-graph", tp, weight_dtype=dtype)
    with_law = (predicted_s + (o - 1) * add) / published_s - 1
    return (f"no cause stated by the source; ours: the published latency leaves {mine * 1e3:.1f} ms a decode step "
            f"beyond the modelled step ({o - 1} steps after the prefill), and every row of the same table leaves "
            f"about the same ({min(extra_per_step) * 1e3:.1f} to {max(extra_per_step) * 1e3:.1f} ms) while their "
            f"modelled steps range from {min(modelled_steps) * 1e3:.1f} to {max(modelled_steps) * 1e3:.1f} ms: a cost "
            "per step that does not scale with the GPU's work. What ran: " + VLLM_LATENCY_BUILD + ". What is timed "
            "(benchmarks/benchmark_latency.py): llm.generate of the whole batch between two perf_counter calls, so "
            f"the prefill, the {o - 1} decode steps and each step's sampling and output processing. Between two steps "
            "(vllm/worker/model_runner.py execute_model, v0.6.3.post1): the CUDA graph replays the model's forward only "
            f"(batch {batch} is captured: _BATCH_SIZES_TO_CAPTURE is 1, 2, 4 and multiples of 8), then compute_logits "
            "and sample run eagerly and hand the tokens to the host, and the scheduler prepares the next step's "
            "inputs on the host one step at a time (num_scheduler_steps defaults to 1; multi-step scheduling, "
            "which spreads that work over several steps, is off). Not the cause: the matmuls' fixed time per kernel "
            f"({n_k} kernels a layer at our probe's law) adds {add * 1e3:.2f} ms a step (the row would be "
            f"{with_law:+.0%}); the prefill of {batch} x {prompt} tokens is modelled at {pre * 1e3:.1f} ms of the "
            f"{published_s * 1e3:.0f}; " + ("no all-reduce on one GPU; " if tp == 1 else "") +
            f"the modelled step is {step.step_s * 1e3:.1f} ms. vLLM's own post on v0.6.0 (vLLM blog, 2024-09-05, "
            "'vLLM v0.6.0: 2.7x Throughput Improvement and 75% Latency Reduction', "
            "https://blog.vllm.ai/2024/09/05/perf-update.html) says so of the versions before it: 'If CPUs cannot "
            "schedule fast enough, GPUs will sit idle to wait for CPUs', and on faster GPUs 'the time spent on other "
            "CPU parts of the inference engine becomes a significant bottleneck' (profiled with Llama 3 8B on one "
            "H100); no source gives that host time per step for this build")


# ------------------------------------------------------------------- serving at a client concurrency (SGLang)

#: SGLang 0.5.6's custom all-reduce (python/sglang/srt/distributed/device_communicators/custom_all_reduce.py in the
#: sglang 0.5.6 wheel on PyPI): the GPU counts it serves (``CustomAllreduce._SUPPORTED_WORLD_SIZES``) and the message
#: it takes, bytes, strictly less than (``_MAX_CAR_SIZE = 8192 * 1024``; ``should_custom_ar``: ``inp_size <
#: self.max_size`` where every pair of GPUs is on NVLink, ``full_nvlink``). Larger messages, and other GPU counts, go
#: to NCCL.
SGLANG_CUSTOM_AR_GPUS = (2, 4, 6, 8)
SGLANG_CUSTOM_AR_MAX_BYTES = 8192 * 1024
#: The kernel SGLang 0.5.6 runs for it: sgl-kernel 0.3.18.post2 (the wheel's pinned ``sgl-kernel==0.3.18.post2``)
#: through python/sglang/srt/_custom_ops.py, whose ``init_custom_ar(ipc_tensors, rank_data, rank, full_nvlink)`` and
#: ``all_reduce(fa, inp, out, reg_buffer, reg_buffer_sz_bytes)`` are vLLM's custom all-reduce (the file says it is
#: adapted from vLLM v0.6.4.post1's _custom_ops.py), not the TensorRT-LLM one-shot kernel of SGLang PR #2904: the
#: published table's "vllm" rows (:func:`published_allreduce_s`).
SGLANG_CUSTOM_AR_KERNEL = "vllm"


def sglang_allreduce_s(model: memory.ModelConfig, chip_key: str, tokens: int, tp: int) -> float:
    """Seconds of the tensor-parallel all-reduces of one forward pass over ``tokens`` tokens as SGLang 0.5.6 runs
    them inside one NVLink node: two a layer (after attention, after the feed-forward or MoE block: python/sglang/srt/
    models/qwen3_moe.py ``tensor_model_parallel_all_reduce``), each of ``tokens x hidden`` bf16 values, by its custom
    all-reduce where that takes the message (:data:`SGLANG_CUSTOM_AR_GPUS`, :data:`SGLANG_CUSTOM_AR_MAX_BYTES`; it is
    on by default: server_args.py ``disable_custom_all_reduce: bool = False``), charged the published latency of that
    kernel (:func:`published_allreduce_s`, kernel :data:`SGLANG_CUSTOM_AR_KERNEL`: 8 x H100, no CUDA graph, so the
    host's launch is in it); else NCCL's law (:func:`mlcalc.serving.comm_s`), as for a message beyond the published
    table's 4 MiB."""
    t = _check.positive_int("tokens", tokens)
    g = _check.positive_int("tp", tp)
    if g == 1:
        return 0.0
    msg = t * model.hidden * memory.dtype_bytes("bf16")
    table = published()["custom_allreduce"]["tables"][ALLREDUCE_TABLE]["rows"]
    top = max(float(r["data_size"]) for r in table) * ALLREDUCE_TABLE_BYTES_PER_ELEMENT
    if g not in SGLANG_CUSTOM_AR_GPUS or msg >= SGLANG_CUSTOM_AR_MAX_BYTES or msg > top:
        return serving.comm_s(model, chip_key, t, g)
    return 2 * model.n_layers * published_allreduce_s(msg, g, SGLANG_CUSTOM_AR_KERNEL)


def sglang_decode_step(model: memory.ModelConfig, chip_key: str, batch: int, context: int, tp: int = 1,
                       dtype: str = "bf16") -> serving.DecodeStep:
    """One decode step of ``batch`` sequences at ``context`` cached tokens as SGLang 0.5.6 runs it on ``tp`` GPUs of
    one node (CUDA graphs on: server_args.py sets ``cuda_graph_max_bs`` 512 on a B200, so every batch here replays
    one). It differs from the planner's "cuda-graph" step (:func:`mlcalc.serving.predict_decode`) in three terms,
    each from SGLang's code:

    - the weight-reading matmuls kernel by kernel (:func:`mlcalc.serving.kernel_weight_s`: each kernel a fixed time
      plus its bytes at the decode-matmul law of our probe, :func:`mlcalc.serving.chip_matmul_law`), as the fused
      layer launches them: one QKV product, the output product, the router;
    - the routed experts as the two grouped kernels of SGLang's fused-MoE Triton call (gate-and-up, then down, every
      expert in one launch: python/sglang/srt/layers/moe/fused_moe_triton), at the probe's grouped law. For Qwen3
      235B-A22B in bf16 on a B200 the 0.5.6 wheel ships no tuned configuration (configs/triton_3_*/ has no
      ``E=128,N=192,device_name=NVIDIA_B200.json``), so the kernel runs its default one; the grouped law gives SGLang's
      own published call for this model's shards (PR #11730, default configuration, FP8 on an H200) within -1 to +8 %
      (:func:`check_moe_kernel`), where the read rate gives 53-66 % of it;
    - the all-reduces by SGLang's custom kernel (:func:`sglang_allreduce_s`).

    The fused layer's small kernels (:func:`mlcalc.serving.engine_small_kernels_s`), its element-wise bytes and the
    attention are charged as the "cuda-graph" path charges them. Not charged: the host (SGLang overlaps its
    scheduling with the GPU by default), Qwen3's query and key RMSNorms (two kernels, the second on a side stream
    while capturing: models/qwen3_moe.py ``_apply_qk_norm``) and a fixed time of the attention kernel.

    SGLang cookbook, Qwen3 page (8 x B200, TP 8, SGLang 0.5.6): 10.12 ms per output token at concurrency 1,
    610 tokens in, 421 out:

    >>> m = memory.model_preset("Qwen3 235B-A22B")
    >>> round(sglang_decode_step(m, "B200", 1, 610 + 421 // 2, 8).step_s * 1e3, 1)
    8.1
    """
    b = _check.positive_int("batch", batch)
    c = _check.positive_int("context", context)
    t = _check.positive_int("tp", tp)
    bw = serving.read_bandwidth(chip_key)
    rate = serving.matmul_rate(chip_key, dtype)
    law = serving.chip_matmul_law(chip_key)
    bpp = memory.dtype_bytes(dtype)
    serial = dtype in serving.SERIAL_MATMUL_DTYPES
    mm, _ = serving.kernel_weight_s(model, b, law, True, t, 1, bpp, grouped_experts=True)
    return serving.decode_step(model, b, c, bw, rate, t, None, None, bpp, memory.dtype_bytes(dtype),
                               sglang_allreduce_s(model, chip_key, b, t),
                               serving.engine_small_kernels_s("cuda-graph", model), "engine", 1,
                               matmul_law=law, overlap=not serial,
                               activation_bytes_per_token=(serving.matmul_activation_bytes_per_token(model, t)
                                                           if serial else 0.0),
                               matmul_layer_s=mm,
                               norm_bytes_per_token=serving.engine_elementwise_bytes_per_token(model, t, dtype))


def concurrent_tpot_s(model: memory.ModelConfig, chip_key: str, tp: int, batch: int, prompt: int, output: int,
                      dtype: str = "bf16") -> float:
    """Mean time per output token of requests served ``batch`` at a time, each replaced by a new one when it ends
    (a benchmark client's concurrency), on an engine that runs prefills as their own forward passes between decode
    steps, as SGLang does by default (python/sglang/srt/server_args.py: ``enable_mixed_chunk: bool = False``).

    In steady state a request's ``output - 1`` later tokens each wait one decode step of the whole batch
    (:func:`sglang_decode_step`, at the mean context ``prompt + output / 2``), and while it
    decodes the other ``batch - 1`` requests are each replaced once, their prompts prefilled in between
    (:func:`mlcalc.serving.predict_prefill`, one prompt a pass): ``step + (batch - 1) prefill / (output - 1)``.
    At ``batch`` 1 that is the decode step alone.

    >>> m = memory.model_preset("Qwen3 235B-A22B")
    >>> concurrent_tpot_s(m, "B200", 8, 1, 610, 421) == sglang_decode_step(m, "B200", 1, 820, 8).step_s
    True
    """
    tp = _check.positive_int("tp", tp)
    b = _check.positive_int("batch", batch)
    p = _check.positive_int("prompt", prompt)
    o = _check.positive_int("output", output)
    if o < 2:
        raise ValueError(f"output={o!r} is not allowed: a time per output token needs at least 2 output tokens")
    step = sglang_decode_step(model, chip_key, b, p + o // 2, tp, dtype).step_s
    pre = serving.predict_prefill(model, chip_key, 1, p, "cuda-graph", tp, weight_dtype=dtype) if b > 1 else 0.0
    return step + (b - 1) * pre / (o - 1)


class ConcurrencyCheck(NamedTuple):
    """A published time per output token at a client concurrency next to :func:`concurrent_tpot_s`."""

    source: str  # key of the table in serving_published.json ("concurrency")
    engine: str  # the engine and its version, as the source states them
    chip: str
    model: str
    gpus: int
    concurrency: int  # the client's --max-concurrency
    batch: int  # requests in flight on average (the source's "Concurrency", rounded): the batch predicted
    input: int  # mean prompt tokens (the source's total / requests)
    output: int  # mean output tokens
    published_s: float  # mean time per output token
    predicted_s: float
    error: float  # predicted / published - 1
    cause: str


def check_concurrency() -> list[ConcurrencyCheck]:
    """Every row of the published concurrency tables (serving_published.json "concurrency") against
    :func:`concurrent_tpot_s`, with the cause of each row outside 25 % (:func:`concurrency_miss_cause`)."""
    out = []
    for key, table in published()["concurrency"]["tables"].items():
        for r in table["rows"]:
            model = memory.model_preset(r["model"])
            n = int(r["num_prompts"])
            p = max(1, round(int(r["total_input_tokens"]) / n))
            o = max(2, round(int(r["total_generated_tokens"]) / n))
            b = max(1, round(float(r["concurrency"])))
            tp = int(r["tp"])
            pred = concurrent_tpot_s(model, table["chip"], tp, b, p, o, table["dtype"])
            pub = float(r["mean_tpot_ms"]) / 1e3
            err = pred / pub - 1.0
            cause = concurrency_miss_cause(model, table["chip"], tp, b, pub, pred) if abs(err) > 0.25 else ""
            out.append(ConcurrencyCheck(key, table["engine"], table["chip"], r["model"], tp,
                                        int(r["max_concurrency"]), b, p, o, pub, pred, err, cause))
    return out


#: The published fused-MoE table read by :func:`check_moe_kernel` (serving_published.json "moe_kernel").
MOE_KERNEL_TABLE = "sglang-pr11730-h200-qwen3-235b-tp8-fp8"


def moe_block_s(model: memory.ModelConfig, chip_key: str, batch: int, tp: int = 1, dtype: str = "bf16") -> float:
    """Seconds the "cuda-graph" decode path (:func:`mlcalc.serving.decode_step` as
    :func:`mlcalc.serving.predict_decode` calls it) charges one MoE layer's routed experts on one of ``tp`` GPUs at
    ``batch`` tokens: the experts the batch touches (:func:`mlcalc.memory.moe_experts_touched`), each read once, their
    ``1 / tp`` share at the card's read rate, with their FLOPs (FP8: both summed with the experts' inputs and outputs,
    :func:`mlcalc.serving.matmul_s`; else the longer), plus the fused MoE block's small kernels (router top-k,
    alignment, activation, weighted sum: mlcalc/data/kernels.json ``moe_extra``) at a null kernel each. The router's
    matmul and any shared expert are not in it."""
    if not model.is_moe:
        raise ValueError(f"model={model.name!r} is not allowed: it has no experts")
    b = _check.positive_int("batch", batch)
    t = _check.positive_int("tp", tp)
    per = model.mlp_params_per_expert()
    touched = memory.moe_experts_touched(model.n_experts, model.experts_per_token, b)
    wb = memory.dtype_bytes(dtype)
    serial = dtype in serving.SERIAL_MATMUL_DTYPES
    mats = 3 if model.gated_mlp else 2
    h, f = model.hidden, model.expert_ffn
    act = (b * model.experts_per_token * (1.0 * (h + f / t) + 2.0 * ((mats - 1) * f / t + h))) if serial else 0.0
    moved = touched * per * wb / t + act
    flops = 2.0 * b * model.experts_per_token * per / t
    gemm = serving.matmul_s(moved, flops, serving.read_bandwidth(chip_key), serving.matmul_rate(chip_key, dtype),
                            overlap=not serial)
    k = serving._kernels()["graph_small_kernels_per_layer"]["value"]["moe_extra"]
    return gemm + k * serving.null_kernel_s()


def moe_kernel_share(batch: int, table: str = MOE_KERNEL_TABLE) -> tuple[float, float]:
    """``(published_s, modelled_s)`` of ``table``'s fused-MoE call at ``batch`` (:func:`check_moe_kernel`): linear
    between the published batches, held at the smallest and largest."""
    b = float(_check.positive_int("batch", batch))
    rows = check_moe_kernel(table)
    pub = serving.interpolate([(float(c.batch), c.published_s) for c in rows], b)
    mod = serving.interpolate([(float(c.batch), c.modelled_s) for c in rows], b)
    return pub, mod


def grouped_moe_block_s(model: memory.ModelConfig, chip_key: str, batch: int, tp: int = 1, dtype: str = "bf16") -> float:
    """One MoE layer's routed experts on one of ``tp`` GPUs at ``batch`` tokens as two grouped kernels at our probe's
    grouped law (:class:`mlcalc.serving.MatmulLaw` ``grouped_fixed_s`` and ``grouped_bytes_per_s``: transformers'
    grouped expert matmul on an H200 at decode batches 1-128, run h200x2-2026-11-26-serve2, carried to ``chip_key``'s
    read rate): gate-and-up, then down, each reading its ``1 / tp`` share of every touched expert, plus the fused
    block's small kernels as :func:`moe_block_s` counts them. Checked against SGLang's own call
    (:func:`check_moe_kernel`); SGLang's step charges its experts so (:func:`sglang_decode_step`), the planner's
    "cuda-graph" path does not: see :func:`grouped_extra_per_step_s`."""
    if not model.is_moe:
        raise ValueError(f"model={model.name!r} is not allowed: it has no experts")
    b = _check.positive_int("batch", batch)
    t = _check.positive_int("tp", tp)
    law = serving.chip_matmul_law(chip_key)
    touched = memory.moe_experts_touched(model.n_experts, model.experts_per_token, b)
    one = touched * model.hidden * model.expert_ffn * memory.dtype_bytes(dtype) / t
    mats = 3 if model.gated_mlp else 2
    k = serving._kernels()["graph_small_kernels_per_layer"]["value"]["moe_extra"]
    return law.seconds(one * (mats - 1), b, True) + law.seconds(one, b, True) + k * serving.null_kernel_s()


def grouped_extra_per_step_s(model: memory.ModelConfig, chip_key: str, batch: int, tp: int = 1,
                             dtype: str = "bf16") -> float:
    """Seconds a decode step would gain if every MoE layer's routed experts were charged :func:`grouped_moe_block_s`
    instead of :func:`moe_block_s`. On vLLM's nightly Mixtral rows (8 x 7B, 2 GPUs, batch 8) this is 6.0 ms a step on
    the H200 and 13.7 on the A100, where the published latencies leave 2.8 and 2.3 ms a step beyond the modelled step
    (and the same tables' dense rows 1.7-5.0): vLLM's fused MoE streams Mixtral's wide experts (7,168 columns a GPU)
    near the read rate, while SGLang's call on Qwen3's thin ones (192) runs at the grouped law. One law does not fit
    both, so the planner's path keeps the read rate; SGLang's step (:func:`sglang_decode_step`), whose Qwen3 235B
    call runs untuned on thin shares, takes the grouped law."""
    return model.n_moe_layers * (grouped_moe_block_s(model, chip_key, batch, tp, dtype)
                                 - moe_block_s(model, chip_key, batch, tp, dtype))


class MoeKernelCheck(NamedTuple):
    """A published fused-MoE call at a decode batch next to what the "cuda-graph" path charges for it."""

    batch: int
    published_s: float  # the engine's fused MoE call (serving_published.json "moe_kernel")
    modelled_s: float  # :func:`moe_block_s`
    error: float  # modelled / published - 1
    grouped_s: float  # :func:`grouped_moe_block_s`, the candidate not adopted


def check_moe_kernel(table: str = MOE_KERNEL_TABLE) -> list[MoeKernelCheck]:
    """Each published fused-MoE time of ``table`` against :func:`moe_block_s` for the same model, card, GPUs and
    dtype. SGLang's call for Qwen3-235B-A22B on one H200 of 8 (FP8) takes 31.7 us at one token, where reading the 8
    chosen experts' shares takes 4.6 us; the path charges 53-66 % of the published time at every batch from 1 to 32
    (16.7 us at one token): on these thin shares (each expert 192 wide on a GPU) the call's kernels run well below the
    read rate and above a null kernel's time, and no term of the path says by how much (a known miss, not corrected:
    the one table is one model, one card, one dtype and an untuned configuration). Our own probe's grouped law
    (:func:`grouped_moe_block_s`) gives the published call within -1.2 to +7.5 % at every batch, but it is not the
    planner's path's term: it over-charges vLLM's Mixtral (:func:`grouped_extra_per_step_s`); SGLang's own step
    takes it (:func:`sglang_decode_step`).

    >>> c = check_moe_kernel()[0]
    >>> c.batch, round(c.published_s * 1e6, 1), round(c.modelled_s * 1e6, 1)
    (1, 31.7, 16.7)
    """
    tables = published()["moe_kernel"]["tables"]
    _check.choice("table", table, tuple(tables))
    t = tables[table]
    model = memory.model_preset(t["model"])
    out = []
    for r in t["rows"]:
        b = int(r["batch"])
        pub = float(r["kernel_us"]) * 1e-6
        mod = moe_block_s(model, t["chip"], b, int(t["tp"]), t["dtype"])
        grp = grouped_moe_block_s(model, t["chip"], b, int(t["tp"]), t["dtype"])
        out.append(MoeKernelCheck(b, pub, mod, mod / pub - 1.0, grp))
    return out


#: The published custom all-reduce table read by :func:`published_allreduce_s` (serving_published.json
#: "custom_allreduce"): SGLang PR #2904, 8 x H100, TensorRT-LLM's one-shot/two-shot kernels as sgl-kernel ships them.
ALLREDUCE_TABLE = "sglang-pr2904-h100"
#: Bytes per element of the table's "data size" (the test's float32 tensors: sgl-kernel/tests/test_trt_reduce.py).
ALLREDUCE_TABLE_BYTES_PER_ELEMENT = 4


def published_allreduce_s(message_bytes: float, gpus: int, kernel: str = "sgl-kernel", table: str = ALLREDUCE_TABLE,
                          bytes_per_element: float = ALLREDUCE_TABLE_BYTES_PER_ELEMENT) -> float:
    """Seconds of one all-reduce of ``message_bytes`` over ``gpus`` GPUs of a node by an engine's custom kernel, as
    the published table gives it (serving_published.json "custom_allreduce"): linear between the two published sizes
    around the message, the smallest size's figure below it (a latency floor). Beyond the largest published size the
    table says nothing: refused. Not the planner's law (:func:`mlcalc.serving.comm_s` charges NCCL's): SGLang's
    step charges its all-reduces so (:func:`sglang_allreduce_s`).

    >>> round(published_allreduce_s(4 * 4096, 8) * 1e6, 1)  # the table's own row: 8 GPUs, 4,096 float32 elements
    5.7
    """
    tables = published()["custom_allreduce"]["tables"]
    _check.choice("table", table, tuple(tables))
    rows = [r for r in tables[table]["rows"] if r["kernel"] == kernel]
    if not rows:
        raise ValueError(f"kernel={kernel!r} is not allowed: the table {table!r} has "
                         f"{sorted({r['kernel'] for r in tables[table]['rows']})}")
    n = _check.positive_int("gpus", gpus)
    pts = sorted((float(r["data_size"]) * bytes_per_element, float(r["latency_ms"]) / 1e3)
                 for r in rows if int(r["gpus"]) == n)
    if not pts:
        raise ValueError(f"gpus={gpus!r} is not allowed: the table gives {sorted({int(r['gpus']) for r in rows})}")
    m = _check.non_negative("message_bytes", message_bytes)
    _check.positive("bytes_per_element", bytes_per_element)
    if m > pts[-1][0]:
        raise ValueError(f"message_bytes={message_bytes!r} is not allowed: the table stops at {pts[-1][0]:.0f} bytes")
    return serving.interpolate(pts, max(m, pts[0][0]))


def concurrency_miss_cause(model: memory.ModelConfig, chip_key: str, tp: int, batch: int, published_s: float,
                           predicted_s: float) -> str:
    """Why a concurrency row misses. The source states no cause; ours gives the parts of the modelled step
    (:func:`sglang_decode_step`): the all-reduces at SGLang's custom kernel, the rest a layer, and what the published
    time leaves a layer beyond them, with the terms the step does not charge."""
    ar = sglang_allreduce_s(model, chip_key, batch, tp)
    n_ar = 2 * model.n_layers
    layer_left = (published_s - ar) / model.n_layers
    layer_model = (predicted_s - ar) / model.n_layers
    return (f"no cause stated by the source (the cookbook page gives the times, not their parts); ours: the {n_ar} "
            f"all-reduces of a step (two a layer over {tp} GPUs, SGLang's custom kernel at its published latency, "
            f"{ar / n_ar * 1e6:.1f} us each: SGLang PR #2904's 'vllm' table, 8 x H100, no CUDA graph; no B200 table) "
            f"are {ar / predicted_s:.0%} of the prediction, and the published time leaves {layer_left * 1e6:.0f} us a "
            f"layer for the rest of it against {layer_model * 1e6:.0f} us modelled (matmul kernels at our probe's law, "
            f"the fused-MoE call at the grouped law, the fused layer's small kernels at batch {batch}"
            f"{', and the prefills of the requests that replace the others' if batch > 1 else ''}). Not charged: the "
            "host, Qwen3's query and key RMSNorms, a fixed time of the attention kernel. No source gives this "
            "layer's time at this batch, nor the kernels' times on this card")

__all__ = ["ATTN_RUN_CHIP", "grouped_law_factor", "GroupedEvidence", "grouped_evidence", "grouped_evidence_text", "THIN_SLICE_RUN", "grouped_expert_matmuls_s", "thin_slice_probe", "MOE_MAPPING_EVIDENCE", "MoeMappingCost", "moe_mapping_cost", "EAGER_PROTOCOL", "EAGER_RUN", "EagerScore", "HostPace", "RUN8", "eager_checks", "eager_scores", "host_pace", "FirstPoint", "first_points", "RUN7", "HostSpread", "host_probe_spread", "op_counts", "step_ops", "HostEvidence", "host_evidence", "measured_again", "generate_floor", "ARCHS", "FloorSpread", "LoadRun", "MeasuredCheck", "PATHS", "PublishedCheck", "RUN", "RUNS", "TARGET",
           "all_checks", "arch_floor", "arch_model", "card", "check_hf_decode", "check_hf_prefill", "check_load_steps",
           "check_published", "check_first_token", "MOE_PATHS", "moe_as_run", "FirstTokenCheck", "check_tp_decode", "chip", "ENGINE_OPS_PER_LAYER", "HF_LLAMA_OPS_PER_LAYER",
           "engine_layer_floor_s", "engine_small_kernels_s", "engine_matmul_s", "engine_layer_matmul_s",
           "check_run5_decode", "expert_rows_bytes_per_token", "expert_rows_rate", "RUN5", "RUN5B", "predict_engine", "miss_cause", "LoadCheck", "load_step_model",
           "check_load_simulation", "LOAD_MISS_CAUSE", "measured_step_model", "check_load_scheduler", "floor_spread", "load_runs", "matmul_rate", "predict_hf",
           "published", "read_bandwidth", "run_data", "static_batch_tokens_per_s", "tp_model",
           "RUN2", "KV_DTYPES", "KV_DTYPE_EVIDENCE", "GemmCheck", "GEMM_TIMES_RUN", "measured_gemm_curves", "measured_gemm_s", "measured_layers_gemm_s", "GemmEvidence", "gemm_evidence", "gemm_evidence_text", "measured_gemm_card", "layers_gemm_useful", "check_fp8_gemm", "fp8_gemm_s", "Inflight", "InflightCheck", "inflight", "inflight_comm_s", "WIDE_DTYPE", "check_inflight", "inflight_miss_cause", "inflight_leftover", "dense_twin", "moe_leftover_cause", "DENSE_TWIN", "moe_block_s", "grouped_moe_block_s", "grouped_extra_per_step_s", "MoeKernelCheck", "check_moe_kernel", "moe_kernel_share", "MOE_KERNEL_TABLE", "INFLIGHT_CAUSES", "stated_layout", "adp_rows_with_cache", "attention_dp_cause", "attention_dp_gap_shares", "AdpGapShares", "trtllm_bench_caps", "ADP_LAYOUT_EVIDENCE", "TRTLLM_KV_FRACTION", "TRTLLM_MAX_BATCH", "TRTLLM_MAX_TOKENS", "TRTLLM_MIN_TOKENS", "matmul_law", "graph_layer_floor_s", "Prefill", "predict_hf_prefill", "elementwise_bytes_per_token", "moe_routing_bytes_per_token", "replicated_norm_bytes_per_token", "RESIDUAL_NORM_BYTES_PER_VALUE", "concurrent_tpot_s", "ConcurrencyCheck", "check_concurrency", "concurrency_miss_cause", "published_allreduce_s", "ALLREDUCE_TABLE", "ALLREDUCE_TABLE_BYTES_PER_ELEMENT", "static_batch_latency_s", "LatencyCheck", "check_latency", "latency_miss_cause", "sglang_decode_step", "sglang_allreduce_s", "SGLANG_CUSTOM_AR_GPUS", "SGLANG_CUSTOM_AR_MAX_BYTES", "SGLANG_CUSTOM_AR_KERNEL", "VLLM_LATENCY_BUILD"]
