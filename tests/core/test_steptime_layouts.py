"""The one step-time engine (mlcalc.steptime.predict_step) on every layout: its rules, checked one by one."""

import math

import pytest

from mlcalc import compute, hfruns, memory, models, parallel, steptime

RUN2 = "h200x2-2026-11-26-train-hf-run2"
L3_8B = models.preset("Llama-3 8B")


def _pred(model=L3_8B, seq_len=4096, machine="H100-SXM", engine="megatron", dtype="bf16", **lay):
    return steptime.predict_step(model, steptime.Layout(**lay), seq_len=seq_len, machine=machine, engine=engine,
                                 dtype=dtype)


# One GPU, eager: predict_step is step_time (the 21 measured Hugging Face runs pin step_time).
def test_one_gpu_eager_is_step_time():
    mach = hfruns.machine(RUN2)
    for rc in (False, True):
        st = steptime.step_time(L3_8B, 2, 2048, rc, mach)
        p = steptime.predict_step(L3_8B, steptime.Layout(micro_batch=2, recompute="full" if rc else "none"),
                                  seq_len=2048, machine=mach)
        assert p.step_s == pytest.approx(st.total_s, rel=1e-12)
        assert p.comm_s == 0 and p.bubble_s == 0
        assert p.step_s == pytest.approx(sum(p.parts_s.values()))


# Megatron's split (Shoeybi et al. 2019, 3): column-parallel products split their output, row-parallel their
# inner dimension, so every layer product's FLOP on one of tp GPUs is 1/tp of the whole.
def test_tensor_parallel_splits_every_layer_product():
    whole = steptime.step_gemms(L3_8B, 1, 4096, logits=False)
    split = steptime.step_gemms(L3_8B, 1, 4096, tp=8, logits=False)
    assert sum(g.flop for g in split) == pytest.approx(sum(g.flop for g in whole) / 8)
    q = next(g for g in split if g.label == "attention q (fwd)")
    assert (q.m, q.n, q.k) == (4096, 4096 // 8, 4096)
    o = next(g for g in split if g.label == "attention out (fwd)")
    assert (o.m, o.n, o.k) == (4096, 4096, 4096 // 8)


# Shoeybi et al. 2019, Figure 4: two all-reduces in the forward pass of a layer and two in the backward; with
# full recomputation the recomputed forward runs its two again.
def test_tensor_parallel_collectives_per_layer():
    from mlcalc import network

    p = _pred(tp=8)
    act = 4096 * L3_8B.hidden * 2.0
    one = network.nccl_collective_time(act, network.fabric("DGX-H100", 1, gpus_per_node=8)).time_s
    assert p.comm_parts_s["tensor"][0] == pytest.approx(4 * L3_8B.n_layers * one)
    full = _pred(tp=8, recompute="full")
    assert full.comm_parts_s["tensor"][0] == pytest.approx(6 * L3_8B.n_layers * one)


# TransformerEngine's userbuffers overlap (RULES["tensor-overlap"]): a collective of c s in t chunks beside a GEMM of
# g s takes max(c, g (t - 1) / t) + g / t with it, so max(0, c - g (t - 1) / t) of it is exposed: all of it beside no
# GEMM, none beside a GEMM of at least t / (t - 1) times its length.
def test_tp_overlap_exposed_rule():
    assert steptime.tp_overlap_exposed_s(1.0, 0.0, 8) == 1.0
    assert steptime.tp_overlap_exposed_s(1.0, 8 / 7, 8) == pytest.approx(0.0, abs=1e-15)
    assert steptime.tp_overlap_exposed_s(1.0, 0.5, 4) == pytest.approx(1.0 - 0.375)
    assert steptime.tp_overlap_exposed_s(0.0, 3.0, 2) == 0.0
    for kwargs, name in (({"comm_s": -1.0}, "comm_s"), ({"gemm_s": math.nan}, "gemm_s"), ({"chunks": 0}, "chunks")):
        args = {"comm_s": 1.0, "gemm_s": 1.0, "chunks": 4, **kwargs}
        with pytest.raises(ValueError, match=name):
            steptime.tp_overlap_exposed_s(**args)


# The overlap takes only exposed tensor-parallel time off (the collectives still run); Megatron refuses it without
# sequence parallelism (it splits the sequence-parallel gathers and reduce-scatters), and so does the Layout.
def test_tp_comm_overlap_layout():
    plain = _pred(tp=8, sequence_parallel=True)
    over = _pred(tp=8, sequence_parallel=True, tp_comm_overlap=True)
    assert over.comm_parts_s["tensor"][0] == pytest.approx(plain.comm_parts_s["tensor"][0])
    assert over.comm_parts_s["tensor"][1] < plain.comm_parts_s["tensor"][1]
    assert plain.step_s - over.step_s == pytest.approx(plain.comm_parts_s["tensor"][1] - over.comm_parts_s["tensor"][1])
    # (one GPU's step without a pipeline: the exposed time is all it saves)
    assert steptime.RULES["tensor-overlap"] in over.notes and steptime.RULES["tensor"] not in over.notes
    for kwargs in ({"tp": 8}, {"tp": 1, "sequence_parallel": True}):
        with pytest.raises(ValueError, match="tp_comm_overlap"):
            steptime.Layout(tp_comm_overlap=True, **kwargs)
    with pytest.raises(ValueError, match="tp_comm_overlap"):
        steptime.Layout(tp=2, sequence_parallel=True, tp_comm_overlap=1)


# fp8 (FP8_BF16_LABELS, FP8_CAST_BYTES_PER_ELEMENT): the output layer's products keep the bf16 rate, and each fp8
# product's activation operand costs a quantization pass of 4 bytes an element: the forward input of the products not
# fed by a norm (attention out, FC2) and the output gradient of every product; none in bf16.
def test_fp8_keeps_the_output_layer_in_bf16_and_pays_the_casts():
    g = steptime.step_gemms(L3_8B, 1, 4096, layers=1, logits=False)
    expect = 0.0
    for x in g:
        base = x.label.rsplit(" (", 1)[0]
        if x.label.endswith("(input grad)") or (x.label.endswith("(fwd)") and base in ("attention out", "mlp out")):
            expect += 4.0 * x.m * x.k * x.count
    assert steptime._fp8_cast_bytes(g) == pytest.approx(expect) and expect > 0
    logits = [x for x in steptime.step_gemms(L3_8B, 1, 4096, layers=1) if x.label.startswith("logits")]
    assert len(logits) == 3 and steptime._fp8_cast_bytes(logits) == 0.0
    bf16, fp8 = _pred(), _pred(dtype="fp8")
    assert fp8.step_s < bf16.step_s
    assert bf16.parts_s == _pred().parts_s  # bf16 unchanged by the fp8 rules


# Narayanan et al. 2021, 2.2: the bubble of 1F1B is (p - 1) / m of the micro-batches' time, (p - 1) / (m v)
# with v interleaved chunks per GPU.
@pytest.mark.parametrize("schedule, v", [("1f1b", 1), ("interleaved", 2), ("gpipe", 1)])
def test_pipeline_bubble_is_the_schedules(schedule, v):
    p = _pred(pp=4, grad_accum=8, schedule=schedule, virtual_stages=v)
    busy = p.step_s - p.bubble_s - p.parts_s["data-parallel reduction (exposed)"] - p.optimizer_s
    assert p.bubble_s / busy == pytest.approx(parallel.bubble_fraction(4, 8, v))


# The data-parallel rule: the gradient reduction hides behind the last micro-batch's backward pass; a slow
# network (one 100 Gb/s port per node) exposes the rest.
def test_data_parallel_overlap_rule():
    fast = _pred(dp=16, zero=1)
    tot, exp = fast.comm_parts_s["data"]
    assert 0 <= exp <= tot
    from mlcalc import network
    slow_fab = network.Fabric(8, 2, 370e9, 12e9 / 8, 3.4e-6, 9.6e-6, 0.0)
    slow = steptime.predict_step(L3_8B, steptime.Layout(dp=16, zero=0), seq_len=4096, machine="H100-SXM",
                                 engine="megatron", fabric=slow_fab)
    tot, exp = slow.comm_parts_s["data"]
    assert exp > 0 and exp < tot
    fwd_bwd = slow.parts_s["forward (kernels and host)"] + slow.parts_s["backward (kernels and host)"]
    assert slow.step_s > fwd_bwd + exp * 0.999


def test_fsdp_gathers_every_micro_batch():
    p = _pred(dp=8, zero=3, grad_accum=4)
    assert "data" in p.comm_parts_s and p.comm_parts_s["data"][0] > _pred(dp=8, zero=1, grad_accum=4).comm_parts_s["data"][0]


# Memory comes from the training-fit chapter's model, with the layout's own arguments.
def test_memory_is_the_training_fit_model():
    p = _pred(tp=4, pp=2, dp=4, zero=1, sequence_parallel=True, recompute="selective", micro_batch=2)
    fit = memory.training_memory(L3_8B, 1e18, 2, 4096, 4, 4, 2, 1, convention="zero-mixed-adam",
                                 recompute="selective", sequence_parallel=True, overhead_fraction=0.0,
                                 activations="architecture", loss="fp32-logits", program="megatron", n_micro=1)
    assert p.peak_bytes_per_gpu == pytest.approx(fit.total_bytes)
    assert p.device_bytes is not None and p.fits == (p.peak_bytes_per_gpu <= p.device_bytes * 0.9)


# One FLOP convention: PaLM's (Chowdhery et al. 2022, Appendix B) 6N + 12 L H Q T per token; HFU adds the
# recomputed forward, 2N + 4 L H Q T, with full recomputation.
def test_mfu_and_hfu_follow_palm():
    p = _pred(recompute="full", micro_batch=2, grad_accum=2, dp=2)
    tokens = 2 * 2 * 2 * 4096
    per_tok = 6 * L3_8B.n_active_params() + 12 * 32 * 32 * 128 * 4096
    assert p.model_flops == pytest.approx(per_tok * tokens)
    assert p.hardware_flops == pytest.approx((per_tok + 2 * L3_8B.n_active_params() + 4 * 32 * 32 * 128 * 4096) * tokens)
    assert p.mfu == pytest.approx(p.model_flops / (p.step_s * 2 * 989.5e12))
    assert p.hfu > p.mfu
    assert "PaLM" in compute.MFU_CONVENTION and any("PaLM" in n for n in p.notes)


# fp8 only where the chip has a published fp8 matmul rate; its speed-up is that rate over bf16 (MAMF table).
def test_fp8_only_where_published():
    with pytest.raises(ValueError, match="fp8"):
        _pred(machine="A100-80GB", dtype="fp8")
    mach = steptime.catalogue_machine("H100-SXM")
    assert mach.fp8_matmul_speedup == pytest.approx(1402.6 / 794.5)
    assert _pred(dtype="fp8").step_s < _pred().step_s


def test_context_and_expert_parallel():
    cp = _pred(cp=2, seq_len=16384)
    assert "context" in cp.comm_parts_s and cp.peak_bytes_per_gpu < _pred(seq_len=16384).peak_bytes_per_gpu
    mix = models.preset("Mixtral 8x7B")
    ep = _pred(model=mix, dp=8, ep=8, zero=1)
    assert ep.comm_parts_s["expert"][0] > 0
    assert ep.peak_bytes_per_gpu < _pred(model=mix, dp=8, zero=1).peak_bytes_per_gpu


@pytest.mark.parametrize("kwargs, name", [({"tp": 0}, "tp"), ({"zero": 4}, "zero"), ({"schedule": "zigzag"}, "schedule"),
                                          ({"recompute": "half"}, "recompute"), ({"dp": 3, "ep": 2}, "ep"),
                                          ({"virtual_stages": 2}, "virtual_stages"), ({"grad_accum": 10**7}, "grad_accum"),
                                          ({"schedule": "interleaved", "virtual_stages": 2}, "pp=1")])
def test_layout_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=name):
        steptime.Layout(**kwargs)


def test_predict_step_bad_input():
    with pytest.raises(ValueError, match="engine"):
        _pred(engine="jax")
    with pytest.raises(ValueError, match="ep"):
        _pred(dp=2, ep=2)  # a dense model has no experts
    with pytest.raises(ValueError, match="pp"):
        _pred(pp=64)
    with pytest.raises(ValueError, match="accelerator"):
        _pred(machine="H999")


def test_every_result_is_finite():
    for lay in ({}, {"tp": 2, "pp": 2, "dp": 2, "grad_accum": 4}, {"dp": 4, "zero": 3}, {"cp": 2, "tp": 2}):
        p = _pred(**lay)
        for v in (p.step_s, p.compute_s, p.comm_s, p.comm_exposed_s, p.bubble_s, p.peak_bytes_per_gpu, p.mfu):
            assert math.isfinite(v) and v >= 0


# Eager multi-GPU host cost (mlcalc.steptime.dist_host_constants, from the H200's host floors): a machine that
# measured it charges tensor parallel's DTensor ops and FSDP2's per-layer work; the megatron engine charges no host.
def test_eager_dtensor_and_fsdp_host_cost():
    from mlcalc import hfruns, steptime

    plain = hfruns.machine("h200x2-2026-11-26-train-hf-run2")
    dist = plain._replace(host_s_per_dtensor_op=100e-6, host_s_per_dtensor_backward_op=80e-6,
                          host_s_per_fsdp_layer=1e-3, host_s_per_fsdp_backward_layer=2e-3)
    lay_tp = steptime.Layout(tp=2, sequence_parallel=True)
    lay_fs = steptime.Layout(dp=2, zero=3)
    for lay in (lay_tp, lay_fs):
        a = steptime.predict_step(L3_8B, lay, seq_len=2048, machine=plain, engine="eager")
        b = steptime.predict_step(L3_8B, lay, seq_len=2048, machine=dist, engine="eager")
        assert b.step_s > a.step_s and steptime.RULES["eager-dist-host"] in b.notes
        assert steptime.RULES["eager-dist-host"] not in a.notes
        m1 = steptime.predict_step(L3_8B, lay, seq_len=2048, machine=plain, engine="megatron")
        m2 = steptime.predict_step(L3_8B, lay, seq_len=2048, machine=dist, engine="megatron")
        assert m1.step_s == m2.step_s
    # 32 layers x (54 DTensor ops x 100 us + 27 extra plain ops x the plain cost) more host in the forward alone
    extra = steptime._dist_host_extra(dist, 2, False, 32, False, False, True)["forward"]
    assert extra == pytest.approx(32 * (54 * 100e-6 + 27 * dist.host_s_per_op))


# An eager pipeline stage takes the longer of its device and host time per micro-batch; the bubble is the other
# stages' time (no output layer), so it is shorter than the fullest stage's.
def test_eager_pipeline_bubble_is_the_other_stages():
    from mlcalc import hfruns, steptime

    mach = hfruns.machine("h200x2-2026-11-26-train-hf-run2")
    lay = steptime.Layout(pp=2, schedule="1f1b", grad_accum=8)
    p = steptime.predict_step(L3_8B, lay, seq_len=2048, machine=mach, engine="eager")
    per_mb = (p.parts_s["forward (kernels and host)"] + p.parts_s["backward (kernels and host)"]) / 8
    assert 0 < p.bubble_s < per_mb and steptime.RULES["eager-pipeline"] in p.notes
