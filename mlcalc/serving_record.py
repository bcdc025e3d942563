"""The serving model's checked record: our measured decode runs against :func:`mlcalc.serving.decode_step` (the
eager decode record and its history, the paced rule, the misses' causes), the published benchmarks against
:func:`mlcalc.serving.predict_decode`, and the "checked" sentence the serving planner prints (:func:`checked_range`).

Kept apart from :mod:`mlcalc.serving` so that `import mlcalc` stays small: the site's Pyodide memory snapshot holds
every module the site imports at start, and Pyodide restores a snapshot only into 30 MiB of heap
(scripts/make_snapshot.mjs). Record and check code (run readers, checks, scores, causes) belongs here, or in a module
of its own, never in serving; serving re-exports these names when they are first asked for (``serving.check_decode``
still works), and calls this module only from inside a function (:func:`mlcalc.serving.plan_serving`).
"""

from __future__ import annotations

import math
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Any, Callable, Mapping, NamedTuple, Sequence

from mlcalc import _check, compute, memory
from mlcalc.serving import (_ALL_DECODE_RUNS, DECODE_METERED, DECODE_RECORD, DECODE_ROUNDS, DECODE_RUN, ENGINES, Floor,
                            _run_file, decode_step, hf_small_kernels_s, measured_copy_bandwidth, measured_decode, measured_floor,
                            measured_read_bandwidth)

#: How each decode run measured the host beside its points.
DECODE_PROTOCOL = MappingProxyType({
    "h200x2-2026-11-26-decode": "one process a model on a GPU of two, not pinned, no host probe beside the points, "
                                "no warm-up point apart; floor probe twice",
    "h200x4-2026-11-26-decode": "one process a model on a GPU of four, not pinned, no host probe beside the points, "
                                "no warm-up point apart; floor probe twice",
    "h100-2026-11-26-decode": "one process a model on one H100, not pinned, no host probe beside the points, no "
                              "warm-up point apart; floor probe twice",
    "h100-2026-11-27-serve9": "every point, one protocol: each process pinned to the vCPU found fastest, that vCPU's "
                              "pace metered, the host probe beside every point, the first point of a process apart; "
                              "floor probe at the start, middle and end",
    "h100-2026-11-27-serve10": "serve9's protocol on another H100 machine, with every timed generate call's own window "
                               "(epoch, thread CPU, the vCPU's clock ticks) recorded beside the meter",
    "h100-2026-11-27-serve13": "serve10's protocol on another H100 machine with every point measured in 3 rounds in its "
                               "process (the first round in the script's order, the next two shuffled), a point's step "
                               "the median of its rounds at its own cache length, and the host's time of every forward "
                               "timed inside the generate calls; its 545-token points have ONE round each at their own "
                               "cache length (transformers kept the process's longest static cache, so their rounds 2 "
                               "and 3 ran over 4,129 positions and are kept apart)",
    "h100-2026-11-27-serve14": "serve13's call again on another H100 machine, the same orders, with the static cache reset "
                               "before each point: every round at the point's own cache length (3 rounds a point; the 8B "
                               "batch 8 x 545 and 16 x 4,129 points 2, their third not started before the process's "
                               "deadline)",
})


class DecodeRounds(NamedTuple):
    """One decode point of a run measured in rounds (:data:`mlcalc.serving.DECODE_ROUNDS`): every round's step."""

    model: str  # "1b" or "8b"
    batch: int
    prompt_tokens: int
    context: int  # tokens in the static cache (max_cache_len)
    rounds: tuple[int, ...]  # the rounds that ran at the point's own cache length
    steps_s: tuple[float, ...]  # their decode steps, in round order
    host_forward_s: tuple[float, ...]  # each of those rounds' median host seconds to issue one decode forward
    step_s: float  # the point's record: the median of steps_s (of two, their mean)
    other_cache_len: int  # the longer static cache the other rounds ran over (0: none)
    other_cache_steps_s: tuple[float, ...]  # those rounds' steps: a longer cache, not this point


def _round_caches(res: Mapping[str, Any]) -> list[tuple[Mapping[str, Any], int]]:
    """Each round's point of one process and the static cache length its decode ran over: transformers 5.17's generate
    sizes a static cache to the longest the model has used in the process (``_prepare_static_cache``), so where the
    script did not reset it (the serve13 call) a point ran over the longest cache of the points before it (the warm-up
    point included); where the script recorded the length (``static_cache_len`` of its timed calls), that."""
    longest = int(res.get("warmup_discarded", {}).get("max_cache_len", 0))
    out = []
    for rnd in res["rounds"]:
        for p in rnd["points"]:
            if "decode_step_s" not in p:
                continue
            own = int(p["max_cache_len"])
            calls = (p.get("windows") or {}).get(f"generate_{1 + int(p['new_tokens'])}", [])
            rec = [int(c["static_cache_len"]) + 1 for c in calls if c.get("static_cache_len")]
            longest = max(longest, own)
            out.append((p, max(rec) if rec else longest))
    return out


def decode_rounds_of(key: str, res: Mapping[str, Any]) -> tuple[DecodeRounds, ...]:
    """:class:`DecodeRounds` of every point of one process measured in rounds (``res``: its decode_<key>.json)."""
    import statistics

    runs = _round_caches(res)
    out = []
    for pt in res["points"]:
        b, q = int(pt["batch"]), int(pt["prompt_tokens"])
        mine = [(p, n) for p, n in runs if (int(p["batch"]), int(p["prompt_tokens"])) == (b, q)]
        ok = [p for p, n in mine if n <= int(p["max_cache_len"])]
        other = [(p, n) for p, n in mine if n > int(p["max_cache_len"])]
        if not ok:
            continue
        steps = tuple(float(p["decode_step_s"]) for p in ok)
        out.append(DecodeRounds(key, b, q, int(ok[0]["max_cache_len"]), tuple(int(p["round"]) for p in ok), steps,
                                tuple(float(p.get("host_forward_s", math.nan)) for p in ok),
                                float(statistics.median(steps)), max((n for _, n in other), default=0),
                                tuple(float(p["decode_step_s"]) for p, _ in other)))
    return tuple(out)


def round_points(res: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The points of one process measured in rounds, as :func:`check_decode` reads a run's points: each point's step the
    median of its rounds at its own cache length (the serve13 rule, scripts/gpu/serve13_predictions.json)."""
    return [{"batch": r.batch, "prompt_tokens": r.prompt_tokens, "max_cache_len": r.context, "decode_step_s": r.step_s, "decode_tokens_per_s": r.batch / r.step_s,
             "rounds_decode_step_s": list(r.steps_s)} for r in decode_rounds_of(str(res.get("model", "")), res)]


def decode_rounds(run: str = DECODE_RECORD) -> tuple[DecodeRounds, ...]:
    """:class:`DecodeRounds` of every point of a run measured in rounds (the record, :data:`DECODE_RECORD`)."""
    _check.choice("run", run, DECODE_ROUNDS)
    return tuple(r for k in ("1b", "8b") for r in decode_rounds_of(k, _run_file(f"decode_{k}.json", run)))


def llama_shape(key: str, run: str = DECODE_RUN) -> memory.ModelConfig:
    """The 1B or 8B shape we measured, as a ModelConfig (from the run's own record)."""
    _check.choice("model", key, ("1b", "8b"))
    sh = measured_decode(run)[key]["shape"]
    return memory.ModelConfig(name=f"Llama-shaped {key.upper()}", n_layers=sh["num_hidden_layers"],
                              hidden=sh["hidden_size"], n_heads=sh["num_attention_heads"],
                              n_kv_heads=sh["num_key_value_heads"], head_dim=sh["head_dim"],
                              ffn_hidden=sh["intermediate_size"], vocab=sh["vocab_size"],
                              tied_embeddings=sh["tie_word_embeddings"])


class DecodeCheck(NamedTuple):
    """A measured decode point next to the prediction."""

    model: str  # "1b" or "8b"
    batch: int  # sequences
    context: int  # tokens in the static cache (prompt + new tokens)
    measured_tokens_per_s: float  # from the run
    predicted_tokens_per_s: float  # decode_step
    error: float  # predicted / measured - 1
    bound: str  # what bounds the predicted step
    card: str  # the GPU it ran on


def check_decode(run: str = DECODE_RUN) -> list[DecodeCheck]:
    """Every measured decode point of ``run`` (:data:`DECODE_RECORD` or one of :data:`DECODE_RUNS`) against
    :func:`decode_step`.

    Inputs the prediction takes from the same card: the read bandwidth (a reduction), the floor
    (tiny models) and the copy rate of ``repeat_kv`` at a shape that is no decode point; the matmul
    rate is the catalogue's achievable one, the small kernels' time :func:`hf_small_kernels_s`. The
    static cache attends over its whole length (prompt + 1 + new tokens), so that is the context.
    """
    floor = measured_floor(run)
    return _decode_checks(run, measured_read_bandwidth(run), measured_copy_bandwidth(run), lambda key, i: floor)


def _decode_checks(run: str, bw: float, copy: float, floor_at: Callable[[str, int], Floor]) -> list[DecodeCheck]:
    """Every decode point of ``run`` against :func:`decode_step` at the read bandwidth ``bw`` and copy rate ``copy``,
    with the floor ``floor_at(model key, index of the point)`` (:func:`check_decode`, :func:`check_decode_paced`)."""
    out = []
    for key in ("1b", "8b"):
        res = measured_decode(run)[key]
        model = llama_shape(key, run)
        card = res["env"].get("device_name", "GPU")
        rate = compute.achievable_flops("H200-SXM" if "H200" in card else "H100-SXM", "bf16", "achievable")
        for i, pt in enumerate(res["points"]):
            if "error" in pt:
                continue
            d = decode_step(model, int(pt["batch"]), int(pt["max_cache_len"]), bw, rate, 1, floor_at(key, i), copy,
                            small_kernels_s=hf_small_kernels_s())
            meas = float(pt["decode_tokens_per_s"])
            out.append(DecodeCheck(key, int(pt["batch"]), int(pt["max_cache_len"]), meas, d.tokens_per_s,
                                   d.tokens_per_s / meas - 1.0, d.bound, card))
    return out


# --------------------------------------------------------------------------- decode priced at its own pace (serve10)


@lru_cache(maxsize=None)
def _decode_meter(run: str, process: str) -> tuple[tuple[float, int, float], ...]:
    """The pace meter of one process of a metered decode run: (epoch seconds at a sample's end, runs of the fixed piece
    of Python, CPU seconds they took), as :func:`mlcalc.distruns.pace_samples` reads a training run's."""
    _check.choice("run", run, DECODE_METERED)
    logs = resources.files("mlcalc.data").joinpath("measured").joinpath(run).joinpath("logs")
    if not logs.is_dir():
        raise ValueError(f"run={run!r} is not allowed here: its meters (logs/) are not in this copy of the package")
    names = [f.name for f in logs.iterdir() if f.name.startswith(f"pace_{process}_c") and f.name.endswith(".txt")]
    if len(names) != 1:
        raise ValueError(f"process={process!r} is not allowed: run {run!r} has {len(names)} meters for it, not one")
    rows = []
    for line in logs.joinpath(names[0]).read_text().splitlines():
        if line and not line.startswith("#"):
            e, r, c = line.split()[:3]
            rows.append((float(e), int(r), float(c)))
    return tuple(rows)


class PacedWindow(NamedTuple):
    """Where a timed decode point (or floor probe) ran on its pinned vCPU: its window and the meter over it."""

    start: float  # epoch seconds
    end: float
    pace: float  # runs per CPU second of the meter's fixed Python over (start, end] (mlcalc.distruns.pace_over)
    running: float  # share of the vCPU's clock ticks over the window that were not stolen (1.0 where not recorded)
    exact: bool  # False: the window reconstructed from the process's timeline (runs before serve10)


def _window(samples: tuple[tuple[float, int, float], ...], start: float, end: float,
            calls: Sequence[Mapping[str, Any]] = ()) -> PacedWindow:
    from mlcalc import distruns

    pace = distruns.pace_over(samples, start, end)
    if pace <= 0:
        raise ValueError(f"window=({start}, {end}) is not allowed: no meter sample ended inside it")
    ticks = [sum(x) for x in zip(*(c["stat_ticks"] for c in calls if c.get("stat_ticks")))]
    total = sum(ticks)
    running = 1.0 - ticks[7] / total if len(ticks) >= 8 and total > 0 else 1.0
    return PacedWindow(start, end, pace, running, bool(calls))


def _timed_calls(pt: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A point's timed ``generate(1 + N)`` calls (the decode steps' time), where the run recorded their windows."""
    w = pt.get("windows") or {}
    return list(w.get(f"generate_{1 + int(pt['new_tokens'])}", ()))


def decode_point_window(run: str, key: str, index: int) -> PacedWindow:
    """The window of the ``index``-th decode point of ``key`` ("1b", "8b") in a metered run and its vCPU's pace over it.

    serve10 on: from the start of the point's first timed ``generate(1 + N)`` call to the end of its second (their
    recorded epochs), the running share from their /proc/stat ticks. serve9 (no windows recorded): reconstructed from
    the process's timeline: the meter's last sample is the process's end, ``wall_s`` before it its clock's start
    (``host_probe`` ``t_s``); the point ran between the end of the host probe before it and the end of the next one."""
    res = measured_decode(run)[key]
    pt = res["points"][_check.non_negative_int("index", index)]
    s = _decode_meter(run, key)
    calls = _timed_calls(pt)
    if calls:
        return _window(s, float(calls[0]["epoch"][0]), float(calls[-1]["epoch"][1]), calls)
    t0 = s[-1][0] - float(res["wall_s"])
    hp = res["host_probe"]["samples"]
    j = next(i for i, x in enumerate(hp) if x["before"] == f"{int(pt['batch'])}x{int(pt['prompt_tokens'])}")
    return _window(s, t0 + float(hp[j]["t_s"]), t0 + float(hp[j + 1]["t_s"]))


def floor_probe_windows(run: str) -> tuple[tuple[int, float, PacedWindow], ...]:
    """Every tiny-model floor probe of a metered run: (layers, seconds a step, its window and pace). serve10 on: each
    probe's own timed ``generate(1 + N)`` calls; serve9: the probe process's timed part (its last ``wall_s`` seconds
    before the meter's last sample)."""
    out = []
    for name, pr in zip(("probe_start", "probe_middle", "probe_end"), measured_decode(run)["probes"]):
        s = _decode_meter(run, name)
        for o in pr["overhead"]:
            calls = _timed_calls(o)
            w = (_window(s, float(calls[0]["epoch"][0]), float(calls[-1]["epoch"][1]), calls) if calls
                 else _window(s, s[-1][0] - float(pr["wall_s"]), s[-1][0]))
            out.append((int(o["n_layers"]), float(o["decode_step_s"]), w))
    return tuple(out)


def _effective_pace(w: PacedWindow, steal: bool) -> float:
    return w.pace * (w.running if steal else 1.0)


def floor_work(run: str, steal: bool = False) -> tuple[float, float]:
    """The eager decode floor as host work in runs of the meter's fixed Python: the least-squares line (as
    :func:`measured_floor`) through every floor probe's seconds a step times its vCPU's pace over its own window
    (:func:`floor_probe_windows`): (fixed runs, runs per layer). ``steal``: the pace times the window's running share."""
    pts = [(float(n), sec * _effective_pace(w, steal)) for n, sec, w in floor_probe_windows(run)]
    n = len(pts)
    mx = sum(x for x, _ in pts) / n
    my = sum(y for _, y in pts) / n
    slope = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
    return max(0.0, my - slope * mx), max(0.0, slope)


def paced_floor(work: tuple[float, float], pace: float) -> Floor:
    """The floor at a vCPU pace: distruns' stated-pace rule (every host constant times ``STATED_PACE`` / pace,
    :func:`mlcalc.distruns.paced_machine`), the floor's seconds first brought to the stated pace by their own meter
    (work / STATED_PACE), so the stated pace cancels: work / pace."""
    from mlcalc import distruns

    p = _check.positive("pace", pace)
    k = distruns.STATED_PACE / p
    return Floor(work[0] / distruns.STATED_PACE * k, work[1] / distruns.STATED_PACE * k,
                 f"the floor probes' host work priced at {p / 1e3:.0f} thousand runs a second of the pace meter")


def check_decode_paced(run: str, steal: bool = False, inputs: str | None = None) -> list[DecodeCheck]:
    """Every decode point of a metered run against :func:`decode_step` as :func:`check_decode` runs it, but with the
    floor priced at the point's own pace (the serve10 rule, written before that call: scripts/gpu/predict_serve10.py):
    the floor probes' host work (:func:`floor_work`) over the pace of the point's pinned vCPU over the point's own
    window (:func:`decode_point_window`; :func:`paced_floor`). ``steal``: both paces times their windows' running
    share (a second column, written before the same call). ``inputs``: another metered run whose floor work, read
    bandwidth and copy rate are used (the serve10 call's blind prediction took serve9's)."""
    _check.choice("run", run, DECODE_METERED)
    src = run if inputs is None else _check.choice("inputs", inputs, DECODE_METERED)
    work = floor_work(src, steal)
    return _decode_checks(run, measured_read_bandwidth(src), measured_copy_bandwidth(src), lambda key, i: paced_floor(
        work, _effective_pace(decode_point_window(run, key, i), steal)))


#: The serve7 call's ``generate`` decode of the 1B and 8B shapes at batch 1 (scripts/gpu/bench_decode.py --points
#: 1x512,1x4096, one H200): the first point of each process measured once and kept apart, then again.
FIRST_POINT_RUN = "h200-2026-11-27-serve7"


def first_point_ratio(key: str) -> float:
    """The first decode point of a ``generate`` process (batch 1, 545 positions) over the same point measured again
    in that process, as the serve7 call timed it (each point's own warm-up ran before both)."""
    _check.choice("model", key, ("1b", "8b"))
    d = _run_file(f"decode_{key}.json", FIRST_POINT_RUN)
    return float(d["warmup_discarded"]["decode_step_s"]) / float(d["points"][0]["decode_step_s"])


def decode_miss_cause(c: DecodeCheck, run: str = DECODE_RUN) -> str:
    """Why a decode point outside 25 % misses ("" within it, or when no stated cause covers it): the first point of
    a process that kept no warm-up point apart (runs before the script measured it apart) runs slow, as the same
    batch at 8 times the context later in that process shows and as the serve7 call measured apart."""
    if abs(c.error) <= 0.25:
        return ""
    res = measured_decode(run)[c.model]
    if run in DECODE_METERED:
        g, h = decode_layer_parts(c, run)
        if abs(g / h - 1.0) <= CROSSOVER_BAND:
            return _crossover_cause(c, run, g, h)
        return _host_pace_cause(c, run)
    first = res["points"][0]
    if "warmup_discarded" in res or (int(first["batch"]), int(first["max_cache_len"])) != (c.batch, c.context):
        return ""
    later = [p for p in res["points"][1:] if int(p["batch"]) == c.batch and "decode_step_s" in p]
    lat = (f"; the same batch at {int(later[0]['max_cache_len']):,} positions later in the process took "
           f"{float(later[0]['decode_step_s']) * 1e3:.1f} ms a step" if later else "")
    return (f"the first point of its process ({float(first['decode_step_s']) * 1e3:.1f} ms a step): this run kept no "
            f"warm-up point apart{lat}; the serve7 call, which measured the first point apart, found it "
            f"{first_point_ratio(c.model):.2f}x the same point measured again")


def _host_pace_cause(c: DecodeCheck, run: str) -> str:
    res = measured_decode(run)[c.model]
    pt = next(p for p in res["points"] if (int(p["batch"]), int(p["max_cache_len"])) == (c.batch, c.context))
    hp = {x["before"]: float(x["s"]) for x in res["host_probe"]["samples"]}
    probes = [float(x["s"]) for x in res["host_probe"]["samples"]]
    fl = measured_floor(run)
    f8 = fl.fixed_s + 8 * fl.per_layer_s
    beside = hp[f"{c.batch}x{int(pt['prompt_tokens'])}"]
    return (f"host time on a slow, moving host (not the GPU work): {float(pt['decode_step_s']) * 1e3:.1f} ms a step "
            f"measured against "
            f"{c.batch / c.predicted_tokens_per_s * 1e3:.1f} predicted from the call's floor probes (their 8-layer "
            f"tiny model {f8 * 1e3:.1f} ms a step); the same tiny model timed in this process just before the point "
            f"took {beside * 1e3:.1f} ms, and {min(probes) * 1e3:.1f}-{max(probes) * 1e3:.1f} ms over the process "
            f"({max(probes) / min(probes):.1f} x) on one pinned vCPU; {_paced_note(c, run)}")


def _paced_note(c: DecodeCheck, run: str) -> str:
    try:
        e = _paced_error(c, run)
    except (ValueError, OSError):  # the meters (logs/) are not in the wheel the browser loads
        return "its own window's meter is in the repository's copy of the run (logs/), not read here"
    how = "within 25 %" if abs(e) <= 0.25 else "still outside 25 %"
    return (f"priced at its own window's meter pace (check_decode_paced, the serve10 rule, not adopted) it is {e:+.0%}, "
            f"{how}")


def _paced_error(c: DecodeCheck, run: str) -> float:
    return next(x.error for x in check_decode_paced(run) if (x.model, x.batch, x.context) == (c.model, c.batch,
                                                                                              c.context))


#: Host and GPU times per layer within this share of each other: a point at the crossover (:func:`decode_miss_cause`).
#: Stated on the serve10 call, where the three points inside it were its three largest errors (+24 to +42 % under the
#: rule then, each layer max(host, GPU); +20 to +37 % with the in-order path, :func:`in_order_path_s`).
CROSSOVER_BAND = 0.15


def decode_layer_parts(c: DecodeCheck, run: str) -> tuple[float, float]:
    """(GPU seconds, host floor seconds) of one layer of a checked decode point, as :func:`check_decode` predicts it
    (the run's own floor probes): :func:`decode_step` runs the layer's operations on their in-order critical path
    (:func:`in_order_path_s`), the host free to run ahead of the GPU by any number of operations."""
    model = llama_shape(c.model, run)
    rate = compute.achievable_flops("H200-SXM" if "H200" in c.card else "H100-SXM", "bf16", "achievable")
    fl = measured_floor(run)
    d = decode_step(model, c.batch, c.context, measured_read_bandwidth(run), rate, 1, fl, measured_copy_bandwidth(run),
                    small_kernels_s=hf_small_kernels_s())
    return d.layer_gpu_s, fl.per_layer_s


def _crossover_cause(c: DecodeCheck, run: str, g: float, h: float) -> str:
    res = measured_decode(run)[c.model]
    pt = next(p for p in res["points"] if (int(p["batch"]), int(p["max_cache_len"])) == (c.batch, c.context))
    hp = {x["before"]: float(x["s"]) for x in res["host_probe"]["samples"]}
    beside = hp[f"{c.batch}x{int(pt['prompt_tokens'])}"]
    fl = measured_floor(run)
    model = llama_shape(c.model, run)
    return (f"host and GPU at the crossover: {g * 1e3:.2f} ms of GPU work a layer against {h * 1e3:.2f} ms of host "
            f"launches (within {CROSSOVER_BAND:.0%}); decode_step runs each layer's operations on their in-order "
            f"critical path, the host free to run ahead, which can add at most one layer's shorter side "
            f"({min(g, h) * 1e3:.2f} ms) to {model.n_layers} x the longer; the measured "
            f"{float(pt['decode_step_s']) * 1e3:.1f} ms a step is {c.batch / c.predicted_tokens_per_s * 1e3:.1f} ms "
            f"predicted plus {(float(pt['decode_step_s']) - c.batch / c.predicted_tokens_per_s) * 1e3:.1f}: the host "
            f"did not run that far ahead (with no overlap at all the layers would take "
            f"{(model.n_layers * (g + h)) * 1e3:.0f} ms); the host probe beside it took "
            f"{beside * 1e3:.1f} ms (the floor probes' 8-layer model {(fl.fixed_s + 8 * fl.per_layer_s) * 1e3:.1f})"
            + _profile_note(c, g))


def _profile_note(c: DecodeCheck, g: float) -> str:
    """What the profiled call shows at this point (:func:`mlcalc.decode_profile.profile_note`; imported only here:
    its code is kept out of the site's memory snapshot, whose heap `import mlcalc` fills to its 30 MiB)."""
    from mlcalc import decode_profile  # it imports this module

    return decode_profile.profile_note(c, g)



class DecodeScore(NamedTuple):
    """One decode run's points within 25 %: the record (:data:`DECODE_RECORD`) or history."""

    run: str
    card: str
    protocol: str  # :data:`DECODE_PROTOCOL`
    within: int
    n: int
    misses: tuple[str, ...]  # "1B batch 1, 545 tokens: +26 % (cause)"
    record: bool


def decode_scores() -> tuple[DecodeScore, ...]:
    """Every decode run's points within 25 %, run by run: the history (:data:`DECODE_RUNS`) and the record."""
    out = []
    for run in _ALL_DECODE_RUNS:
        cs = check_decode(run)
        miss = tuple(f"{c.model.upper()} batch {c.batch}, {c.context} tokens: {c.error:+.0%} "
                     f"({decode_miss_cause(c, run) or 'no stated cause'})" for c in cs if abs(c.error) > 0.25)
        out.append(DecodeScore(run, cs[0].card, DECODE_PROTOCOL[run], sum(abs(c.error) <= 0.25 for c in cs), len(cs),
                               miss, run == DECODE_RECORD))
    return tuple(out)


class PacedDecodeScore(NamedTuple):
    """A metered decode run's points within 25 % under the unpaced check (:func:`check_decode`, the record's rule) and
    each point priced at its own pace (:func:`check_decode_paced`); ``blind``: the paced rule with the previous metered
    run's inputs (the serve10 call's blind prediction; None for the first metered run)."""

    run: str
    n: int
    unpaced: int
    paced: int
    blind: int | None


def decode_paced_scores() -> tuple[PacedDecodeScore, ...]:
    """:class:`PacedDecodeScore` of every metered decode run (:data:`DECODE_METERED`)."""
    out = []
    for i, run in enumerate(DECODE_METERED):
        un, pa = check_decode(run), check_decode_paced(run)
        bl = check_decode_paced(run, inputs=DECODE_METERED[i - 1]) if i else []
        out.append(PacedDecodeScore(run, len(un), sum(abs(c.error) <= 0.25 for c in un),
                                    sum(abs(c.error) <= 0.25 for c in pa),
                                    sum(abs(c.error) <= 0.25 for c in bl) if i else None))
    return tuple(out)


class ProbePace(NamedTuple):
    """How one process's host probe followed its vCPU's meter (:func:`host_probe_pace_slope`)."""

    model: str  # "1b" or "8b": the process
    samples: int
    exponent: float  # probe time ~ pace ** -exponent (least squares on logs); 1: one to one with the meter
    r_squared: float  # share of the log probe time's variance the log pace explains


def host_probe_pace_slope(run: str = DECODE_METERED[-1]) -> tuple[ProbePace, ...]:
    """How the host probe (the 8-layer tiny model timed beside every point) follows its vCPU's meter over its own
    window, per process of a run that recorded the windows (:class:`ProbePace`). An exponent of 1 is host time one to
    one with the meter's pace, what :func:`paced_floor` takes."""
    from mlcalc import distruns

    out = []
    for key in ("1b", "8b"):
        s = _decode_meter(run, key)
        xs, ys = [], []
        for x in measured_decode(run)[key]["host_probe"]["samples"]:
            calls = _timed_calls({"windows": x.get("windows"), "new_tokens":
                                  measured_decode(run)[key]["host_probe"]["new_tokens"]})
            if not calls:
                raise ValueError(f"run={run!r} is not allowed: its host probes have no recorded windows")
            p = distruns.pace_over(s, float(calls[0]["epoch"][0]), float(calls[-1]["epoch"][1]))
            xs.append(math.log(p))
            ys.append(math.log(float(x["s"])))
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        sxx = sum((x - mx) ** 2 for x in xs)
        syy = sum((y - my) ** 2 for y in ys)
        sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
        out.append(ProbePace(key, len(xs), -sxy / sxx, sxy * sxy / (sxx * syy)))
    return tuple(out)


# --------------------------------------------------------------------------- published serving benchmarks

class BenchCheck(NamedTuple):
    """A published serving figure next to the prediction."""

    chip: str  # catalogue key
    model: str  # preset
    dtype: str  # weights and KV cache
    batch: int  # sequences
    tp: int  # tensor parallel
    input: int  # prompt tokens
    output: int  # output tokens (0: first-token latency)
    published: float  # out tokens/s per GPU, or TTFT in ms
    predicted: float  # the same, predicted
    error: float  # predicted / published - 1
    what: str  # "throughput (out tok/s/GPU)" or "first token (ms)"


def check_benchmarks() -> list[BenchCheck]:
    """TensorRT-LLM's published static-batch throughput and first-token latency (v0.9.0 of its performance page,
    H100 and H200 in FP8: mlcalc/data/serving_published.json) against the production-engine model, one row each.

    The comparison itself is :func:`mlcalc.servemeasured.check_published` (a static batch: the prefill of B x input
    tokens, then ``output`` decode steps at the mean context, :func:`predict_decode` "cuda-graph") and
    :func:`mlcalc.servemeasured.check_first_token`; this lists both in one form.
    """
    from mlcalc import servemeasured as sm  # it imports this module
    tables = sm.published()
    out = [BenchCheck(c.chip, c.model, tables["tables"][c.source]["dtype"], c.batch, c.gpus, c.input, c.output,
                      c.published, c.predicted, c.error, "throughput (out tok/s/GPU)") for c in sm.check_published()]
    out += [BenchCheck(c.chip, c.model, tables["first_token"][c.source]["dtype"], 1, c.gpus, c.input, 0,
                       c.published_s * 1e3, c.predicted_s * 1e3, c.error, "first token (ms)")
            for c in sm.check_first_token()]
    return out


# --------------------------------------------------------------------------- which decode attention v0.9.0 ran

#: Query heads per KV head (on one GPU) with which TensorRT-LLM's XQA dispatcher takes a plain decode (no Medusa) to
#: its GQA kernel: cpp/tensorrt_llm/kernels/decoderMaskedMultiheadAttention/decoderXQARunner.h,
#: ``DecoderXQARunner::shouldUse``, ``SUPPORT_RETURN_FALSE("nbHeads")`` unless ``nbQHeadsPerKV`` is 8 (the first XQA
#: kernels, for Llama 2 70B), in every revision of that check from those kernels to the releases after 0.9.0 (later
#: revisions add 1, then 16; 4 in none: arbitrary groups came with the JIT kernels of later releases). Every other
#: decode runs the masked multi-head attention kernel (MMHA). Release 0.10.0's notes: "Integrated the new NVIDIA
#: Hopper XQA kernels for LLaMA 2 70B model". 1 is listed for MQA; with one query head per KV head (MHA) both kernels
#: read each KV head once.
XQA_V090_GROUPS = (1, 8)


def trtllm_v090_kv_reads(model: memory.ModelConfig, tp: int = 1) -> int:
    """How many times one decode step of TensorRT-LLM 0.9.0 reads each KV head's cache: once where its XQA kernel
    runs (:data:`XQA_V090_GROUPS`: one thread block per KV head and sequence, all its query heads together), else
    once per query head of the group: MMHA launches one thread block per query head and sequence
    (decoderMaskedMultiheadAttentionTemplate.h: ``hi = blockIdx.x`` over ``num_heads``, ``hi_kv = hi /
    qhead_per_kv``), and each block reads its KV head's keys and values.

    Mistral 7B (32 query heads over 8 KV heads) and Mixtral 8x7B (the same, 16 over 4 on each of 2 GPUs): 4 reads;
    Llama 2 70B (64 over 8): XQA, 1; an MHA model: 1 either way.

    >>> trtllm_v090_kv_reads(memory.model_preset("Mistral 7B")), trtllm_v090_kv_reads(memory.model_preset("Llama-2 70B"), 2)
    (4, 1)
    """
    t = _check.positive_int("tp", tp)
    kv = max(1, model.n_kv_heads // t)
    g = (model.n_heads // t) // kv
    return 1 if g in XQA_V090_GROUPS else g


class MmhaCheck(NamedTuple):
    """A TensorRT-LLM 0.9.0 static-batch row with its decode attention counted as the release ran it."""

    chip: str
    model: str
    tp: int
    batch: int
    input: int
    output: int
    published: float  # output tokens/s per GPU
    kv_reads: int  # reads of each KV head's cache a step (trtllm_v090_kv_reads)
    error: float  # the model's (cache read once per KV head), predicted / published - 1
    error_per_query_head: float  # the cache read kv_reads times at the card's read rate
    query_head_rate: float  # bytes/s: the per-query-head reads over the attention time the published step leaves (0:
    #                         it leaves none, the rest of the step as modelled already longer than the published step)


def mmha_checks() -> list[MmhaCheck]:
    """Every v0.9.0 throughput row (:func:`mlcalc.servemeasured.check_published`) with its decode attention counted
    as the release ran it: the cache read :func:`trtllm_v090_kv_reads` times a step at the card's read rate, and the
    rate the published time gives those reads, the rest of the step as modelled (prefill and the other kernels of the
    step as :func:`mlcalc.servemeasured.static_batch_tokens_per_s` has them). Record only: the serving model reads
    the cache once per KV head (a GQA kernel, as engines run it now).

    The extra reads are charged at the card's read rate (attention's FLOPs are a small share here); with one read the
    prediction is :func:`check_published`'s."""
    from mlcalc import serving, servemeasured as sm  # sm imports this module

    out = []
    for c in sm.check_published():
        table = sm.published()["tables"][c.source]
        if "0.9.0" not in table["date"]:
            continue
        m = sm.moe_as_run(memory.model_preset(c.model), table.get("moe_path", "routed"))
        reads = trtllm_v090_kv_reads(m, c.gpus)
        ctx = c.input + max(1, c.output // 2)
        kvb = memory.dtype_bytes(table["dtype"])
        kv = serving.sequence_kv_bytes(m, ctx, kvb) * c.batch / serving.kv_split(m, c.gpus)  # one read, a step
        bw = serving.read_bandwidth(c.chip)
        total = c.batch * c.output / (c.predicted * c.gpus)  # the model's seconds for the batch
        more = (c.output - 1) * (reads - 1) * kv / bw
        pred = c.batch * c.output / ((total + more) * c.gpus)
        pub_total = c.batch * c.output / (c.published * c.gpus)
        attn = kv / bw + (pub_total - total) / (c.output - 1)  # the step's attention as the published time leaves it
        rate = reads * kv / attn if attn > 0 else 0.0  # 0: the published step leaves attention no time
        out.append(MmhaCheck(c.chip, c.model, c.gpus, c.batch, c.input, c.output, c.published, reads, c.error,
                             pred / c.published - 1.0, rate))
    return out


# --------------------------------------------------------------------------- v0.9.0's MoE all-reduces (record)

def trtllm_v090_moe_allreduces(model: memory.ModelConfig, tp: int = 1) -> int:
    """All-reduces the feed-forward block of one MoE layer makes in TensorRT-LLM 0.9.0's FP8 engines, where the MoE
    plugin has no FP8 runner and every expert runs on every token (:func:`mlcalc.servemeasured.moe_as_run`):
    ``tensorrt_llm/layers/moe.py`` at commit 250d9c293d5edbc2a45c20775b3150b1eb68b364 builds each expert as a GatedMLP
    with the layer's ``tp_group`` and ``tp_size`` in tensor-parallel mode (``MoeConfig.tp_mode`` defaults to
    TENSOR_PARALLEL), its output projection a RowLinear (``FP8RowLinear`` under FP8, ``layers/mlp.py``) whose
    ``multiply_reduce`` all-reduces its own output when ``tp_size > 1`` (``layers/linear.py``); the block adds no
    all-reduce of its own in that mode. So ``n_experts`` all-reduces where a routed MoE kernel makes one, and 0 on one
    GPU. A dense model: 1 (its MLP's).

    Mixtral 8x7B on 2 GPUs: 8, with attention's 9 a layer, not the 2 :func:`mlcalc.serving.comm_s` charges:

    >>> trtllm_v090_moe_allreduces(memory.model_preset("Mixtral 8x7B"), 2)
    8
    """
    t = _check.positive_int("tp", tp)
    if t == 1:
        return 0
    return model.n_experts if model.is_moe else 1


class MoeAllreduceCheck(NamedTuple):
    """A TensorRT-LLM 0.9.0 Mixtral row with every expert's all-reduce charged (record only)."""

    chip: str
    model: str
    tp: int
    batch: int
    input: int
    output: int  # 0: first-token latency
    allreduces: int  # all-reduces of a MoE layer's feed-forward block (trtllm_v090_moe_allreduces)
    error: float  # the model's (one all-reduce after the block), predicted / published - 1
    error_charged: float  # with ``allreduces`` of them


def moe_allreduce_checks() -> list[MoeAllreduceCheck]:
    """Every v0.9.0 MoE row (throughput and first token) with its MoE layers' all-reduces counted as the release ran
    them (:func:`trtllm_v090_moe_allreduces`), each at :func:`mlcalc.serving.comm_s`'s law. Record only: charged on
    the book's per-dtype matmul law, these all-reduces put two H100 throughputs (512 x 128/128, 32 x 2048/2048) and
    three of the four first tokens outside 25 % (the TensorRT-LLM family 135 of 169 to 130): that law's FP8 matmuls
    (bytes and FLOPs added) already price Mixtral's first tokens within -1 % to +17 %, with no room for 7 more
    all-reduces a layer. On the one matmul law (:func:`mlcalc.serving.gemm_law_s`, the element-wise passes charged)
    11 of the 12 take them within 25 % (the H100's 32 x 2048/2048 at -31 %; first tokens +12 % to +24 %); see
    :data:`mlcalc.serving.SERIAL_MATMUL_DTYPES` for what that law still loses elsewhere."""
    from mlcalc import servemeasured as sm  # sm imports this module

    from mlcalc import serving

    tables = sm.published()
    out = []
    # (chip, model, GPUs, input, table, batch, output, published, error): tokens/s per GPU, or seconds (output 0)
    rows = [(c.chip, c.model, c.gpus, c.input, tables["tables"][c.source], c.batch, c.output, c.published, c.error)
            for c in sm.check_published()]
    rows += [(f.chip, f.model, f.gpus, f.input, tables["first_token"][f.source], 1, 0, f.published_s, f.error)
             for f in sm.check_first_token()]
    for chip, name, gpus, prompt, table, batch, output, published, error in rows:
        if "0.9.0" not in table["date"]:
            continue
        m = sm.moe_as_run(memory.model_preset(name), table.get("moe_path", "routed"))
        n = trtllm_v090_moe_allreduces(m, gpus)
        if not m.is_moe or n <= 1:
            continue
        facts = sm.engine_facts(table)
        if output:
            lat = sm.static_batch_latency_s(m, chip, batch, gpus, prompt, output, table["dtype"],
                                            moe_allreduces=n, **facts)
            err = batch * output / lat / gpus / published - 1.0
        else:
            pred = serving.predict_prefill(m, chip, 1, prompt, "cuda-graph", gpus, weight_dtype=table["dtype"],
                                           moe_allreduces=n, **facts)
            err = pred / published - 1.0
        out.append(MoeAllreduceCheck(chip, name, gpus, batch, prompt, output, n, error, err))
    return out


# --------------------------------------------------------------------------- what the serving planner says was checked

@lru_cache(maxsize=1)
def _checked_summary() -> tuple[int, int, float, float]:
    runs = check_decode(DECODE_RECORD)
    bench = check_benchmarks()
    return (sum(1 for c in runs if abs(c.error) <= 0.25), len(runs),
            max(abs(c.error) for c in bench if c.tp == 1 and c.output),
            max(abs(c.error) for c in bench if c.tp > 1 and c.output))


#: The accuracy families (mlcalc.accuracy) that check each engine's numbers.
ENGINE_FAMILIES = MappingProxyType({"cuda-graph": ("serve-graph", "serve-published", "serve-concurrency", "serve-latency"),
                                    "hf-eager": ("decode", "serve-eager")})


#: What each family's cases are, as the planner's "checked" sentence names them.
_FAMILY_WHAT = MappingProxyType({
    "serve-graph": "decode steps measured from a CUDA graph",
    "serve-published": "published TensorRT-LLM throughputs and first-token latencies (FP8, 1-8 GPUs)",
    "serve-concurrency": "published SGLang times per output token at a client concurrency (bf16, 8 GPUs)",
    "serve-latency": "published vLLM end-to-end latencies of one static batch (bf16, 1-4 GPUs)",
    "decode": "eager decode steps of Llama-shaped models measured",
    "serve-eager": "eager decode steps of five architectures measured",
})


@lru_cache(maxsize=None)
def _engine_record(engine: str) -> str:
    from mlcalc import accuracy  # the book's record of every checked case; imported here (it imports this module)
    parts = []
    for f in ENGINE_FAMILIES[engine]:
        s = accuracy.summary(f)
        parts.append(f"{s.within} of {s.n_measured + s.n_published} {_FAMILY_WHAT[f]} within "
                     f"±{accuracy.FAMILIES[f].target:.0%} (median error {s.median_abs_error:.0%}, worst "
                     f"{s.worst_error:+.0%})")
    return "; ".join(parts)


class CheckedPath(NamedTuple):
    """What one family of checked records covers, read from the records themselves (:func:`checked_paths`)."""

    what: str  # the records, in words
    function: str  # the function they check
    planner: bool  # True: the planner's own function at catalogue rates (the verdict of :func:`checked_range` uses it)
    n: int  # records
    models: tuple[str, ...]  # presets or measured architectures, sorted
    params: tuple[float, float]  # smallest and largest model (parameters; (0, 0): cut-down models, not stated)
    chips: tuple[str, ...]  # catalogue keys or the cards' names, sorted
    tp: tuple[int, int]  # fewest and most GPUs of a replica
    batch: int  # largest batch (sequences)
    context: int  # longest context (tokens in cache, or prompt)


def _chip_key(card: str) -> str:
    """The catalogue key of a measured card's name ("NVIDIA H200" -> "H200-SXM"), else the name."""
    from mlcalc import measured

    try:
        return measured.accelerator_key(card)
    except ValueError:
        return card


def _path(what: str, function: str, planner: bool, rows: list[tuple[str, float, str, int, int, int]]) -> CheckedPath:
    """rows: (model, parameters or 0, chip, tp, batch, context)."""
    ps = [r[1] for r in rows if r[1] > 0]
    return CheckedPath(what, function, planner, len(rows), tuple(sorted({r[0] for r in rows})),
                       (min(ps), max(ps)) if ps else (0.0, 0.0), tuple(sorted({r[2] for r in rows})),
                       (min(r[3] for r in rows), max(r[3] for r in rows)), max(r[4] for r in rows),
                       max(r[5] for r in rows))


@lru_cache(maxsize=None)
def checked_paths(engine: str) -> tuple[CheckedPath, ...]:
    """Each path of ``engine``'s serving model and the records that check it, their ranges read from the records
    (mlcalc/data/serving_published.json and the measured runs): "cuda-graph": TensorRT-LLM v0.9.0 static batches
    (:func:`predict_decode`, the planner's decode step) and first tokens (:func:`predict_prefill`), the measured steps
    replayed from CUDA graphs (:func:`decode_step` with each program's own timed kernels), TensorRT-LLM's in-flight
    tables (:func:`mlcalc.servemeasured.inflight`, a separate iteration model the planner does not run), SGLang's
    published times per output token (:func:`mlcalc.servemeasured.concurrent_tpot_s`, not the planner's composition),
    vLLM's published end-to-end latencies of one static batch (:func:`mlcalc.servemeasured.static_batch_latency_s`, the
    planner's prefill and decode steps); "hf-eager": the measured eager decode steps (:func:`decode_step` with each run's own measured floor)."""
    _check.choice("engine", engine, ENGINES)
    from mlcalc import servemeasured as sm  # it imports this module

    def size(name: str) -> float:
        return memory.model_preset(name).n_params()

    out = []
    if engine == "cuda-graph":
        out.append(_path("TensorRT-LLM v0.9.0 static batches (FP8)", "predict_decode", True,
                         [(c.model, size(c.model), c.chip, c.gpus, c.batch, c.input + c.output)
                          for c in sm.check_published()]))
        out.append(_path("TensorRT-LLM v0.9.0 first tokens (FP8)", "predict_prefill", True,
                         [(c.model, size(c.model), c.chip, c.gpus, 1, c.input) for c in sm.check_first_token()]))
        graph = [c for run in sm.RUNS for c in sm.all_checks(run) if c.path == "graph" and c.what == "decode"]
        graph += sm.check_run5_decode()
        out.append(_path("decode steps measured from a CUDA graph (cut-down and full models)",
                         "decode_step with each program's own timed kernels", False,
                         [(c.arch, 0.0, _chip_key(c.card), c.tp, c.batch, c.context) for c in graph]))
        out.append(_path("TensorRT-LLM v0.17 and v1.0 in-flight batching at full load (FP8)",
                         "servemeasured.inflight, not the planner's decode step", False,
                         [(c.model, size(c.model), c.chip, c.gpus, c.batch, c.input + c.output)
                          for c in sm.check_inflight()]))
        out.append(_path("SGLang times per output token at a client concurrency (bf16)",
                         "servemeasured.concurrent_tpot_s, SGLang's own decode step (servemeasured.sglang_decode_step) "
                         "and the planner's prefill step composed as SGLang runs them", False,
                         [(c.model, size(c.model), c.chip, c.gpus, c.batch, c.input + c.output)
                          for c in sm.check_concurrency()]))
        out.append(_path("vLLM static batches end to end (bf16)", "predict_prefill then predict_decode at each step",
                         True, [(c.model, size(c.model), c.chip, c.gpus, c.batch, c.input + c.output)
                                for c in sm.check_latency()]))
    else:
        rows: list[tuple[str, float, str, int, int, int]] = [
            (f"Llama-shaped {c.model.upper()}", float(llama_shape(c.model, r).n_params()), _chip_key(c.card), 1, c.batch,
                 c.context)
                for r in (DECODE_RECORD,) for c in check_decode(r)]
        rows += [(c.arch, 0.0, _chip_key(c.card), c.tp, c.batch, c.context) for c in sm.eager_checks("decode")]
        out.append(_path("eager decode steps measured (Llama-shaped and cut-down models)",
                         "decode_step with each run's own measured floor", True, rows))
    return tuple(out)


def _describe(c: CheckedPath) -> str:
    lo, hi = (f"{p / 1e9:,.0f}" for p in c.params)
    size = (f"{lo}B" if lo == hi else f"{lo}-{hi}B") if c.params[1] else f"{len(c.models)} architectures"
    tp = f"TP {c.tp[0]}" if c.tp[0] == c.tp[1] else f"TP {c.tp[0]}-{c.tp[1]}"
    return (f"{c.function}: {c.n} {c.what}, {size}, {' and '.join(c.chips)}, {tp}, batch to {c.batch:,}, "
            f"context to {c.context:,}")


#: A model up to this fraction outside the checked sizes still counts as inside them: Llama 3 70B (70.6B) has the
#: layers of the checked Llama 2 70B (69.0B: hidden 8,192, 80 layers, 64 heads, 8 KV heads), only its vocabulary is
#: larger (128,256 vs 32,000 tokens); the margin covers such a vocabulary, not a larger layer.
CHECKED_SIZE_MARGIN = 0.1


def attention_dp_record() -> tuple[int, int, float, float]:
    """The published rows whose source states attention data parallelism (TensorRT-LLM v1.0's Qwen3-235B-A22B rows,
    :func:`mlcalc.servemeasured.check_inflight`, predicted with ``attention_dp``): (rows, within 25 %, lowest error,
    highest error)."""
    from mlcalc import servemeasured as sm
    rows = [c for c in sm.check_inflight() if c.attention_dp]
    if not rows:
        return 0, 0, 0.0, 0.0
    errs = [c.error for c in rows]
    return len(rows), sum(abs(e) <= 0.25 for e in errs), min(errs), max(errs)


def checked_range(model: memory.ModelConfig, chip: str, engine: str, batch: int, context: int, tp: int,
                  ep: int = 1) -> str:
    """Where the serving model was checked for ``engine`` (the accuracy page's families, :data:`ENGINE_FAMILIES`),
    what each of its paths was checked on (:func:`checked_paths`, read from the records), and whether (model size,
    chip, batch, context, tp) is inside the range of the records that check the planner's own functions
    (``planner``: TensorRT-LLM's v0.9.0 rows and vLLM's static-batch latencies for "cuda-graph"; the measured eager
    steps for "hf-eager"). ``tp`` counts every GPU of the replica; ``ep`` > 1: the replica runs attention data
    parallel over ``ep`` groups with the experts split over all its GPUs, a layout none of those records ran; the
    sentence then says so, with how far the in-flight model of that layout is from the published rows that state it
    (:func:`attention_dp_record`).
    """
    _check.choice("engine", engine, ENGINES)
    try:
        text = f"Checked ({engine} engine): " + _engine_record(engine) + "."
        paths = checked_paths(engine)
    except (ImportError, ValueError, KeyError):  # a checkout without the measured files
        within, n_runs, worst1, worstn = _checked_summary()
        text = (f"Checked: {within} of {n_runs} measured hf-eager decode points within 25%; TensorRT-LLM's "
                f"published v0.9.0 throughput at tp=1 within {worst1:.0%}, at tp=2-4 off by up to {worstn:.0%}.")
        return text
    text += " Paths: " + "; ".join(_describe(c) for c in paths) + "."
    own = [c for c in paths if c.planner]
    sizes = [c.params for c in own if c.params[1]]
    chips = {c for p in own for c in p.chips}
    tp_hi = max(c.tp[1] for c in own)
    b_hi = max(c.batch for c in own if c.function != "predict_prefill")
    c_hi = max(c.context for c in own)
    outside = []
    lo, hi = (min(s[0] for s in sizes), max(s[1] for s in sizes)) if sizes else (0.0, math.inf)
    if not lo * (1 - CHECKED_SIZE_MARGIN) <= model.n_params() <= hi * (1 + CHECKED_SIZE_MARGIN):
        outside.append(f"{model.n_params() / 1e9:,.0f}B parameters (checked {lo / 1e9:,.0f}-{hi / 1e9:,.0f}B, "
                       f"±{CHECKED_SIZE_MARGIN:.0%})")
    if chip not in chips:
        outside.append(f"{chip} (checked {' and '.join(sorted(chips))})")
    if tp > tp_hi:
        outside.append(f"{tp} GPUs per replica (checked to {tp_hi})")
    if batch > b_hi:
        outside.append(f"batch {batch:,} (checked to {b_hi:,})")
    if context > c_hi:
        outside.append(f"context {context:,} (checked to {c_hi:,})")
    if _check.positive_int("ep", ep) > 1:
        n, ok, lo_e, hi_e = attention_dp_record()
        outside.append(f"attention data parallel over {ep} groups (every record of this path ran tensor parallel; "
                       f"the in-flight model of the layout is {lo_e:+.0%} to {hi_e:+.0%} off the {n} published "
                       f"TensorRT-LLM v1.0 rows that state it, {ok} of them within 25%)")
    here = (f"This plan (tp {tp}, batch up to {batch:,}, context {context:,})" if ep == 1 else
            f"This plan ({tp} GPUs, attention data parallel over {ep} groups, batch up to {batch:,}, context "
            f"{context:,})")
    fs = ", ".join(sorted({c.function for c in own}))
    return text + (f" {here} is outside the range the planner's own path ({fs}) was checked on: "
                   + "; ".join(outside) + "." if outside else
                   f" {here} is inside the range the planner's own path ({fs}) was checked on.")


__all__ = ["DECODE_PROTOCOL", "DecodeRounds", "decode_rounds", "decode_rounds_of", "round_points", "llama_shape", "DecodeCheck", "check_decode", "PacedWindow", "decode_point_window", "floor_probe_windows", "floor_work", "paced_floor", "check_decode_paced", "FIRST_POINT_RUN", "first_point_ratio", "decode_miss_cause", "CROSSOVER_BAND", "decode_layer_parts", "DecodeScore", "decode_scores", "PacedDecodeScore", "decode_paced_scores", "ProbePace", "host_probe_pace_slope", "BenchCheck", "check_benchmarks", "ENGINE_FAMILIES", "CheckedPath", "checked_paths", "CHECKED_SIZE_MARGIN", "checked_range", "attention_dp_record", "trtllm_v090_moe_allreduces", "MoeAllreduceCheck", "moe_allreduce_checks"]


# Object parameters (a DecodeCheck, a ModelConfig) are checked by type before each call.
_check.guard(globals())
