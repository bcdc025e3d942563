"""Multi-GPU training of Llama-shaped models in plain PyTorch: FSDP2, tensor, pipeline parallel and their mixes.

Ground truth for the book's step-time and memory engine on several GPUs. One ``torchrun`` launch runs
every case of its world size, one after another, in one process group:

* the model is a Llama-like decoder written here (no ``transformers``, but the same operations as its
  ``LlamaForCausalLM``): token embedding, blocks of RMSNorm -> attention (separate Q, K, V projections, rotary embeddings, causal
  ``F.scaled_dot_product_attention`` with grouped-query heads) -> RMSNorm -> SwiGLU MLP, a final
  RMSNorm and an untied output projection; built on the meta device from an :class:`mlcalc.models.ModelConfig`
  and initialised with random weights on the GPU (nothing downloaded);
* **FSDP2** (``torch.distributed.fsdp.fully_shard`` on every block, then on the root) with
  ``MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)``: fp32 sharded parameters, gradients and
  AdamW states, bf16 compute, no autocast;
* **tensor parallel** (``parallelize_module``, sequence parallel on, loss parallel on: the layout of
  torchtitan's Llama): Q/K/V/gate/up column-wise, out/down row-wise with their outputs reduce-scattered
  over the sequence, norms sequence-parallel, embedding row-wise, output column-wise with sharded logits;
* **pipeline** (``torch.distributed.pipelining``, ``ScheduleGPipe`` or ``Schedule1F1B``): the layers split
  evenly, the embedding on the first stage, the final norm and output on the last;
* without FSDP the parameters are fp32 and the forward runs under ``torch.autocast(bf16)``; with FSDP the
  mixed-precision policy above (and, under pipelining, ``reshard_after_forward=False`` as torchtitan does);
* AdamW (``fused=True``, fp32 states), ``zero_grad(set_to_none=True)``;
* activation checkpointing: every block wrapped by ``checkpoint_wrapper`` (non-reentrant), applied after
  tensor parallel and before FSDP.

Per case: the median step time after warm-up (each step between two barriers, every rank's time; the step
is the slowest rank's), tokens per second, every rank's ``max_memory_allocated`` / ``max_memory_reserved``
over the timed steps, memory after a step (parameters + optimizer states), total memory, and the host time
to issue a step (Python returns before the GPU finishes: near the step time means the host sets the pace).

    torchrun --nproc_per_node 4 scripts/gpu/train_dist.py --out results_w4.json [--cpu-tiny] [--baseline]
             [--sweep first|heldout|four|rerun] [--floors] [--trace-dir DIR]

``--sweep four`` (run by ``scripts/gpu/run_train_dist4.sh``) holds the 4-GPU combined layouts; its ``probe`` cases run
:data:`PROBE_STEPS` more steps under ``torch.profiler`` after the timed ones and record, per rank and step, the
device's busy time (compute kernels, NCCL kernels), the host's issue time and how far each kernel starts after its
launch (:func:`trace_summary`); ``--trace-dir`` keeps a compact trace of each (kernels, launch and blocking calls).

``--floors`` (with more than one GPU) first times each program's host floor (:func:`host_floors`: a narrow model
at 2 and 6 layers, 64 tokens, every op it dispatches counted), what ``mlcalc.steptime.dist_host_constants`` reads.

Results are rewritten after every case; a relaunch skips cases already recorded (a case that was started but
never finished, e.g. a hang that the NCCL watchdog ended, is recorded as failed).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import statistics
import sys
import time
from datetime import datetime, timedelta, timezone
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))  # the checkout (for mlcalc.models)

from mlcalc import models  # noqa: E402
from mlcalc.models import ModelConfig  # noqa: E402

# ---------------------------------------------------------------------------------------------
# The cases (pure: no torch)
# ---------------------------------------------------------------------------------------------


def _untied(name: str) -> ModelConfig:
    p = models.preset(name)
    if not p.tied_embeddings:
        return p
    return p.replace(name=f"{name} (untied)", tied_embeddings=False, published_params=0.0)


def case(model: ModelConfig, world: int, seq_len: int, micro_batch: int, recompute: bool, dp: int = 1, tp: int = 1,
         pp: int = 1, n_micro: int = 1, schedule: str = "", min_gib: float = 0.0, probe: bool = False,
         tag: str = "", host_probe: bool = False, variants: Any = False) -> dict[str, Any]:
    """One run: ``dp`` FSDP shards x ``tp`` tensor x ``pp`` pipeline = ``world`` GPUs; every data-parallel
    rank trains ``n_micro`` micro-batches of ``micro_batch`` sequences per step (``n_micro`` > 1 only with
    pipelining), so a step holds ``dp x n_micro x micro_batch`` sequences. ``min_gib``: skipped on cards with
    less memory (a layout that cannot fit an 80 GB card with fp32 AdamW states). ``probe``: after the timed steps,
    two more under ``torch.profiler`` (:func:`profile_steps`). ``host_probe``: the plain program's host floor
    (:func:`host_probe`) timed on every rank just before and just after the case: the host's speed at the time.
    ``variants``: built once, timed in blocks under each of :data:`VARIANTS` in turn, metered per step
    (:meth:`Runner.run_variants`); one result row per variant, its id ending in the variant's name."""
    if dp * tp * pp != world:
        raise ValueError(f"dp={dp} x tp={tp} x pp={pp} is not world={world}")
    if pp == 1 and n_micro != 1:
        raise ValueError("n_micro > 1 needs pp > 1")
    if pp > 1 and schedule not in ("gpipe", "1f1b"):
        raise ValueError(f"schedule={schedule!r}: pipelining needs 'gpipe' or '1f1b'")
    parts = [f"fsdp{dp}" if dp > 1 else "", f"tp{tp}" if tp > 1 else "", f"pp{pp}-{schedule}" if pp > 1 else ""]
    layout = "x".join(p for p in parts if p) or "single"
    short = model.name.replace(" (untied)", "").replace("Llama-3.2 ", "").replace("Llama-3 ", "").replace(
        "Llama-2 ", "Llama2-").replace(" ", "")
    cid = f"w{world}-{layout}-{short}-s{seq_len}-mb{micro_batch}" + (f"-m{n_micro}" if pp > 1 else "") + (
        "-ac" if recompute else "") + (f"-{tag}" if tag else "")
    return {"id": cid, "model": models.as_dict(model), "world": world, "dp": dp, "tp": tp, "pp": pp,
            "schedule": schedule if pp > 1 else "", "n_micro": n_micro, "micro_batch": micro_batch,
            "seq_len": seq_len, "recompute": recompute, "layout": layout,
            "global_batch": dp * n_micro * micro_batch, "tokens_per_step": dp * n_micro * micro_batch * seq_len,
            "min_gib": min_gib, **({"probe": True} if probe else {}), **({"host_probe": True} if host_probe else {}),
            **({"variants": list(variants) if isinstance(variants, (list, tuple)) else True} if variants else {})}


def gpu_cases() -> list[dict[str, Any]]:
    """The sweep: 3 Llama shapes (1B, 3B, 8B), sequences of 2048 and 8192, checkpointing off and on, on 4 GPUs
    (FSDP, TP, PP, FSDPxTP, PPxFSDP, PPxTP), on 2 (FSDP, TP, PP) and on 1. Sized to fit 80 GB H100s with
    fp32 AdamW states (two 8B cases on 2 GPUs only on larger cards)."""
    b1, b3, b8 = _untied("Llama-3.2 1B"), _untied("Llama-3.2 3B"), models.preset("Llama-3 8B")
    return [
        # 4 GPUs: FSDP
        case(b1, 4, 2048, 4, False, dp=4),
        case(b3, 4, 2048, 4, False, dp=4),
        case(b8, 4, 2048, 2, True, dp=4),
        case(b1, 4, 8192, 1, False, dp=4),
        case(b8, 4, 8192, 1, True, dp=4),
        case(b3, 4, 2048, 4, True, dp=4),
        case(b8, 4, 2048, 1, False, dp=4),
        case(b1, 4, 2048, 4, True, dp=4),
        # tensor parallel (sequence parallel)
        case(b3, 4, 2048, 4, False, tp=4),
        case(b8, 4, 2048, 2, True, tp=4),
        case(b8, 4, 8192, 1, False, tp=4),
        case(b1, 4, 8192, 2, False, tp=4),
        # FSDP x TP
        case(b8, 4, 2048, 2, True, dp=2, tp=2),
        case(b3, 4, 8192, 1, False, dp=2, tp=2),
        # pipeline
        case(b1, 4, 2048, 1, False, pp=4, n_micro=8, schedule="1f1b"),
        case(b8, 4, 2048, 1, True, pp=4, n_micro=8, schedule="1f1b"),
        case(b3, 4, 2048, 2, True, pp=4, n_micro=4, schedule="gpipe"),
        # pipeline x FSDP, pipeline x TP
        case(b8, 4, 2048, 1, True, dp=2, pp=2, n_micro=4, schedule="1f1b"),
        case(b1, 4, 2048, 2, False, dp=2, pp=2, n_micro=4, schedule="gpipe"),
        case(b3, 4, 2048, 1, False, tp=2, pp=2, n_micro=4, schedule="1f1b"),
        # 1 GPU (the same program with no parallelism: the engine's single-GPU path)
        case(b1, 1, 2048, 4, False),
        case(b1, 1, 8192, 1, True),
        case(b3, 1, 2048, 1, True),
        # 2 GPUs: FSDP
        case(b1, 2, 2048, 4, False, dp=2),
        case(b1, 2, 2048, 4, True, dp=2),
        case(b1, 2, 8192, 1, False, dp=2),
        case(b1, 2, 8192, 1, True, dp=2),
        case(b3, 2, 2048, 2, True, dp=2),
        case(b3, 2, 2048, 2, False, dp=2),
        case(b3, 2, 8192, 1, True, dp=2),
        # tensor parallel
        case(b1, 2, 2048, 4, False, tp=2),
        case(b1, 2, 2048, 1, False, tp=2),
        case(b1, 2, 8192, 1, True, tp=2),
        case(b3, 2, 2048, 2, True, tp=2),
        case(b3, 2, 2048, 2, False, tp=2),
        case(b8, 2, 2048, 1, True, tp=2, min_gib=100),
        # pipeline
        case(b1, 2, 2048, 2, False, pp=2, n_micro=4, schedule="gpipe"),
        case(b1, 2, 2048, 1, False, pp=2, n_micro=8, schedule="1f1b"),
        case(b3, 2, 2048, 1, True, pp=2, n_micro=4, schedule="1f1b"),
        case(b3, 2, 8192, 1, True, pp=2, n_micro=4, schedule="gpipe"),
        case(b8, 2, 2048, 1, True, pp=2, n_micro=4, schedule="1f1b", min_gib=100),
        # the fullest last (on an 80 GB card an 8B model with fp32 AdamW states fits 2 GPUs only just)
        case(b3, 2, 8192, 1, False, tp=2),
        case(b8, 2, 2048, 1, True, dp=2),
        case(b8, 2, 8192, 1, True, dp=2, min_gib=100),
    ]


def heldout_cases() -> list[dict[str, Any]]:
    """The held-out sweep (run on another card than the first sweep, with other shapes, lengths and batches):
    1B, 3B and 8B Llama shapes and Llama-2 7B (multi-head attention, 32k vocabulary, 11008-wide MLP), sequences
    of 2048, 4096 and 8192, checkpointing off and on; FSDP2, tensor parallel and both pipeline schedules on 2
    GPUs, and the same program on 1. Sized to fit 80 GB H100s with fp32 AdamW states."""
    b1, b3, b8 = _untied("Llama-3.2 1B"), _untied("Llama-3.2 3B"), models.preset("Llama-3 8B")
    l7 = models.preset("Llama-2 7B")
    return [
        # 2 GPUs: FSDP2
        case(b1, 2, 4096, 2, False, dp=2),
        case(b1, 2, 4096, 2, True, dp=2),
        case(b3, 2, 2048, 4, True, dp=2),
        case(b3, 2, 4096, 1, False, dp=2),
        case(l7, 2, 2048, 1, True, dp=2),
        case(l7, 2, 4096, 2, True, dp=2),
        case(b8, 2, 4096, 1, True, dp=2),
        case(b8, 2, 2048, 2, True, dp=2),
        # tensor parallel (sequence parallel, loss parallel)
        case(b1, 2, 4096, 2, False, tp=2),
        case(b1, 2, 2048, 2, True, tp=2),
        case(b3, 2, 4096, 1, False, tp=2),
        case(b3, 2, 8192, 1, True, tp=2),
        case(l7, 2, 2048, 1, True, tp=2),
        case(l7, 2, 4096, 1, False, tp=2),
        # pipeline
        case(b1, 2, 4096, 1, False, pp=2, n_micro=4, schedule="gpipe"),
        case(b1, 2, 2048, 2, False, pp=2, n_micro=8, schedule="1f1b"),
        case(b3, 2, 2048, 2, True, pp=2, n_micro=4, schedule="gpipe"),
        case(b3, 2, 4096, 1, False, pp=2, n_micro=8, schedule="1f1b"),
        case(l7, 2, 2048, 1, True, pp=2, n_micro=8, schedule="1f1b"),
        case(l7, 2, 4096, 1, True, pp=2, n_micro=4, schedule="gpipe"),
        # the fullest last
        case(b8, 2, 2048, 1, True, tp=2),
        # 1 GPU
        case(b1, 1, 4096, 2, False),
        case(b3, 1, 2048, 2, True),
        case(b1, 1, 8192, 1, False),
    ]


def four_cases() -> list[dict[str, Any]]:
    """The 4-GPU sweep (issue 24's combined layouts): every 4-GPU case of :func:`gpu_cases` (FSDP 4, TP 4, PP 4 alone;
    FSDP 2 x TP 2 on a 2-D mesh, PP 2 x FSDP 2, PP 2 x TP 2), then, on GPUs 0 and 1, two tensor-parallel cases the
    engine over-predicted on the earlier 2-GPU calls, profiled (``probe``: device busy time against host issue
    time, :func:`profile_steps`), and three earlier 2-GPU cases again as a baseline of this machine."""
    b1, b3 = _untied("Llama-3.2 1B"), _untied("Llama-3.2 3B")
    l7 = models.preset("Llama-2 7B")
    w4 = [c for c in gpu_cases() if c["world"] == 4]
    mixed = [c for c in w4 if sum(n > 1 for n in (c["dp"], c["tp"], c["pp"])) > 1]  # the combined layouts first
    return mixed + [c for c in w4 if c not in mixed] + [
        case(b3, 2, 8192, 1, False, tp=2, probe=True),
        case(l7, 2, 2048, 1, True, tp=2, probe=True),
        case(b3, 2, 2048, 2, False, tp=2, probe=True),
        case(b1, 2, 2048, 4, False, dp=2),
        case(b1, 2, 2048, 1, False, pp=2, n_micro=8, schedule="1f1b"),
    ]


def rerun_cases() -> list[dict[str, Any]]:
    """A second, short call (2 GPUs): the three baseline cases of :func:`four_cases` before any profiling, then one
    profiled case, then the same three again (``-after``): does a finished torch.profiler session leave the host
    slower? Last, a profiled FSDP2 case (the engine's largest FSDP residual over max(host, device))."""
    b1, b3, b8 = _untied("Llama-3.2 1B"), _untied("Llama-3.2 3B"), models.preset("Llama-3 8B")
    base = [dict(b1=b1, seq=2048, mb=4, rc=False, kw={"dp": 2}),
            dict(b1=b3, seq=2048, mb=2, rc=False, kw={"tp": 2}),
            dict(b1=b1, seq=2048, mb=1, rc=False, kw={"pp": 2, "n_micro": 8, "schedule": "1f1b"})]
    first = [case(x["b1"], 2, x["seq"], x["mb"], x["rc"], **x["kw"]) for x in base]
    again = [case(x["b1"], 2, x["seq"], x["mb"], x["rc"], tag="after", **x["kw"]) for x in base]
    return first + [case(b3, 2, 2048, 2, False, tp=2, probe=True, tag="probe")] + again + [
        case(b8, 2, 2048, 1, True, dp=2, probe=True)]


def dist4b_cases() -> list[dict[str, Any]]:
    """A short call (``scripts/gpu/run_train_dist4b.sh``): cases the engine missed or nearly missed on the earlier
    calls, some repeated, each with the host probe timed next to it (``host_probe``): on 4 GPUs FSDP 2 x TP 2 (3B at
    8192 tokens twice, 8B checkpointed) and TP 4; on 2 GPUs TP 2 3B at 2 x 2048 three times and the 1F1B pipeline
    twice; on 1 GPU the checkpointed 3B twice and a 1B. With ``--floors`` on 4 GPUs the floors add FSDP x TP
    (:data:`FLOORS_DIST4B`)."""
    b1, b3, b8 = _untied("Llama-3.2 1B"), _untied("Llama-3.2 3B"), models.preset("Llama-3 8B")
    hp = {"host_probe": True}
    return [
        case(b3, 4, 8192, 1, False, dp=2, tp=2, **hp),
        case(b8, 4, 2048, 2, True, dp=2, tp=2, **hp),
        case(b1, 4, 8192, 2, False, tp=4, **hp),
        case(b3, 4, 8192, 1, False, dp=2, tp=2, tag="r2", **hp),
        case(b3, 2, 2048, 2, False, tp=2, **hp),
        case(b1, 2, 2048, 1, False, pp=2, n_micro=8, schedule="1f1b", **hp),
        case(b3, 2, 2048, 2, False, tp=2, tag="r2", **hp),
        case(b1, 2, 2048, 1, False, pp=2, n_micro=8, schedule="1f1b", tag="r2", **hp),
        case(b3, 2, 2048, 2, False, tp=2, tag="r3", **hp),
        case(b3, 1, 2048, 1, True, **hp),
        case(b1, 1, 2048, 4, False, **hp),
        case(b3, 1, 2048, 1, True, tag="r2", **hp),
    ]


def dist5_cases() -> list[dict[str, Any]]:
    """A short call (``scripts/gpu/run_train_dist5.sh``): the engine's host-bound misses again, each built once and
    timed in blocks under four launch conditions in turn (``variants``, :data:`VARIANTS`: as before; Python's garbage
    collector off; every thread of the rank pinned to its own cores; both), every step metered per thread
    (:class:`HostMeter`: CPU time, run-queue delay, the VM's steal time, garbage collection). On 4 GPUs TP 4 (1B at
    2 x 8192, 3B at 4 x 2048); on 2 GPUs TP 2 3B at 2 x 2048 and the 1F1B pipeline 1B; on 1 GPU (beside the 2-GPU
    launch) the checkpointed 3B and the 1B at 4 x 2048."""
    b1, b3 = _untied("Llama-3.2 1B"), _untied("Llama-3.2 3B")
    v = {"variants": True}
    return [
        case(b1, 4, 8192, 2, False, tp=4, **v),
        case(b3, 4, 2048, 4, False, tp=4, **v),
        case(b3, 2, 2048, 2, False, tp=2, **v),
        case(b1, 2, 2048, 1, False, pp=2, n_micro=8, schedule="1f1b", **v),
        case(b3, 1, 2048, 1, True, **v),
        case(b1, 1, 2048, 4, False, **v),
    ]


def dist5b_cases() -> list[dict[str, Any]]:
    """The dist5 second call (``scripts/gpu/run_train_dist5b.sh``): where the ranks' busy threads run
    (:data:`PLACEMENTS`, after ``scripts/gpu/smt_map.py`` found which vCPUs share a physical core): on 2 GPUs TP 2 3B
    at 2 x 2048 and the 1F1B pipeline 1B as before, each rank on a core of its own, and the two ranks on the two
    siblings of one core; then on 1 GPU the checkpointed 3B as before and on a core of its own."""
    b1, b3 = _untied("Llama-3.2 1B"), _untied("Llama-3.2 3B")
    return [
        case(b3, 2, 2048, 2, False, tp=2, tag="p", variants=PLACEMENTS),
        case(b1, 2, 2048, 1, False, pp=2, n_micro=8, schedule="1f1b", tag="p", variants=PLACEMENTS),
        case(b3, 1, 2048, 1, True, tag="p", variants=PLACEMENTS[:2]),
    ]


def dist5c_cases() -> list[dict[str, Any]]:
    """The dist5 third call (``scripts/gpu/run_train_dist5c.sh``): TP 2 3B at 2 x 2048, its ranks' busy threads as
    before, on the fastest and on the slowest of six vCPUs timed just before each block (:data:`PACE_CONDITIONS`),
    two rounds."""
    b3 = _untied("Llama-3.2 3B")
    return [{**case(b3, 2, 2048, 2, False, tp=2, tag="v", variants=PACE_CONDITIONS), "rounds": 2}]


def dist6_cases() -> list[dict[str, Any]]:
    """The dist6 call (``scripts/gpu/run_train_dist6.sh``): the host-bound misses and four controls, each built once
    and timed in blocks with each rank's main and autograd threads on one vCPU of its own whose pace
    ``scripts/gpu/pacemeter.py`` samples all along (:data:`METER_CONDITIONS`): on 2 GPUs TP 2 3B at 2 x 2048 and the
    1F1B pipeline 1B at 8 x 2048 (misses), TP 2 1B at 1 x 2048 and FSDP 2 1B at 4 x 2048 (controls); on 1 GPU the
    checkpointed 3B at 1 x 2048 with Python's garbage collector on and off (a miss) and the 1B at 4 x 2048 (control)."""
    b1, b3 = _untied("Llama-3.2 1B"), _untied("Llama-3.2 3B")
    m, r = {"variants": ("meter",)}, {"rounds": 3}
    return [
        {**case(b3, 2, 2048, 2, False, tp=2, tag="m", **m), **r},
        {**case(b1, 2, 2048, 1, False, pp=2, n_micro=8, schedule="1f1b", tag="m", **m), **r},
        {**case(b1, 2, 2048, 1, False, tp=2, tag="m", **m), **r},
        {**case(b1, 2, 2048, 4, False, dp=2, tag="m", **m), **r},
        {**case(b3, 1, 2048, 1, True, tag="m", variants=METER_CONDITIONS), "rounds": 2},
        {**case(b1, 1, 2048, 4, False, tag="m", **m), **r},
    ]


def dist6b_cases() -> list[dict[str, Any]]:
    """The dist6 second call (``scripts/gpu/run_train_dist6b.sh``), metered as :func:`dist6_cases`: on 2 GPUs TP 2 3B
    at 2 x 2048 and TP 2 1B at 1 x 2048 again; on 4 GPUs TP 4 1B at 2 x 8192 (a miss) and TP 4 3B at 4 x 2048."""
    b1, b3 = _untied("Llama-3.2 1B"), _untied("Llama-3.2 3B")
    m, r = {"variants": ("meter",)}, {"rounds": 3}
    return [
        {**case(b3, 2, 2048, 2, False, tp=2, tag="m2", **m), **r},
        {**case(b1, 2, 2048, 1, False, tp=2, tag="m2", **m), **r},
        {**case(b1, 4, 8192, 2, False, tp=4, tag="m", **m), **r},
        {**case(b3, 4, 2048, 4, False, tp=4, tag="m", **m), **r},
    ]


def dist6c_cases() -> list[dict[str, Any]]:
    """The dist6 third call (``scripts/gpu/run_train_dist6c.sh``), metered as :func:`dist6_cases`: on 2 GPUs TP 2 3B
    at 2 x 2048 and TP 2 1B at 1 x 2048, on 1 GPU the checkpointed 3B, on 4 GPUs TP 4 1B at 2 x 8192 and TP 4 3B at
    4 x 2048."""
    b1, b3 = _untied("Llama-3.2 1B"), _untied("Llama-3.2 3B")
    m, r = {"variants": ("meter",)}, {"rounds": 3}
    return [
        {**case(b3, 2, 2048, 2, False, tp=2, tag="m3", **m), **r},
        {**case(b1, 2, 2048, 1, False, tp=2, tag="m3", **m), **r},
        {**case(b3, 1, 2048, 1, True, tag="m3", **m), **r},
        {**case(b1, 4, 8192, 2, False, tp=4, tag="m3", **m), **r},
        {**case(b3, 4, 2048, 4, False, tp=4, tag="m3", **m), **r},
    ]


def host7_cases() -> list[dict[str, Any]]:
    """The host7 call (``scripts/gpu/run_train_host7.sh``), metered as :func:`dist6_cases`: on 2 GPUs TP 2 3B at
    2 x 2048 and TP 2 1B at 1 x 2048, on 1 GPU the checkpointed 3B at 1 x 2048 and the 1B at 4 x 2048, on 4 GPUs TP 4
    1B at 2 x 8192, TP 4 3B at 4 x 2048, FSDP 2 x TP 2 3B at 1 x 8192 and FSDP 4 1B at 4 x 2048."""
    b1, b3 = _untied("Llama-3.2 1B"), _untied("Llama-3.2 3B")
    m, r = {"variants": ("meter",)}, {"rounds": 3}
    return [
        {**case(b3, 2, 2048, 2, False, tp=2, tag="h7", **m), **r},
        {**case(b1, 2, 2048, 1, False, tp=2, tag="h7", **m), **r},
        {**case(b3, 1, 2048, 1, True, tag="h7", **m), **r},
        {**case(b1, 1, 2048, 4, False, tag="h7", **m), **r},
        {**case(b1, 4, 8192, 2, False, tp=4, tag="h7", **m), **r},
        {**case(b3, 4, 2048, 4, False, tp=4, tag="h7", **m), **r},
        {**case(b3, 4, 8192, 1, False, dp=2, tp=2, tag="h7", **m), **r},
        {**case(b1, 4, 2048, 4, False, dp=4, tag="h7", **m), **r},
    ]


def host8_cases() -> list[dict[str, Any]]:
    """The host8 call (``scripts/gpu/run_train_host8.sh``), metered as :func:`dist6_cases`: every configuration of the
    family's unmetered misses again (same model, layout, sequence, micro-batch, micro-batches and checkpointing): on 2
    GPUs TP 2 1B at 2 x 2048 checkpointed, the 1F1B pipeline 1B at 8 x 1 x 2048, FSDP 2 8B at 1 x 2048
    checkpointed and TP 2 3B at 2 x 2048 (metered once before, host7c); on 1 GPU the checkpointed 3B at 1 x 2048; on 4 GPUs FSDP 2 x TP 2 3B at 1 x 8192 (the metered
    miss), TP 4 8B at 2 x 2048 checkpointed and TP 4 1B at 2 x 8192."""
    b1, b3, b8 = _untied("Llama-3.2 1B"), _untied("Llama-3.2 3B"), models.preset("Llama-3 8B")
    m, r = {"variants": ("meter",)}, {"rounds": 3}
    return [
        {**case(b1, 2, 2048, 2, True, tp=2, tag="h8", **m), **r},
        {**case(b1, 2, 2048, 1, False, pp=2, n_micro=8, schedule="1f1b", tag="h8", **m), **r},
        {**case(b8, 2, 2048, 1, True, dp=2, tag="h8", **m), **r},
        {**case(b3, 2, 2048, 2, False, tp=2, tag="h8", **m), **r},
        {**case(b3, 1, 2048, 1, True, tag="h8", **m), **r},
        {**case(b3, 4, 8192, 1, False, dp=2, tp=2, tag="h8", **m), **r},
        {**case(b8, 4, 2048, 2, True, tp=4, tag="h8", **m), **r},
        {**case(b1, 4, 8192, 2, False, tp=4, tag="h8", **m), **r},
    ]


def host8b_cases() -> list[dict[str, Any]]:
    """The host8 second call (``run_train_host8.sh`` with ``SWEEP=host8b NOFLOORS=1``), metered as :func:`dist6_cases`:
    configurations never metered whose unmetered runs are the family's record's miss or nearest misses: on 2 GPUs
    TP 2 3B at 1 x 4096, 2 x 2048 checkpointed and 1 x 8192 checkpointed, TP 2 8B at 1 x 2048 checkpointed; on 4
    GPUs FSDP 2 x TP 2 8B at 2 x 2048 checkpointed."""
    b3, b8 = _untied("Llama-3.2 3B"), models.preset("Llama-3 8B")
    m, r = {"variants": ("meter",)}, {"rounds": 3}
    return [
        {**case(b3, 2, 4096, 1, False, tp=2, tag="h8b", **m), **r},
        {**case(b3, 2, 2048, 2, True, tp=2, tag="h8b", **m), **r},
        {**case(b3, 2, 8192, 1, True, tp=2, tag="h8b", **m), **r},
        {**case(b8, 2, 2048, 1, True, tp=2, tag="h8b", **m), **r},
        {**case(b8, 4, 2048, 2, True, dp=2, tp=2, tag="h8b", **m), **r},
    ]


def blind10_cases() -> list[dict[str, Any]]:
    """The blind10 check (session 35): 2-GPU runs at shapes and lengths no sweep ran, predicted before the call
    (``scripts/gpu/blind10_predictions.json``): Mistral 7B (32k vocabulary, GQA 8, 14336-wide MLP) under FSDP2 and
    tensor parallel, the 1B at 8 x 1024, the 3B at 16,384 tokens, a 1F1B pipeline at 1024. The defaults of the
    program (no launch variants, no meters)."""
    b1, b3, mis = _untied("Llama-3.2 1B"), _untied("Llama-3.2 3B"), models.preset("Mistral 7B")
    return [
        case(b1, 2, 1024, 8, False, dp=2),
        case(b1, 2, 1024, 8, False, tp=2),
        case(b3, 2, 16384, 1, True, dp=2),
        case(b3, 2, 16384, 1, True, tp=2),
        case(b1, 2, 1024, 4, False, pp=2, n_micro=4, schedule="1f1b"),
        case(mis, 2, 4096, 1, True, dp=2),
        case(mis, 2, 2048, 1, True, tp=2),
    ]


def blind11_cases() -> list[dict[str, Any]]:
    """The blind11 check (session 35): 4-GPU runs at shapes, lengths and micro-batches no sweep ran, predicted before
    the call (``scripts/gpu/blind11_predictions.json``): Mistral 7B (32k vocabulary, GQA 8, 14336-wide MLP), Qwen2.5 7B's
    shape (152k vocabulary, 4 KV heads, 18944-wide MLP; without its Q/K/V biases, which this program does not build),
    Qwen3 8B's shape (152k vocabulary, 36 layers, 12288-wide MLP; without its Q/K norms), the Llama 3.2 1B and 3B at
    new lengths and micro-batches; under FSDP2 on 4, TP 4, the 1F1B pipeline on 4, FSDP 2 x TP 2, PP 2 x FSDP 2 and
    PP 2 x TP 2, with and without checkpointing. Then two cases already in the record (``-base``: FSDP 4 1B at 4 x 2048,
    TP 4 3B at 4 x 2048) to compare this host with the earlier ones. The defaults of the program (no variants, no
    meters)."""
    b1, b3, mis = _untied("Llama-3.2 1B"), _untied("Llama-3.2 3B"), models.preset("Mistral 7B")
    q25 = models.preset("Qwen2.5 7B").replace(name="Qwen2.5-7B-nobias", qkv_bias=False, published_params=0.0)
    q3 = models.preset("Qwen3 8B").replace(name="Qwen3-8B-noqknorm", qk_norm=False, published_params=0.0)
    return [
        # FSDP2 on 4
        case(mis, 4, 4096, 1, True, dp=4),
        case(q25, 4, 2048, 2, True, dp=4),
        case(b1, 4, 1024, 8, False, dp=4),
        # tensor parallel 4 (sequence parallel)
        case(mis, 4, 4096, 1, True, tp=4),
        case(b3, 4, 4096, 2, False, tp=4),
        case(q3, 4, 2048, 1, True, tp=4),
        # the 1F1B pipeline on 4
        case(mis, 4, 2048, 1, True, pp=4, n_micro=8, schedule="1f1b"),
        case(b3, 4, 4096, 1, False, pp=4, n_micro=4, schedule="1f1b"),
        # FSDP 2 x TP 2
        case(mis, 4, 4096, 1, True, dp=2, tp=2),
        case(b1, 4, 4096, 2, False, dp=2, tp=2),
        # PP 2 x FSDP 2
        case(b3, 4, 2048, 2, True, dp=2, pp=2, n_micro=4, schedule="1f1b"),
        case(q25, 4, 2048, 1, True, dp=2, pp=2, n_micro=4, schedule="1f1b"),
        # PP 2 x TP 2
        case(mis, 4, 2048, 1, True, tp=2, pp=2, n_micro=4, schedule="1f1b"),
        case(b1, 4, 4096, 1, False, tp=2, pp=2, n_micro=8, schedule="1f1b"),
        # the baseline: two cases the record already holds (gpu_cases), run again on this host
        case(b1, 4, 2048, 4, False, dp=4, tag="base"),
        case(b3, 4, 2048, 4, False, tp=4, tag="base"),
    ]


def meter12_cases() -> list[dict[str, Any]]:
    """The meter12 call (``scripts/gpu/run_meter12.sh``, session 36), metered as :func:`host8_cases` (each rank's main
    and autograd threads on one vCPU of its own, ``scripts/gpu/pacemeter.py`` sampling it all along, 3 rounds): every
    configuration of the multi-GPU family's six unmetered blind misses again (same model, layout, sequence,
    micro-batch and checkpointing): on 2 GPUs TP 2 1B at 8 x 1024 and TP 2 Mistral 7B at 1 x 2048 checkpointed
    (blind10); on 4 GPUs TP 4 3B at 2 x 4096, TP 4 Qwen3 8B's shape at 1 x 2048 checkpointed and FSDP 2 x TP 2 Mistral
    7B at 1 x 4096 checkpointed (blind11, blind11b). Then tensor-parallel configurations no call ran: on 2 GPUs TP 2 3B
    at 4 x 1024 and TP 2 Mistral 7B at 1 x 4096 checkpointed; on 4 GPUs TP 4 Llama-2 7B at 1 x 4096 (multi-head
    attention), FSDP 2 x TP 2 Qwen3 8B's shape at 1 x 2048 checkpointed and TP 4 1B at 4 x 1024. ``lane``: the 2-GPU
    cases run as two launches side by side (lane "a" on GPUs 0-1, lane "b" on GPUs 2-3; ``--lane``)."""
    b1, b3, mis = _untied("Llama-3.2 1B"), _untied("Llama-3.2 3B"), models.preset("Mistral 7B")
    l7 = models.preset("Llama-2 7B")
    q3 = models.preset("Qwen3 8B").replace(name="Qwen3-8B-noqknorm", qk_norm=False, published_params=0.0)
    m, r = {"variants": ("meter",), "tag": "m12"}, {"rounds": 3}
    return [
        # the six blind misses' configurations
        {**case(b1, 2, 1024, 8, False, tp=2, **m), **r, "lane": "a"},
        {**case(mis, 2, 2048, 1, True, tp=2, **m), **r, "lane": "a"},
        {**case(b3, 4, 4096, 2, False, tp=4, **m), **r},
        {**case(q3, 4, 2048, 1, True, tp=4, **m), **r},
        {**case(mis, 4, 4096, 1, True, dp=2, tp=2, **m), **r},
        # configurations never measured
        {**case(b3, 2, 1024, 4, False, tp=2, **m), **r, "lane": "b"},
        {**case(mis, 2, 4096, 1, True, tp=2, **m), **r, "lane": "b"},
        {**case(l7, 4, 4096, 1, False, tp=4, **m), **r},
        {**case(q3, 4, 2048, 1, True, dp=2, tp=2, **m), **r},
        {**case(b1, 4, 1024, 4, False, tp=4, **m), **r},
    ]


#: The meter12 call's repeats of the six blind misses (their ids in :func:`meter12_cases`, without the variant).
METER12_REPEATS = ("w2-tp2-1B-s1024-mb8-m12", "w2-tp2-Mistral7B-s2048-mb1-ac-m12", "w4-tp4-3B-s4096-mb2-m12",
                   "w4-tp4-Qwen3-8B-noqknorm-s2048-mb1-ac-m12", "w4-fsdp2xtp2-Mistral7B-s4096-mb1-ac-m12")


def h100mg_cases() -> list[dict[str, Any]]:
    """The h100mg call (``scripts/gpu/run_h100mg.sh``, session 37): the first multi-GPU sweep asked of an
    ``nvidia-h100-x2`` (2 GPUs; every earlier multi-GPU call came as H200s), metered as :func:`meter12_cases` (each
    rank's main and autograd threads on one vCPU of its own, ``scripts/gpu/pacemeter.py`` sampling it, 3 rounds). On 2
    GPUs: FSDP2, tensor parallel (sequence parallel) and the 1F1B pipeline; Llama 3.2 1B and 3B, Mistral 7B and Llama 3
    8B; sequences of 1024 to 4096, checkpointing off and on; sized for an 80 GB card with fp32 AdamW states (the 8B
    under FSDP2 last: it fits 2 such cards only just). First, as the call's baseline, meter12's TP 2 1B at 8 x 1024
    unchanged (same id): the case that ran on all three 4 x H200 hosts of meter12, meter12b and meter12c."""
    b1, b3, b8 = _untied("Llama-3.2 1B"), _untied("Llama-3.2 3B"), models.preset("Llama-3 8B")
    mis = models.preset("Mistral 7B")
    m, r = {"variants": ("meter",), "tag": "mg"}, {"rounds": 3}
    return [
        # the baseline: meter12's lane-a case, unchanged
        {**case(b1, 2, 1024, 8, False, tp=2, variants=("meter",), tag="m12"), **r},
        # FSDP2 on 2
        {**case(b1, 2, 2048, 4, False, dp=2, **m), **r},
        {**case(b3, 2, 4096, 1, True, dp=2, **m), **r},
        # tensor parallel 2 (sequence parallel)
        {**case(b1, 2, 4096, 2, False, tp=2, **m), **r},
        {**case(b3, 2, 2048, 2, True, tp=2, **m), **r},
        {**case(mis, 2, 1024, 2, False, tp=2, **m), **r},
        # the 1F1B pipeline on 2
        {**case(b1, 2, 2048, 2, False, pp=2, n_micro=4, schedule="1f1b", **m), **r},
        {**case(b3, 2, 4096, 1, True, pp=2, n_micro=4, schedule="1f1b", **m), **r},
        # FSDP2 on 2, the fullest last
        {**case(mis, 2, 4096, 1, True, dp=2, **m), **r},
        {**case(b8, 2, 2048, 1, True, dp=2, **m), **r},
    ]


#: The h100mg call's baseline: meter12's case run again unchanged (its id in :func:`h100mg_cases`, without the variant).
H100MG_BASELINE = ("w2-tp2-1B-s1024-mb8-m12",)


def sync16_cases() -> list[dict[str, Any]]:
    """The sync16 call (``scripts/gpu/run_sync16.sh``, session 39, issue 24): the four configurations whose measured
    step is longer than both the engine's host total and its device total under the launch-queue rule
    (``steptime.HOST_RULE = "queue"``), each profiled (``probe``: timed steps, then :data:`PROBE_STEPS` under
    torch.profiler with a compact trace of kernels and CUDA runtime calls kept): FSDP 4 Llama 3 8B at 1 x 2048
    (h200x4-2026-11-26-train-dist4), FSDP 2 Llama 2 7B at 1 x 2048 checkpointed (h200x2-2026-11-26-train-dist-heldout),
    TP 2 Llama 3.2 3B at 1 x 16,384 checkpointed (h200x2-2026-11-27-blind10) and Llama 3.2 3B on one GPU at 1 x 2048
    checkpointed (h200x4-2026-11-27-train-host7c): same model, layout, sequence, micro-batch and checkpointing. What
    the traces decide (predictions and scoring committed before the call: scripts/gpu/sync16_predictions.json):
    whether the host waits for the device inside a step (synchronising CUDA calls), whether one rank's host sets the
    others' pace (their NCCL kernels waiting), or neither."""
    b3, b8, l7 = _untied("Llama-3.2 3B"), models.preset("Llama-3 8B"), models.preset("Llama-2 7B")
    return [
        case(b8, 4, 2048, 1, False, dp=4, probe=True, tag="s16"),
        case(l7, 2, 2048, 1, True, dp=2, probe=True, tag="s16"),
        case(b3, 2, 16384, 1, True, tp=2, probe=True, tag="s16"),
        case(b3, 1, 2048, 1, True, probe=True, tag="s16"),
    ]


SWEEPS = {"first": gpu_cases, "heldout": heldout_cases, "four": four_cases, "rerun": rerun_cases,
          "dist4b": dist4b_cases, "dist5": dist5_cases, "dist5b": dist5b_cases, "dist5c": dist5c_cases,
          "dist6": dist6_cases, "dist6b": dist6b_cases,
          "dist6c": dist6c_cases, "host7": host7_cases, "host7c": host7_cases, "host8": host8_cases,
          "host8b": host8b_cases, "blind10": blind10_cases, "blind11": blind11_cases,
          "meter12": meter12_cases, "h100mg": h100mg_cases,
          "sync16": sync16_cases}


def cpu_cases() -> list[dict[str, Any]]:
    """Every layout of the sweep on a tiny Llama-shaped model (a test on the CPU with gloo)."""
    tiny = models.preset("Llama-3.2 1B").replace(name="tiny llama", n_layers=4, hidden=64, n_heads=8, n_kv_heads=4,
                                                 head_dim=8, ffn_hidden=128, vocab=256, tied_embeddings=False,
                                                 published_params=0.0)
    out, seen = [], set()
    for c in gpu_cases():
        key = (c["world"], c["dp"], c["tp"], c["pp"], c["schedule"], c["recompute"])
        if key in seen:
            continue
        seen.add(key)
        out.append(case(tiny, c["world"], 32, 2, c["recompute"], dp=c["dp"], tp=c["tp"], pp=c["pp"],
                        n_micro=c["n_micro"], schedule=c["schedule"]))
    out.append(case(tiny, 2, 48, 2, True, tp=2, probe=True))
    out.append(case(tiny, 4, 48, 2, False, dp=2, tp=2, probe=True))
    out.append(case(tiny, 4, 48, 2, False, dp=2, tp=2, tag="hp", host_probe=True))
    out.append(case(tiny, 2, 48, 2, False, tp=2, tag="hp", host_probe=True))
    return out


def tiny_cases(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same layouts (and flags) on the tiny model of :func:`cpu_cases`: a sweep's test on the CPU."""
    tiny = models.preset("Llama-3.2 1B").replace(name="tiny llama", n_layers=4, hidden=64, n_heads=8, n_kv_heads=4,
                                                 head_dim=8, ffn_hidden=128, vocab=256, tied_embeddings=False,
                                                 published_params=0.0)
    out = []
    for c in cases:
        flags = {k: c[k] for k in ("probe", "host_probe", "variants") if c.get(k)}
        lane = {"lane": c["lane"]} if "lane" in c else {}
        out.append({**case(tiny, c["world"], 32, 2, c["recompute"], dp=c["dp"], tp=c["tp"], pp=c["pp"],
                           n_micro=c["n_micro"], schedule=c["schedule"], tag=f"c{len(out)}", **flags),
                    **({"rounds": c["rounds"]} if "rounds" in c else {}), **lane})
    return out


def gpu_slot(local_rank: int) -> int:
    """The physical GPU of this rank (its place in CUDA_VISIBLE_DEVICES, else its local rank): the pinned variants'
    cores are chosen by it, so concurrent launches on other GPUs never share a core."""
    vis = [x for x in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if x.strip()]
    if local_rank < len(vis) and vis[local_rank].strip().isdigit():
        return int(vis[local_rank])
    return local_rank + int(os.environ.get("TRAIN_DIST_SLOT_OFFSET", "0"))


def reserved_cores() -> set[int]:
    """Cores no pinned thread may use (``SPEEDOMETER_CPU``: the speedometer's)."""
    v = os.environ.get("SPEEDOMETER_CPU", "")
    return {int(v)} if v.strip().isdigit() else set()


# ---------------------------------------------------------------------------------------------
# The model (torch imported lazily, so the case list above is importable without it)
# ---------------------------------------------------------------------------------------------


def build_model_classes(torch: Any) -> Any:
    nn, F = torch.nn, torch.nn.functional
    rope_cache: dict[tuple[Any, ...], tuple[Any, Any]] = {}

    def rope(seq_len: int, head_dim: int, device: Any, dtype: Any, theta: float = 500000.0) -> tuple[Any, Any]:
        key = (seq_len, head_dim, str(device), dtype)
        if key not in rope_cache:
            inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim))
            f = torch.outer(torch.arange(seq_len, device=device, dtype=torch.float32), inv)
            emb = torch.cat((f, f), dim=-1)
            rope_cache[key] = (emb.cos().to(dtype)[None, :, None, :], emb.sin().to(dtype)[None, :, None, :])
        return rope_cache[key]

    def rotate_half(x: Any) -> Any:
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)

    class RMSNorm(nn.Module):
        def __init__(self, dim: int, eps: float = 1e-5) -> None:
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(torch.ones(dim))

        def forward(self, x: Any) -> Any:  # as transformers' LlamaRMSNorm: fp32 statistics, weight * x.to(dtype)
            dt = x.dtype
            x = x.float()
            x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
            return self.weight * x.to(dt)

    class Attention(nn.Module):
        def __init__(self, m: ModelConfig) -> None:
            super().__init__()
            self.head_dim = m.head_dim
            self.wq = nn.Linear(m.hidden, m.n_heads * m.head_dim, bias=False)
            self.wk = nn.Linear(m.hidden, m.n_kv_heads * m.head_dim, bias=False)
            self.wv = nn.Linear(m.hidden, m.n_kv_heads * m.head_dim, bias=False)
            self.wo = nn.Linear(m.n_heads * m.head_dim, m.hidden, bias=False)

        def forward(self, x: Any) -> Any:
            b, s = x.shape[0], x.shape[1]
            d = self.head_dim
            q = self.wq(x).view(b, s, -1, d)
            k = self.wk(x).view(b, s, -1, d)
            v = self.wv(x).view(b, s, -1, d)
            cos, sin = rope(s, d, q.device, q.dtype)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                               is_causal=True, enable_gqa=True)
            return self.wo(o.transpose(1, 2).reshape(b, s, -1))

    class FeedForward(nn.Module):
        def __init__(self, m: ModelConfig) -> None:
            super().__init__()
            self.w1 = nn.Linear(m.hidden, m.ffn_hidden, bias=False)
            self.w3 = nn.Linear(m.hidden, m.ffn_hidden, bias=False)
            self.w2 = nn.Linear(m.ffn_hidden, m.hidden, bias=False)

        def forward(self, x: Any) -> Any:
            return self.w2(F.silu(self.w1(x)) * self.w3(x))

    class Block(nn.Module):
        def __init__(self, m: ModelConfig) -> None:
            super().__init__()
            self.attention_norm = RMSNorm(m.hidden)
            self.attention = Attention(m)
            self.ffn_norm = RMSNorm(m.hidden)
            self.feed_forward = FeedForward(m)

        def forward(self, x: Any) -> Any:
            h = x + self.attention(self.attention_norm(x))
            return h + self.feed_forward(self.ffn_norm(h))

    class Llama(nn.Module):
        def __init__(self, m: ModelConfig) -> None:
            super().__init__()
            self.tok_embeddings = nn.Embedding(m.vocab, m.hidden)
            self.layers = nn.ModuleDict({str(i): Block(m) for i in range(m.n_layers)})
            self.norm = RMSNorm(m.hidden)
            self.output = nn.Linear(m.hidden, m.vocab, bias=False)

        def forward(self, tokens: Any) -> Any:
            h = self.tok_embeddings(tokens) if self.tok_embeddings is not None else tokens
            for layer in self.layers.values():
                h = layer(h)
            h = self.norm(h) if self.norm is not None else h
            return self.output(h) if self.output is not None else h

    return Llama


# ---------------------------------------------------------------------------------------------
# Running one case
# ---------------------------------------------------------------------------------------------


class Runner:
    def __init__(self, torch: Any, dev: Any, cpu: bool) -> None:
        self.torch, self.dev, self.cpu = torch, dev, cpu
        self.dist = torch.distributed
        self.rank, self.world = self.dist.get_rank(), self.dist.get_world_size()
        self.Llama = build_model_classes(torch)
        self.meshes: dict[tuple[Any, ...], Any] = {}
        self.fused = True  # fused AdamW; turned off for good if it fails on these parameters
        self.trace_dir = ""  # where probe cases write their compact traces

    def mesh(self, dims: tuple[tuple[str, int], ...]) -> Any:
        from torch.distributed.device_mesh import init_device_mesh
        key = tuple(dims)
        if key not in self.meshes:
            self.meshes[key] = init_device_mesh(self.dev.type, tuple(n for _, n in dims),
                                                mesh_dim_names=tuple(k for k, _ in dims))
        return self.meshes[key]

    def sync(self) -> None:
        if not self.cpu:
            self.torch.cuda.synchronize(self.dev)

    def build(self, c: dict[str, Any]) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        """The model part of this rank, its optimizer, a step function and notes."""
        torch = self.torch
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointImpl, checkpoint_wrapper
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        m = models.from_dict(c["model"])
        dp, tp, pp = c["dp"], c["tp"], c["pp"]
        mesh_dp = max(dp, int(c.get("mesh_dp", 1)))  # a floor's TP-only program on a 2-D mesh: replicas, no FSDP
        dims = tuple((k, n) for k, n in (("pp", pp), ("dp", mesh_dp), ("tp", tp)) if n > 1)
        mesh = self.mesh(dims) if dims else None
        with torch.device("meta"):
            model = self.Llama(m)
        stage_idx = 0
        if pp > 1:
            stage_idx = mesh["pp"].get_local_rank()
            per = m.n_layers // pp
            extra = m.n_layers % pp  # the first stages take one more layer
            start = stage_idx * per + min(stage_idx, extra)
            stop = start + per + (1 if stage_idx < extra else 0)
            for i in list(model.layers.keys()):
                if not start <= int(i) < stop:
                    del model.layers[i]
            if stage_idx > 0:
                model.tok_embeddings = None
            if stage_idx < pp - 1:
                model.norm = None
                model.output = None
        if tp > 1:
            from torch.distributed.tensor import Replicate, Shard
            from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput, RowwiseParallel,
                                                           SequenceParallel, parallelize_module)
            tpm = mesh["tp"]
            top: dict[str, Any] = {}
            sp = bool(c.get("sequence_parallel", True))
            if not sp:  # host17: Megatron's tensor parallel without sequence parallel
                self._tp_no_sp(model, tpm)
            if sp and model.tok_embeddings is not None:
                top["tok_embeddings"] = RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1))
            if sp and model.norm is not None:
                top["norm"] = SequenceParallel()
                top["output"] = ColwiseParallel(input_layouts=Shard(1), output_layouts=Shard(-1),
                                                use_local_output=False)  # loss parallel: logits stay sharded
            if top:
                parallelize_module(model, tpm, top)
            for block in (model.layers.values() if sp else ()):
                parallelize_module(block, tpm, {
                    "attention_norm": SequenceParallel(),
                    "attention": PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)),
                    "attention.wq": ColwiseParallel(), "attention.wk": ColwiseParallel(),
                    "attention.wv": ColwiseParallel(), "attention.wo": RowwiseParallel(output_layouts=Shard(1)),
                    "ffn_norm": SequenceParallel(),
                    "feed_forward": PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)),
                    "feed_forward.w1": ColwiseParallel(), "feed_forward.w3": ColwiseParallel(),
                    "feed_forward.w2": RowwiseParallel(output_layouts=Shard(1)),
                })
        if c["recompute"]:
            for i in list(model.layers.keys()):
                model.layers[i] = checkpoint_wrapper(model.layers[i], checkpoint_impl=CheckpointImpl.NO_REENTRANT,
                                                     preserve_rng_state=False)
        fsdp = dp > 1
        if fsdp:
            mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
            raf = pp == 1  # torchtitan: no resharding after forward under pipelining (one gather per step)
            for block in model.layers.values():
                fully_shard(block, mesh=mesh["dp"], mp_policy=mp, reshard_after_forward=raf)
            fully_shard(model, mesh=mesh["dp"], mp_policy=mp, reshard_after_forward=raf)
        model.to_empty(device=self.dev)
        torch.manual_seed(0)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if p.ndim >= 2:
                    p.normal_(0.0, 0.02)
                else:
                    p.fill_(1.0)
        model.train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-5, weight_decay=0.1, fused=self.fused,
                                foreach=None if self.fused else True)
        if self.fused and os.environ.get("TRAIN_DIST_TEST_FUSED_FAIL"):
            raise RuntimeError("a test: fused AdamW refused")
        notes = {"optimizer": "AdamW fused" if self.fused else "AdamW foreach (fused failed here)","n_params_here": sum(p.numel() for p in model.parameters()),  # DTensor: global numel of the shards
                 "n_params_local": sum((p.to_local() if hasattr(p, "to_local") else p).numel()
                                       for p in model.parameters()),
                 "stage": stage_idx, "layers_here": len(model.layers)}
        step = self.step_fn(c, model, opt, mesh, stage_idx)
        return model, opt, step, mesh, notes

    @staticmethod
    def _tp_no_sp(model: Any, tpm: Any) -> None:
        """Tensor parallel without sequence parallel (host17): activations replicated between the blocks; Q/K/V and
        w1/w3 column-wise, wo and w2 row-wise with a replicated output (one all-reduce each way per block, Shoeybi et
        al. 2019); the embedding row-wise with a replicated output; norms unsharded; the output layer column-wise with
        its logits sharded (loss parallel). The norms' weights stay plain tensors (each rank holds them whole), so a
        fused AdamW, which refuses plain tensors beside DTensors, cannot step this model: give it a per-parameter one."""
        from torch.distributed.tensor import Replicate, Shard
        from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

        top: dict[str, Any] = {}
        if model.tok_embeddings is not None:
            top["tok_embeddings"] = RowwiseParallel(input_layouts=Replicate(), output_layouts=Replicate())
        if model.output is not None:
            top["output"] = ColwiseParallel(input_layouts=Replicate(), output_layouts=Shard(-1), use_local_output=False)
        if top:
            parallelize_module(model, tpm, top)
        for block in model.layers.values():
            parallelize_module(block, tpm, {
                "attention.wq": ColwiseParallel(), "attention.wk": ColwiseParallel(),
                "attention.wv": ColwiseParallel(), "attention.wo": RowwiseParallel(),
                "feed_forward.w1": ColwiseParallel(), "feed_forward.w3": ColwiseParallel(),
                "feed_forward.w2": RowwiseParallel(),
            })

    def step_fn(self, c: dict[str, Any], model: Any, opt: Any, mesh: Any, stage_idx: int) -> Any:
        torch, F = self.torch, self.torch.nn.functional
        import contextlib

        m = models.from_dict(c["model"])
        dp, tp, pp = c["dp"], c["tp"], c["pp"]
        mb, s, nm = c["micro_batch"], c["seq_len"], c["n_micro"]
        g = torch.Generator(device=self.dev).manual_seed(1 + (mesh["dp"].get_local_rank() if dp > 1 else 0))
        tokens = torch.randint(0, m.vocab, (mb * nm, s), device=self.dev, generator=g)
        amp = (contextlib.nullcontext if dp > 1 else
               lambda: torch.autocast(device_type=self.dev.type, dtype=torch.bfloat16))
        if tp > 1:
            from torch.distributed.tensor.parallel import loss_parallel
            lossctx = loss_parallel
        else:
            lossctx = contextlib.nullcontext

        def loss_fn(logits: Any, target: Any) -> Any:
            return F.cross_entropy(logits.flatten(0, 1).float(), target.flatten(0, 1))

        if pp == 1:
            def step() -> Any:
                with lossctx():
                    with amp():
                        logits = model(tokens)
                    loss = loss_fn(logits, tokens)
                    del logits
                    loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
                return loss.detach()
            return step

        from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe
        stage = PipelineStage(model, stage_idx, pp, self.dev, group=mesh["pp"].get_group())
        sched_cls = Schedule1F1B if c["schedule"] == "1f1b" else ScheduleGPipe
        sched = sched_cls(stage, n_microbatches=nm, loss_fn=loss_fn)
        first, last = stage_idx == 0, stage_idx == pp - 1

        def pstep() -> Any:
            losses: list[Any] = []
            with lossctx():
                with amp():
                    if first:
                        sched.step(tokens)
                    elif last:
                        sched.step(target=tokens, losses=losses)
                    else:
                        sched.step()
            opt.step()
            opt.zero_grad(set_to_none=True)
            return sum(x.detach() for x in losses) / len(losses) if losses else None
        return pstep

    def run(self, c: dict[str, Any], warmup: int, steps: int, case_budget_s: float) -> dict[str, Any]:
        torch, dist = self.torch, self.dist
        t_case = time.time()
        cuda = not self.cpu
        if cuda:
            torch.cuda.reset_peak_memory_stats(self.dev)
        model, opt, step, mesh, notes = self.build(c)
        t_build = time.time() - t_case
        warm_s = []
        for _ in range(warmup):
            t0 = time.perf_counter()
            step()
            self.sync()
            warm_s.append(time.perf_counter() - t0)
        self.sync()
        dist.barrier()
        after_step = torch.cuda.memory_allocated(self.dev) if cuda else 0
        if cuda:
            torch.cuda.reset_peak_memory_stats(self.dev)
        # as many timed steps as fit the case's budget (every rank takes rank 0's count)
        left = max(0.0, case_budget_s - (time.time() - t_case))
        n = [max(2, min(steps, int(left / max(warm_s[-1], 1e-3))))]
        dist.broadcast_object_list(n, src=0)
        times, issue = [], []
        loss = None
        for _ in range(n[0]):
            dist.barrier()
            self.sync()
            t0 = time.perf_counter()
            loss = step()
            t1 = time.perf_counter()
            self.sync()
            t2 = time.perf_counter()
            times.append(t2 - t0)
            issue.append(t1 - t0)
        row: dict[str, Any] = {"step_s_rank": times, "issue_s_rank": issue, "warmup_s_rank": warm_s,
                               "build_s": t_build, **notes}
        if loss is not None:  # a DTensor under loss parallel: its full value
            row["loss"] = float(loss.full_tensor() if hasattr(loss, "full_tensor") else loss)
        if cuda:
            row.update(peak_allocated_bytes=torch.cuda.max_memory_allocated(self.dev),
                       peak_reserved_bytes=torch.cuda.max_memory_reserved(self.dev),
                       after_step_allocated_bytes=after_step,
                       total_memory_bytes=torch.cuda.get_device_properties(self.dev).total_memory)
        if c.get("probe"):  # after the memory readings: the profiler's own buffers stay out of them
            try:
                row["probe"] = profile_steps(torch, self, step, c, self.trace_dir)
            except Exception as e:  # noqa: BLE001 - the probe is extra: record and go on
                row["probe"] = {"error": f"{type(e).__name__}: {e}"[:800]}
        rows: list[Any] = [None] * self.world
        dist.all_gather_object(rows, row)
        del model, opt, step
        return {"ranks": rows}

    def run_variants(self, c: dict[str, Any], warmup: int, steps: int, case_budget_s: float,
                     slot: int, reserved: set[int]) -> dict[str, Any]:
        """Build the case once, warm up, then time blocks of steps under each of :data:`VARIANTS` in the order
        A B C D D C B A (the block length fits the case's budget: 2 to ``steps`` steps), every step metered
        (:class:`HostMeter`). Returns {variant: {"ranks": every rank's row}} with the rows of :meth:`run`, plus
        ``meter`` (one :meth:`HostMeter.delta` per step, with the step's wall, issue and start epoch seconds)."""
        torch, dist = self.torch, self.dist
        t_case = time.time()
        cuda = not self.cpu
        if cuda:
            torch.cuda.reset_peak_memory_stats(self.dev)
        model, opt, step, mesh, notes = self.build(c)
        t_build = time.time() - t_case
        warm_s = []
        for _ in range(warmup):
            t0 = time.perf_counter()
            step()
            self.sync()
            warm_s.append(time.perf_counter() - t0)
        self.sync()
        dist.barrier()
        after_step = torch.cuda.memory_allocated(self.dev) if cuda else 0
        left = max(0.0, case_budget_s - (time.time() - t_case))
        k = [max(2, min(steps, int(left / (2 * len(variant_names(c)) * int(c.get("rounds", 1)))
                                   / max(warm_s[-1], 1e-3))))]
        dist.broadcast_object_list(k, src=0)
        allowed = set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else set()
        meter = HostMeter()
        names = variant_names(c)
        per: dict[str, dict[str, Any]] = {v: {"step_s_rank": [], "issue_s_rank": [], "meter": [], "peak": 0,
                                              "peak_reserved": 0, "pinned": {}} for v in names}
        order = (list(names) + list(reversed(names))) * int(c.get("rounds", 1))
        groups = smt_groups()
        local = int(os.environ.get("LOCAL_RANK", "0"))
        loss = None
        try:
            for v in order:
                chosen = -1
                if v in ("fastcpu", "slowcpu") and hasattr(os, "sched_setaffinity"):
                    cand = pace_set(slot, allowed, reserved)
                    paces = {cpu: spin_pace(cpu) for cpu in cand}
                    chosen = (max if v == "fastcpu" else min)(paces, key=lambda x: paces[x])
                    light = set(pace_set(slot + 8, allowed, reserved)) - set(cand)
                    pinned = meter.place({chosen}, light or set(cand))
                    pinned["paces_before"] = {str(k): round(x) for k, x in paces.items()}
                elif v in METER_CONDITIONS and hasattr(os, "sched_setaffinity"):
                    pinned = meter.place(*meter_cpus(slot, allowed))
                elif v in ("apart", "clash"):
                    pinned = meter.place(*placement(v, slot, local, groups, reserved))
                else:
                    pinned = meter.pin(v in ("pin", "pingc"), slot, allowed, reserved)
                if pinned:
                    per[v]["pinned"] = pinned
                gc_was = gc.isenabled()
                if v in ("gcoff", "pingc", "metergcoff"):
                    gc.disable()
                if cuda:
                    torch.cuda.reset_peak_memory_stats(self.dev)
                try:
                    for _ in range(k[0]):
                        dist.barrier()
                        self.sync()
                        a = meter.snap()
                        epoch = time.time()
                        t0 = time.perf_counter()
                        loss = step()
                        t1 = time.perf_counter()
                        self.sync()
                        t2 = time.perf_counter()
                        b = meter.snap()
                        per[v]["step_s_rank"].append(t2 - t0)
                        per[v]["issue_s_rank"].append(t1 - t0)
                        per[v]["meter"].append({"epoch_s": round(epoch, 4), "wall_s": round(t2 - t0, 6),
                                                "issue_s": round(t1 - t0, 6), **meter.delta(a, b)})
                finally:
                    if gc_was:
                        gc.enable()
                if chosen >= 0:  # the chosen vCPU's pace again, just after the block (then the threads go back there)
                    per[v].setdefault("paces", []).append({"cpu": chosen, "before": pinned["paces_before"][str(chosen)],
                                                           "after": round(spin_pace(chosen)), "steps": k[0]})
                    meter.place({chosen}, set(pinned["light"]))
                if cuda:
                    per[v]["peak"] = max(per[v]["peak"], torch.cuda.max_memory_allocated(self.dev))
                    per[v]["peak_reserved"] = max(per[v]["peak_reserved"], torch.cuda.max_memory_reserved(self.dev))
        finally:
            meter.pin(False, slot, allowed, reserved)
            meter.close()
        out: dict[str, Any] = {}
        for v in names:
            row: dict[str, Any] = {"step_s_rank": per[v]["step_s_rank"], "issue_s_rank": per[v]["issue_s_rank"],
                                   "warmup_s_rank": warm_s, "build_s": t_build, "meter": per[v]["meter"],
                                   "pinned": per[v]["pinned"], "block_steps": k[0], "paces": per[v].get("paces", []),
                                   **notes}
            if loss is not None:
                row["loss"] = float(loss.full_tensor() if hasattr(loss, "full_tensor") else loss)
            if cuda:
                row.update(peak_allocated_bytes=per[v]["peak"], peak_reserved_bytes=per[v]["peak_reserved"],
                           after_step_allocated_bytes=after_step,
                           total_memory_bytes=torch.cuda.get_device_properties(self.dev).total_memory)
            rows: list[Any] = [None] * self.world
            dist.all_gather_object(rows, row)
            out[v] = {"ranks": rows}
        del model, opt, step
        return out


# ---------------------------------------------------------------------------------------------
# Launch conditions and the host meter (dist5): where a host-bound step's wall time goes on the host
# ---------------------------------------------------------------------------------------------

#: The launch conditions a ``variants`` case is timed under, in blocks: as every earlier run ("base"), Python's
#: garbage collector disabled during the block ("gcoff"), each of the rank's threads pinned ("pin": the main thread
#: to one core, the autograd thread to another, every other thread to two more, apart from every other rank's and
#: from the speedometer's core) and both ("pingc"). Blocks run A B C D D C B A, so a drift of the host over the case
#: falls on every condition alike.
VARIANTS = ("base", "gcoff", "pin", "pingc")
#: The dist5 second call's placements (``SMT_MAP``: :func:`smt_groups`, vCPUs that share a physical core): "apart"
#: puts each rank's busy threads (main and autograd: they take turns) on one vCPU of a core of its own whose sibling
#: no one uses, "clash" puts the ranks of one launch on the two siblings of one core; "base" as every earlier run.
PLACEMENTS = ("base", "apart", "clash")


#: The dist5 third call's conditions: before each block every rank times the same fixed piece of Python for 15 ms on
#: each vCPU of its own set (:func:`pace_set`) and puts its main and autograd threads on the fastest ("fastcpu") or
#: the slowest ("slowcpu") of them; after the block it times the chosen vCPU again (``pace``).
PACE_CONDITIONS = ("base", "fastcpu", "slowcpu")
PACE_SET = 6  # vCPUs a rank chooses among

#: The dist6 call's conditions: each rank's main and autograd threads on one vCPU of its own (``METER_CPUS``, by
#: physical GPU) where ``scripts/gpu/pacemeter.py`` samples the vCPU's pace all along, every other thread on the
#: ``METER_LIGHT`` vCPUs; "metergcoff" the same with Python's garbage collector off during the block.
METER_CONDITIONS = ("meter", "metergcoff")


def meter_cpus(slot: int, allowed: set[int]) -> tuple[set[int], set[int]]:
    """(busy, light) vCPUs of the rank of physical GPU ``slot`` under :data:`METER_CONDITIONS`: ``METER_CPUS``
    (comma-separated, one per GPU) and ``METER_LIGHT`` (comma-separated) from the environment, else vCPU 2 + 4 slot
    and every allowed vCPU from 24 on (or all of them)."""
    busy_list = [int(x) for x in os.environ.get("METER_CPUS", "").split(",") if x.strip()]
    busy = busy_list[slot % len(busy_list)] if busy_list else 2 + 4 * slot
    if busy not in allowed:
        busy = sorted(allowed)[slot % len(allowed)]
    light = {int(x) for x in os.environ.get("METER_LIGHT", "").split(",") if x.strip()} & allowed
    light = light or ({c for c in allowed if c >= 24} - {busy}) or (allowed - {busy}) or allowed
    return {busy}, light


def spin_pace(cpu: int, seconds: float = 0.015) -> float:
    """Runs per second of a fixed piece of pure Python with the calling thread on ``cpu`` (its affinity is left
    there: the caller sets it again)."""
    os.sched_setaffinity(0, {cpu})
    t0 = time.perf_counter()
    n = 0
    while time.perf_counter() - t0 < seconds:
        s = 0
        for i in range(200):
            s += i * i
        n += 1
    return n / (time.perf_counter() - t0)


def pace_set(slot: int, allowed: set[int], reserved: set[int]) -> list[int]:
    """The vCPUs a rank of physical GPU ``slot`` chooses among: :data:`PACE_SET` of its own, from core 2 on."""
    cores = [c for c in sorted(allowed - reserved) if c >= 2] or sorted(allowed)
    return [cores[(slot * PACE_SET + i) % len(cores)] for i in range(PACE_SET)]


def smt_groups() -> list[list[int]]:
    """The vCPU groups that share a physical core (``scripts/gpu/smt_map.py``'s file named by ``SMT_MAP``), else
    every vCPU alone."""
    path = os.environ.get("SMT_MAP", "")
    if path and os.path.exists(path):
        with open(path) as f:
            return [list(g) for g in json.load(f)["groups"]]
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else [0]
    return [[c] for c in cpus]


def placement(variant: str, slot: int, local_rank: int, groups: list[list[int]],
              reserved: set[int]) -> tuple[set[int], set[int]]:
    """(busy cores, light cores) of a rank under ``variant`` ("apart" or "clash", see :data:`PLACEMENTS`): ranks are
    placed by their physical GPU (``slot``); the light threads (NCCL's, the watchdog) share the last usable core
    groups. "clash" needs cores of two siblings; where no core has two it puts both ranks on one vCPU."""
    usable = [g for g in groups if not set(g) & reserved and 0 not in g]
    if len(usable) < 4:
        usable = [g for g in groups if not set(g) & reserved] or groups
    light = set(usable[-1]) | set(usable[-2]) if len(usable) > 2 else set(usable[-1])
    if variant == "apart":
        g = usable[slot % max(1, len(usable) - 2)]
        return {g[0]}, light
    pairs = [g for g in usable if len(g) > 1] or usable
    g = pairs[(slot - local_rank) % len(pairs)]
    return {g[local_rank % len(g)]}, light
USER_HZ = 100  # /proc/stat ticks per second


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def variant_names(c: dict[str, Any]) -> tuple[str, ...]:
    """The launch conditions of a ``variants`` case: its own list, else :data:`VARIANTS`."""
    v = c.get("variants")
    return tuple(v) if isinstance(v, (list, tuple)) else VARIANTS


def thread_class(comm: str, tid: int, main_tid: int) -> str:
    """A thread's class by its name: main, autograd (PyTorch's device threads: the backward pass), nccl, other."""
    if tid == main_tid:
        return "main"
    low = comm.lower()
    if low.startswith("pt_autograd"):
        return "autograd"
    if "nccl" in low:
        return "nccl"
    return "other"


class HostMeter:
    """Snapshots of this process's threads and the VM (Linux /proc; empty where it is missing): each thread's CPU
    time and run-queue delay (``/proc/self/task/*/schedstat``: ns on the CPU, ns waiting to run), the VM's steal and
    busy time (``/proc/stat``, all CPUs) and Python's garbage collections (``gc.callbacks``: seconds and count by
    generation). :meth:`delta` of two snapshots is one step's host accounting."""

    def __init__(self) -> None:
        import threading

        self.main_tid = threading.get_native_id()
        self.gc_s = [0.0, 0.0, 0.0]
        self.gc_n = [0, 0, 0]
        self._gc_t0 = 0.0
        self.names: dict[int, str] = {}
        gc.callbacks.append(self._gc)

    def close(self) -> None:
        if self._gc in gc.callbacks:
            gc.callbacks.remove(self._gc)

    def _gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_t0 = time.perf_counter()
        else:
            g = int(info.get("generation", 2))
            self.gc_s[g] += time.perf_counter() - self._gc_t0
            self.gc_n[g] += 1

    def tids(self) -> list[int]:
        try:
            return [int(t) for t in os.listdir("/proc/self/task")]
        except OSError:
            return []

    def name(self, tid: int) -> str:
        if tid not in self.names:
            self.names[tid] = _read(f"/proc/self/task/{tid}/comm").strip()
        return self.names[tid]

    def snap(self) -> dict[str, Any]:
        th = {}
        for tid in self.tids():
            parts = _read(f"/proc/self/task/{tid}/schedstat").split()
            if len(parts) >= 2:
                th[tid] = (int(parts[0]), int(parts[1]))
        cpu = _read("/proc/stat").split("\n", 1)[0].split()
        vals = [int(x) for x in cpu[1:]] if cpu and cpu[0] == "cpu" else []
        stat = {}
        if len(vals) >= 8:  # user nice system idle iowait irq softirq steal
            stat = {"busy": vals[0] + vals[1] + vals[2] + vals[5] + vals[6], "idle": vals[3] + vals[4],
                    "steal": vals[7]}
        return {"t": time.perf_counter(), "th": th, "stat": stat, "gc_s": list(self.gc_s), "gc_n": list(self.gc_n)}

    def delta(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        """Per thread class: CPU seconds and run-queue seconds between snapshots ``a`` and ``b``; the VM's steal and
        busy CPU seconds (all CPUs together); garbage collection seconds and counts by generation."""
        cls: dict[str, list[float]] = {}
        n_busy = 0
        for tid, (run_b, wait_b) in b["th"].items():
            run_a, wait_a = a["th"].get(tid, (0, 0))
            k = thread_class(self.name(tid), tid, self.main_tid)
            acc = cls.setdefault(k, [0.0, 0.0])
            acc[0] += (run_b - run_a) / 1e9
            acc[1] += (wait_b - wait_a) / 1e9
            n_busy += (run_b - run_a) > 0.2 * 1e9 * (b["t"] - a["t"])
        out: dict[str, Any] = {f"cpu_{k}_s": round(v[0], 6) for k, v in cls.items()}
        out.update({f"runq_{k}_s": round(v[1], 6) for k, v in cls.items()})
        out["threads_busy_20pct"] = n_busy
        if a["stat"] and b["stat"]:
            out.update({f"vm_{k}_s": (b["stat"][k] - a["stat"][k]) / USER_HZ for k in ("busy", "idle", "steal")})
        out["gc_s"] = [round(y - x, 6) for x, y in zip(a["gc_s"], b["gc_s"])]
        out["gc_n"] = [y - x for x, y in zip(a["gc_n"], b["gc_n"])]
        return out

    def place(self, busy: set[int], light: set[int]) -> dict[str, Any]:
        """The main and autograd threads on ``busy``, every other thread on ``light``."""
        for tid in self.tids():
            try:
                os.sched_setaffinity(tid, busy if thread_class(self.name(tid), tid, self.main_tid) in (
                    "main", "autograd") else light)
            except OSError:
                pass
        return {"busy": sorted(busy), "light": sorted(light)}

    def pin(self, on: bool, slot: int, allowed: set[int], reserved: set[int]) -> dict[str, Any]:
        """Pin every thread of this process (``on``) to cores of its ``slot`` (4 cores a slot from core 2: the main
        thread, the autograd thread, the rest on two), or give every thread back ``allowed``. Cores in ``reserved``
        (the speedometer's) are never used. Returns the cores used (by thread class)."""
        cores = sorted(allowed - reserved)
        if not on or not hasattr(os, "sched_setaffinity") or not cores:
            for tid in self.tids():
                try:
                    os.sched_setaffinity(tid, allowed)
                except OSError:
                    pass
            return {}
        base = 2 + 4 * slot
        pick = [cores[(base + i) % len(cores)] for i in range(4)]
        where = {"main": {pick[0]}, "autograd": {pick[1]}, "nccl": {pick[2], pick[3]}, "other": {pick[2], pick[3]}}
        for tid in self.tids():
            try:
                os.sched_setaffinity(tid, where[thread_class(self.name(tid), tid, self.main_tid)])
            except OSError:
                pass
        return {k: sorted(v) for k, v in where.items()}


# ---------------------------------------------------------------------------------------------
# The probe: where a host-bound step's time goes (device busy time against host issue time)
# ---------------------------------------------------------------------------------------------

PROBE_STEPS = 3  # profiled steps; the first is left out (the profiler's own start-up)
#: CUDA runtime calls in which the host waits for the device (time not spent issuing work).
BLOCKING_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy",
                  "cudaMemcpyAsync", "cudaStreamWaitEvent_blocking", "cudaFree", "cudaMalloc")


def _union_s(intervals: list[tuple[float, float]], lo: float, hi: float) -> float:
    """Seconds covered by the union of (start_us, end_us) intervals, clipped to [lo, hi] (microseconds in)."""
    total, cur_a, cur_b = 0.0, None, None
    for a, b in sorted((max(a, lo), min(b, hi)) for a, b in intervals if b > lo and a < hi):
        if cur_b is None or a > cur_b:
            if cur_b is not None:
                total += cur_b - cur_a
            cur_a, cur_b = a, b
        else:
            cur_b = max(cur_b, b)
    if cur_b is not None:
        total += cur_b - cur_a
    return total / 1e6


def trace_summary(events: list[dict[str, Any]], steps: list[dict[str, float]]) -> list[dict[str, Any]]:
    """Per profiled step (``steps``: each one's annotation name, wall and issue seconds), from a Chrome trace of
    torch.profiler: the device's busy time (union of kernels: compute kernels, NCCL kernels, all), the kernels'
    summed time, the host's time inside blocking CUDA calls while it issued the step, and how far the device ran
    behind the host (each kernel's start minus its launch call's start)."""
    ann = {e["name"]: e for e in events if e.get("cat") == "user_annotation" and str(e.get("name", "")).startswith(
        "probe_step_")}
    kern = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and "dur" in e]
    rt = [e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver") and "dur" in e]
    launch = {e.get("args", {}).get("correlation"): e for e in rt}
    out = []
    for st in steps:
        a = ann.get(st["name"])
        if a is None:
            out.append({"name": st["name"], "error": "no annotation in the trace"})
            continue
        lo = float(a["ts"])
        hi = lo + st["wall_s"] * 1e6
        # the step's Python returns when its annotation ends: the issue time (timed from before the annotation) would
        # reach into the synchronize after it, which the host's blocked time counted up to sync16
        issue_hi = min(lo + st["issue_s"] * 1e6, lo + float(a.get("dur", float("inf"))))
        ks = [e for e in kern if float(e["ts"]) < hi and float(e["ts"]) + float(e["dur"]) > lo]
        nccl = [(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in ks if "nccl" in e["name"].lower()]
        comp = [(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in ks if "nccl" not in e["name"].lower()]
        lags = []
        for e in ks:
            c = launch.get(e.get("args", {}).get("correlation"))
            if c is not None and "nccl" not in e["name"].lower():
                lags.append((float(e["ts"]) - float(c["ts"])) / 1e6)
        lags.sort()
        blocked = sum(float(e["dur"]) for e in rt if any(e["name"].startswith(b) for b in BLOCKING_CALLS)
                      and lo <= float(e["ts"]) < issue_hi) / 1e6
        n_launch = sum(1 for e in rt if "Launch" in e["name"] and lo <= float(e["ts"]) < issue_hi)
        out.append({
            "name": st["name"], "wall_s": st["wall_s"], "issue_s": st["issue_s"],
            "event_s": st.get("event_s"),
            "compute_busy_s": _union_s(comp, lo, hi), "nccl_busy_s": _union_s(nccl, lo, hi),
            "all_busy_s": _union_s(comp + nccl, lo, hi),
            "compute_kernel_sum_s": sum(b - a for a, b in comp) / 1e6, "n_compute_kernels": len(comp),
            "n_nccl_kernels": len(nccl), "n_launch_calls": n_launch,
            "host_blocked_s": blocked,
            "compute_busy_during_issue_s": _union_s(comp, lo, issue_hi),
            "lag_median_s": lags[len(lags) // 2] if lags else None,
            "lag_p90_s": lags[int(0.9 * (len(lags) - 1))] if lags else None,
            "lag_max_s": lags[-1] if lags else None,
        })
    return out


def profile_steps(torch: Any, runner: "Runner", step: Any, c: dict[str, Any], trace_dir: str) -> dict[str, Any]:
    """``PROBE_STEPS`` more steps under torch.profiler (CPU and CUDA activity), each between barriers as the
    timed steps, with CUDA events around each on the current stream; returns :func:`trace_summary` of every step
    but the first, and writes a compact trace (kernels, CUDA runtime calls, annotations) to ``trace_dir``."""
    import gzip

    from torch.profiler import ProfilerActivity, profile, record_function

    dist = torch.distributed
    cuda = not runner.cpu
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    steps = []
    t_start = time.time()
    with profile(activities=acts) as prof:
        for i in range(PROBE_STEPS):
            dist.barrier()
            runner.sync()
            ev = [torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)] if cuda else None
            t0 = time.perf_counter()
            with record_function(f"probe_step_{i}"):
                if ev:
                    ev[0].record()
                step()
                if ev:
                    ev[1].record()
            t1 = time.perf_counter()
            runner.sync()
            t2 = time.perf_counter()
            steps.append({"name": f"probe_step_{i}", "wall_s": t2 - t0, "issue_s": t1 - t0,
                          "event_s": ev[0].elapsed_time(ev[1]) / 1e3 if ev else None})
    path = os.path.join("/tmp", f"probe-{os.getpid()}.json")
    prof.export_chrome_trace(path)
    with open(path) as f:
        events = json.load(f).get("traceEvents", [])
    os.remove(path)
    summ = trace_summary(events, steps[1:])
    if trace_dir:
        keep = [[e.get("cat"), e.get("name", "")[:60], e.get("ts"), e.get("dur"), e.get("tid"),
                 (e.get("args") or {}).get("correlation"), (e.get("args") or {}).get("stream")]
                for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset", "user_annotation") or (
                    e.get("cat") in ("cuda_runtime", "cuda_driver") and any(
                        k in str(e.get("name", "")) for k in ("Launch", "Synchronize", "Memcpy", "Memset",
                                                              "WaitEvent", "Malloc", "Free")))]
        os.makedirs(trace_dir, exist_ok=True)
        with gzip.open(os.path.join(trace_dir, f"probe-{c['id']}-r{runner.rank}.json.gz"), "wt") as f:
            json.dump({"fields": ["cat", "name", "ts_us", "dur_us", "tid", "correlation", "stream"],
                       "steps": steps, "events": keep}, f)
    return {"steps": steps, "summary": summ, "wall_s": time.time() - t_start}


def summarise(c: dict[str, Any], ranks: list[dict[str, Any]]) -> dict[str, Any]:
    """The step: each timed step's slowest rank, median over steps; memory: every rank and the largest."""
    n = min(len(r["step_s_rank"]) for r in ranks)
    per_step = [max(r["step_s_rank"][i] for r in ranks) for i in range(n)]
    step_s = statistics.median(per_step)
    out: dict[str, Any] = {"step_s": step_s, "step_s_all": per_step, "tokens_per_s": c["tokens_per_step"] / step_s,
                           "issue_over_step": statistics.median(
                               statistics.median(r["issue_s_rank"]) for r in ranks) / step_s}
    losses = [r["loss"] for r in ranks if "loss" in r]
    if losses:
        out["loss"] = losses[-1]
    for k in ("peak_allocated_bytes", "peak_reserved_bytes", "after_step_allocated_bytes", "total_memory_bytes"):
        if k in ranks[0]:
            out[k] = [r[k] for r in ranks]
            out[k.replace("_bytes", "_max_bytes")] = max(r[k] for r in ranks)
    return out


# ---------------------------------------------------------------------------------------------
# Baselines in the same launch: matmul rate, collectives, host time per op
# ---------------------------------------------------------------------------------------------


def _cuda_time(torch: Any, fn: Any, reps: int) -> float:
    fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) / 1e3)
    return statistics.median(ts)


def baseline(torch: Any, dev: Any, cpu: bool) -> dict[str, Any]:
    dist = torch.distributed
    rank, world = dist.get_rank(), dist.get_world_size()
    out: dict[str, Any] = {}
    # 1. bf16 matmul rate on every GPU at once: 8192^3 and the sweep's own shapes (m tokens, n out, k in)
    shapes = [(64, 64, 64)] if cpu else [(8192, 8192, 8192), (8192, 14336, 4096), (8192, 4096, 14336),
                                         (8192, 3584, 4096), (8192, 4096, 3584), (8192, 8192, 2048),
                                         (8192, 2048, 8192), (8192, 32064, 4096), (8192, 128256, 2048)]
    mm = []
    for (mm_m, n, k) in shapes:
        x = torch.randn(mm_m, k, device=dev, dtype=torch.bfloat16)
        w = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
        if cpu:
            t0 = time.perf_counter()
            torch.nn.functional.linear(x, w)
            t = time.perf_counter() - t0
        else:
            t = _cuda_time(torch, lambda: torch.nn.functional.linear(x, w), 20)
        mm.append({"m": mm_m, "n": n, "k": k, "s": t, "tflops": 2.0 * mm_m * n * k / t / 1e12})
        del x, w
    rows: list[Any] = [None] * world
    dist.all_gather_object(rows, mm)
    out["matmul_bf16_per_rank"] = rows
    # 2. collectives over all ranks: bus bandwidth (nccl-tests' definitions)
    sizes = [2**16] if cpu else [2**24, 2**27, 2**30]
    coll = []
    for size in sizes:
        n_el = size // 2
        x = torch.randn(n_el, device=dev, dtype=torch.bfloat16)
        big = torch.empty(n_el, device=dev, dtype=torch.bfloat16)
        small = torch.empty(n_el // world, device=dev, dtype=torch.bfloat16)
        ops = {"all_reduce": (lambda: dist.all_reduce(x), 2.0 * (world - 1) / world),
               "all_gather": (lambda: dist.all_gather_into_tensor(big, x[: n_el // world]), (world - 1) / world),
               "reduce_scatter": (lambda: dist.reduce_scatter_tensor(small, x), (world - 1) / world)}
        for name, (fn, factor) in ops.items():
            for _ in range(3):
                fn()
            if not cpu:
                torch.cuda.synchronize()
            dist.barrier()
            reps = 5 if cpu else (20 if size <= 2**27 else 8)
            t0 = time.perf_counter()
            for _ in range(reps):
                fn()
            if not cpu:
                torch.cuda.synchronize()
            t = (time.perf_counter() - t0) / reps
            tt = [t]
            dist.all_reduce(torch.tensor(tt, device=dev), op=dist.ReduceOp.MAX)
            coll.append({"op": name, "bytes": size, "s": t, "busbw_bytes_per_s": factor * size / t,
                         "world": world})
        del x, big, small
    out["collectives"] = coll
    # send/recv between ranks 0 and 1 (pipeline stage boundaries)
    p2p = []
    for size in ([2**16] if cpu else [2**24, 2**27]):
        x = torch.randn(size // 2, device=dev, dtype=torch.bfloat16)
        dist.barrier()
        reps = 10
        t0 = time.perf_counter()
        for _ in range(reps):
            if rank == 0:
                dist.send(x, 1)
            elif rank == 1:
                dist.recv(x, 0)
        if not cpu:
            torch.cuda.synchronize()
        t = (time.perf_counter() - t0) / reps
        dist.barrier()
        if rank == 1:
            p2p.append({"bytes": size, "s": t, "bytes_per_s": size / t})
    rows = [None] * world
    dist.all_gather_object(rows, p2p)
    out["send_recv_0_to_1"] = rows[1]
    # 3. host time per eager op: plain tensors and DTensors (autograd + autocast on), forward and backward
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor
    mesh = init_device_mesh(dev.type, (world,))
    host = {}
    for kind in ("tensor", "dtensor"):
        x0 = torch.randn(8 * world, 8, device=dev, requires_grad=True)
        if kind == "dtensor":
            x0 = distribute_tensor(x0.detach(), mesh, [Shard(0)]).requires_grad_(True)
        n_ops = 500
        res = []
        for _ in range(3):
            if not cpu:
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            with torch.autocast(dev.type, dtype=torch.bfloat16):
                y = x0
                for _ in range(n_ops):
                    y = y * 1.0001
            t1 = time.perf_counter()
            y.sum().backward()
            if not cpu:
                torch.cuda.synchronize()
            t2 = time.perf_counter()
            res.append(((t1 - t0) / n_ops, (t2 - t1) / n_ops))
        host[kind] = {"fwd_s_per_op": min(r[0] for r in res), "bwd_s_per_node": min(r[1] for r in res)}
    rows = [None] * world
    dist.all_gather_object(rows, host)
    out["host_per_rank"] = rows
    return out


# ---------------------------------------------------------------------------------------------
# Host floors: each program's host time per layer, at a size where the device idles
# ---------------------------------------------------------------------------------------------

FLOOR_TOKENS = 64  # one sequence of 64 tokens: every kernel is shorter than its dispatch
FLOOR_LAYERS = (2, 6)  # the per-layer cost is the difference over 4 layers


def floor_model(n_layers: int) -> ModelConfig:
    """A narrow Llama-shaped model (same operations per layer as the sweep's, kernels of a few microseconds)."""
    return models.preset("Llama-3.2 1B").replace(name=f"host probe {n_layers}L", n_layers=n_layers, hidden=256,
                                                 n_heads=8, n_kv_heads=4, head_dim=32, ffn_hidden=512, vocab=512,
                                                 tied_embeddings=False, published_params=0.0)


#: The floors of the earlier calls: every program with and without checkpointing.
FLOORS_ALL = tuple((p, rc) for p in ("plain", "tp", "fsdp") for rc in (False, True))
#: The dist4b call's floors (4 GPUs): the plain program with and without checkpointing (the unit and the checkpoint
#: cost), tensor and FSDP2 over every rank, and tensor parallel over 2 ranks on a 2-D mesh (dp x tp) without FSDP
#: ("tp2d": each dp row a replica) and with FSDP2 over the dp dimension ("fsdptp"): FSDP2 over DTensor parameters
#: costs their difference.
FLOORS_DIST4B = (("plain", False), ("plain", True), ("tp", False), ("fsdp", False), ("tp2d", False),
                 ("fsdptp", False))
#: The dist5 call's floors (4 GPUs): the plain program (the unit), tensor parallel over 4 ranks and over 2 ranks of
#: a 2-D mesh on the same host at the same time: the tensor-parallel degree's own effect on the DTensor host cost.
FLOORS_DIST5 = (("plain", False), ("tp", False), ("tp2d", False))
#: The blind11 call's floors (4 GPUs): every program of :data:`FLOORS_ALL` (what :data:`mlcalc.distruns.FLOORS_RUN`
#: reads) and FSDP2 over DTensor parameters (:data:`FLOORS_DIST4B`'s "tp2d" and "fsdptp"): this host's floors beside
#: the ones the engine was calibrated from.
FLOORS_BLIND11 = FLOORS_ALL + (("tp2d", False), ("fsdptp", False))
#: The host probe: the plain program alone (its time per layer is the host's speed at that moment).
PROBE_FLOORS = (("plain", False),)


def floor_case(prog: str, m: ModelConfig, world: int, rc: bool) -> dict[str, Any]:
    """The case of one floor program on ``world`` ranks (see :data:`FLOORS_DIST4B`)."""
    if prog == "plain":
        return case(m, 1, FLOOR_TOKENS, 1, rc)
    if prog == "tp":
        return case(m, world, FLOOR_TOKENS, 1, rc, tp=world)
    if prog == "fsdp":
        return case(m, world, FLOOR_TOKENS, 1, rc, dp=world)
    if world < 4 or world % 2:
        raise ValueError(f"program {prog!r} needs an even world of 4 or more ranks, not {world}")
    if prog == "tp2d":
        return {**case(m, 2, FLOOR_TOKENS, 1, rc, tp=2), "world": world, "mesh_dp": world // 2}
    if prog == "fsdptp":
        return case(m, world, FLOOR_TOKENS, 1, rc, dp=world // 2, tp=2)
    raise ValueError(f"program {prog!r} is not one of plain, tp, fsdp, tp2d, fsdptp")


def host_floors(torch: Any, runner: "Runner", cpu: bool, reps: int = 7,
                programs: tuple[tuple[str, bool], ...] = FLOORS_ALL, count_ops: bool = True,
                place: Any = None) -> dict[str, Any]:
    """Host time of the forward and backward pass of each program (one GPU with autocast; FSDP2 over every rank;
    tensor parallel over every rank; on 4 or more ranks also tensor parallel over 2 of a 2-D mesh with and without
    FSDP2 over the other dimension), with and without checkpointing (``programs``: (name, recompute) pairs), at 2
    and 6 layers: the median of ``reps`` after two warm-up steps, as issued (Python returns) and as finished
    (synchronized), and the operations each pass dispatches, counted with a TorchDispatchMode (those with a DTensor
    argument apart; ``count_ops=False``: not counted, -1)."""
    import contextlib

    from torch.distributed.tensor import DTensor
    from torch.utils._python_dispatch import TorchDispatchMode

    F = torch.nn.functional
    world = runner.world

    class Count(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.n = {"dtensor": 0, "plain": 0}

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            leaves = torch.utils._pytree.tree_leaves((args, kwargs))
            self.n["dtensor" if any(isinstance(a, DTensor) for a in leaves) else "plain"] += 1
            return func(*args, **kwargs)

    rows = []
    for prog, rc in programs:
        for n_layers in FLOOR_LAYERS:
            m = floor_model(n_layers)
            c = floor_case(prog, m, world, rc)
            model, opt, step, mesh, notes = runner.build(c)
            for _ in range(2):
                step()
            runner.sync()
            placed = place() if place is not None else {}  # host7: after the warm-up (the autograd thread exists)
            tokens = torch.randint(0, m.vocab, (1, FLOOR_TOKENS), device=runner.dev)
            windows: list[list[float]] = []
            lossctx: Any = contextlib.nullcontext
            if prog in ("tp", "tp2d", "fsdptp"):
                from torch.distributed.tensor.parallel import loss_parallel
                lossctx = loss_parallel
            amp = (contextlib.nullcontext if prog in ("fsdp", "fsdptp") else
                   (lambda: torch.autocast(device_type=runner.dev.type, dtype=torch.bfloat16)))

            def one(count: bool = False) -> tuple[float, ...]:
                cf, cb = Count(), Count()
                runner.sync()
                torch.distributed.barrier()
                e0 = time.time()
                t0 = time.perf_counter()
                with lossctx():
                    with (cf if count else contextlib.nullcontext()):
                        with amp():
                            logits = model(tokens)
                        loss = F.cross_entropy(logits.flatten(0, 1).float(), tokens.flatten(0, 1))
                    del logits
                    t1 = time.perf_counter()
                    runner.sync()
                    t2 = time.perf_counter()
                    with (cb if count else contextlib.nullcontext()):
                        loss.backward()
                t3 = time.perf_counter()
                runner.sync()
                t4 = time.perf_counter()
                opt.step()
                opt.zero_grad(set_to_none=True)
                runner.sync()
                if count:
                    return (cf.n["plain"], cf.n["dtensor"], cb.n["plain"], cb.n["dtensor"])
                # each pass's window in epoch seconds (host7: the pace meter's samples inside it price the pass)
                windows.append([round(e0, 4), round(e0 + (t2 - t0), 4), round(e0 + (t2 - t0), 4),
                                round(e0 + (t4 - t0), 4), round(t2 - t0, 6), round(t4 - t2, 6)])
                return (t1 - t0, t2 - t0, t3 - t2, t4 - t2)

            got = [one() for _ in range(reps)]
            ops = one(count=True) if count_ops else (-1, -1, -1, -1)
            med = [statistics.median(g[i] for g in got) for i in range(4)]
            rows.append({"program": prog, "recompute": rc, "n_layers": n_layers, "tokens": FLOOR_TOKENS,
                         "world": c["world"], "dp": c["dp"], "tp": c["tp"], "fwd_issue_s": med[0], "fwd_s": med[1],
                         "bwd_issue_s": med[2], "bwd_s": med[3],
                         "ops": {"fwd_plain": ops[0], "fwd_dtensor": ops[1], "bwd_plain": ops[2],
                                 "bwd_dtensor": ops[3]},
                         **({"reps": windows, "placed": placed} if place is not None else {})})
            del model, opt, step
            gc.collect()
    per_rank: list[Any] = [None] * world
    torch.distributed.all_gather_object(per_rank, rows)
    return {"model": models.as_dict(floor_model(FLOOR_LAYERS[0])), "layers": list(FLOOR_LAYERS), "per_rank": per_rank}


# ---------------------------------------------------------------------------------------------


def environment(torch: Any, dev: Any) -> dict[str, Any]:
    env: dict[str, Any] = {"date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                           "python": platform.python_version(), "torch": torch.__version__,
                           "cuda": torch.version.cuda, "device_type": dev.type,
                           "world_size": torch.distributed.get_world_size(),
                           "env": {k: v for k, v in os.environ.items()
                                   if k.startswith(("NCCL_", "TORCH_SYMM", "TORCH_NCCL", "NVSHMEM_", "CUDA_VISIBLE", "PYTORCH_"))}}
    if dev.type == "cuda":
        p = torch.cuda.get_device_properties(dev)
        env.update(device_name=p.name, total_memory_bytes=p.total_memory, multiprocessors=p.multi_processor_count,
                   nccl=".".join(str(v) for v in torch.cuda.nccl.version()))
    return env


PARAMETERS = {
    "model": "Llama-like decoder in plain PyTorch (this script): RMSNorm as transformers' LlamaRMSNorm (fp32 statistics), separate Q/K/V, rotary "
             "embeddings, F.scaled_dot_product_attention(is_causal=True, enable_gqa=True), SwiGLU, untied output",
    "precision": "without FSDP: fp32 parameters, gradients, AdamW states, torch.autocast(bf16) forward; with FSDP: "
                 "fp32 sharded parameters/gradients/states, MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)",
    "fsdp": "fully_shard on every block, then on the root; reshard_after_forward=True, False under pipelining",
    "tensor_parallel": "parallelize_module: Q/K/V, w1/w3 ColwiseParallel; wo, w2 RowwiseParallel(output Shard(1)); "
                       "norms SequenceParallel; embedding RowwiseParallel; output ColwiseParallel(Shard(-1)) with "
                       "loss_parallel",
    "pipeline": "torch.distributed.pipelining PipelineStage per rank; layers split evenly (earlier stages take the "
                "remainder); embedding on the first stage, final norm and output on the last",
    "optimizer": "torch.optim.AdamW(fused=True), lr 1e-5, weight decay 0.1; zero_grad(set_to_none=True)",
    "recompute": "checkpoint_wrapper(NO_REENTRANT) on every block, after TP, before FSDP",
    "loss": "F.cross_entropy(logits.float()) against the input tokens (random)",
    "step_s": "each timed step between barriers, the slowest rank; median over timed steps after warm-up",
    "peak": "torch.cuda.max_memory_allocated / max_memory_reserved per rank over the timed steps (reset after warm-up)",
    "issue_over_step": "host time until the step's Python returns (before synchronize) over the step time, median "
                       "over ranks; near 1: the host sets the pace",
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="JSON file (rewritten after each case)")
    ap.add_argument("--cpu-tiny", action="store_true", help="tiny model, gloo on the CPU (a test)")
    ap.add_argument("--baseline", action="store_true", help="measure matmul, collectives and host time first")
    ap.add_argument("--sweep", default="first", choices=sorted(SWEEPS), help="which list of GPU cases")
    ap.add_argument("--floors", action="store_true", help="measure the host floors of each program (with --baseline)")
    ap.add_argument("--floor-set", default="all", choices=("all", "dist4b", "dist5", "blind11"),
                    help="which floor programs: all (plain, tp, fsdp, with and without checkpointing), dist4b, dist5 or blind11")
    ap.add_argument("--only", default="", help="comma-separated case ids (default: every case of this world size)")
    ap.add_argument("--lane", default="", help="only the cases of this lane (meter12: two 2-GPU launches side by side)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--case-budget-s", type=float, default=25.0, help="timed steps are cut to fit this per case")
    ap.add_argument("--deadline", type=float, default=0.0, help="epoch seconds: start no case after this")
    ap.add_argument("--nccl-timeout-s", type=float, default=90.0)
    ap.add_argument("--state-dir", default="", help="folder for the progress file (default: beside --out)")
    ap.add_argument("--trace-dir", default="", help="folder for the probe cases' compact traces (default: none)")
    args = ap.parse_args(argv)
    import torch
    import torch.distributed as dist

    cpu = args.cpu_tiny
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if cpu:
        dev = torch.device("cpu")
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.nccl_timeout_s))
    else:
        torch.cuda.set_device(local)
        dev = torch.device("cuda", local)
        dist.init_process_group("nccl", timeout=timedelta(seconds=args.nccl_timeout_s), device_id=dev)
    rank, world = dist.get_rank(), dist.get_world_size()
    cases = [c for c in ((tiny_cases(SWEEPS[args.sweep]()) if args.sweep.startswith(("dist5", "dist6", "host7", "host8", "blind1", "meter1", "h100mg", "sync16")) else cpu_cases()) if cpu
                         else SWEEPS[args.sweep]()) if c["world"] == world]
    if args.lane:
        cases = [c for c in cases if c.get("lane", "") == args.lane]
    if args.only:
        keep = set(args.only.split(","))
        cases = [c for c in cases if c["id"] in keep]
    result: dict[str, Any] = {"benchmark": "train_dist", "environment": environment(torch, dev),
                              "parameters": PARAMETERS, "cases": []}
    if os.path.exists(args.out):  # a relaunch: keep what is recorded
        with open(args.out) as f:
            result = json.load(f)
    state = args.state_dir or os.path.dirname(os.path.abspath(args.out))
    os.makedirs(state, exist_ok=True)
    progress = os.path.join(state, os.path.basename(args.out) + ".started")
    started = open(progress).read().split() if os.path.exists(progress) else []
    done = {c["id"] for c in result["cases"]}

    def save() -> None:
        if rank == 0:
            tmp = os.path.join(state, os.path.basename(args.out) + ".tmp")
            with open(tmp, "w") as f:
                json.dump(result, f, indent=1)
            shutil.copyfile(tmp, args.out + ".part")  # beside the result, then renamed: never half a file
            os.replace(args.out + ".part", args.out)

    done |= {c["id"] for c in cases if c.get("variants") and f"{c['id']}-base" in done}
    for cid in started:  # started, never finished: the launch died on it
        if cid not in done:
            c = next((c for c in cases if c["id"] == cid), {"id": cid})
            result["cases"].append({**c, "error": "the launch ended during this case (crash or NCCL timeout)"})
            done.add(cid)
    save()
    if args.baseline and "baseline" not in result:
        t0 = time.time()
        try:
            result["baseline"] = baseline(torch, dev, cpu)
        except Exception as err:  # noqa: BLE001 - record and go on
            result["baseline"] = {"error": f"{type(err).__name__}: {err}"[:800]}
        result["baseline"]["wall_s"] = time.time() - t0
        save()
    floors_mark = os.path.join(state, os.path.basename(args.out) + ".floors")
    stale = args.floors and world > 1 and "host_floors" not in result and os.path.exists(floors_mark)
    if args.floors:
        dist.barrier()  # every rank has read the mark before rank 0 writes it (host7: no --baseline before the floors)
    if stale:
        result["host_floors"] = {"error": "the launch ended during the host floors (crash or NCCL timeout)"}
        save()
    if args.floors and world > 1 and "host_floors" not in result:
        if rank == 0:
            open(floors_mark, "w").close()
        t0 = time.time()
        try:
            programs = {"dist4b": FLOORS_DIST4B, "dist5": FLOORS_DIST5,
                        "blind11": FLOORS_BLIND11}.get(args.floor_set, FLOORS_ALL)
            place: Any = None
            fmeter = HostMeter()
            fallowed = set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else set()

            def place_floor() -> dict[str, Any]:
                return fmeter.place(*meter_cpus(gpu_slot(local), fallowed))
            if os.environ.get("METER_FLOORS") and fallowed:  # host7: each rank's busy threads as a metered rank's
                place = place_floor
            result["host_floors"] = host_floors(torch, Runner(torch, dev, cpu), cpu, programs=programs,
                                                reps=int(os.environ.get("FLOOR_REPS", "7")), place=place)
            if place is not None:
                fmeter.pin(False, gpu_slot(local), fallowed, set())
            fmeter.close()
        except Exception as err:  # noqa: BLE001 - record and go on
            result["host_floors"] = {"error": f"{type(err).__name__}: {err}"[:800]}
            print(f"rank {rank}: host floors failed: {type(err).__name__}: {err}"[:800], flush=True)
        result["host_floors"]["wall_s"] = time.time() - t0
        save()
        if rank == 0:
            print(f"host floors {time.time() - t0:.1f} s", flush=True)
        if rank == 0:
            print(f"baseline {time.time() - t0:.1f} s", flush=True)
    runner = Runner(torch, dev, cpu)
    runner.trace_dir = args.trace_dir
    for c in cases:
        if c["id"] in done:
            continue
        go = [args.deadline <= 0 or time.time() < args.deadline]
        dist.broadcast_object_list(go, src=0)
        total_gib = torch.cuda.get_device_properties(dev).total_memory / 2**30 if not cpu else 1e9
        if c.get("min_gib", 0) > total_gib:
            result["cases"].append({**c, "error": f"skipped: needs {c['min_gib']} GiB, the card has {total_gib:.1f}"})
            save()
            continue
        if not go[0]:
            result["cases"].append({**c, "error": "skipped: the call's time budget was spent"})
            save()
            continue
        if rank == 0:
            with open(progress, "a") as f:
                f.write(c["id"] + "\n")
        t0 = time.time()
        err = ""
        if os.environ.get("TRAIN_DIST_TEST_CRASH") == c["id"] and rank == 1:
            os._exit(3)  # a test of the relaunch: this rank dies, the others hang until the watchdog ends them
        got = None

        def probe() -> Any:  # the host's speed now: the plain program's floor on every rank (never fails the case)
            try:
                return host_floors(torch, runner, cpu, reps=5, programs=PROBE_FLOORS, count_ops=False)["per_rank"]
            except Exception as e:  # noqa: BLE001
                return {"error": f"{type(e).__name__}: {e}"[:400]}
        hp_before = probe() if c.get("host_probe") else None
        for attempt in range(2):
            try:
                if c.get("variants"):
                    got = runner.run_variants(c, args.warmup, args.steps, args.case_budget_s, gpu_slot(local),
                                              reserved_cores())
                else:
                    got = runner.run(c, args.warmup, args.steps, args.case_budget_s)
                err = ""
            except Exception as e:  # noqa: BLE001 - OOM or a bug: record, go on
                oom = isinstance(e, torch.OutOfMemoryError)
                err = ("OOM: " if oom else "") + f"{type(e).__name__}: {e}"[:800]
                got = None
            gc.collect()
            if not cpu:
                torch.cuda.empty_cache()
            errs0: list[Any] = [None] * world
            dist.all_gather_object(errs0, err)
            fused_failed = any(e and "fused" in e.lower() and not e.startswith("OOM") for e in errs0)
            if attempt == 0 and fused_failed and runner.fused:
                runner.fused = False  # every rank saw the same errors: all retry with foreach AdamW
                if rank == 0:
                    print(f"{c['id']}: fused AdamW failed, again with foreach: {err[:200]}", flush=True)
                continue
            break
        gc.collect()
        if not cpu:
            torch.cuda.empty_cache()
        errs: list[Any] = [None] * world
        dist.all_gather_object(errs, err)
        if c.get("host_probe"):
            hp = {"before": hp_before, "after": probe()}
        row = {**c, "wall_s": time.time() - t0}
        if c.get("host_probe"):
            row["host_probe"] = hp
        if any(errs):
            row["error"] = "; ".join(f"rank {i}: {e}" for i, e in enumerate(errs) if e)[:2000]
            new_rows = [row]
        elif c.get("variants"):
            new_rows = [{**row, "id": f"{c['id']}-{v}", "variant": v, **got[v], **summarise(c, got[v]["ranks"])}
                        for v in variant_names(c)]
        else:
            row.update(got)
            row.update(summarise(c, got["ranks"]))
            new_rows = [row]
        result["cases"] += new_rows
        save()
        for row in new_rows if rank == 0 else ():
            if "error" in row:
                print(f"{row['id']:44s} ERROR {row['error'][:300]}", flush=True)
            else:
                print(f"{row['id']:44s} {row['step_s'] * 1e3:9.1f} ms {row['tokens_per_s']:10.0f} tok/s "
                      f"peak {row.get('peak_allocated_max_bytes', 0) / 2**30:6.2f} GiB "
                      f"issue/step {row['issue_over_step']:.2f} ({row['wall_s']:.0f} s)", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
