"""The host's side of TensorRT-LLM 0.9.0's first tokens: its engines ran without CUDA graphs (the page's
gptSessionBenchmark commands pass no ``--enable_cuda_graph``), so the host issues every kernel of a context step. How
many launches that is, counted from the code at v0.9.0 (mlcalc/data/kernels.json ``trtllm_090_launches``),
what one launch costs on the host, and what the launches can and cannot add to the GPU's context step
(:func:`mlcalc.servemeasured.check_first_token`'s misses).

A module of its own, imported when a cause is written (as :mod:`mlcalc.decode_profile`): nothing a prediction
computes reads it."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Mapping, NamedTuple, Sequence

from mlcalc import _check, memory, serving
from mlcalc.serving import _kernels, _run_file, in_order_path_s

if TYPE_CHECKING:
    from mlcalc.servemeasured import FirstTokenCheck

#: TensorRT-LLM's v0.9.0 tag, the code whose launches are counted and whose performance.md gives the first tokens.
TRTLLM_090_COMMIT = "250d9c293d5edbc2a45c20775b3150b1eb68b364"

#: The call whose profile prices a launch: torch.profiler over decode steps of a 1B model on one H100 (serve12).
LAUNCH_PROFILE_RUN = "h100-2026-11-27-serve12"


def _counts() -> Mapping[str, int]:
    return _kernels()["trtllm_090_launches"]["value"]


def context_launches(model: memory.ModelConfig, tp: int = 1) -> int:
    """Kernel launches one context step of ``model`` makes on each GPU of ``tp`` in TensorRT-LLM 0.9.0's FP8 engine
    (counted from the code at :data:`TRTLLM_090_COMMIT`): per dense layer the norms and attention projections, the
    attention plugin's context kernels, the gated MLP and the residual add; an MoE layer (the path without the plugin,
    :func:`mlcalc.servemeasured.moe_as_run` "all-experts") the router and every expert on every token in place of
    the MLP; with ``tp`` > 1 an all-reduce after every row-parallel matmul (the attention output, the MLP's proj,
    each expert's proj) and the lm_head's gather; outside the layers the embedding, final norm and lm_head.

    Llama 2 7B on one GPU: 32 layers of 13 launches and 5 outside; Mixtral 8x7B on two: 32 layers of 71 and 6:

    >>> context_launches(memory.model_preset("Llama-2 7B")), context_launches(memory.model_preset("Mixtral 8x7B"), 2)
    (421, 2278)
    """
    return step_launches(model, tp, "context")


#: The two steps a GptSession runs: "context" (the prompt, which samples the first token) and "generation" (one token).
PHASES = ("context", "generation")


def step_launches(model: memory.ModelConfig, tp: int = 1, phase: str = "context") -> int:
    """Kernel launches of one ``phase`` step (:data:`PHASES`) on each GPU of ``tp``: :func:`context_launches`, and for
    a generation step the attention plugin's one kernel in place of its three context kernels.

    >>> step_launches(memory.model_preset("Llama-2 7B"), 1, "generation")
    357
    """
    layers, outside = _layer_launches(model, tp, phase)
    return sum(layers) + outside


def _layer_launches(model: memory.ModelConfig, tp: int, phase: str = "context") -> tuple[list[int], int]:
    """Each layer's launches in order, and those outside the layers (:func:`step_launches`)."""
    t = _check.positive_int("tp", tp)
    _check.choice("phase", phase, PHASES)
    k = _counts()
    ar = k["row_linear_allreduce"] if t > 1 else 0
    head = k["attention_layer"] + k[f"{phase}_attention"] + k["residual_add"] + ar
    dense = head + k["gated_mlp"] + ar
    moe = head + k["moe_router"] + model.n_experts * (k["moe_expert"] + ar)
    n_moe = model.n_moe_layers if model.is_moe else 0
    outside = k["outside"] + (k["lm_head_allgather"] if t > 1 else 0)
    return [dense] * (model.n_layers - n_moe) + [moe] * n_moe, outside


@lru_cache(maxsize=1)
def profiled_launch_s() -> float:
    """Host seconds of one kernel launch as the book profiled it (:data:`LAUNCH_PROFILE_RUN`): every launch call
    (cudaLaunchKernel, cuLaunchKernelEx, cudaLaunchKernelExC, cuLaunchKernel) of a decode step, their host time over
    their count, the median of the profiled points. Under the profiler, which adds its own time to every runtime
    call: an upper side of the launch alone.

    >>> round(profiled_launch_s() * 1e6, 1)
    6.4
    """
    per_point = []
    for p in _run_file("profile_1b.json", LAUNCH_PROFILE_RUN)["points"]:
        calls = [c for c in p.get("reduced", {}).get("runtime_calls_decode", ()) if "LaunchKernel" in c["name"]]
        if calls:
            per_point.append(sum(float(c["us_per_step"]) for c in calls) * 1e-6
                             / sum(float(c["count_per_step"]) for c in calls))
    s = sorted(per_point)
    return (s[(len(s) - 1) // 2] + s[len(s) // 2]) / 2.0


class LaunchBound(NamedTuple):
    """What a context step's launches can add, at a per-launch host cost."""

    launches: int  # :func:`context_launches`
    launch_s: float  # host seconds a launch
    issue_s: float  # launches x launch_s: the host's time to issue the step
    path_s: float  # the step on the in-order path (each layer's kernels no earlier than issued) over a GPU step
    added_s: float  # path_s less the GPU step: what the launches add to it


def launch_bound(model: memory.ModelConfig, tp: int, gpu_step_s: float, launch_s: float,
                 phase: str = "context") -> LaunchBound:
    """The launches of :func:`context_launches` at ``launch_s`` each against a GPU context step of ``gpu_step_s``
    split evenly over the layers: the in-order path (:func:`mlcalc.serving.in_order_path_s`: the host issues the
    layers in order without waiting, the GPU cannot start a kernel before it is issued), the outside launches first."""
    layers, outside = _layer_launches(model, tp, phase)
    c = _check.positive("launch_s", launch_s)
    g = _check.positive("gpu_step_s", gpu_step_s)
    path = in_order_path_s([(outside * c, 0.0)] + [(n * c, g / len(layers)) for n in layers])
    n = sum(layers) + outside
    return LaunchBound(n, c, n * c, path, path - g)


def serial_launch_bound_s(c: "FirstTokenCheck") -> float:
    """The most a launch can cost on the host of a published first token ``c`` if every launch waited for the kernel
    before it (the host's time and the GPU's added): its time less the least its GPU can take (each GPU's weights
    read once at the card's read rate, :func:`mlcalc.serving.read_params_per_gpu`; the model as the table ran it,
    :func:`mlcalc.servemeasured.moe_as_run`), over its launches (:func:`context_launches`)."""
    from mlcalc import servemeasured as sm

    model = sm.moe_as_run(memory.model_preset(c.model), sm.published()["first_token"][c.source].get("moe_path", "routed"))
    dt = sm.published()["first_token"][c.source]["dtype"]
    least = serving.read_params_per_gpu(model, c.input, c.gpus) * memory.dtype_bytes(dt) / serving.read_bandwidth(c.chip)
    return max(0.0, c.published_s - least) / context_launches(model, c.gpus)


def first_token_note(c: "FirstTokenCheck", checks: Sequence["FirstTokenCheck"]) -> str:
    """What the launches of a first token ``c`` can add (:func:`launch_bound` at :func:`profiled_launch_s`), and
    why they cannot add their whole issue time: the same card's row with the most launches bounds a launch, were
    launches serial with the kernels (:func:`serial_launch_bound_s`)."""
    from mlcalc import servemeasured as sm

    model = sm.moe_as_run(memory.model_preset(c.model), sm.published()["first_token"][c.source].get("moe_path", "routed"))
    prof = profiled_launch_s()
    b = launch_bound(model, c.gpus, c.predicted_s, prof)
    layers, _ = _layer_launches(model, c.gpus)
    same = [x for x in checks if x.chip == c.chip]
    ref = max(same, key=lambda x: (context_launches(memory.model_preset(x.model), x.gpus), -x.input))
    cap = serial_launch_bound_s(ref)
    return (f" Kernel launches are not it. Counted from TensorRT-LLM 0.9.0's code (mlcalc.trtllm_host), this context "
            f"step makes {b.launches} launches; at the book's profiled {prof * 1e6:.1f} us a launch "
            f"({LAUNCH_PROFILE_RUN}, torch.profiler: an upper side) the host issues them in {b.issue_s * 1e3:.1f} ms, "
            f"{layers[0] * prof * 1e6:.0f} us a layer against the GPU's {c.predicted_s / len(layers) * 1e6:.0f} us, "
            f"so on the in-order path they add {b.added_s * 1e3:.2f} ms. Only launches that each waited for the kernel "
            f"before them would add their whole issue time, and this card's {ref.model} first token of {ref.input} "
            f"tokens rules that out: its {context_launches(memory.model_preset(ref.model), ref.gpus):,} launches "
            f"beside the least its GPUs take (their weights read once) fit its published "
            f"{ref.published_s * 1e3:.1f} ms only at {cap * 1e6:.1f} us a launch or less, which would give this step "
            f"{b.launches * cap * 1e3:.1f} ms, not the {(c.published_s - c.predicted_s) * 1e3:.1f} ms the row leaves")


__all__ = ["TRTLLM_090_COMMIT", "LAUNCH_PROFILE_RUN", "context_launches", "PHASES", "step_launches", "profiled_launch_s", "LaunchBound",
           "launch_bound", "serial_launch_bound_s", "first_token_note"]
