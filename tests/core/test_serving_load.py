"""Serving engines, parallel serving, continuous batching under load and the planner (mlcalc.serving)."""

import math

import pytest

from mlcalc import memory, network, serving


# transformers' modeling_llama.repeat_kv: "if n_rep == 1: return hidden_states": a model with one KV head per query
# head (MHA) is not copied before SDPA. The book's first model charged it the copy (-60% at batch 128 x 545).
def test_mha_pays_no_repeat_kv_copy():
    assert serving.attention_time_s(1e9, 32, 32, 4e12, 1e12) == pytest.approx(1e9 / 4e12)
    assert serving.attention_time_s(1e9, 32, 8, 4e12, 1e12) > 4 * 1e9 / 4e12
    mha = memory.model_preset("Llama-2 7B")
    eager = serving.predict_decode(mha, "H100-SXM", 128, 545, "hf-eager")
    graph = serving.predict_decode(mha, "H100-SXM", 128, 545, "cuda-graph")
    assert eager.step_s < 2.5 * graph.step_s  # no copy: eager differs by its floor and small kernels only


# Counted operations per decoder layer (mlcalc/data/kernels.json; the book's toolchain notes): Llama-like 63.5,
# Gemma 2 81.5 on the GPU machine. The eager floor per layer scales with them: one floor does not fit every model.
def test_floor_per_layer_follows_the_architecture():
    llama, gemma = memory.model_preset("Llama-3 8B"), memory.model_preset("Gemma-2 9B")
    assert serving.ops_per_layer(llama) == 63.5 and serving.ops_per_layer(gemma) == 81.5
    fl, fg = serving.engine_floor("hf-eager", llama), serving.engine_floor("hf-eager", gemma)
    assert fg.per_layer_s / fl.per_layer_s == pytest.approx(81.5 / 63.5)
    assert fl.per_layer_s == pytest.approx(serving.measured_floor().per_layer_s)
    assert serving.engine_floor("cuda-graph", llama) is None
    # MHA dispatches repeat_kv's operations fewer (counted: 63 - 57 on the CPU)
    assert serving.ops_per_layer(memory.model_preset("Llama-2 7B")) == 63.5 - 6


def test_recount_operations_per_layer_on_the_cpu():
    # Recount of kernels.json's CPU figures (transformers 5.17): Llama 63, Llama with MHA 57, Qwen 3 79, Gemma 3 107.
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from collections import Counter

    from torch.utils._python_dispatch import TorchDispatchMode
    sdpa = pytest.importorskip("transformers.integrations.sdpa_attention")

    class Count(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.n = Counter()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.n[func.overloadpacket.__name__] += 1
            return func(*args, **(kwargs or {}))

    def per_layer(cls, cfg_cls, kv_heads):
        counts = []
        for layers in (2, 4):
            cfg = cfg_cls(hidden_size=64, intermediate_size=128, num_hidden_layers=layers, num_attention_heads=4,
                          num_key_value_heads=kv_heads, head_dim=16, vocab_size=256)
            torch.manual_seed(0)
            model = cls(cfg).eval().to(torch.bfloat16)
            ids = torch.randint(1, 256, (2, 8))
            cache = transformers.StaticCache(config=cfg, max_cache_len=32)
            with torch.inference_mode():
                model(ids, past_key_values=cache, use_cache=True, attention_mask=torch.ones(2, 8, dtype=torch.long))
                with Count() as c:
                    model(ids[:, :1], past_key_values=cache, use_cache=True, cache_position=torch.tensor([8]),
                          attention_mask=torch.ones(2, 9, dtype=torch.long))
            counts.append(sum(c.n.values()))
        return (counts[1] - counts[0]) / 2

    old = sdpa.use_gqa_in_sdpa
    sdpa.use_gqa_in_sdpa = lambda *a, **k: False
    try:
        llama = per_layer(transformers.LlamaForCausalLM, transformers.LlamaConfig, 1)
        mha = per_layer(transformers.LlamaForCausalLM, transformers.LlamaConfig, 4)
        qwen3 = per_layer(transformers.Qwen3ForCausalLM, transformers.Qwen3Config, 1)
        gemma3 = per_layer(transformers.Gemma3ForCausalLM, transformers.Gemma3TextConfig, 1)
    finally:
        sdpa.use_gqa_in_sdpa = old
    k = serving._kernels()["eager_ops_per_layer"]
    assert llama - mha == k["repeat_kv_ops"]
    assert qwen3 == k["value"]["qwen3"] and gemma3 == k["value"]["gemma3"]


def test_engines_differ_where_they_should():
    m = memory.model_preset("Llama-3 8B")
    e1 = serving.predict_decode(m, "H100-SXM", 1, 545, "hf-eager")
    g1 = serving.predict_decode(m, "H100-SXM", 1, 545, "cuda-graph")
    # batch 1: the eager step is the launch floor; the graph reads the weights (16 GB / ~2.8 TB/s)
    assert e1.bound == "launch floor" and g1.bound == "memory"
    # plus the fused layer's 5 small kernels of a null kernel's 3 us each (kernels.json), 32 layers
    small = 32 * 5 * 3e-6
    assert serving.engine_small_kernels_s("cuda-graph", m) == pytest.approx(5 * 3e-6)
    assert g1.step_s == pytest.approx(g1.bytes_per_gpu / serving.read_bandwidth("H100-SXM") + small, rel=0.01)
    with pytest.raises(ValueError, match="engine"):
        serving.predict_decode(m, "H100-SXM", 1, 545, "vllm")


# transformers 5.17 (its DeepSeek-V2 attention, read in the source by the measurement helper): the cache holds the
# MLA latent (512 + 64 values per token and layer), as an engine's does; but every step decompresses the whole
# latent cache into a key and a value per head: kv_b_proj writes nope + v (128 + 128), the key is assembled (read
# nope, write nope + rope = 192), attention reads key and value: 896 values per head, cached token and layer, 199x
# the latent's bytes for DeepSeek-V3. A full sliding-window buffer is rolled and rewritten.
def test_mla_and_windows_on_each_engine():
    v3 = memory.model_preset("DeepSeek-V3")
    assert serving.sequence_kv_bytes(v3, 1000) == 1000 * 70_272
    assert serving.attention_extra_bytes(v3, 1000, 2.0, "engine") == 0.0
    assert serving.attention_extra_bytes(v3, 1000, 2.0, "transformers") == 1000 * 61 * 128 * 896 * 2
    assert serving.attention_extra_bytes(v3, 1000, 2.0, "transformers") / serving.sequence_kv_bytes(v3, 1000) == \
        pytest.approx(128 * 896 / 576)
    g3 = memory.model_preset("Gemma-3 27B")
    assert serving.attention_extra_bytes(g3, 512, 2.0, "transformers") == 0.0  # the buffer is not full yet
    assert serving.attention_extra_bytes(g3, 4096, 2.0, "transformers") == 4 * 52 * 1024 * 8192
    # tensor parallelism splits KV heads, not an MLA latent (every GPU keeps it whole)
    assert serving.kv_split(v3, 8) == 1 and serving.kv_split(memory.model_preset("Llama-3 70B"), 8) == 8
    assert serving.kv_split(memory.model_preset("Llama-3 70B"), 16) == 8


# Megatron-LM (Shoeybi et al. 2019), section 3: two all-reduces per layer in the forward pass (after attention,
# after the MLP). Decode: tokens = batch, message = batch x hidden x 2 bytes.
def test_tensor_parallel_collectives_per_layer():
    m = memory.model_preset("Llama-3 70B")
    assert serving.comm_s(m, "H100-SXM", 64, 1) == 0.0
    fab = network.fabric("DGX-H100", 1, gpus_per_node=4)
    one = network.fabric_collective_time(64 * 8192 * 2, fab).time_s
    assert serving.comm_s(m, "H100-SXM", 64, 4) == pytest.approx(2 * 80 * one)
    # across two nodes the same group pays the NIC's latency and bandwidth
    assert serving.comm_s(m, "H100-SXM", 64, 16, nodes=2) > serving.comm_s(m, "H100-SXM", 64, 8)
    # expert parallel (DeepSeek-V3 report, section 3.4): dispatch + combine all-to-all per MoE layer
    v3 = memory.model_preset("DeepSeek-V3")
    assert serving.comm_s(v3, "H100-SXM", 64, 1, 8) > 0 and serving.comm_s(m, "H100-SXM", 64, 1, 8) == 0.0
    with pytest.raises(ValueError, match="nodes"):
        serving.comm_s(m, "H100-SXM", 64, 3, nodes=2)


# --------------------------------------------------------------------------- load


def _sm(model="Llama-3 8B", **kw):
    return serving.step_model(memory.model_preset(model), "H100-SXM", "cuda-graph", **kw)


def test_simulation_is_seeded_and_bounded():
    w = serving.Workload(10, 500, 100, 0.5, 0.5, seed=3)
    a = serving.simulate_replica(_sm(max_batch=64), serving.draw_requests(w, 200), 64)
    b = serving.simulate_replica(_sm(max_batch=64), serving.draw_requests(w, 200), 64)
    assert a == b and a.events <= serving.SIM_MAX_EVENTS
    assert "2,000" in a.bounds and "no preemption" in a.bounds
    with pytest.raises(ValueError, match="n_requests"):
        serving.draw_requests(w, serving.SIM_MAX_REQUESTS + 1)
    with pytest.raises(ValueError, match="rate_per_s"):
        serving.draw_requests(w._replace(rate_per_s=0), 10)


# Pollaczek-Khinchine (Kleinrock 1975, Queueing Systems vol. 1, section 5.6): an M/D/1 queue at load rho waits
# W = rho S / (2 (1 - rho)) on average. Prompts of 8,192 tokens fill a prefill iteration each: one request, one
# fixed service time, Poisson arrivals; at rho = 0.5 the mean time to first token is S + S/2.
def test_prefill_queue_is_m_d_1():
    sm = _sm(max_batch=64)
    s = max(sm.prefill_min_s, 8192 * sm.prefill_per_token_s + 8192 * 8193 / 2 * sm.attention_per_pair_s)
    w = serving.Workload(0.5 / s, 8192, 1, seed=1)
    res = serving.simulate_replica(sm, serving.draw_requests(w, 2000), 64, prefill_only=True)
    assert res.ttft_mean_s == pytest.approx(1.5 * s, rel=0.08)
    assert not res.queue_growing


# Little's law (Little 1961): mean sequences in decode = throughput x mean time in decode.
def test_little_law_in_decode():
    sm = _sm(max_batch=256)
    w = serving.Workload(20, 200, 200, seed=2)
    res = serving.simulate_replica(sm, serving.draw_requests(w, 1500), 256)
    assert res.mean_batch == pytest.approx(res.throughput_per_s * 199 * res.tpot_mean_s, rel=0.1)


def test_overload_is_flagged_and_chunking_bounds_the_step():
    sm = _sm(max_batch=256)
    hot = serving.simulate_replica(sm, serving.draw_requests(serving.Workload(200, 1000, 200), 400), 256)
    assert hot.queue_growing and hot.throughput_per_s < 100
    w = serving.Workload(20, 2000, 200, 0.5, 0.5, seed=4)
    whole = serving.simulate_replica(sm, serving.draw_requests(w, 300), 256)
    chunked = serving.simulate_replica(sm, serving.draw_requests(w, 300), 256, chunk_tokens=512)
    # Agrawal et al. 2024 (Sarathi-Serve): chunked prefill removes the decode stalls of whole-prompt prefills
    assert chunked.tpot_p99_s < whole.tpot_p99_s


def test_chunked_budget_holds_the_running_batch_and_has_a_floor():
    sm = _sm(max_batch=256)
    reqs = serving.draw_requests(serving.Workload(20, 2000, 200), 100)
    # vLLM's SchedulerConfig._verify_args refuses max_num_batched_tokens below max_num_seqs: each running
    # sequence takes one token of a chunked iteration's budget
    with pytest.raises(ValueError, match="max_batch=256 is not allowed with chunk_tokens=128"):
        serving.simulate_replica(sm, reqs, 256, chunk_tokens=128)
    assert serving.simulate_replica(sm, reqs, 128, chunk_tokens=128).events < serving.SIM_MAX_EVENTS
    for bad in (1, serving.CHUNK_MIN - 1):
        with pytest.raises(ValueError, match=f"chunk_tokens={bad} is not allowed: 0 \\(off\\) or at least"):
            serving.simulate_replica(sm, reqs, 1, chunk_tokens=bad)
    m = memory.model_preset("Llama-3 8B")
    plan = serving.plan_serving(m, "H100-SXM", 20, 1000, 200, 1.0, 0.05, 4.916, chunk_tokens=serving.CHUNK_MIN)
    assert plan.feasible and plan.batch <= serving.CHUNK_MIN
    with pytest.raises(ValueError, match="chunked prefill \\(tokens\\)=1 is not allowed"):
        serving.plan_serving(m, "H100-SXM", 20, 1000, 200, 1.0, 0.05, 4.916, chunk_tokens=1)


def test_goodput_counts_requests_within_both_targets():
    sm = _sm(max_batch=256)
    reqs = serving.draw_requests(serving.Workload(15, 1000, 200, 0.5, 0.5), 300)
    loose = serving.simulate_replica(sm, reqs, 256, ttft_slo_s=10, tpot_slo_s=1)
    tight = serving.simulate_replica(sm, reqs, 256, ttft_slo_s=1e-3, tpot_slo_s=1)
    assert loose.slo_attainment == 1.0 and loose.goodput_per_s == pytest.approx(loose.offered_per_s)
    assert tight.slo_attainment == 0.0 and tight.goodput_per_s == 0.0


# Zhong et al. 2024 (DistServe), section 2.2: colocated prefills stall the decodes that share their GPU; on separate
# pools the decode steps are never interrupted, so the tail TPOT falls (at the price of a KV transfer).
def test_disaggregated_pools_remove_prefill_interference():
    m = memory.model_preset("Llama-3 8B")
    w = serving.Workload(10, 4000, 200, seed=5)
    dis = serving.simulate_disaggregated(m, "H100-SXM", w, 1, 1, n_requests=300)
    colo = serving.simulate_replica(serving.step_model(m, "H100-SXM"),
                                    serving.draw_requests(w._replace(rate_per_s=5), 300), 256)
    assert dis.tpot_p99_s < colo.tpot_p99_s
    assert dis.transfer_s > 0 and dis.gpus == 2


# --------------------------------------------------------------------------- the planner


def test_plan_meets_targets_in_simulation():
    m = memory.model_preset("Llama-3 70B")
    s = serving.plan_serving(m, "H100-SXM", 10, 1000, 200, 1.0, 0.05, 4.916)
    assert s.feasible and s.engine == "cuda-graph"
    assert s.load.slo_attainment >= 0.99 and s.ttft_s <= 1.0 and s.tpot_s <= 0.05
    assert s.gpus == s.replicas * s.tp * s.ep
    assert s.bound in ("compute", "memory bandwidth", "KV capacity", "network", "launch floor",
                       "prefill and queueing (TTFT)")
    # dollars: every GPU-hour is charged to input or output tokens
    per_s = s.gpus * 4.916 / 3600
    assert s.dollars_per_million_input * 10 * 1000 / 1e6 + s.dollars_per_million_output * 10 * 200 / 1e6 == \
        pytest.approx(per_s)
    assert "Checked" in s.checked


def test_impossible_targets_say_impossible_and_why():
    m = memory.model_preset("Llama-3 8B")
    s = serving.plan_serving(m, "H100-SXM", 1, 100, 10, 1.0, 1e-4, 4.916)
    assert not s.feasible and s.gpus == 0 and s.dollars_per_million_tokens == 0.0 and s.replicas == 0
    assert any(p.startswith("TPOT") for p in s.problems)
    s = serving.plan_serving(m, "H100-SXM", 1, 100_000, 10, 0.01, 1.0, 4.916)
    assert not s.feasible and any(p.startswith("TTFT") for p in s.problems)


def test_more_traffic_never_fewer_gpus():
    m = memory.model_preset("Llama-3 8B")
    g = [serving.plan_serving(m, "H100-SXM", r, 500, 200, 1.0, 0.05, 4.916).gpus for r in (1, 10, 40)]
    assert g == sorted(g) and g[0] >= 1


def test_which_chip_at_dated_prices():
    # plan.json's offers carry a price and the date it was listed; the planner compares chips per output token
    from mlcalc import plan
    names = tuple(n for n in serving.serving_offers() if "on demand" in n)
    assert names and all(plan.offers()[n].date for n in names)
    plans = serving.plan_serving_offers(memory.model_preset("Llama-3 8B"), names, 5, 500, 200, 1.0, 0.05)
    feasible = [p for _, p in plans if p.feasible]
    assert feasible and [p.dollars_per_million_output for p in feasible] == sorted(
        p.dollars_per_million_output for p in feasible)
    with pytest.raises(ValueError, match="offer"):
        serving.plan_serving_offers(memory.model_preset("Llama-3 8B"), ("no such offer",), 5, 500, 200, 1.0, 0.05)


def test_a_recorded_trace_runs_as_it_came():
    rows = [(0.3, 500, 50), (0.1, 400, 60), (0.2, 300, 40)] * 20
    rows = [(a + i, p, o) for i, (a, p, o) in enumerate(rows)]
    trace = serving.trace_requests(rows)
    assert [r[0] for r in trace] == sorted(r[0] for r in rows)
    res = serving.simulate_replica(_sm(max_batch=64), trace, 64, max_prefills=4, prefill_tokens=2048)
    assert res.requests == 60 and res.ttft_p99_s > 0
    with pytest.raises(ValueError, match="prompt"):
        serving.trace_requests([(0.0, 0, 10)])
    with pytest.raises(ValueError, match="arrival_s"):
        serving.trace_requests([(-1.0, 10, 10)])
    # Called directly with every arrival at 0 s (a trace trace_requests would refuse), the simulation refuses it
    # by name rather than dividing by the last arrival (found by mlperf16: a ZeroDivisionError before).
    with pytest.raises(ValueError, match="arrival_s=0.0 for the last request"):
        serving.simulate_replica(_sm(max_batch=64), [(0.0, 500, 50)] * 3, 64)


# Any workload the page accepts: the simulation ends within its bounds and every figure is finite and non-negative.
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=25, deadline=None)
@given(st.floats(0.01, 1e4), st.integers(1, 20_000), st.integers(1, 4000), st.floats(0, 3), st.integers(0, 4096),
       st.integers(1, 1024))
def test_simulation_is_finite_and_bounded(rate, prompt, output, cv, chunk, mb):
    sm = _sm(max_batch=256)
    reqs = serving.draw_requests(serving.Workload(rate, prompt, output, cv, cv, seed=1), 200)
    try:
        r = serving.simulate_replica(sm, reqs, mb, chunk_tokens=chunk)
    except ValueError as e:  # a request whose cache cannot fit, or a chunk budget below the batch or its floor
        assert "KV cache" in str(e) or "chunk_tokens" in str(e)
        return
    assert r.events <= serving.SIM_MAX_EVENTS
    for v in r._asdict().values():
        if not isinstance(v, str):  # every number of the result (the flag and counts too) finite and not negative
            assert math.isfinite(v) and v >= 0, r


def test_fp8_iterations_add_the_weight_read_to_the_tokens_work():
    # FP8 matmuls add their bytes and FLOPs (serving.matmul_s; DeepGEMM's published H800 times,
    # servemeasured.check_fp8_gemm): the simulator's prefill iteration is the weight read plus the prompt's work,
    # the same as predict_prefill's, where BF16 takes the longer of the two
    m = memory.model_preset("Llama-3.1 8B")
    fp8 = serving.step_model(m, "H100-SXM", weight_dtype="fp8", kv_dtype="fp8", max_batch=64)
    bf16 = serving.step_model(m, "H100-SXM", max_batch=64)
    assert fp8.serial and not bf16.serial
    alone = [(0.0, 2048, 2), (30.0, 2048, 2)]  # two requests far apart: each prefills alone
    work = 2048 * fp8.prefill_per_token_s + 2048 * 2049 / 2 * fp8.attention_per_pair_s
    r = serving.simulate_replica(fp8, alone, 64)
    assert r.ttft_p50_s == pytest.approx(fp8.prefill_min_s + work)
    assert r.ttft_p50_s == pytest.approx(serving.predict_prefill(m, "H100-SXM", 1, 2048, weight_dtype="fp8"), rel=0.02)
    rb = serving.simulate_replica(bf16, alone, 64)
    assert rb.ttft_p50_s == pytest.approx(max(bf16.prefill_min_s, 2048 * bf16.prefill_per_token_s
                                              + 2048 * 2049 / 2 * bf16.attention_per_pair_s))
    # chunked: a mixed iteration is the decode step plus the chunk's prompt tokens
    busy = [(0.0, 512, 400)] + [(0.05 * i, 512, 400) for i in range(1, 40)]
    rc = serving.simulate_replica(fp8, busy, 64, chunk_tokens=1024)
    assert math.isfinite(rc.tpot_p50_s) and rc.tpot_p50_s > 0


def test_interpolate_is_linear_between_points_and_flat_beyond():
    pts = [(0.0, 10.0), (2.0, 30.0), (3.0, 0.0)]
    assert serving.interpolate(pts, 1.0) == pytest.approx(20.0)
    assert serving.interpolate(pts, 2.5) == pytest.approx(15.0)
    assert serving.interpolate(pts, -5.0) == 10.0 and serving.interpolate(pts, 9.0) == 0.0
    assert serving.interpolate(pts, 2.0) == 30.0


def test_giving_up_keeps_the_verdict_and_the_counts_over_the_targets():
    # give_up_over stops a run once more than that many measured requests are beyond a target; the counts only grow,
    # so the verdict "more than k beyond" is the full run's, at a fraction of its events
    sm = _sm(max_batch=64)
    ttft_t, tpot_t, seen = 0.5, 0.05, set()
    for rate, chunk in ((2.0, 0), (6.0, 0), (12.0, 512), (40.0, 512)):
        reqs = serving.draw_requests(serving.Workload(rate, 1500, 200, 0.5, 0.0, seed=5), 1000)
        full = serving.simulate_replica(sm, reqs, 64, chunk, ttft_t, tpot_t)
        # the counts are the requests beyond each target among the measured ones (the first 10 % left out)
        assert full.measured == 900 and 0 <= full.ttft_over <= full.measured and 0 <= full.tpot_over <= full.measured
        # the 99th percentile of 900 is the 891st smallest: within a target exactly when at most 9 are beyond it
        assert (full.ttft_p99_s <= ttft_t) == (full.ttft_over <= 9) and (full.tpot_p99_s <= tpot_t) == (full.tpot_over <= 9)
        seen.add(full.ttft_over > 9 or full.tpot_over > 9)
        cut = serving.simulate_replica(sm, reqs, 64, chunk, ttft_t, tpot_t, give_up_over=9)
        beyond = full.ttft_over > 9 or full.tpot_over > 9
        assert cut.queue_growing == (beyond or full.queue_growing)
        if beyond:
            assert cut.events < full.events and "given up" in cut.bounds
        else:
            assert cut == full
    assert seen == {True, False}  # both verdicts tried
    with pytest.raises(ValueError, match="give_up_over"):
        serving.simulate_replica(sm, reqs, 64, give_up_over=3)  # no target to count against
    with pytest.raises(ValueError, match="give_up_over"):
        serving.simulate_replica(sm, reqs, 64, 0, 1.0, 0.1, give_up_over=-1)
