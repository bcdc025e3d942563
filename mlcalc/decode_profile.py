"""The serve12 profile of the eager decode record's crossover miss (one H100, torch.profiler): read from its
reduced trace and put into words for the miss's cause (:func:`mlcalc.serving_record.decode_miss_cause`).

A module of its own, imported when a cause is written: the site's memory snapshot holds what `import mlcalc`
imports, and that heap is at the 30 MiB Pyodide restores into (scripts/make_snapshot.mjs)."""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple, Sequence

from mlcalc.serving import _run_file
from mlcalc.serving_record import DecodeCheck

#: The serve12 call (scripts/gpu/run_serve12.sh, one H100): torch.profiler (CPU and CUDA activities) over 8 decode steps
#: of the Llama-shaped 1B at the decode record's crossover miss (batch 16, cache 4,129) and two host-bound neighbours
#: (16 x 545, 1 x 4,129), then the miss again, in one pinned process; each trace reduced on the machine
#: (scripts/gpu/profile_decode.py) to spans per step and layer, kernels and synchronising calls.
DECODE_PROFILE_RUN = "h100-2026-11-27-serve12"


class ProfiledDecode(NamedTuple):
    """One profiled decode point of :data:`DECODE_PROFILE_RUN` (medians over its decode forwards, the prefill left out)."""

    model: str  # "1b"
    batch: int
    context: int  # tokens in the static cache
    unprofiled_step_s: float  # the same point just before, unprofiled: (generate(33) - generate(1)) / 32
    step_s: float  # profiled: from one forward's start to the next one's
    gpu_busy_s: float  # union of the forward's kernels on the GPU
    gpu_busy_layer_s: float  # the same, one decoder layer
    host_layer_s: float  # the host's span of one decoder layer under the profiler
    syncs_in_layers: int  # synchronising runtime calls inside the decode forwards' layers (all 8 steps)
    syncs_between_steps: float  # cudaStreamSynchronize between two decode forwards (a .item() in generate), a gap
    slowest_step_s: float  # the slowest profiled decode step


def _median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    return float(s[len(s) // 2])


@lru_cache(maxsize=1)
def profiled_decode() -> tuple[ProfiledDecode, ...]:
    """Every profiled point of :data:`DECODE_PROFILE_RUN`, in the call's order (the miss was profiled twice)."""
    d = _run_file("profile_1b.json", DECODE_PROFILE_RUN)
    out = []
    for p in d["points"]:
        if "error" in p:
            continue
        r = p["reduced"]
        dec = r["forwards"][1:]  # the first forward is the prefill
        steps = [f["host_from_previous_forward_start_us"] * 1e-6 for f in dec[1:]]  # dec[0]'s interval holds the prefill
        syncs = r["sync_calls"]
        n_steps = len(dec)
        out.append(ProfiledDecode(
            str(d["model"]), int(p["batch"]), int(p["unprofiled"]["max_cache_len"]),
            float(p["unprofiled"]["decode_step_s"]), _median(steps),
            _median([f["gpu_busy_us"] * 1e-6 for f in dec]),
            _median([y["gpu_busy_us"] * 1e-6 for f in dec for y in f["layers"]]),
            _median([y["host_us"] * 1e-6 for f in dec for y in f["layers"]]),
            sum(1 for x in syncs if x["layer"] is not None and x["forward"] not in ("fwd0", "outside forwards")),
            # the decode window (first decode forward's start to the last one's end) holds n_steps - 1 gaps
            sum(round(x["count_per_step"] * n_steps) for x in r["runtime_calls_decode"]
                if x["name"] == "cudaStreamSynchronize") / (n_steps - 1),
            max(steps)))
    return tuple(out)


def profile_note(c: DecodeCheck, g: float) -> str:
    """What the profiled call (:data:`DECODE_PROFILE_RUN`) shows at this point, "" where it did not profile it."""
    if "H100" not in c.card:
        return ""
    prof = profiled_decode()
    same = [p for p in prof if (p.model, p.batch, p.context) == (c.model, c.batch, c.context)]
    others = [p for p in prof if (p.batch, p.context) != (c.batch, c.context)]
    if not same or not others:
        return ""
    pred = c.batch / c.predicted_tokens_per_s
    runs = " and ".join(f"{p.unprofiled_step_s * 1e3:.1f} ms ({p.unprofiled_step_s / pred - 1:+.0%})" for p in same)
    nb = ", ".join(f"{p.host_layer_s * 1e3:.2f} ms at {p.batch} x {p.context:,}" for p in others)
    host = " and ".join(f"{p.host_layer_s * 1e3:.2f}" for p in same)
    return (f". Profiled on another H100 call ({DECODE_PROFILE_RUN}, torch.profiler over 8 decode steps, twice): "
            f"{sum(p.syncs_in_layers for p in same)} synchronising calls inside the decode layers and "
            f"{same[-1].syncs_between_steps:.0f} between two steps (a .item() in generate, which the model's step "
            f"already ends with); the GPU busy {same[-1].gpu_busy_s * 1e3:.1f} ms a step, "
            f"{same[-1].gpu_busy_layer_s * 1e3:.2f} ms a layer against {g * 1e3:.2f} predicted, so no kernel runs much "
            f"slower than modelled; the host's launches {host} ms a layer under the profiler, as at its host-bound "
            f"neighbours ({nb}). The point's unprofiled step in that one process took {runs} against "
            f"{pred * 1e3:.1f} predicted, and its first profiled steps after its first prefill up to "
            f"{max(p.slowest_step_s for p in same) * 1e3:.0f} ms (later {min(p.step_s for p in same) * 1e3:.1f}): the "
            f"miss is the host's time varying at a point the host sets, not a synchronisation or a slow kernel")


__all__ = ["DECODE_PROFILE_RUN", "ProfiledDecode", "profiled_decode", "profile_note"]
