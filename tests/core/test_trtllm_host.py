"""TensorRT-LLM 0.9.0's first tokens and the host's kernel launches (mlcalc.trtllm_host).

Sources: the launch counts from NVIDIA TensorRT-LLM at the v0.9.0 tag (commit 250d9c293d5edbc2a45c20775b3150b1eb68b364:
tensorrt_llm/models/llama/model.py, tensorrt_llm/layers/mlp.py, moe.py, linear.py, the GPT attention plugin;
mlcalc/data/kernels.json ``trtllm_090_launches``); the first tokens from its docs/source/performance.md ('Low
Latency', H100 and H200 FP8 tables); a launch's host cost from the book's profile of one H100
(mlcalc/data/measured/h100-2026-11-27-serve12/profile_1b.json, torch.profiler).
"""

from __future__ import annotations

import pytest

from mlcalc import memory, servemeasured as sm, trtllm_host as th


def test_launches_counted_from_the_v090_code():
    llama, mixtral = memory.model_preset("Llama-2 7B"), memory.model_preset("Mixtral 8x7B")
    # a dense layer: input RMSNorm + quantize, QKV, the attention plugin's 3 context kernels, output quantize and
    # matmul, residual add + RMSNorm + quantize, gate, fc, SiLU x product, proj, the last residual add: 13
    assert th.context_launches(llama) == 32 * 13 + 5
    # tensor parallel: each RowLinear all-reduces (attention output, MLP proj) and the lm_head gathers
    assert th.context_launches(memory.model_preset("Llama-2 70B"), 4) == 80 * (13 + 2) + 5 + 1
    # the MoE path without the plugin: router (5) and 8 experts of 6 in place of the MLP's 4; at TP 2 every expert's
    # proj all-reduces (moe.py builds them with the layer's tp_group): 8 + 1 all-reduces a layer
    assert th.context_launches(mixtral, 2) == 32 * (5 + 3 + 1 + 1 + 5 + 8 * (6 + 1)) + 5 + 1 == 2278
    # a generation step runs one attention kernel, not three
    assert th.step_launches(llama, 1, "generation") == th.context_launches(llama) - 2 * 32
    with pytest.raises(ValueError, match="phase"):
        th.step_launches(llama, 1, "decode")
    with pytest.raises(ValueError, match="tp"):
        th.context_launches(llama, 0)


def test_profiled_launch_cost():
    # serve12 (one H100, torch.profiler over decode steps): cudaLaunchKernel and its kin, host time over count, the
    # median of the 4 profiled points: 6.1-7.7 us a launch, under the profiler
    assert th.profiled_launch_s() == pytest.approx(6.37e-6, rel=0.01)


def test_launches_hide_behind_the_gpu_on_the_in_order_path():
    llama = memory.model_preset("Llama-2 7B")
    c = th.profiled_launch_s()
    # a 3.7 ms context step (the H100 128-token first token's prediction): 83 us of launches a layer against 116 us
    # of GPU, so the launches add only what comes before the first layer's kernels run
    b = th.launch_bound(llama, 1, 3.72e-3, c)
    assert b.launches == 421 and b.issue_s == pytest.approx(421 * c)
    assert b.issue_s == pytest.approx(2.68e-3, rel=0.01)  # the gap the rows leave, had the launches been serial
    assert b.added_s == pytest.approx((5 + 13) * c, rel=1e-9)
    # host-bound: a GPU step shorter than the issue time ends with the last launch plus its layer's kernels
    short = th.launch_bound(llama, 1, 1e-3, c)
    assert short.path_s == pytest.approx(421 * c + 1e-3 / 32)
    with pytest.raises(ValueError, match="launch_s"):
        th.launch_bound(llama, 1, 1e-3, 0.0)


def test_the_first_token_misses_are_not_launch_time():
    checks = sm.check_first_token()
    misses = [c for c in checks if abs(c.error) > 0.25]
    assert len(misses) == 4 and {(c.gpus, c.input) for c in misses} == {(1, 128)}
    mixtral = {c.chip: c for c in checks if c.model == "Mixtral 8x7B" and c.input == 128}
    for chip, ref in mixtral.items():
        # were every launch serial with the kernels, the Mixtral row (2,278 launches beside its weights' read) fits
        # its published time only at 2.3 us (H100) and 2.8 us (H200) a launch or less
        cap = th.serial_launch_bound_s(ref)
        assert 2.0e-6 < cap < 3.0e-6
        for c in (c for c in misses if c.chip == chip):
            # ... which gives the 421 launches of a 7B step 1.0-1.2 ms: short of the 2.2-2.6 ms the row leaves
            assert 421 * cap < 0.5 * (c.published_s - c.predicted_s)
            assert "Kernel launches are not it" in c.cause and th.LAUNCH_PROFILE_RUN in c.cause
            assert f"{421 * cap * 1e3:.1f} ms, not the {(c.published_s - c.predicted_s) * 1e3:.1f} ms" in c.cause
    # the rows within 25 % carry no launch note
    assert not any("Kernel launches" in c.cause for c in checks if abs(c.error) <= 0.25)
