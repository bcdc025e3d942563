"""Serving (mlcalc.serving): decode on the roofline against our measured points and published benchmarks."""

import pytest

from mlcalc import decode_profile, memory, serving, serving_record, vl
from mlcalc.calculators import REGISTRY


# Measured in this book: transformers 5.17 generate, static cache, eager PyTorch 2.11, random-weight Llama-shaped
# 1B and 8B in bf16 (scripts/gpu/bench_decode.py), on three machines: 2 x H200 (mlcalc/data/measured/
# h200x2-2026-11-26-decode), 4 x H200 asked for as 4 x H100 (h200x4-2026-11-26-decode) and 1 x H100 80GB HBM3
# SXM (h100-2026-11-26-decode). The prediction takes from each card only a read bandwidth, the launch floor of
# tiny models and the copy rate of repeat_kv at a shape that is not a decode point.
CARDS = {"h200x2-2026-11-26-decode": "NVIDIA H200", "h200x4-2026-11-26-decode": "NVIDIA H200",
         "h100-2026-11-26-decode": "NVIDIA H100 80GB HBM3"}
# The first point of each model on the H100 machine, (model, batch, context) -> measured tokens/s: 69.2 for the 1B
# and 23.2 for the 8B at batch 1 and 545 tokens, where the same batch at 4,129 tokens, later in the same process,
# ran at 81.8 and 39.5. A batch-1 step cannot get faster with 7.6 times the cache: the process was still warming up
# (bench_decode.py now discards a first point). Pinned as measured, not fitted: the model is +26% and +103% there.
H100_FIRST_POINTS = {("1b", 1, 545): (0.20, 0.32), ("8b", 1, 545): (0.90, 1.15)}


@pytest.mark.parametrize("run", sorted(CARDS))
def test_every_measured_decode_point_within_25_percent(run):
    checks = serving.check_decode(run)
    assert len(checks) == 14
    for c in checks:
        assert c.card == CARDS[run]
        if run.startswith("h100") and (c.model, c.batch, c.context) in H100_FIRST_POINTS:
            low, high = H100_FIRST_POINTS[(c.model, c.batch, c.context)]
            assert low <= c.error <= high, c
            continue
        assert abs(c.error) <= 0.25, c


def test_h100_first_points_are_slower_than_longer_contexts_of_the_same_batch():
    # Source: h100-2026-11-26-decode/decode_{1b,8b}.json: the warm-up reading above, from the run itself.
    for key in ("1b", "8b"):
        pts = {(p["batch"], p["max_cache_len"]): p["decode_step_s"]
               for p in serving.measured_decode("h100-2026-11-26-decode")[key]["points"]}
        assert pts[(1, 545)] > 1.15 * pts[(1, 4129)]
    # on both H200 machines the same pair is in physical order (more cache, no faster)
    for run in ("h200x2-2026-11-26-decode", "h200x4-2026-11-26-decode"):
        for key in ("1b", "8b"):
            pts = {(p["batch"], p["max_cache_len"]): p["decode_step_s"]
                   for p in serving.measured_decode(run)[key]["points"]}
            assert pts[(1, 545)] <= 1.02 * pts[(1, 4129)]


def test_without_the_small_kernels_the_gpu_bound_points_miss():
    # The same runs without the small kernels' GPU time (the model as it was checked on the first H200 machine):
    # the batch-128 1B point is +32% on the second H200 machine and the batch-64 8B point +27% on the H100 (with the
    # layers on their in-order critical path, serve11: see below).
    # Measured step minus predicted GPU time is 120-270 us per layer at every GPU-bound point on both cards,
    # about 35 small kernels x 3 us (the null-kernel time, mlcalc/data/kernels.json).
    def err(run, key, batch, ctx, kernels):
        floor, bw = serving.measured_floor(run), serving.measured_read_bandwidth(run)
        copy, m = serving.measured_copy_bandwidth(run), serving.llama_shape(key, run)
        pt = next(p for p in serving.measured_decode(run)[key]["points"]
                  if (p["batch"], p["max_cache_len"]) == (batch, ctx))
        d = serving.decode_step(m, batch, ctx, bw, 794.5e12, 1, floor, copy, small_kernels_s=kernels)
        return d.tokens_per_s / pt["decode_tokens_per_s"] - 1
    # With serve11's in-order path the two are +29% and +25% without the small kernels, +15% and +13% with them: the
    # kernels' time still carries more than 10 points of each.
    for run, key, batch, ctx in (("h200x4-2026-11-26-decode", "1b", 128, 545), ("h100-2026-11-26-decode", "8b", 64, 545)):
        assert err(run, key, batch, ctx, 0.0) - err(run, key, batch, ctx, serving.hf_small_kernels_s()) > 0.10
    assert err("h200x4-2026-11-26-decode", "1b", 128, 545, 0.0) > 0.25
    assert abs(err("h200x4-2026-11-26-decode", "1b", 128, 545, serving.hf_small_kernels_s())) < 0.20
    assert abs(err("h100-2026-11-26-decode", "8b", 64, 545, serving.hf_small_kernels_s())) < 0.20


def test_small_kernels_are_data_with_a_source():
    # NVIDIA Developer Forums, "Too much time for kernel launch latency" (2022), reply 3: the launch overhead of
    # null kernels is "about 3 microseconds with recent hardware and software".
    assert serving.null_kernel_s() == pytest.approx(3e-6)
    # 35 element-wise kernels per Llama layer (counted; recounted below where transformers is installed)
    assert serving.hf_small_kernels_s() == pytest.approx(35 * 3e-6)
    with pytest.raises(ValueError, match="small_kernels_s"):
        serving.decode_step(memory.model_preset("Llama-3 8B"), 1, 128, 3e12, 8e14, small_kernels_s=-1.0)


def test_a_llama_decode_layer_launches_35_small_kernels():
    # Recount of mlcalc/data/kernels.json: ATen ops per layer that are not views, one decode step of a Llama model
    # with a static cache (4 layers minus 2, halved), on the path transformers takes on CUDA with a mask (repeat_kv).
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from collections import Counter

    from torch.utils._python_dispatch import TorchDispatchMode
    sdpa = pytest.importorskip("transformers.integrations.sdpa_attention")
    views = {"view", "_unsafe_view", "expand", "slice", "select", "transpose", "unsqueeze", "squeeze", "reshape",
             "t", "alias", "permute", "as_strided", "detach", "lift_fresh", "_reshape_alias", "split", "unbind"}

    class Count(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = Counter()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops[func.overloadpacket.__name__] += 1
            return func(*args, **(kwargs or {}))

    def one_step(n_layers):
        cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=n_layers,
                                       num_attention_heads=4, num_key_value_heads=1, head_dim=16, vocab_size=256)
        torch.manual_seed(0)
        model = transformers.LlamaForCausalLM(cfg).eval().to(torch.bfloat16)
        ids = torch.randint(1, 256, (2, 8))
        cache = transformers.StaticCache(config=cfg, max_cache_len=32)
        with torch.inference_mode():
            model(ids, past_key_values=cache, use_cache=True, attention_mask=torch.ones(2, 8, dtype=torch.long))
            with Count() as c:
                model(ids[:, :1], past_key_values=cache, use_cache=True, cache_position=torch.tensor([8]),
                      attention_mask=torch.ones(2, 9, dtype=torch.long))
        return c.ops

    old = sdpa.use_gqa_in_sdpa
    sdpa.use_gqa_in_sdpa = lambda *a, **k: False  # the CUDA path with a mask: repeat_kv, then SDPA
    try:
        two, four = one_step(2), one_step(4)
    finally:
        sdpa.use_gqa_in_sdpa = old
    per_layer = {k: (four[k] - two[k]) / 2 for k in set(two) | set(four)}
    kernels = sum(v for k, v in per_layer.items() if k not in views)
    assert per_layer["linear"] == 7 and per_layer["scaled_dot_product_attention"] == 1
    assert kernels - 7 - 1 == 35


def test_floor_and_bandwidths_come_from_the_run():
    f = serving.measured_floor()
    assert 0 < f.per_layer_s < 0.002 and 0 < f.fixed_s < 0.01
    # H200 datasheet: 4.8 TB/s; a large read reaches less.
    assert 3.5e12 < serving.measured_read_bandwidth() < 4.8e12
    assert serving.measured_copy_bandwidth() < serving.measured_read_bandwidth()


def test_each_card_reads_at_its_own_bandwidth():
    # NVIDIA datasheets: H100 SXM 3.35 TB/s, H200 4.8 TB/s. Our reductions reached 3.03 TB/s on the H100 (90%)
    # and 4.07 and 4.24 TB/s on the two H200 machines (85%, 88%): the same fraction, a different card.
    from mlcalc.accelerators import spec
    h100 = serving.measured_read_bandwidth("h100-2026-11-26-decode") / spec("H100-SXM").memory_bandwidth_bytes_per_s
    assert 0.85 < h100 < 0.95
    for run in ("h200x2-2026-11-26-decode", "h200x4-2026-11-26-decode"):
        assert 0.80 < serving.measured_read_bandwidth(run) / spec("H200-SXM").memory_bandwidth_bytes_per_s < 0.92
    # the repeat_kv copy runs at the same ~1.2 TB/s on both cards: a strided copy, not a bandwidth-bound read
    copies = [serving.measured_copy_bandwidth(r) for r in sorted(CARDS)]
    assert max(copies) / min(copies) < 1.05
    with pytest.raises(ValueError, match="run"):
        serving.measured_decode("h100-nope")


def test_batching_moves_decode_along_the_roofline():
    m = memory.model_preset("Llama-3 8B")
    steps = [serving.decode_step(m, b, 1024, 3.35e12, 794.5e12) for b in (1, 8, 64)]
    assert steps[0].tokens_per_s < steps[1].tokens_per_s < steps[2].tokens_per_s
    # Batch 1 reads every weight once per token: (weights + one cache) / bandwidth, where an embedding
    # lookup reads one row, not the table (Llama 3 8B's output projection is a separate matrix).
    read = m.n_params() - m.params_breakdown()["embeddings"]
    assert steps[0].step_s == pytest.approx(
        (read * 2 + memory.kv_cache_bytes_per_token(32, 8, 128) * 1024) / 3.35e12, rel=0.01)
    assert steps[0].bytes_per_gpu == pytest.approx(read * 2 + memory.kv_cache_bytes_per_token(32, 8, 128) * 1024)


def test_gqa_aware_attention_reads_the_cache_once():
    # transformers' SDPA path with a mask expands K and V with repeat_kv (g = heads / kv_heads copies):
    # read 1 + write g at the copy rate, then read g; a GQA-aware kernel reads the cache once.
    assert serving.attention_time_s(1e9, 32, 8, 4e12) == pytest.approx(1e9 / 4e12)
    assert serving.attention_time_s(1e9, 32, 8, 4e12, 1e12) == pytest.approx(5e9 / 1e12 + 4e9 / 4e12)


@pytest.mark.parametrize("batch,inp,out,chip", [(120, 128, 2048, "H100-SXM"), (56, 2048, 2048, "H100-SXM")])
def test_decode_dominated_published_points_within_20_percent(batch, inp, out, chip):
    # TensorRT-LLM performance.md (v0.9.0, FP8): Llama 2 7B, tp = 1, static batches whose time is mostly decode
    # (long outputs): memory-bound, where the roofline model should hold.
    c = next(c for c in serving.check_benchmarks()
             if (c.batch, c.input, c.output, c.chip, c.model) == (batch, inp, out, chip, "Llama-2 7B"))
    assert abs(c.error) < 0.20, c


def test_serving_plan_meets_targets_and_fits_the_cache():
    m = memory.model_preset("Llama-3 70B")
    s = serving.plan_serving(m, "H100-SXM", 10, 1000, 200, 1.0, 0.05, 4.916)
    assert not s.problems
    assert s.ttft_s <= 1.0 and s.tpot_s <= 0.05
    assert s.batch * 1200 <= s.kv_tokens_fit
    assert s.replicas * s.replica_requests_per_s >= 10
    # 70B in bf16 (141 GB) does not fit one 80 GB H100: tensor parallelism.
    assert s.tp >= 2


def test_impossible_latency_names_the_target():
    m = memory.model_preset("Llama-3 8B")
    s = serving.plan_serving(m, "H100-SXM", 1, 100, 10, 1.0, 1e-4, 4.916)
    assert any(p.startswith("TPOT") for p in s.problems)
    # 405B in fp32 (1.6 TB) fits no layout of up to 16 A100s (1.15 TB usable): impossible, with the reason
    s = serving.plan_serving(memory.model_preset("Llama-3 405B"), "A100-80GB", 1, 100, 10, 1, 1, 1, weight_dtype="fp32")
    assert not s.feasible and s.gpus == 0 and all("do not fit" in p for p in s.problems)


def test_serve_chart_reads_the_pure_function():
    _, view = REGISTRY["plan.serve"].evaluate({"model": "Llama-3 8B"})
    rows = vl.chart_values(view.chart)
    assert rows and all(r["tokens_per_s_per_gpu"] > 0 for r in rows)
    assert [r["batch"] for r in rows] == sorted(r["batch"] for r in rows)


def test_matmul_activation_bytes_per_token_counts_each_matmul_input_and_output():
    # Llama 3.1 8B (hidden 4,096, 32 query and 8 KV heads of 128, feed-forward 14,336, gated): per layer FP8 inputs
    # h (QKV) + h (output) + h (gate-and-up) + f (down), bf16 outputs (q + 2 kv) + h + 2 f + h
    m = memory.model_preset("Llama-3.1 8B")
    h, f, q, kv = 4096, 14336, 4096, 1024
    per_layer = 1 * (h + h + h + f) + 2 * ((q + 2 * kv) + h + 2 * f + h)
    assert serving.matmul_activation_bytes_per_token(m) == pytest.approx(32 * per_layer)
    # split over two GPUs: the head-split widths halve, the hidden-sized ones stay whole
    per_layer2 = 1 * (h + h / 2 + h + f / 2) + 2 * ((q + 2 * kv) / 2 + h + f + h)
    assert serving.matmul_activation_bytes_per_token(m, 2) == pytest.approx(32 * per_layer2)
    # MLA: the latents, not per-head keys and values (DeepSeek-V3 report: 128 query heads of 192, query latent 1,536,
    # KV latent 512 + rotary 64, attention output 128 x 128, hidden 7,168; 3 dense layers of 18,432, 58 MoE layers
    # where a token visits 8 routed experts and 1 shared of 2,048)
    v3 = memory.model_preset("DeepSeek-V3")
    h = 7168

    def ffn(w: int) -> float:
        return 1 * (h + w) + 2 * (2 * w + h)

    attn = 1 * (h + 128 * 128) + 2 * (128 * 192 + 1536 + 512 + 64 + h)
    assert serving.matmul_activation_bytes_per_token(v3) == pytest.approx(61 * attn + 3 * ffn(18432) + 58 * 9 * ffn(2048))
    # the FP8 law: bytes and FLOPs add; the roofline takes the larger
    assert serving.matmul_s(2e9, 1e12, 2e12, 1e15) == pytest.approx(1e-3)
    assert serving.matmul_s(2e9, 1e12, 2e12, 1e15, overlap=False) == pytest.approx(2e-3)
    with pytest.raises(ValueError, match="read_bytes_per_s"):
        serving.matmul_s(1.0, 1.0, 0.0, 1.0)


def test_engine_decode_counts_the_replicated_residual_norm_passes():
    # TensorRT-LLM cpp/tensorrt_llm/plugins/ncclPlugin/allreducePlugin.cpp (enqueue: ncclAllReduce, then
    # residualRmsNorm reads the sum and the residual, writes the residual and the normed output, bf16): 8 bytes a
    # hidden value, twice a layer; Megatron-LM (Shoeybi et al. 2019, section 3) keeps the norms and residuals whole
    # on every tensor-parallel GPU. predict_decode("cuda-graph") adds them, per layer, at the read rate, not / tp,
    # with the layer's other element-wise passes, split as tensor parallelism splits them (FP8 quantization, SiLU x
    # mul, rotary and cache write: layer_elementwise_bytes_per_token, as the in-flight engine charges them).
    m = memory.model_preset("Llama-2 70B")
    assert serving.replicated_norm_bytes_per_token(m) == 80 * 2 * 8 * 8192
    bw, rate = serving.read_bandwidth("H100-SXM"), serving.matmul_rate("H100-SXM", "fp8")
    for tp, b in ((1, 64), (4, 512)):
        per_tok = 80 * 2 * 8 * 8192 + serving.layer_elementwise_bytes_per_token(m, tp, "fp8")
        assert serving.engine_elementwise_bytes_per_token(m, tp, "fp8") == per_tok
        with_norm = serving.predict_decode(m, "H100-SXM", b, 1088, "cuda-graph", tp, weight_dtype="fp8",
                                           kv_dtype="fp8")
        args = (m, b, 1088, bw, rate, tp)
        kw = dict(weight_bytes_per_param=1.0, kv_bytes_per_value=1.0,
                  tp_allreduce_s=serving.comm_s(m, "H100-SXM", b, tp, 1, 1, 2.0),
                  small_kernels_s=serving.engine_small_kernels_s("cuda-graph", m),
                  activation_bytes_per_token=serving.matmul_activation_bytes_per_token(m, tp), overlap=False)
        without = serving.decode_step(*args, **kw)
        assert with_norm.step_s - without.step_s == pytest.approx(b * per_tok / bw, rel=1e-9)
        assert with_norm.layer_gpu_s - without.layer_gpu_s == pytest.approx(b * per_tok / 80 / bw, rel=1e-9)
    with pytest.raises(ValueError, match="norm_bytes_per_token"):
        serving.decode_step(m, 8, 1024, bw, rate, norm_bytes_per_token=-1.0)


def test_checked_range_states_each_path_from_its_records():
    # The planner's decode step (predict_decode) is checked on TensorRT-LLM v0.9.0's static-batch rows (performance.md,
    # FP8, H100/H200, 7B-70B, TP 1-4, 128-2,048 tokens in and out); the in-flight rows (v0.17, v1.0: up to Llama 3.1
    # 405B and 20,000 + 2,000 tokens) check servemeasured.inflight, not it: a 405B plan at 20,000 tokens is outside.
    from mlcalc import servemeasured as sm

    paths = {p.function: p for p in serving.checked_paths("cuda-graph")}
    static = paths["predict_decode"]
    assert static.planner and static.n == len(sm.check_published())
    assert static.context == max(c.input + c.output for c in sm.check_published()) == 4096
    assert static.params[1] == memory.model_preset("Llama-2 70B").n_params()
    inflight = next(p for p in paths.values() if p.function.startswith("servemeasured.inflight"))
    assert not inflight.planner and inflight.context == max(c.input + c.output for c in sm.check_inflight())
    assert inflight.params[1] == memory.model_preset("Llama-3.1 405B").n_params()
    # SGLang's cookbook Qwen3 page (sgl-cookbook docs/autoregressive/Qwen/Qwen3.md @230dd7f): 8 x B200, TP 8, one
    # 235B model; it checks the planner's steps composed as SGLang runs them, so it does not widen the verdict's range.
    sglang = next(p for p in paths.values() if p.function.startswith("servemeasured.concurrent_tpot_s"))
    assert not sglang.planner and sglang.n == len(sm.check_concurrency()) and sglang.chips == ("B200",)
    assert sglang.tp == (8, 8) and "235B," in serving_record._describe(sglang)
    assert "published SGLang times per output token" in serving.checked_range(
        memory.model_preset("Llama-3 70B"), "H100-SXM", "cuda-graph", 104, 1200, 4)
    big = serving.checked_range(memory.model_preset("Llama-3.1 405B"), "H100-SXM", "cuda-graph", 64, 22000, 8)
    assert "outside" in big and "406B parameters" in big and "context 22,000 (checked to 4,096)" in big
    ok = serving.checked_range(memory.model_preset("Llama-3 70B"), "H100-SXM", "cuda-graph", 104, 1200, 4)
    assert "is inside" in ok and "predict_decode" in ok
    # vLLM's nightly latency tests (Buildkite builds 9515 on H200 and 9523 on A100-SXM4-80GB; batch 8, 32 in, 128 out,
    # bf16): the planner's own prefill and decode steps end to end, so they widen the verdict's chips to the A100.
    vllm = next(p for p in paths.values() if p.what.startswith("vLLM static batches"))
    assert vllm.planner and vllm.n == len(sm.check_latency()) == 6 and vllm.chips == ("A100-80GB", "H200-SXM")
    assert vllm.batch == 8 and vllm.context == 32 + 128 and vllm.tp == (1, 4)
    a100 = serving.checked_range(memory.model_preset("Llama-3 8B"), "A100-80GB", "cuda-graph", 8, 160, 1)
    assert "is inside" in a100 and "published vLLM end-to-end latencies" in a100, a100
    assert "A100-80GB" not in serving.checked_range(memory.model_preset("Llama-3 8B"), "A100-80GB", "hf-eager", 8, 160, 1
                                                    ).split("was checked on")[0]
    eager = serving.checked_range(memory.model_preset("Llama-3 8B"), "A100-SXM-80GB", "hf-eager", 8, 1000, 1)
    assert "A100-SXM-80GB (checked H100-SXM and H200-SXM)" in eager


# The serve9 call (scripts/gpu/run_serve9.sh, one H100, 2026-11-27): every point of the family in one protocol.
# Predictions committed before it (scripts/gpu/serve9_predictions.json, from the earlier H100 run's inputs) and the
# record rule stated there (check_decode with the call's own three floor probes): 4 and 5 of 14 within 25 %.
SERVE10 = "h100-2026-11-27-serve10"
SERVE13 = "h100-2026-11-27-serve13"
SERVE14 = "h100-2026-11-27-serve14"


def test_the_earlier_decode_runs_are_the_records_history():
    assert serving.DECODE_RECORD == SERVE14 and serving.DECODE_RECORD not in serving.DECODE_RUNS
    assert serving.DECODE_ROUNDS == (SERVE13, SERVE14)
    for run in serving.DECODE_METERED + serving.DECODE_ROUNDS:
        checks = serving.check_decode(run)
        assert len(checks) == 14 and {c.card for c in checks} == {"NVIDIA H100 80GB HBM3"}
        assert len(serving.measured_decode(run)["probes"]) == 3  # start, middle, end
        assert [(c.model, c.batch, c.context) for c in checks] == [
            (c.model, c.batch, c.context) for c in serving.check_decode("h100-2026-11-26-decode")]
    scores = {s.run: (s.within, s.n, s.record) for s in serving.decode_scores()}
    assert scores == {"h200x2-2026-11-26-decode": (14, 14, False), "h200x4-2026-11-26-decode": (14, 14, False),
                      "h100-2026-11-26-decode": (12, 14, False), "h100-2026-11-27-serve9": (5, 14, False),
                      SERVE10: (13, 14, False),  # serve11's in-order path: 12 -> 13 (8B 64 x 545)
                      SERVE13: (14, 14, False),  # history: its 545-token points one round each (see its protocol)
                      SERVE14: (14, 14, True)}  # the record by the rule stated before its call
    # every miss states a cause: the earlier runs' the first point, serve9's the host (one at the crossover), serve10's
    # the crossover of host and GPU time
    for s in serving.decode_scores():
        assert len(s.misses) == s.n - s.within
        if s.run == "h100-2026-11-27-serve9":
            assert all("host time" in m or "at the crossover" in m for m in s.misses), s.misses
            assert sum("at the crossover" in m for m in s.misses) == 1
        else:
            want = "at the crossover" if s.run == SERVE10 else "the first point of its process"
            assert all(want in m for m in s.misses), s.misses


def _rounds(run):
    """A run measured in rounds: each point's :class:`serving_record.DecodeRounds` by (model, batch, context)."""
    return {(r.model, r.batch, r.context): r for r in serving_record.decode_rounds(run)}


# The serve13 call (scripts/gpu/run_serve13.sh, one H100, 2026-11-27): every point in 3 rounds in its process, a point's
# step the median of its rounds at its own cache length. Predictions, record rule and cause rule committed before it
# (scripts/gpu/serve13_predictions.json: the engine unchanged, serve10's inputs for the blind column).
def test_serve13_record_is_the_median_of_each_points_rounds():
    import statistics
    rounds = _rounds(SERVE13)
    checks = serving.check_decode(SERVE13)
    assert len(rounds) == len(checks) == 14
    for c in checks:
        r = rounds[(c.model, c.batch, c.context)]
        assert c.measured_tokens_per_s == pytest.approx(c.batch / statistics.median(r.steps_s), rel=1e-12)
        assert len(r.steps_s) == len(r.host_forward_s) == len(r.rounds)
        if c.context == 4129:  # every round at its own cache
            assert r.rounds == (1, 2, 3) and not r.other_cache_steps_s
        else:
            # transformers 5.17 kept the process's longest static cache (4,129) for the 545-token points measured after
            # a 4,096-token point: rounds 2 and 3 ran over 4,129 positions, kept apart; round 1 (before any) is the point
            assert r.rounds == (1,) and r.other_cache_len == 4129 and len(r.other_cache_steps_s) == 2
    # the 8B batch 32 x 545 point in rounds 2 and 3 took the 8B batch 32 x 4,129 point's step: a 4,129 cache
    r32 = rounds[("8b", 32, 545)]
    assert all(abs(x / rounds[("8b", 32, 4129)].step_s - 1) < 0.01 for x in r32.other_cache_steps_s)
    assert r32.step_s < 0.3 * min(r32.other_cache_steps_s)
    # 14 of 14 within 25 % (serve10: 13, its 1B 16 x 4,129 point +37 %); worst the 1B 1 x 545, one round, +23 %
    assert sum(abs(c.error) <= 0.25 for c in checks) == 14
    worst = max(checks, key=lambda c: abs(c.error))
    assert (worst.model, worst.batch, worst.context) == ("1b", 1, 545) and 0.22 < worst.error < 0.24


def test_serve13_rounds_show_the_host_spread_at_the_old_miss():
    # the 1B batch 16 x 4,129 point: 20.72, 18.25, 17.44 ms in its three rounds (median 18.25: +3 % against 17.8
    # predicted); in round 1 the host took 19.55 ms to issue a forward (host-set), in rounds 2 and 3 12.28 and 12.83 ms
    # (the GPU's ~15 ms set the step): serve10's 23.9 ms (+37 %) was one sample of such a slow host
    r = _rounds(SERVE13)[("1b", 16, 4129)]
    assert [round(s * 1e3, 2) for s in r.steps_s] == [20.72, 18.25, 17.44]
    assert [round(h * 1e3, 2) for h in r.host_forward_s] == [19.55, 12.28, 12.83]
    c = [c for c in serving.check_decode(SERVE13) if (c.model, c.batch, c.context) == ("1b", 16, 4129)][0]
    assert 0.02 < c.error < 0.03
    old = [c for c in serving.check_decode(SERVE10) if (c.model, c.batch, c.context) == ("1b", 16, 4129)][0]
    assert 0.36 < old.error < 0.38
    # the spread of a point's rounds: up to 1.6 x at the host-bound 1B 1 x 4,129 (13.4-21.4 ms), under 2 % at the
    # GPU-bound 8B 32 x 4,129
    spread = {k: max(x.steps_s) / min(x.steps_s) for k, x in
              _rounds(SERVE13).items() if len(x.steps_s) == 3}
    assert 1.55 < spread[("1b", 1, 4129)] < 1.65 and spread[("8b", 32, 4129)] < 1.01
    assert max(spread, key=spread.get) == ("1b", 1, 4129)


def test_serve13_blind_predictions_as_committed():
    import json
    from pathlib import Path
    pred = json.loads((Path(__file__).resolve().parents[2] / "scripts/gpu/serve13_predictions.json").read_text())
    assert pred["inputs"]["run"] == SERVE10 and pred["serve10_within_25"] == 13
    # the blind column is serve10's own check (the engine unchanged), point for point
    for p, c in zip(pred["points"], serving.check_decode(SERVE10)):
        assert (p["model"], p["batch"], p["context"]) == (c.model, c.batch, c.context)
        assert p["predicted_tokens_per_s"] == round(c.predicted_tokens_per_s, 3)
    meas = serving.check_decode(SERVE13)
    blind = [p["predicted_tokens_per_s"] / c.measured_tokens_per_s - 1 for p, c in zip(pred["points"], meas)]
    # 13 of 14: the 1B batch 8 x 545 point -26 % (serve10's floor probes 0.94 ms a layer, this call's 0.76)
    assert sum(abs(e) <= 0.25 for e in blind) == 13
    assert "whatever its score" in pred["record_rule"]


# The serve14 call (scripts/gpu/run_serve14.sh, one H100, 2026-11-27): serve13's call again, the same orders, with
# bench_decode's static-cache reset (41479d9), so every round of every point ran over its own cache length. Predictions
# (the engine unchanged, serve13's inputs), record rule (this call is the record whatever its score) and cause rule
# committed before it (scripts/gpu/serve14_predictions.json).
def test_serve14_record_every_round_at_its_own_cache_length():
    import statistics
    rounds = _rounds(serving.DECODE_RECORD)
    checks = serving.check_decode(serving.DECODE_RECORD)
    assert len(rounds) == len(checks) == 14
    # the 8B 8 x 545 and 16 x 4,129 points' third rounds were not started before the 8B process's deadline (a slow host
    # made the process longer than serve13's); every other point has its 3 rounds, none over another cache
    short = {("8b", 8, 545), ("8b", 16, 4129)}
    for c in checks:
        r = rounds[(c.model, c.batch, c.context)]
        assert r.rounds == ((1, 2) if (c.model, c.batch, c.context) in short else (1, 2, 3))
        assert r.other_cache_len == 0 and not r.other_cache_steps_s
        assert c.measured_tokens_per_s == pytest.approx(c.batch / statistics.median(r.steps_s), rel=1e-12)
    assert sum(len(r.rounds) == 3 for r in rounds.values()) == 12
    # the cache each timed call ran over, as the script recorded it: the point's own prompt + 1 (the 1-token call) or
    # prompt + 32 (the 33-token call) in every round, whatever ran before it
    for key in ("1b", "8b"):
        res = serving_record._run_file(f"decode_{key}.json", SERVE14)
        for rnd in res["rounds"]:
            for p in rnd["points"]:
                if "error" in p:
                    assert p["error"] == "not started: deadline" and rnd["round"] == 3
                    continue
                q = p["prompt_tokens"]
                assert [c["static_cache_len"] for c in p["windows"]["generate_1"]] == [q + 1, q + 1]
                assert [c["static_cache_len"] for c in p["windows"]["generate_33"]] == [q + 32, q + 32]
    # the 8B batch 32 x 545 point: serve13's rounds 2-3 took the 4,129 point's step (106 ms); here 33-43 ms in each round
    r32 = rounds[("8b", 32, 545)]
    assert max(r32.steps_s) < 0.45 * rounds[("8b", 32, 4129)].step_s
    # 14 of 14 within 25 % (serve13: 14, 8 points on one round); median |error| 8.4 %, worst the 1B 8 x 545 -21 %
    assert sum(abs(c.error) <= 0.25 for c in checks) == 14
    assert 0.083 < statistics.median(abs(c.error) for c in checks) < 0.085
    worst = max(checks, key=lambda c: abs(c.error))
    assert (worst.model, worst.batch, worst.context) == ("1b", 8, 545) and -0.22 < worst.error < -0.20


def test_serve14_round_spread():
    # a point's rounds on one host: up to 1.63 x at the host-bound 1B 32 x 545 (15.1-24.6 ms; host per forward 13.6-23.1
    # ms), 1.005 x at the GPU-bound 8B 32 x 4,129; every launch-floor point moved more than every memory-bound one
    rounds = _rounds(serving.DECODE_RECORD)
    spread = {k: max(r.steps_s) / min(r.steps_s) for k, r in rounds.items()}
    assert max(spread, key=spread.get) == ("1b", 32, 545) and 1.62 < spread[("1b", 32, 545)] < 1.64
    r = rounds[("1b", 32, 545)]
    assert [round(x * 1e3, 2) for x in r.steps_s] == [23.85, 24.58, 15.07]
    assert [round(h * 1e3, 2) for h in r.host_forward_s] == [20.25, 23.13, 13.65]
    assert spread[("8b", 32, 4129)] < 1.01 and spread[("1b", 64, 4129)] < 1.03
    bound = {(c.model, c.batch, c.context): c.bound for c in serving.check_decode(serving.DECODE_RECORD)}
    gpu = [spread[k] for k in spread if bound[k] == "memory"]
    host = [spread[k] for k in spread if bound[k] == "launch floor"]
    assert len(gpu) == 3 and max(gpu) < 1.04 and min(host) > 1.15


def test_serve14_blind_predictions_as_committed():
    import json
    from pathlib import Path
    pred = json.loads((Path(__file__).resolve().parents[2] / "scripts/gpu/serve14_predictions.json").read_text())
    assert pred["inputs"]["run"] == SERVE13 and pred["serve13_within_25"] == 14
    assert "whatever its score" in pred["record_rule"] and "one round" in pred["record_rule"]
    # the blind column is serve13's own check (the engine unchanged), point for point
    for p, c in zip(pred["points"], serving.check_decode(SERVE13)):
        assert (p["model"], p["batch"], p["context"]) == (c.model, c.batch, c.context)
        assert p["predicted_tokens_per_s"] == round(c.predicted_tokens_per_s, 3)
    meas = serving.check_decode(serving.DECODE_RECORD)
    blind = {(c.model, c.batch, c.context): p["predicted_tokens_per_s"] / c.measured_tokens_per_s - 1
             for p, c in zip(pred["points"], meas)}
    # 5 of 14: this host's floor probes 1.45 ms a layer against serve13's 0.76 (1.9 x); every launch-floor point is
    # over-predicted by 33-86 % but the 1B 16 x 4,129 (+16 %); the three memory-bound points within 3 %
    assert sum(abs(e) <= 0.25 for e in blind.values()) == 5
    assert 1.4e-3 < serving.measured_floor(serving.DECODE_RECORD).per_layer_s < 1.5e-3
    assert 0.75e-3 < serving.measured_floor(SERVE13).per_layer_s < 0.77e-3
    for k in (("1b", 64, 4129), ("8b", 16, 4129), ("8b", 32, 4129)):
        assert abs(blind[k]) < 0.03


def _max_rule_tokens_per_s(run):
    # check_decode's inputs, each layer max(GPU, floor): the rule every prediction committed before serve11 used
    floor, bw, copy = serving.measured_floor(run), serving.measured_read_bandwidth(run), serving.measured_copy_bandwidth(run)
    out = []
    for key in ("1b", "8b"):
        m = serving.llama_shape(key, run)
        for pt in serving.measured_decode(run)[key]["points"]:
            if "error" in pt:
                continue
            d = serving.decode_step(m, pt["batch"], pt["max_cache_len"], bw, 794.5e12, 1, floor, copy,
                                    small_kernels_s=serving.hf_small_kernels_s())
            out.append(pt["batch"] / (d.outside_s + m.n_layers * max(floor.per_layer_s, d.layer_gpu_s)))
    return out


def test_serve9_blind_predictions_as_committed():
    import json
    from pathlib import Path
    pred = json.loads((Path(__file__).resolve().parents[2] / "scripts/gpu/serve9_predictions.json").read_text())
    # the blind column is the earlier H100 run's own prediction (its inputs), point for point
    # (decode_step as it was then: each layer the larger of its GPU time and its floor, before serve11's in-order path)
    old = _max_rule_tokens_per_s(pred["inputs"]["run"])
    assert [round(t, 3) for t in old] == [p["predicted_tokens_per_s"] for p in pred["points"]]
    meas = serving.check_decode("h100-2026-11-27-serve9")
    blind = [p["predicted_tokens_per_s"] / c.measured_tokens_per_s - 1 for p, c in zip(pred["points"], meas)]
    assert sum(abs(e) <= 0.25 for e in blind) == 4


# The serve10 call (scripts/gpu/run_serve10.sh, one H100, 2026-11-27): the rule and blind predictions committed before it
# (scripts/gpu/serve10_predictions.json): each point priced at its own window's meter pace (check_decode_paced).
# Offline on serve9 8 of 14 (unpaced 5); on serve10 11 (unpaced 12; blind with serve9's inputs 12): not adopted.
def test_serve10_paced_rule_scores_as_committed():
    import json
    from pathlib import Path
    pred = json.loads((Path(__file__).resolve().parents[2] / "scripts/gpu/serve10_predictions.json").read_text())
    assert pred["serve9_offline"] == {"paced_within_25": 8, "unpaced_within_25": 5, "n": 14}
    sc = {s.run: (s.n, s.unpaced, s.paced, s.blind) for s in serving.decode_paced_scores()}
    # on the serve10 call 12 unpaced, 11 paced; with serve11's in-order path 13 and 13 (the paced still not better)
    assert sc == {"h100-2026-11-27-serve9": (14, 5, 8, None), "h100-2026-11-27-serve10": (14, 13, 13, 12)}
    # the blind column is the committed table: serve9's floor work, read and copy rates at each point's own pace
    base = pred["inputs"]["run"]
    assert serving.floor_work(base) == (pred["inputs"]["floor_fixed_runs"], pred["inputs"]["floor_runs_per_layer"])
    blind = serving.check_decode_paced(SERVE10, inputs=base)
    for c, row in zip(blind, pred["points"]):
        assert (c.model, c.batch, c.context) == (row["model"], row["batch"], row["context"])
    # the unpaced blind column (serve9's own check, no pace): 11 of 14 on the serve10 points
    meas = serving.check_decode(SERVE10)
    unp = [p["predicted_tokens_per_s"] / c.measured_tokens_per_s - 1 for p, c in zip(pred["unpaced_blind_points"], meas)]
    assert sum(abs(e) <= 0.25 for e in unp) == 11
    # the record rule stated before the call: the paced check only if it beats the unpaced one on the call
    assert sc[SERVE10][2] <= sc[SERVE10][1]


def test_paced_floor_is_work_over_pace():
    # distruns' stated-pace rule with the floor's seconds brought to the stated pace by their own meter: at the stated
    # pace the floor is work / STATED_PACE; at half of it twice that
    from mlcalc import distruns
    w = (180.0, 90.0)
    f = serving.paced_floor(w, distruns.STATED_PACE)
    assert f.fixed_s == pytest.approx(180.0 / distruns.STATED_PACE) and f.per_layer_s == pytest.approx(1e-3)
    g = serving.paced_floor(w, distruns.STATED_PACE / 2)
    assert g.per_layer_s == pytest.approx(2 * f.per_layer_s)
    with pytest.raises(ValueError, match="pace"):
        serving.paced_floor(w, 0.0)


def test_serve10_windows_are_the_points_own_and_the_host_saw_no_steal():
    # every point's window lies inside its process's meter and holds samples; the pinned vCPUs showed one stolen tick (of 785, 8B 16 x 4129) in all
    for key in ("1b", "8b"):
        for i, _ in enumerate(serving.measured_decode(SERVE10)[key]["points"]):
            w = serving.decode_point_window(SERVE10, key, i)
            assert w.exact and w.end > w.start and 30e3 < w.pace < 200e3 and w.running > 0.998  # 1 stolen tick at most
    # serve9's windows are reconstructed from its timeline
    assert not serving.decode_point_window("h100-2026-11-27-serve9", "1b", 0).exact


def test_host_probe_follows_the_meter_less_than_one_to_one():
    # serve10: log probe time on log pace over the probes' own windows: slopes -0.49 (1B) and -0.69 (8B), correlation
    # -0.75 and -0.78; check_decode_paced takes -1 (host time one to one with the meter)
    got = {p.model: p for p in serving.host_probe_pace_slope()}
    assert got["1b"].samples == got["8b"].samples == 9
    assert 0.4 < got["1b"].exponent < 0.6 and 0.6 < got["8b"].exponent < 0.8
    assert all(0.5 < p.r_squared < 0.7 for p in got.values())  # correlation -0.75 and -0.78


def test_crossover_points_are_serve10s_misses():
    # the record's misses are the points whose predicted GPU and host times per layer lie within CROSSOVER_BAND of
    # each other; a point well inside host- or GPU-bound is within 25 %
    for c in serving.check_decode(SERVE10):
        g, h = serving.decode_layer_parts(c, SERVE10)
        if abs(c.error) > 0.25:
            assert abs(g / h - 1) <= serving.CROSSOVER_BAND, c
        if abs(g / h - 1) > 0.3:
            assert abs(c.error) <= 0.25, c


def test_profiled_decode_shows_no_sync_inside_the_layers_and_the_gpu_work_predicted():
    # the serve12 call (torch.profiler, CUDA activity, one H100): the record's crossover miss (1B batch 16, cache 4,129)
    # profiled twice beside two host-bound neighbours; read from the reduced trace, nothing fitted
    prof = decode_profile.profiled_decode()
    assert [(p.batch, p.context) for p in prof] == [(16, 545), (16, 4129), (1, 4129), (16, 4129)]
    for p in prof:
        assert p.syncs_in_layers == 0  # no .item(), no blocking copy inside a decode forward
        assert p.syncs_between_steps == 1.0  # one a step, between forwards: the step ends in a sync, as modelled
        assert p.step_s > p.gpu_busy_s > 0
    miss = [c for c in serving.check_decode(SERVE10) if (c.batch, c.context) == (16, 4129)
            and c.model == "1b"][0]
    g, _ = serving.decode_layer_parts(miss, SERVE10)
    for p in prof[1::2]:  # the miss point: the GPU's work a layer as predicted (0.94 measured, 0.90 predicted)
        assert abs(p.gpu_busy_layer_s / g - 1) < 0.10, (p, g)
        assert p.gpu_busy_s > 3 * max(q.gpu_busy_s for q in prof[0::2])
    # the host's span of a layer does not grow with batch or context: within 25 % of each other at all points
    hosts = [p.host_layer_s for p in prof]
    assert max(hosts) / min(hosts) < 1.3
    cause = [m for s in serving.decode_scores() if s.run == SERVE10 for m in s.misses if "batch 16, 4129" in m][0]
    assert decode_profile.DECODE_PROFILE_RUN in cause and "not a synchronisation or a slow kernel" in cause


def test_in_order_path_is_the_critical_path_of_the_ops_issued_in_order():
    # PyTorch "CUDA semantics", asynchronous execution: a kernel is queued when the host issues it and runs after the
    # kernels before it on its stream. Simulated op by op (start = max(issued, previous end)) it equals the formula.
    import random
    rng = random.Random(7)
    for _ in range(200):
        ops = [(rng.uniform(0, 5e-6), rng.choice((0.0, rng.uniform(0, 3e-6), rng.uniform(0, 40e-6))))
               for _ in range(rng.randint(1, 20))]
        reps = rng.randint(1, 6)
        h = end = 0.0
        for hs, gs in ops * reps:
            h += hs
            end = max(end, h) + gs
        sim = max(end, h)
        got = serving.in_order_path_s(ops, reps)
        assert abs(got - sim) <= 1e-12 + 1e-9 * sim
        H, G = sum(x for x, _ in ops), sum(y for _, y in ops)
        # never shorter than either side, never longer than one block's shorter side beyond the longer
        assert reps * max(H, G) - 1e-15 <= got <= reps * max(H, G) + min(H, G) + 1e-15
    with pytest.raises(ValueError, match="repeats"):
        serving.in_order_path_s([(1e-6, 1e-6)], 0)
    with pytest.raises(ValueError, match="host seconds"):
        serving.in_order_path_s([(-1e-6, 1e-6)])


def test_eager_layer_ops_carry_the_layer_floor_and_gpu_time():
    # the layer's operations sum to its floor per layer (host) and to its matmuls + attention + small kernels (GPU),
    # for every counted family (kernels.json eager_ops_per_layer) and MLA
    for name in ("Llama-3 8B", "Gemma-2 9B", "Qwen3 8B", "Gemma-3 4B", "Mixtral 8x7B", "DeepSeek-V3"):
        m = memory.model_preset(name)
        ops = serving.hf_eager_layer_ops(m, 1e-3, 2e-3, 3e-4, 1e-4)
        assert abs(sum(x for x, _ in ops) - 1e-3) < 1e-12
        assert abs(sum(y for _, y in ops) - 2.4e-3) < 1e-12
        assert all(x >= 0 and y >= 0 for x, y in ops)


def test_attention_dp_layout_per_gpu():
    # NVIDIA TensorRT-LLM docs, "Parallelism in TensorRT LLM" (docs/source/features/parallel-strategy.md): attention
    # data parallel, "All GEMM weights are replicated on every GPU. The KV-cache is partitioned"; tensor parallel, "if
    # num_heads < tensor_parallel_size, the KV-cache is replicated". Qwen3-235B-A22B: 94 layers, 4 KV heads of 128.
    q = memory.model_preset("Qwen3 235B-A22B")
    experts = q.n_moe_layers * q.mlp_params_per_expert() * q.n_experts
    assert serving.weight_params_per_gpu(q, 8, 1) == pytest.approx(q.n_params() / 8)
    assert serving.weight_params_per_gpu(q, 1, 8) == pytest.approx(q.n_params() - experts * 7 / 8)
    # trtllm-bench's memory heuristic (tensorrt_llm/bench/build/tuning.py): max(tp_size, num_key_value_heads) KV heads
    whole = 2 * 94 * 4 * 128  # FP8 bytes a token
    assert serving.kv_bytes_per_token_per_gpu(q, 1, "fp8") == whole
    assert 8 * serving.kv_bytes_per_token_per_gpu(q, 8, "fp8") == 2 * 94 * max(8, 4) * 128
    # the planner's KV room: 8 attention data-parallel groups keep the non-expert weights 8 times over
    cap = serving.kv_capacity_tokens(q, "H200-SXM", 1, 8, "fp8", "fp8")
    per_gpu = serving.spec("H200-SXM").memory_bytes * memory.VLLM_MEMORY_UTILIZATION
    assert cap == 8 * int((per_gpu - serving.weight_params_per_gpu(q, 1, 8)) // whole)
    # a dense model's weights are split over tp alone, whatever the groups
    llama = memory.model_preset("Llama-3.1 70B")
    assert serving.weight_params_per_gpu(llama, 2, 4) == pytest.approx(llama.n_params() / 2)
    assert serving.attention_dp_comm_s(llama, "H100-SXM", 1024, 8) == 0.0
    assert serving.attention_dp_comm_s(q, "H100-SXM", 1024, 8) > 0.0


def test_checked_range_says_when_a_plan_runs_attention_data_parallel():
    # the planner's MoE layouts (tp 1, ep 2-8: attention data parallel) were never run by the records that check its
    # own path; its sentence says so, with the in-flight model's errors on the rows whose source states the layout
    # (TensorRT-LLM v1.0 perf-overview.md, Qwen3-235B-A22B, 'enable_attention_dp: true')
    n, ok, lo, hi = serving_record.attention_dp_record()
    assert n == 17 and ok == 2 and 0.0 < lo < 0.25 < hi  # +5 % to +109 % by the one matmul law (+41 % to +156 % before)
    q = memory.model_preset("Qwen3 235B-A22B")
    adp = serving_record.checked_range(q, "H200-SXM", "cuda-graph", 64, 1200, 8, 8)
    tp8 = serving_record.checked_range(q, "H200-SXM", "cuda-graph", 64, 1200, 8)
    assert "attention data parallel over 8 groups" in adp and f"{lo:+.0%} to {hi:+.0%}" in adp
    assert "attention data parallel" not in tp8
    with pytest.raises(ValueError, match="ep"):
        serving_record.checked_range(q, "H200-SXM", "cuda-graph", 64, 1200, 8, 0)


def test_prefill_reads_the_non_expert_weights_in_every_attention_group():
    # attention data parallel (ep groups): each group holds, and a prefill reads, its own copy of every weight but the
    # experts (TensorRT-LLM docs, "Parallelism in TensorRT LLM": DP attention replicates the GEMM weights)
    q = memory.model_preset("Qwen3 235B-A22B")
    tokens = 4096
    experts = q.n_moe_layers * q.mlp_params_per_expert() * memory.moe_experts_touched(q.n_experts, q.experts_per_token,
                                                                                       tokens)
    other = memory.decode_weight_params(q, tokens) - experts
    assert serving.read_params_per_gpu(q, tokens, 1, 8) == pytest.approx(other + experts / 8)
    assert serving.read_params_per_gpu(q, tokens, 8, 1) == pytest.approx((other + experts) / 8)
    # a one-token prefill is its weight read: on 8 attention groups each GPU reads the 8 G non-expert parameters
    # whole, not an eighth of them (3.6 ms more in bf16 on an H200 than the whole model split over 8)
    one = serving.read_params_per_gpu(q, 1, 1, 8) * 2 / serving.read_bandwidth("H200-SXM")
    t = serving.predict_prefill(q, "H200-SXM", 1, 1, tp=1, ep=8)
    assert one <= t < one + serving.comm_s(q, "H200-SXM", 1, 1, 8) + 1e-4
    assert one - serving.read_params_per_gpu(q, 1, 8, 1) * 2 / serving.read_bandwidth("H200-SXM") > 3e-3


def test_attention_dp_gathers_fp8_hidden_states_and_routing():
    # TensorRT-LLM fused_moe (CutlassFusedMoE): the input is quantized before the attention-DP all-gather, which carries
    # it with each token's expert indices (int32) and weights (fp32); the bf16 outputs are reduce-scattered
    from mlcalc import network
    q = memory.model_preset("Qwen3 235B-A22B")
    fab = serving._fabric("H200-SXM", 8, 1)
    tokens = 3000
    gather = tokens * (q.hidden * 1 + q.experts_per_token * (4 + 4))
    want = q.n_moe_layers * (network.fabric_collective_time(gather, fab, "all_gather").time_s
                             + network.fabric_collective_time(tokens * q.hidden * 2, fab, "reduce_scatter").time_s)
    assert serving.attention_dp_comm_s(q, "H200-SXM", tokens, 8, gather_bytes_per_value=1.0) == pytest.approx(want)
    assert serving.attention_dp_comm_s(q, "H200-SXM", tokens, 8) > want  # bf16 gathered: more bytes
    assert serving.attention_dp_comm_s(q, "H200-SXM", tokens, 1) == 0.0


def test_prefill_attention_in_its_own_dtype():
    # TensorRT-LLM v0.9.0 (commit 250d9c293d5edbc2a45c20775b3150b1eb68b364): tensorrt_llm/plugin/plugin.py has
    # use_fp8_context_fmha: bool = False, and docs/source/performance.md's build commands pass --context_fmha enable
    # --gpt_attention_plugin float16 without it: its FP8 engines ran the prompt's attention in 16-bit. predict_prefill
    # prices those FLOPs at the 16-bit matmul rate, the rest unchanged.
    m = memory.model_preset("Llama-2 7B")
    p = 2048
    attn = p * 2.0 * m.n_heads * (m.qk_head_dim + m.v_dim) * m.n_layers * (p + 1) / 2.0  # causal, all layers
    r8, r16 = serving.matmul_rate("H100-SXM", "fp8"), serving.matmul_rate("H100-SXM", "fp16")
    fp8 = serving.predict_prefill(m, "H100-SXM", 1, p, weight_dtype="fp8")
    fp16 = serving.predict_prefill(m, "H100-SXM", 1, p, weight_dtype="fp8", attention_dtype="fp16")
    assert fp16 - fp8 == pytest.approx(attn / r16 - attn / r8, rel=1e-9)  # FP8 adds bytes and FLOPs: the difference
    assert serving.predict_prefill(m, "H100-SXM", 1, p, weight_dtype="fp8", attention_dtype="fp8") == fp8
    # a reader's own matmul rate scales the attention's by the table's ratio
    own = serving.predict_prefill(m, "H100-SXM", 1, p, weight_dtype="fp8", attention_dtype="fp16", matmul_flops=r8 / 2)
    assert own - serving.predict_prefill(m, "H100-SXM", 1, p, weight_dtype="fp8", matmul_flops=r8 / 2) == pytest.approx(
        2 * (attn / r16 - attn / r8), rel=1e-9)
    with pytest.raises(ValueError, match="attention_dtype"):
        serving.predict_prefill(m, "H100-SXM", 1, p, weight_dtype="fp8", attention_dtype="int4")


def test_fused_engine_prefill_charges_the_inflight_elementwise_passes():
    # The in-flight model (servemeasured.inflight) charges every token's residual-add + RMSNorm passes and the other
    # element-wise passes (FP8 quantization, SiLU x mul, rotary and cache write); a prompt's tokens in predict_prefill
    # ("cuda-graph") and step_model's prefill carry the same bytes at the card's read rate, one code path
    from mlcalc import servemeasured as sm
    m = memory.model_preset("Llama-3.1 8B")
    per_tok = serving.engine_elementwise_bytes_per_token(m, 1, "fp8")
    assert per_tok == sm.inflight_elementwise_bytes_per_token(m, 1, "fp8")
    assert per_tok == serving.replicated_norm_bytes_per_token(m) + serving.layer_elementwise_bytes_per_token(m, 1, "fp8")
    bw = serving.read_bandwidth("H100-SXM")
    # 4 prompts of 512 tokens: the eager path (its floor below the matmuls here) charges no element-wise passes
    eager = serving.predict_prefill(m, "H100-SXM", 4, 512, "hf-eager", weight_dtype="fp8")
    graph = serving.predict_prefill(m, "H100-SXM", 4, 512, "cuda-graph", weight_dtype="fp8")
    assert graph == pytest.approx(eager + 2048 * per_tok / bw, rel=1e-12)
    sm_fp8 = serving.step_model(m, "H100-SXM", weight_dtype="fp8", max_batch=8)
    rate = serving.matmul_rate("H100-SXM", "fp8")
    assert sm_fp8.prefill_per_token_s == pytest.approx(
        2.0 * m.n_active_params() / rate + serving.matmul_activation_bytes_per_token(m, 1) / bw + per_tok / bw, rel=1e-12)


def test_moe_allreduces_add_to_the_tensor_parallel_two():
    # comm_s: two all-reduces a layer (Megatron-LM, Shoeybi et al. 2019, section 3); an engine that all-reduces each
    # expert's output (TensorRT-LLM 0.9.0 without its MoE plugin: tensorrt_llm/layers/moe.py, linear.py at commit
    # 250d9c2) makes n_experts after the MoE block instead of one
    mix = memory.model_preset("Mixtral 8x7B")
    one = serving.comm_s(mix, "H100-SXM", 128, 2)
    nine = serving.comm_s(mix, "H100-SXM", 128, 2, moe_allreduces=8)
    assert nine == pytest.approx(one * (2 + 7) / 2, rel=1e-12)  # 32 layers, each of them an MoE layer
    assert serving.comm_s(mix, "H100-SXM", 128, 1, moe_allreduces=8) == 0.0
    assert serving.predict_prefill(mix, "H100-SXM", 1, 128, tp=2, weight_dtype="fp8", moe_allreduces=8) - \
        serving.predict_prefill(mix, "H100-SXM", 1, 128, tp=2, weight_dtype="fp8") == pytest.approx(nine - one, rel=1e-9)
    with pytest.raises(ValueError, match="moe_allreduces"):
        serving.comm_s(mix, "H100-SXM", 128, 2, moe_allreduces=0)
