"""Serving measured on 2 x H200 (scripts/gpu/run_serve.sh) and published serving results, against mlcalc.serving.

Every point is checked: within the issue's tolerance (CUDA graph 20 %, eager 25 %, published 25 %) or a miss
whose cause is stated (mlcalc.servemeasured.miss_cause, the published row's "cause"). The counts within
tolerance are pinned so that a change that loses points fails here; README.md reports them.
"""

from __future__ import annotations

import collections
import math
import statistics

import pytest

from mlcalc import memory, serving, servemeasured as sm


def test_run_is_the_h200_call_with_every_part():
    d = sm.run_data()
    assert sm.card() == "NVIDIA H200" and sm.chip() == "H200-SXM"
    assert set(d["archs"]) == set(sm.ARCHS)
    for arch, rec in d["archs"].items():
        assert len(rec["decode"]) == 8 and len(rec["prefill"]) == 5, arch
        assert all("eager_s" in p for p in rec["decode"]), arch
        assert "warmup_discarded" in rec  # the first point of each process, measured apart
    # the CUDA graph captured everywhere except Gemma 3 past its 1,024-token window: transformers' rolling
    # sliding-window update builds a tensor from a Python list each step (a host copy a graph cannot hold)
    no_graph = [(a, p["context"]) for a, r in d["archs"].items() for p in r["decode"] if "graph_s" not in p]
    assert no_graph == [("gemma3_4b", 2048), ("gemma3_4b", 2048), ("gemma3_4b", 8192), ("gemma3_4b", 8192)]
    assert len(d["probes"]) == 4  # start and end of both lanes
    assert {p["tp"] for p in d["tp"]["decode"]} == {1, 2}


def test_measured_shapes_are_the_models():
    # the ModelConfig built from each recorded Hugging Face config counts the parameters transformers built
    for arch in sm.ARCHS:
        hf = sm.run_data()["archs"][arch]["n_params"]
        assert sm.arch_model(arch).n_params() == pytest.approx(hf, rel=0.01), arch


def test_kv_cache_bytes_are_what_transformers_allocated():
    # the cache of every decode point as transformers 5.17 allocated it (bytes of its key and value tensors)
    # equals the model's KV bytes: GQA and MHA heads, Gemma 3's 1,024-token windows on 5 of 6 layers, and
    # DeepSeek-V2's MLA latent (512 + 64 values per token and layer, not a key and value per head)
    for arch in sm.ARCHS:
        model = sm.arch_model(arch)
        for p in sm.run_data()["archs"][arch]["decode"]:
            expect = memory.kv_cache_bytes(model, int(p["context"]), "bf16") * int(p["batch"])
            assert p["cache_bytes"] == pytest.approx(expect, rel=1e-9), (arch, p["batch"], p["context"])


def test_host_floor_spread_is_recorded():
    sp = sm.floor_spread()
    assert sp.n_probes == 4
    # the eager floor of one tiny model moved by more than the eager tolerance within one call; its CUDA-graph
    # replay did not (below 1 %)
    assert sp.spread > sm.TARGET["eager"]
    assert sp.graph_max_s / sp.graph_min_s - 1.0 < 0.01
    assert 4.0e12 < sm.read_bandwidth() < 4.8e12  # H200 datasheet: 4.8 TB/s
    assert 6.0e14 < sm.matmul_rate() < 9.89e14  # below the 989 TFLOP/s dense bf16 datasheet figure


def test_engine_floor_from_counts():
    # the engine's kernel floor per layer: the tiny Llama layer replayed from a graph, scaled by 41 / 43 operations
    llama = sm.arch_floor("llama8b", "graph").per_layer_s
    assert sm.engine_layer_floor_s() == pytest.approx(llama * 41 / 43)
    assert 30e-6 < llama < 150e-6


def _counts(run=sm.RUN):
    c = collections.Counter()
    for x in sm.all_checks(run):
        c[(x.what, x.path, x.engine, abs(x.error) <= x.target)] += 1
    return c


@pytest.mark.parametrize("run,n", [(sm.RUN, 127), (sm.RUN2, 126), (sm.RUN4, 105), (sm.RUN7, 63), (sm.RUN8, 157)])
def test_every_measured_point_within_tolerance_or_its_cause_stated(run, n):
    checks = sm.all_checks(run)
    assert len(checks) == n
    for c in checks:
        assert math.isfinite(c.predicted_s) and c.predicted_s > 0
        if abs(c.error) > c.target:
            assert sm.miss_cause(c, run), c  # no unexplained miss
        else:
            assert sm.miss_cause(c, run) == ""


def test_measured_counts_within_tolerance():
    # pinned: README.md reports these; a model change that loses points fails here. Before the kernel law and the
    # prefill parts (first call): eager decode 30 of 40, graph decode 13 of 36, the engine 7 of 26, prefill 10 of 25
    # The engine before the serve4 call's attention probe (its masked SDPA charged the one-row law): 22 of 26, 21 of 25
    c = _counts()
    assert c[("decode", "eager", "transformers", True)] >= 30  # of 40
    assert c[("decode", "graph", "transformers", True)] == 36  # of 36 (32 before the serve4 attention probe)
    assert c[("decode", "graph", "serve_engine", True)] >= 24  # of 26
    assert c[("prefill", "eager", "transformers", True)] >= 20  # of 25 (19 before the grouped prefill probe)
    # the second call (same scripts, the kernel probe added; the model took only its kernel probe from it)
    c2 = _counts(sm.RUN2)
    assert c2[("decode", "eager", "transformers", True)] >= 27  # of 40
    assert c2[("decode", "graph", "transformers", True)] == 36  # of 36 (31 before)
    assert c2[("decode", "graph", "serve_engine", True)] >= 23  # of 25
    assert c2[("prefill", "eager", "transformers", True)] >= 17  # of 25
    # the serve4 call (4 x H200): every point new to the model (tp 4 never measured before; the transformers points
    # at batch x context pairs no earlier call had). The model as committed before the call
    # (scripts/gpu/serve4_predictions.json) got eager 20 of 25, graph 19 of 23, the engine 29 of 42, prefill 12 of 15
    c4 = _counts(sm.RUN4)
    assert c4[("decode", "eager", "transformers", True)] == 25  # of 25: the floor at the host speed next to the point
    assert c4[("decode", "graph", "transformers", True)] == 23  # of 23
    assert c4[("decode", "graph", "serve_engine", True)] >= 40  # of 42
    assert c4[("prefill", "eager", "transformers", True)] >= 13  # of 15


def test_decode_matmul_law_from_the_kernel_probe():
    # the probe's decode matmuls (2 MB to 1 GB of bf16 weights, CUDA graph, 2 x H200): a few microseconds per kernel
    # plus the bytes near the 4 GiB reduction's rate, so a 4096 x 4096 matrix (34 MB) reads at about 60 % of it and a
    # 28672 x 8192 one (470 MB) at about 95 %
    law = serving.measured_matmul_law()
    assert law.batches == (1, 8, 32, 128)
    assert all(3e-6 < f < 8e-6 for f in law.fixed_s)
    assert all(0.85 < r / law.read_bytes_per_s < 1.1 for r in law.bytes_per_s)
    small = 4096 * 4096 * 2 / law.seconds(4096 * 4096 * 2, 1) / law.read_bytes_per_s
    large = 28672 * 8192 * 2 / law.seconds(28672 * 8192 * 2, 1) / law.read_bytes_per_s
    assert 0.5 < small < 0.7 and 0.9 < large < 1.02
    # transformers' grouped expert matmul streams well below the dense one
    assert law.grouped_bytes_per_s < 0.75 * law.bytes_per_s[0]
    # carried to an H100 (3.35 TB/s datasheet) the rates scale with the card's read rate, the fixed times do not
    h100 = serving.chip_matmul_law("H100-SXM")
    assert h100.fixed_s == law.fixed_s and h100.bytes_per_s[0] < law.bytes_per_s[0]
    # Llama 3 8B's layer as transformers runs it: q, k, v, o, gate, up, down; an engine fuses QKV and gate-up
    llama = sm.arch_model("llama8b")
    assert len(serving.decode_kernels(llama, 1, fused=False)) == 7
    assert len(serving.decode_kernels(llama, 1, fused=True)) == 4
    # the kernels' bytes add up to the layer's weights
    per_layer = sum(w for w, _, _ in serving.decode_kernels(llama, 1, fused=True)) / 2
    assert per_layer == pytest.approx(llama.attention_params_per_layer() + llama.mlp_params(llama.ffn_hidden))
    with pytest.raises(ValueError, match="weight_bytes"):
        law.seconds(-1.0, 1)


def test_prefill_parts():
    # transformers' eager prefill: matmuls, attention at the probed SDPA rate, the counted element-wise bytes
    p = sm.predict_hf_prefill("llama8b", 1, 8192)
    assert p.matmul_s > p.attention_s > 0 and p.elementwise_s > 0
    # Gemma 3 past its window: the sliding layers pass a mask, so SDPA computes every block with the
    # memory-efficient kernel: attention takes far longer than within the window
    long = sm.predict_hf_prefill("gemma3_4b", 1, 8192)
    assert long.attention_s > 0.3 * long.total_s
    # flash (no mask) at Llama's shape runs several times the masked kernel's rate
    assert serving.sdpa_prefill_s("mask", 1, 32, 8192, 128, 128) > 3 * serving.sdpa_prefill_s("causal", 1, 32, 8192, 128, 128)
    with pytest.raises(ValueError, match="how"):
        serving.sdpa_prefill_s("window", 1, 32, 8192, 128, 128)


def test_eager_floor_misses_stay_within_the_host_spread():
    # an eager step on the launch floor is excused only as far as the host's floor moved in the same call
    sp = sm.floor_spread()
    for c in sm.check_hf_decode():
        if c.path == "eager" and c.bound == "launch floor":
            assert abs(c.error) <= 2 * sp.spread, c


def test_load_test_rates_and_percentiles():
    runs = sm.load_runs()
    assert [r.rate for r in runs] == [4.0, 12.0, 24.0, 36.0]
    for r in runs:
        assert r.ttft_p50_s <= r.ttft_p99_s and r.tpot_p50_s <= r.tpot_p99_s
    # below capacity every request finished in the window and TTFT stays under half a second at the median;
    # past it (24 and 36 requests/s) the queue grows: median TTFT of seconds, unfinished requests
    assert runs[0].n_finished == runs[0].n_requests and runs[1].n_finished == runs[1].n_requests
    assert runs[0].ttft_p50_s < 0.5 and runs[1].ttft_p50_s < 0.5
    assert runs[2].ttft_p50_s > 2.0 and runs[2].n_finished < runs[2].n_requests
    # the engine's throughput saturates: 36 requests/s delivers no more than twice what 12 do
    assert runs[3].output_tokens_per_s < 2 * runs[1].output_tokens_per_s


def test_published_rows_within_25_percent_or_cause_stated():
    checks = sm.check_published()
    assert len(checks) == 32
    models = {c.model for c in checks}
    assert {"Llama-2 70B", "Mixtral 8x7B"} <= models and models & {"Llama-2 7B", "Mistral 7B"}
    assert {c.gpus for c in checks} == {1, 2, 4}
    for c in checks:
        assert math.isfinite(c.predicted) and c.predicted > 0
        if abs(c.error) > 0.25:
            assert c.cause, c
    within = sum(abs(c.error) <= 0.25 for c in checks)
    assert within >= 21  # of 32, pinned (of 24: 6 before the FP8 matmul law, 13 before v0.9.0's every-expert MoE path)
    # every Llama 2 70B row, H100 and H200, is within 25 %: the 70B over-prediction is gone; so is every MHA Llama 2
    # 7B row but the H200's 896 x 128/128 (published at the H100's throughput: cause stated)
    assert all(abs(c.error) <= 0.25 for c in checks if c.model == "Llama-2 70B")
    l7 = [c for c in checks if c.model == "Llama-2 7B" and abs(c.error) > 0.25]
    assert [(c.chip, c.batch, c.input, c.output) for c in l7] == [("H200-SXM", 896, 128, 128)]


def test_moe_as_run_every_expert_on_every_token():
    mix = memory.model_preset("Mixtral 8x7B")
    every = sm.moe_as_run(mix, "all-experts")
    # every expert's FLOPs and weights: the active parameters are all of them, the memory the same
    assert every.experts_per_token == mix.n_experts and every.n_active_params() == every.n_params() == mix.n_params()
    assert sm.moe_as_run(mix) is mix and sm.moe_as_run(mix, "routed") is mix
    dense = memory.model_preset("Llama-2 7B")
    assert sm.moe_as_run(dense, "all-experts") is dense
    with pytest.raises(ValueError, match="moe_path"):
        sm.moe_as_run(mix, "plugin")


def test_v090_fp8_moe_rows_ran_every_expert():
    # TensorRT-LLM 0.9.0's MoE plugin has no FP8 runner; its FP8 path runs every expert on every token (moe_as_run's
    # sources). Every v0.9.0 table (all FP8) says so for its MoE rows.
    pub = sm.published()
    v090 = [t for t in (*pub["tables"].values(), *pub["first_token"].values()) if "0.9.0" in t["date"]]
    assert len(v090) == 4 and all(t["dtype"] == "fp8" and t["moe_path"] == "all-experts" for t in v090)
    # and the plugin's 16-bit experts cannot give the published 128-token first token: reading them alone over two
    # H100s at the datasheet's bandwidth takes longer than the whole published time
    mix = memory.model_preset("Mixtral 8x7B")
    experts16 = mix.n_moe_layers * mix.n_experts * mix.mlp_params_per_expert() * 2.0
    ttft = next(c for c in sm.check_first_token() if c.model == "Mixtral 8x7B" and c.input == 128 and c.chip == "H100-SXM")
    assert experts16 / 2 / serving.spec("H100-SXM").memory_bandwidth_bytes_per_s > ttft.published_s == 0.0134
    # with every expert run, all 8 static Mixtral rows are within 25 % (1 with routed FP8 experts; 6 before the fused
    # engine's element-wise passes were charged, the two H200 rows of 2,048 out at +26 %/+28 %), and both first
    # tokens (the 2,048-token one -57 % routed)
    rows = [c for c in sm.check_published() if c.model == "Mixtral 8x7B"]
    assert len(rows) == 8 and all(abs(c.error) <= 0.25 for c in rows)
    first = {c.input: c for c in sm.check_first_token() if c.model == "Mixtral 8x7B" and c.chip == "H100-SXM"}
    assert abs(first[2048].error) <= 0.25 and abs(first[128].error) <= 0.25 and not first[128].cause
    routed = sm.static_batch_tokens_per_s(mix, "H200-SXM", 1024, 2, 128, 128, "fp8")
    assert routed / 5444 - 1 > 1.5  # +189 % with routed FP8 experts: the release's path is the cause


def test_v090_decode_attention_kernel_by_group():
    # TensorRT-LLM's XQA dispatcher (decoderXQARunner.h, DecoderXQARunner::shouldUse) takes a plain decode only with
    # 8 query heads per KV head (1 and 16 in later revisions, 4 in none); every other decode runs MMHA, one thread
    # block per query head (decoderMaskedMultiheadAttentionTemplate.h), each reading its KV head's cache
    from mlcalc import serving_record as rec
    reads = rec.trtllm_v090_kv_reads
    assert reads(memory.model_preset("Mistral 7B")) == 4  # 32 query heads over 8 KV heads (Jiang et al. 2023)
    assert reads(memory.model_preset("Mixtral 8x7B"), 2) == 4  # 16 over 4 on each of 2 GPUs
    assert all(reads(memory.model_preset("Llama-2 70B"), tp) == 1 for tp in (1, 2, 4, 8))  # 8 per KV head: XQA
    assert reads(memory.model_preset("Llama-2 7B")) == 1  # MHA: each KV head read once by either kernel
    with pytest.raises(ValueError, match="tp"):
        reads(memory.model_preset("Mistral 7B"), 0)


def test_v090_mistral_mixtral_misses_state_the_mmha_count():
    from mlcalc import serving_record as rec
    checks = rec.mmha_checks()
    assert len(checks) == 32
    # one read per KV head: the published comparison unchanged
    assert all(c.error_per_query_head == pytest.approx(c.error, abs=1e-12) for c in checks if c.kv_reads == 1)
    gqa = [c for c in checks if c.kv_reads > 1]
    assert {c.model for c in gqa} == {"Mistral 7B", "Mixtral 8x7B"} and len(gqa) == 16
    # TensorRT-LLM v0.9.0 performance.md (H200, FP8): Mistral 7B, 56 sequences of 2,048 in and 2,048 out, 3,867 tokens/s
    # per GPU: its cache read once per query head at the H200's read rate gives the same within 2 % (+125 % read once)
    h200 = next(c for c in gqa if (c.chip, c.model, c.batch, c.output) == ("H200-SXM", "Mistral 7B", 56, 2048))
    assert h200.published == 3867 and abs(h200.error_per_query_head) < 0.02 and h200.error > 1.2
    within_q = sum(abs(c.error_per_query_head) <= 0.25 for c in gqa)
    within_now = sum(abs(c.error) <= 0.25 for c in gqa)
    assert (within_q, within_now) == (14, 9)
    over = [c for c in gqa if c.error_per_query_head > 0.25]
    under = sorted((c for c in gqa if c.error_per_query_head < -0.25), key=lambda c: c.model)
    # the count does not hold on every row: two H100 rows the engine ran faster than it allows (not the model)
    assert [(c.chip, c.model, c.input, c.output) for c in under] == [
        ("H100-SXM", "Mistral 7B", 2048, 2048), ("H100-SXM", "Mixtral 8x7B", 2048, 2048)]
    # none over since the fused engine's element-wise passes are charged (the H200's Mistral 896 x 128/128 was +33 %)
    assert not over
    mis = [c for c in gqa if c.model == "Mistral 7B"]
    l7 = [c for c in checks if c.model == "Llama-2 7B"]
    bw100 = serving.read_bandwidth("H100-SXM")
    assert max(c.query_head_rate for c in mis if c.chip == "H100-SXM") > 1.4 * bw100  # beyond the H100's reads

    def rng(xs):
        return f"{min(xs) / 1e12:.1f}-{max(xs) / 1e12:.1f}"

    # every miss of these rows states that count, its numbers as computed here
    stated = [f"{within_q} of the {len(gqa)} Mistral and Mixtral rows are within 25 % ({within_now} as modelled).",
              "2,048/2,048 rows at " + " and ".join(f"{round(c.error_per_query_head * 100):+d} %" for c in under),
              f"{rng([c.query_head_rate for c in mis if c.chip == 'H100-SXM'])} TB/s on the H100, whose read rate is "
              f"{bw100 / 1e12:.1f} TB/s, and {rng([c.query_head_rate for c in mis if c.chip == 'H200-SXM'])} on the H200",
              f"both cards ({rng([c.query_head_rate for c in l7])})", "decoderXQARunner.h", "hi_kv = hi / qhead_per_kv"]
    # Mistral 7B's 4,096-token window (Jiang et al., "Mistral 7B", section 2) cannot shorten a read on these rows:
    # the longest sequence of the Mistral rows is as long as the window, so the cause says the window does not bind
    mistral = memory.model_preset("Mistral 7B")
    longest = max(c.input + c.output for c in checks if c.model == "Mistral 7B")
    assert longest <= mistral.sliding_window == 4096 and not memory.model_preset("Mixtral 8x7B").sliding_window
    stated.append(f"sliding window ({mistral.sliding_window:,} tokens on every layer) does not bind")
    misses = [c for c in sm.check_published() if c.model in ("Mistral 7B", "Mixtral 8x7B") and abs(c.error) > 0.25]
    assert len(misses) == 16 - within_now
    for c in misses:
        for s in stated:
            assert s in c.cause, (c, s)


def test_tensorrt_llm_70b_gap_is_the_release():
    # the book's earlier comparison (v0.6.1 of the same page) over-predicted Llama 2 70B by 60-168 %; the same
    # benchmark in v0.9.0 ran 1.2-1.8x faster on 70B while the MHA 7B rows moved by 3 % or less
    v = sm.published()["tables"]["trtllm-0.9.0-h100-fp8"]["v061_comparison"]
    up70 = [b / a for a, b in zip(v["llama2_70b_v061"], v["llama2_70b_v090"])]
    up7 = [b / a for a, b in zip(v["llama2_7b_v061"], v["llama2_7b_v090"])]
    assert min(up70) > 1.13 and max(up70) > 1.8
    assert all(abs(x - 1) < 0.04 for x in up7)
    errs70 = [c.error for c in sm.check_published() if c.model == "Llama-2 70B" and c.chip == "H100-SXM"]
    assert max(errs70) < 0.25  # was +168 % against v0.6.1, +41 % before the FP8 matmul law
    # the same predictions against the v0.6.1 figures (the table the book compared with before)
    pred70 = [c.predicted for c in sm.check_published() if c.model == "Llama-2 70B" and c.chip == "H100-SXM"]
    old = [p / v061 - 1 for p, v061 in zip(pred70, v["llama2_70b_v061"])]
    assert max(old) > 0.9 and max(old) > max(errs70)  # +93.6 % (+99.6 % before the element-wise passes)
    # the planner's list is the same v0.9.0 rows
    assert len(serving.check_benchmarks()) == len(sm.check_published()) + len(sm.check_first_token())


def test_bad_input_refused():
    with pytest.raises(ValueError, match="arch"):
        sm.arch_model("gpt5")
    with pytest.raises(ValueError, match="path"):
        sm.arch_floor("llama8b", "compiled")
    with pytest.raises(ValueError, match="run"):
        sm.run_data("h100-1999")
    with pytest.raises(ValueError, match="layers"):
        sm.floor_spread(layers=7)


def test_published_first_token_within_25_percent_or_cause_stated():
    checks = sm.check_first_token()
    assert len(checks) == 16  # H100 and H200 tables of the same page
    assert {c.gpus for c in checks} == {1, 2, 4, 8}
    for c in checks:
        assert math.isfinite(c.predicted_s) and c.predicted_s > 0
        if abs(c.error) > 0.25:
            assert c.cause, c
    # pinned: the first token is the context step alone (gptSession); the 4 misses are the one-GPU 128-token rows
    assert sum(abs(c.error) <= 0.25 for c in checks) >= 12  # of 16 (6 of the H100's 8)


def test_one_output_token_is_the_context_step_alone():
    # TensorRT-LLM 0.9.0's page times its first tokens with gptSessionBenchmark and one output token; GptSession runs
    # the context step (which samples the first token) and its first generation step stops on shouldStopSync before
    # running the engine (cpp/tensorrt_llm/runtime/gptSession.cpp). So a first token is the prefill alone, and a static
    # batch of `output` tokens is the prefill and output - 1 decode steps.
    llama = memory.model_preset("Llama-2 7B")
    for c in sm.check_first_token():
        model = sm.moe_as_run(memory.model_preset(c.model), "all-experts")
        assert c.predicted_s == serving.predict_prefill(model, c.chip, 1, c.input, "cuda-graph", c.gpus,
                                                        weight_dtype="fp8", attention_dtype="fp16")
    pre = serving.predict_prefill(llama, "H100-SXM", 56, 2048, "cuda-graph", 1, weight_dtype="fp8",
                                  attention_dtype="fp16")
    step = serving.predict_decode(llama, "H100-SXM", 56, 2048 + 1024, "cuda-graph", 1, weight_dtype="fp8",
                                  kv_dtype="fp8").step_s
    assert sm.static_batch_tokens_per_s(llama, "H100-SXM", 56, 1, 2048, 2048, "fp8", attention_dtype="fp16") == pytest.approx(
        56 * 2048 / (pre + 2047 * step))
    # every row whose context step is 11 ms or more is within 25 % (the Mixtral 128-token rows, +81 % and +57 % with
    # a decode step added; Llama 2 70B at TP 4, +40 % and +32 %); the misses are the four one-GPU 128-token rows,
    # under by about the same time on both cards (2.2-2.6 ms, the H200's faster memory not shrinking it): host time
    checks = sm.check_first_token()
    assert all(abs(c.error) <= 0.25 for c in checks if c.predicted_s >= 0.011)
    misses = [c for c in checks if abs(c.error) > 0.25]
    assert {(c.gpus, c.input) for c in misses} == {(1, 128)} and len(misses) == 4
    assert all(0.0021 <= c.published_s - c.predicted_s <= 0.0026 and "host" in c.cause for c in misses)
    assert {c.chip for c in misses} == {"H100-SXM", "H200-SXM"}


def test_load_simulation_on_the_recorded_arrivals():
    # the serving model's continuous-batching simulation, fed the very arrivals of each rate, against the loop
    checks = sm.check_load_simulation()
    assert [c.rate for c in checks] == [4.0, 12.0, 24.0, 36.0]
    for c in checks:
        assert c.simulated.requests == c.measured.n_requests
        assert math.isfinite(c.simulated.ttft_p50_s) and math.isfinite(c.simulated.tpot_p50_s)
    # below capacity the simulation is faster on both percentiles: a stated miss (the eager prefills, which
    # pause decoding; the decode steps themselves are now within 20 %, check_load_steps)
    for c in checks[:2]:
        assert c.tpot_p50_error < 0 and c.ttft_p50_error < -0.25
    assert "prefill" in sm.LOAD_MISS_CAUSE and "decode" in sm.LOAD_MISS_CAUSE
    # both see the queue past capacity: at 36 requests/s the median request waits seconds for its first token
    assert checks[3].simulated.ttft_p50_s > 1.0 and checks[3].measured.ttft_p50_s > 1.0


def test_first_points_and_the_generate_floor():
    fp = sm.first_points()
    assert len(fp) == 10
    # replayed from a graph, the first point of a process is its repeat within 10 %: no warm-up left after the
    # point's own warm-up calls; eager, the same point moved by up to 1.7x within one process: the host, not warm-up
    assert all(abs(p.ratio - 1) < 0.10 for p in fp if p.path == "graph")
    eager = [p.ratio for p in fp if p.path == "eager"]
    assert max(abs(r - 1) for r in eager) > sm.TARGET["eager"]
    assert min(eager) < 1 < max(eager)  # both ways: slower and faster than the repeat
    g = sm.generate_floor()
    # this host's generate floor (about 0.9 ms + 0.8 ms per layer) lies in the band earlier hosts gave
    # (1.11-2.65 ms fixed, 0.55-0.92 ms per layer: mlcalc/data/measured/README.md, the book's toolchain notes)
    assert 0.5e-3 < g.fixed_s < 3e-3 and 0.5e-3 < g.per_layer_s < 1.0e-3


def test_the_scheduler_alone_reproduces_the_load_test():
    # the simulation fed the run's own parts (median decode step per batch bucket, prefill time per token; never
    # the percentiles) reproduces the loop: TPOT p50 within 25 % at every rate, TTFT p50 within 25 % below capacity.
    # Past capacity the median TTFT is the queue's length, which the simulation puts lower (-48 % and -24 %): the
    # loop's prefill time per token is skewed (its mean 1.26x and 1.45x its median at 24 and 36 requests/s, its
    # 90th percentile 2.4x and 2.8x): the queue grows with the mean, the step model takes the median.
    checks = sm.check_load_scheduler()
    assert all(abs(c.tpot_p50_error) <= 0.25 for c in checks)
    assert all(abs(c.ttft_p50_error) <= 0.25 for c in checks[:2])
    assert all(-0.6 < c.ttft_p50_error < 0 for c in checks[2:])
    with pytest.raises(ValueError, match="rate="):
        sm.measured_step_model(5.0)


# ------------------------------------------------------------------ FP8 matmuls and in-flight batching (published)

def test_fp8_gemm_law_against_deepgemm_published_times():
    checks = sm.check_fp8_gemm()
    assert len(checks) == 28  # DeepGEMM README 'Performance': 18 dense, 4 grouped contiguous, 6 grouped masked shapes
    by = {(c.layout, c.groups, c.m, c.n, c.k): c for c in checks}
    # DeepGEMM README (H800, FP8, 2025-02): M=128, N=7168, K=16384 at 645 TFLOPS, 1.4x its CUTLASS 3.6 baseline
    c = by[("dense", 1, 128, 7168, 16384)]
    assert c.published_s == pytest.approx(2 * 128 * 7168 * 16384 / 645e12)
    assert c.baseline_s == pytest.approx(1.4 * c.published_s)
    # same README: M=4096, N=7168, K=16384 at 1,358 TFLOPS; 4 groups of 8,192 x 4096 x 7168 at 1,297 TFLOPS
    assert by[("dense", 1, 4096, 7168, 16384)].published_s == pytest.approx(2 * 4096 * 7168 * 16384 / 1358e12)
    assert by[("grouped contiguous", 4, 8192, 4096, 7168)].published_s == pytest.approx(
        4 * 2 * 8192 * 4096 * 7168 / 1297e12)
    for c in checks:
        # the roofline (bytes at the read rate, FLOPs at the achievable rate: the larger) is a bound no kernel beats
        assert c.roofline_s <= c.published_s
        assert c.predicted_s >= c.roofline_s
    # the no-overlap law is near the published times; the roofline is biased low
    assert sum(abs(c.error) <= 0.25 for c in checks) >= 24  # of 28, pinned
    assert statistics.median(abs(c.error) for c in checks) < 0.12
    assert statistics.median(c.roofline_s / c.published_s - 1 for c in checks) < -0.15


def test_inflight_published_rows_pinned():
    # NVIDIA TensorRT-LLM docs/source/performance/perf-overview.md at v0.17, 'Throughput Measurements' (FP8, output
    # tokens/s of the whole system at maximum load, trtllm-bench)
    rows = {(c.chip, c.model, c.gpus, c.input, c.output): c for c in sm.check_inflight()
            if c.source.startswith("trtllm-0.17")}
    pins = {("H100-SXM", "Llama-3.1 8B", 1, 2048, 2048): 9488.42,
            ("H200-SXM", "Llama-3.1 8B", 1, 128, 2048): 25398.86,
            ("H200-SXM", "Llama-3.1 70B", 1, 128, 2048): 4165.68,
            ("H100-SXM", "Llama-3.1 70B", 2, 128, 2048): 6169.58,
            ("H100-SXM", "Llama-3.1 70B", 4, 2048, 128): 1302.6,
            ("H100-SXM", "Llama-3.1 70B", 8, 2048, 128): 1923.41,
            ("H100-SXM", "Mixtral 8x7B", 2, 128, 2048): 22830.08,
            ("H200-SXM", "Mixtral 8x7B", 1, 2048, 2048): 6940.32}
    for key, pub in pins.items():
        assert rows[key].published == pub, key
        # all within 25 %: Mixtral on 2 H100s at 128/2048 too since the same-length requests' prompts are packed
        # into the iterations the scheduler gives them (+25 %; +27 % with every iteration carrying 1/2,048 of them)
        assert abs(rows[key].error) <= 0.25, rows[key]


def test_inflight_within_25_percent_or_cause_stated():
    checks = [c for c in sm.check_inflight() if c.source.startswith("trtllm-0.17")]
    assert len(checks) == 44
    assert {c.model for c in checks} == {"Llama-3.1 8B", "Llama-3.1 70B", "Mixtral 8x7B"}
    assert {c.gpus for c in checks} == {1, 2, 4, 8}
    for c in checks:
        assert math.isfinite(c.predicted) and c.predicted > 0
        assert (abs(c.error) > 0.25) == bool(c.cause), c
    assert sum(abs(c.error) <= 0.25 for c in checks) >= 37  # of 44, pinned
    by = {(c.chip, c.model, c.gpus, c.input, c.output): c for c in checks}
    # what the stated causes claim, on the same table: dense 70B on 1, 2, 4 and 8 GPUs is within 25 % ...
    assert all(abs(c.error) <= 0.25 for c in checks if c.model == "Llama-3.1 70B")
    # ... every Mixtral miss over-predicts, at most +25 % on 2 H100s, +22 % on 4, +39 % on 8 with the prompts packed
    # as the scheduler packs them (+27, +16, +37 with every iteration carrying its share; by FP8's former bytes +
    # FLOPs: +18, +27, +38)
    assert all(c.error > 0 for c in checks if c.cause and c.model == "Mixtral 8x7B")
    worst = {tp: max(c.error for c in checks if c.model == "Mixtral 8x7B" and c.chip == "H100-SXM" and c.gpus == tp)
             for tp in (2, 4, 8)}
    assert [round(worst[tp], 2) for tp in (2, 4, 8)] == [0.25, 0.22, 0.39]
    assert all(abs(c.error) <= 0.25 for c in checks if c.input == 2048 and c.output == 128 and not c.model.startswith("Mix"))
    # ... the 128/128 row at the 4,096-request cap: the H200 published within 3 % of the H100
    h100, h200 = by[("H100-SXM", "Llama-3.1 8B", 1, 128, 128)], by[("H200-SXM", "Llama-3.1 8B", 1, 128, 128)]
    assert h100.batch == h200.batch == sm.TRTLLM_MAX_BATCH and abs(h200.published / h100.published - 1) < 0.03


def test_inflight_on_the_v1_0_tables():
    # NVIDIA TensorRT-LLM docs/source/performance/perf-overview.md of the v1.0 documentation (commit 00f37686),
    # 'Throughput Measurements', H100 and H200 FP8 columns (PyTorch backend, trtllm-bench at maximum load): a second
    # release's tables, predicted by the same inflight() with nothing changed. Total output tokens/s of the system.
    checks = [c for c in sm.check_inflight() if c.source.startswith("trtllm-1.0")]
    by = {(c.chip, c.model, c.gpus, c.input, c.output): c for c in checks}
    pins = {("H100-SXM", "Llama-3.1 8B", 1, 128, 128): 28312, ("H200-SXM", "Llama-3.1 8B", 1, 20000, 2000): 1804,
            ("H200-SXM", "Llama-3.1 70B", 1, 2048, 128): 442, ("H100-SXM", "Llama-3.1 70B", 2, 500, 2000): 5222,
            ("H100-SXM", "Llama-3.1 405B", 8, 1000, 1000): 2919, ("H200-SXM", "Llama-3.1 405B", 8, 5000, 500): 650,
            ("H200-SXM", "Qwen3 235B-A22B", 8, 128, 2048): 42821, ("H100-SXM", "Qwen3 235B-A22B", 8, 2048, 2048): 9924}
    for key, pub in pins.items():
        assert by[key].published == pub, key
    assert len(checks) == 77  # 10 lengths x 8 columns, less the page's 3 empty Qwen3 H100 cells
    assert {(c.model, c.gpus) for c in checks} == {("Llama-3.1 8B", 1), ("Llama-3.1 70B", 1), ("Llama-3.1 70B", 2),
                                                   ("Llama-3.1 405B", 8), ("Qwen3 235B-A22B", 8)}
    for c in checks:
        assert math.isfinite(c.predicted) and c.predicted > 0
        assert (abs(c.error) > 0.25) == bool(c.cause), c
    dense = [c for c in checks if not c.model.startswith("Qwen")]
    assert sum(abs(c.error) <= 0.25 for c in dense) == 60  # of 60, pinned (57 with the 405B's cache in FP8)
    assert statistics.median(abs(c.error) for c in dense) < 0.10
    # the 405B's two former misses (H100, 128/4096 +30 %, 20000/2000 +32 %) came within once its checkpoint's 16-bit
    # cache was charged (below); the 70B's on one H200 (20000/2000, +32 % with every iteration carrying 1/2,000 of
    # the prompts) once the prompts are packed as the scheduler packs same-length requests (+13 %): in 99 % of the
    # iterations the decode tokens run alone and pay the weights' read without the prompts' work beside them. The
    # 4,096-request cap row on the H200 (+36 % by FP8's former law) is within.
    misses = {k for k, c in by.items() if c.cause and not c.model.startswith("Qwen")}
    assert misses == set()
    assert 0.10 < by[("H200-SXM", "Llama-3.1 70B", 1, 20000, 2000)].error < 0.20
    assert abs(by[("H200-SXM", "Llama-3.1 8B", 1, 128, 128)].error) <= 0.25
    assert by[("H200-SXM", "Llama-3.1 8B", 1, 128, 128)].published < by[("H100-SXM", "Llama-3.1 8B", 1, 128,
                                                                            128)].published
    # the MoE model, run by the page with 'enable_attention_dp: true', predicted with attention data parallelism as
    # stated (before: tensor-parallel, 16 of 17 within 25 %, -32 % worst): every row over-predicted, 2 of 17 within
    # 25 % by the one matmul law (+41 % to +156 % by FP8's former bytes + FLOPs, none within); each miss's cause says
    # by how much the published throughput's iteration exceeds the model's and what the tensor-parallel figure is
    moe = [c for c in checks if c.model.startswith("Qwen")]
    assert len(moe) == 17 and all(c.error > 0 and (c.error > 0.25) == bool(c.cause) for c in moe)
    assert sum(c.error <= 0.25 for c in moe) == 2
    assert [round(min(c.error for c in moe), 2), round(max(c.error for c in moe), 2)] == [0.05, 1.09]
    best = by[("H200-SXM", "Qwen3 235B-A22B", 8, 128, 2048)]
    assert round(best.error, 3) == 0.052 and best.batch == 3000  # the dataset's 3,000 requests, 375 a GPU
    # the tensor-parallel prediction the cause quotes is the old record of this row (the dataset cap binds only
    # attention data parallelism here)
    qwen = memory.model_preset("Qwen3 235B-A22B")
    r = sm.inflight(qwen, "H200-SXM", 8, 128, 2048, requests=3000)
    # (0.605 of the published by the one matmul law, 0.684 by FP8's former bytes + FLOPs)
    assert r == sm.inflight(qwen, "H200-SXM", 8, 128, 2048) and round(42821 * 0.60) <= r.tokens_per_s <= 42821 * 0.61


def test_v10_moe_rows_layout_from_the_sources():
    # TensorRT-LLM v1.0 perf-overview.md at 00f37686 nests 'enable_attention_dp: true' inside 'cuda_graph_config';
    # llmapi/llm_args.py types that field CudaGraphConfig (StrictBaseModel, extra = 'forbid'), so the file as printed
    # cannot build an LLM; a later revision of the same page (same '(NEW for v1.0)' Qwen3-235B-A22B figures) sets the
    # key at the top level. The rows are therefore predicted attention data-parallel, and each cause says why.
    tables = sm.published()["inflight"]["tables"]
    qwen = memory.model_preset("Qwen3 235B-A22B")
    for key in ("trtllm-1.0-h100-fp8", "trtllm-1.0-h200-fp8"):
        assert sm.stated_layout(tables[key], qwen, 128, 2048)["attention_dp"] is True
        assert "top level" in tables[key]["conditions"]
    llama = memory.model_preset("Llama-3.1 8B")
    assert "attention_dp" not in sm.stated_layout(tables["trtllm-1.0-h200-fp8"], llama, 128, 2048)
    moe = [c for c in sm.check_inflight() if c.attention_dp and c.cause]  # the 15 of 17 outside 25 %
    assert len(moe) == 15 and all(c.cause.endswith(sm.ADP_LAYOUT_EVIDENCE) for c in moe)
    # trtllm-bench's caps (bench/build/tuning.py calc_engine_setting) are sized for the whole group and held per rank
    # (PyExecutor _fetch_new_requests admits tp x the batch cap): each cause says so
    assert all("calc_engine_setting" in c.cause and "_fetch_new_requests" in c.cause for c in moe)
    for phrase in ("Extra inputs are not permitted", "extra = 'forbid'", "at the top level", "'DEP'"):
        assert phrase in sm.ADP_LAYOUT_EVIDENCE


def test_inflight_requests_cap_the_batch():
    # TensorRT-LLM v1.0 perf-overview.md, '$num_requests' table: 30,000 requests at 128/128, 3,000 at 128/2048, ...
    # No scheduler runs more requests at once than the dataset holds; with attention data parallelism each of the 8
    # ranks gets an even share (1,500 / 8 -> 188 on the fullest rank).
    qwen = memory.model_preset("Qwen3 235B-A22B")
    free = sm.inflight(qwen, "H200-SXM", 8, 128, 128, attention_dp=True)
    assert free.batch == 8 * sm.TRTLLM_MAX_BATCH
    assert sm.inflight(qwen, "H200-SXM", 8, 128, 128, attention_dp=True, requests=30000).batch == 30000
    odd = sm.inflight(qwen, "H200-SXM", 8, 2048, 2048, attention_dp=True, requests=1500)
    even = sm.inflight(qwen, "H200-SXM", 8, 2048, 2048, attention_dp=True, requests=1504)
    assert odd.batch == 1500 and odd.iteration_s == pytest.approx(even.iteration_s, rel=0.01)
    llama = memory.model_preset("Llama-3.1 8B")
    assert sm.inflight(llama, "H100-SXM", 1, 128, 128, requests=1000).batch == 1000
    with pytest.raises(ValueError, match="requests"):
        sm.inflight(llama, "H100-SXM", 1, 128, 128, requests=0)
    # every dense row of the v1.0 tables keeps its batch under the stated request counts
    tables = sm.published()["inflight"]["tables"]
    for c in sm.check_inflight():
        if c.source.startswith("trtllm-1.0") and not c.model.startswith("Qwen"):
            t = tables[c.source]
            assert c.batch < t["requests"][f"{c.input}/{c.output}"], c


def test_inflight_kv_cache_dtype_of_the_checkpoint():
    # NVIDIA TensorRT-LLM docs/source/performance/perf-overview.md of the v1.0 documentation (commit 00f37686),
    # Llama 3.1 405B on 8 x H100 in FP8 (checkpoint nvidia/Llama-3.1-405B-Instruct-FP8), 20,000 tokens in and 2,000 out:
    # 345 output tokens/s. That checkpoint's hf_quant_config.json (modelopt 0.17.0) states 'kv_cache_quant_algo': null,
    # so TensorRT-LLM keeps its cache in 16 bits (_torch/pyexecutor/_util.py: FP8 only if has_fp8_kv_cache()): charged
    # so the row comes within 5 %, where an FP8 cache (twice the requests in the same room) gives over 30 % too many.
    big = memory.model_preset("Llama-3.1 405B")
    bf16 = sm.inflight(big, "H100-SXM", 8, 20000, 2000, kv_dtype="bf16", requests=1000)
    fp8 = sm.inflight(big, "H100-SXM", 8, 20000, 2000, requests=1000)
    assert abs(bf16.tokens_per_s / 345 - 1) < 0.05 and fp8.tokens_per_s / 345 - 1 > 0.30
    # the cache's bytes set the room and the reads: half the tokens held, the same weights and matmuls
    assert bf16.kv_tokens == pytest.approx(fp8.kv_tokens / 2, rel=1e-3) and bf16.batch < fp8.batch
    assert sm.inflight(big, "H100-SXM", 8, 128, 2048) == sm.inflight(big, "H100-SXM", 8, 128, 2048, kv_dtype="fp8")
    qwen = memory.model_preset("Qwen3 235B-A22B")
    dp16 = sm.inflight(qwen, "H100-SXM", 8, 128, 2048, attention_dp=True, kv_dtype="bf16")
    dp8 = sm.inflight(qwen, "H100-SXM", 8, 128, 2048, attention_dp=True)
    assert dp16.kv_tokens == pytest.approx(dp8.kv_tokens / 2, rel=1e-3)
    assert dp16.attention_s / dp16.batch == pytest.approx(2 * dp8.attention_s / dp8.batch)  # each request reads 2x
    with pytest.raises(ValueError, match="kv_dtype"):
        sm.inflight(big, "H100-SXM", 8, 128, 2048, kv_dtype="int3")
    # the tables give the 405B its own cache dtype, with the checkpoint's config as source; every other model keeps
    # the table's FP8
    tables = sm.published()["inflight"]["tables"]
    for key in ("trtllm-1.0-h100-fp8", "trtllm-1.0-h200-fp8"):
        assert sm.stated_layout(tables[key], big, 128, 2048)["kv_dtype"] == "bf16"
        assert "'kv_cache_quant_algo': null" in tables[key]["kv_cache_dtype_source"]
        for other in ("Llama-3.1 8B", "Llama-3.1 70B", "Qwen3 235B-A22B"):
            assert "kv_dtype" not in sm.stated_layout(tables[key], memory.model_preset(other), 128, 2048)
    assert "has_fp8_kv_cache" in sm.KV_DTYPE_EVIDENCE and "fp8kv" in sm.KV_DTYPE_EVIDENCE


def test_attention_dp_rows_with_a_16_bit_cache():
    # The v1.0 Qwen3-235B-A22B rows (TensorRT-LLM perf-overview.md at 00f37686) with their cache in 16 bits instead of
    # the table's FP8: the decode-heavy rows come within 25 % on both cards, the prompt-heavy ones stay 32-53 % over.
    # Not adopted (no stored source gives that checkpoint's cache dtype); each miss's cause states it as item (6).
    rows = sm.adp_rows_with_cache("bf16")
    assert len(rows) == 17 and sum(abs(e) <= 0.25 for *_, e in rows) == 12
    out = {(s[-8:-4], i, o) for s, i, o, e in rows if abs(e) > 0.25}
    assert out == {("h100", 5000, 500), ("h200", 128, 128), ("h200", 2048, 128), ("h200", 5000, 500),
                   ("h200", 20000, 2000)}
    assert all(0.30 < e < 0.55 for *_, e in rows if abs(e) > 0.25)
    fp8 = sm.adp_rows_with_cache("fp8")
    assert [e for *_, e in fp8] == [c.error for c in sm._inflight_rows() if c.attention_dp]
    with pytest.raises(ValueError, match="kv_dtype"):
        sm.adp_rows_with_cache("fp4")
    moe = [c for c in sm.check_inflight() if c.attention_dp and c.cause]
    assert all(c.cause.startswith("no cause stated by the source; ours: not established") for c in moe)
    assert all("(6) the KV cache's dtype" in c.cause and sm.KV_DTYPE_EVIDENCE in c.cause for c in moe)
    # (7): the engine charges the whole experts' FP8 matmuls at least what torch's grouped kernel took on one H100
    # (moetp15's probe, 64-1,024 rows an expert: 0.71-0.98 of the law)
    assert all("(7) ruled out, the experts' matmuls charged too little" in c.cause for c in moe)
    qwen = memory.model_preset("Qwen3 235B-A22B")
    for n, ep_s, _ in sm.thin_slice_probe("fp8"):
        law = serving.layers_gemm_law_s(qwen, n * 16, 8, "H100-SXM", "fp8", "experts") / qwen.n_moe_layers
        assert 0.7 < ep_s / law <= 1.0


def test_inflight_attention_dp_rank_physics():
    # attention data parallelism over 8 GPUs: each rank keeps its own sequences' whole cache (Qwen3's 4 KV heads are
    # not split, so none is held twice as under TP 8), every weight but the experts, and 1 / 8 of the experts
    qwen = memory.model_preset("Qwen3 235B-A22B")
    tp_, dp_ = (sm.inflight(qwen, "H100-SXM", 8, 128, 2048, attention_dp=a) for a in (False, True))
    assert dp_.kv_tokens > 1.7 * tp_.kv_tokens and dp_.batch > tp_.batch
    assert dp_.routing_s < tp_.routing_s / 4  # each rank's own tokens only
    bw = serving.read_bandwidth("H100-SXM")  # ... and its element-wise passes whole (attention unsplit on a rank)
    own = dp_.batch / 8 * (1 + 128 / 2048)
    assert dp_.norm_s == pytest.approx(own * sm.inflight_elementwise_bytes_per_token(qwen, 1, "fp8") / bw, rel=0.01)
    # a dense model, or one GPU, is unchanged
    llama = memory.model_preset("Llama-3.1 70B")
    assert sm.inflight(llama, "H100-SXM", 4, 128, 2048, attention_dp=True) == sm.inflight(llama, "H100-SXM", 4, 128, 2048)
    mix = memory.model_preset("Mixtral 8x7B")
    assert sm.inflight(mix, "H200-SXM", 1, 128, 2048, attention_dp=True) == sm.inflight(mix, "H200-SXM", 1, 128, 2048)


def test_moe_routing_passes_whole_on_every_gpu():
    # TensorRT-LLM cpp/tensorrt_llm/kernels/mixtureOfExperts/moe_kernels.cu runMoe: expandInputRows writes k copies of
    # each token's hidden state (read once), finalizeMoeRouting reads the k expert outputs and writes their sum; with
    # tensor-parallel experts (the default, docs "Expert Parallelism in TensorRT-LLM") every GPU sees every token
    mix, llama = memory.model_preset("Mixtral 8x7B"), memory.model_preset("Llama-3.1 8B")
    assert sm.moe_routing_bytes_per_token(llama) == 0.0
    assert sm.moe_routing_bytes_per_token(mix) == 32 * (1 + 2) * (1 + 2) * 4096
    assert sm.moe_routing_bytes_per_token(mix, 2.0) == pytest.approx(32 * 3 * 4 * 4096)
    bw = serving.read_bandwidth("H100-SXM")
    for tp in (2, 4, 8):
        r = sm.inflight(mix, "H100-SXM", tp, 2048, 2048)
        # not split over the GPUs: the whole iteration's tokens on each
        assert r.routing_s == pytest.approx((r.batch + r.prefill_tokens) * sm.moe_routing_bytes_per_token(mix) / bw)
        assert r.iteration_s == pytest.approx(r.gemm_s + r.attention_s + r.prefill_attention_s + r.comm_s
                                              + r.routing_s + r.norm_s)
    assert sm.inflight(llama, "H100-SXM", 1, 2048, 2048).routing_s == 0.0


def test_residual_norm_passes_whole_on_every_gpu():
    # TensorRT-LLM cpp/tensorrt_llm/plugins/ncclPlugin/allreducePlugin.cpp (enqueue, NCCL strategy): ncclAllReduce into
    # an intermediate buffer, then residualRmsNorm reads it and the residual, writes the new residual and the normed
    # output: 4 bf16 accesses a value. Megatron-LM (Shoeybi et al. 2019, section 3): layer norms and residual
    # connections are duplicated on every tensor-parallel GPU, so the pass is not split over tp.
    assert sm.RESIDUAL_NORM_BYTES_PER_VALUE == 4 * 2
    llama70, llama8 = memory.model_preset("Llama-3.1 70B"), memory.model_preset("Llama-3.1 8B")
    assert sm.replicated_norm_bytes_per_token(llama70) == 80 * 2 * 8 * 8192
    assert sm.replicated_norm_bytes_per_token(llama8) == 32 * 2 * 8 * 4096
    bw = serving.read_bandwidth("H100-SXM")
    shares = []
    for tp in (2, 4, 8):
        r = sm.inflight(llama70, "H100-SXM", tp, 128, 2048)
        # the norms' passes whole, beside the layers' other element-wise passes (split as the widths split)
        assert r.norm_s == pytest.approx((r.batch + r.prefill_tokens) * (
            sm.replicated_norm_bytes_per_token(llama70) + serving.layer_elementwise_bytes_per_token(llama70, tp, "fp8"))
            / bw)
        shares.append(r.norm_s / r.iteration_s)
    # whole on every GPU while the matmuls split: a larger share of the iteration with more GPUs
    assert shares[0] < shares[1] < shares[2]
    with pytest.raises(ValueError, match="bytes_per_value"):
        sm.replicated_norm_bytes_per_token(llama8, 0.0)


def test_inflight_batch_is_the_kv_room_and_the_iteration_its_kernels():
    llama70 = memory.model_preset("Llama-3.1 70B")
    r = sm.inflight(llama70, "H100-SXM", 2, 128, 2048)
    # KV room: 95 % of (memory - FP8 weights / 2) per GPU, each GPU 4 of the 8 KV heads (1 byte a value)
    room = 0.95 * (serving.spec("H100-SXM").memory_bytes - llama70.n_params() / 2)
    per_tok = 2 * 80 * 8 * 128 / 2
    assert r.kv_tokens == int(room // per_tok)
    assert r.batch == r.kv_tokens // (128 + 2048)
    assert r.prefill_tokens == pytest.approx(r.batch * 128 / 2048)
    assert r.routing_s == 0.0  # dense: no MoE routing passes
    assert r.iteration_s == pytest.approx(r.gemm_s + r.attention_s + r.prefill_attention_s + r.comm_s + r.routing_s
                                          + r.norm_s)
    assert r.tokens_per_s == pytest.approx(r.batch / r.iteration_s)
    # short requests: trtllm-bench's heuristic caps the batch at 4,096
    assert sm.inflight(memory.model_preset("Llama-3.1 8B"), "H100-SXM", 1, 128, 128).batch == 4096
    # the KV room sets the throughput: 70B on one H100 holds a few dozen requests of 2,176 tokens, on two ~7x more
    one = sm.inflight(llama70, "H100-SXM", 1, 128, 2048)
    assert one.batch < 50 and r.batch > 5 * one.batch and r.tokens_per_s > 4 * one.tokens_per_s
    # BF16 70B does not fit one H100: refused, naming the parameter
    with pytest.raises(ValueError, match="tp"):
        sm.inflight(llama70, "H100-SXM", 1, 128, 128, "bf16")
    with pytest.raises(ValueError, match="prompt"):
        sm.inflight(llama70, "H100-SXM", 2, 0, 128)


def test_same_length_prompts_are_packed_into_few_iterations():
    # TensorRT-LLM v1.0 perf-overview.md (commit 00f37686), 'Throughput Measurements', Llama 3.3 70B (the 3.1 shape)
    # on one H200 in FP8, 20,000 tokens in / 2,000 out, 1,000 requests of one length (prepare_dataset.py
    # token-norm-dist, stdev 0): 283 output tokens/s. 20 requests fit the KV room; spread evenly, every iteration
    # would carry 20 decode tokens and 200 prompt tokens (+32 %); packed as the scheduler packs them, 20 of every
    # 2,000 iterations carry a whole prompt and the other 1,980 decode alone, each paying the weights' read with
    # nothing beside it
    llama70 = memory.model_preset("Llama-3.1 70B")
    spread = sm.inflight(llama70, "H200-SXM", 1, 20000, 2000, requests=1000)
    packed = sm.inflight(llama70, "H200-SXM", 1, 20000, 2000, requests=1000, uniform=True)
    assert packed.batch == spread.batch == 20
    assert (packed.context_share, spread.context_share) == (20 / 2000, 1.0)
    assert spread.tokens_per_s / 283 - 1 > 0.25
    assert abs(packed.tokens_per_s / 283 - 1) <= 0.25
    assert packed.iteration_s == pytest.approx(packed.gemm_s + packed.attention_s + packed.prefill_attention_s
                                               + packed.comm_s + packed.routing_s + packed.norm_s)
    assert packed.prefill_tokens == spread.prefill_tokens == 20 * 20000 / 2000  # the cycle's mean, unchanged
    # where every iteration carries prompts (4,096 requests of 128/128 in trtllm-bench's 8,192-token budget: groups of
    # 32, one every iteration) packing is the even spread
    llama8 = memory.model_preset("Llama-3.1 8B")
    assert sm.context_iterations(4096, 128, 128, 8192) == 128
    assert sm.inflight(llama8, "H100-SXM", 1, 128, 128, uniform=True) == sm.inflight(llama8, "H100-SXM", 1, 128, 128)
    # groups of (budget - batch) // prompt, at least one prompt an iteration, at most every iteration
    assert sm.context_iterations(238, 128, 4096, 2048) == 17  # groups of 14
    assert sm.context_iterations(20, 20000, 2000, 2048) == 20  # a prompt over the budget: one an iteration
    assert sm.context_iterations(300, 500, 100, 2048) == 100
    for kw in ({"batch": 0}, {"prompt": 0}, {"output": -1}, {"max_num_tokens": 0}):
        args = {"batch": 238, "prompt": 128, "output": 4096, "max_num_tokens": 2048} | kw
        with pytest.raises(ValueError, match=next(iter(kw))):
            sm.context_iterations(**args)
    qwen = memory.model_preset("Qwen3 235B-A22B")
    with pytest.raises(ValueError, match="uniform"):
        sm.inflight(qwen, "H200-SXM", 8, 128, 2048, attention_dp=True, uniform=True)
    # the tables state one length a run: the stated layout packs their prompts (attention-DP rows aside)
    tables = sm.published()["inflight"]["tables"]
    assert all(sm.stated_layout(t, llama8, 128, 2048)["uniform"] for t in tables.values())
    assert "uniform" not in sm.stated_layout(tables["trtllm-1.0-h200-fp8"], qwen, 128, 2048)


def test_cuda_graph_padding_as_the_v1_0_page_configures_it():
    # TensorRT-LLM v1.0 perf-overview.md (commit 00f37686), llm_options.yml for dense models: 'cuda_graph_config:
    # enable_padding: true, batch_sizes: [1, 2, 4, ..., 8192]'; tensorrt_llm/_torch/pyexecutor/model_engine.py
    # _filter_cuda_graph_batch_sizes (sizes up to min(max_batch_size, max_num_tokens), that bound added when padding)
    # and _round_up_batch_size (the smallest captured size at or above the batch)
    tables = sm.published()["inflight"]["tables"]
    sizes = tuple(tables["trtllm-1.0-h100-fp8"]["cuda_graph_batch_sizes"])
    assert sizes == (1, 2, 4, 8, 16, 32, 64, 128, 256, 384, 512, 1024, 2048, 4096, 8192)
    assert sizes == tuple(tables["trtllm-1.0-h200-fp8"]["cuda_graph_batch_sizes"])
    assert "cuda_graph_batch_sizes" not in tables["trtllm-0.17-h100-fp8"]  # v0.17: TensorRT engines, no such option
    assert sm.cuda_graph_batch(238, sizes, 256, 2048) == 256
    assert sm.cuda_graph_batch(1344, sizes, 1536, 2048) == 1536  # the caps' bound joins the captured sizes
    assert sm.cuda_graph_batch(1600, sizes, 1536, 2048) == 1600  # above every captured size: no graph, no padding
    assert sm.cuda_graph_batch(45, sizes, 64, 2048) == 64
    assert sm.cuda_graph_batch(300, (1, 2, 4), 512, 8192) == 300
    for args, name in (((0, sizes, 256, 2048), "batch"), ((8, (), 256, 2048), "sizes"), ((8, (4, 2), 256, 2048), "sizes"),
                       ((8, (2, 2), 256, 2048), "sizes"), ((8, sizes, 0, 2048), "max_batch_size")):
        with pytest.raises(ValueError, match=name):
            sm.cuda_graph_batch(*args)
    # the same page's Llama 3.3 70B (the 3.1 shape) on one H200, 128 in / 4,096 out: 2,872 output tokens/s. 109
    # requests decode alone in all but 8 of every 4,096 iterations, padded to 128 rows: +19 %, against +21 % unpadded
    by = {(c.chip, c.model, c.gpus, c.input, c.output): c for c in sm.check_inflight()}
    row = by[("H200-SXM", "Llama-3.1 70B", 1, 128, 4096)]
    assert row.published == 2872 and 0.15 < row.error < 0.20
    model, table, got = sm.inflight_as_stated(row)
    assert (got.batch, got.decode_rows) == (109, 128) and got.context_share == 8 / 4096
    kw = dict(sm.stated_layout(table, model, 128, 4096), graph_batch_sizes=())
    plain = sm.inflight(model, "H200-SXM", 1, 128, 4096, **kw)
    assert plain.decode_rows == plain.batch and row.error < plain.tokens_per_s / 2872 - 1 < 0.25
    qwen = memory.model_preset("Qwen3 235B-A22B")
    assert "graph_batch_sizes" not in sm.stated_layout(tables["trtllm-1.0-h200-fp8"], qwen, 128, 2048)
    with pytest.raises(ValueError, match="graph_batch_sizes"):
        sm.inflight(qwen, "H200-SXM", 8, 128, 2048, attention_dp=True, graph_batch_sizes=sizes)


def test_dynamic_batch_size_follows_the_tuner_and_binds_no_miss():
    # TensorRT-LLM cpp/tensorrt_llm/executor/dynamicBatchConfig.cpp kDefaultBatchSizeTable {144, 128}, {336, 256},
    # {672, 512}, {832, 768}, {1280, 1024}, {1664, 1536}; dynamicBatchTuner.h fallback granularity 512, threshold 128
    assert [sm.dynamic_batch_size(n) for n in (1, 143, 144, 335, 671, 831, 1279, 1663)] == \
        [128, 128, 256, 256, 512, 768, 1024, 1536]
    assert [sm.dynamic_batch_size(n) for n in (1664, 2047, 2048, 2175, 2176, 4218)] == [1664, 2047, 2048, 2048, 2176,
                                                                                        4096]
    with pytest.raises(ValueError, match="capacity"):
        sm.dynamic_batch_size(0)
    # every dense or tensor-parallel miss states the scheduler's rules, and the tuner would lower none of their batches
    misses = [c for c in sm.check_inflight() if c.cause and not c.attention_dp]
    assert misses and all(". The scheduler's rules: " in c.cause and "so it would not lower the batch" in c.cause
                          for c in misses)


def test_tensor_parallel_decode_on_one_two_and_four_gpus():
    # the serve4 call: the plain engine's CUDA-graph decode of the Llama 3 8B shape and of 20 Llama 3 70B layers on
    # 1, 2 and 4 H200s, 7 batch x cache points each; the step falls with tp and the prediction follows within 20 %
    # (the 70B layer at batch 128 too, since the matmuls are charged as the engine runs them: test_serve5_...)
    checks = sm.check_tp_decode(sm.RUN4)
    assert {(c.arch, c.tp) for c in checks} == {(m, t) for m in ("llama8b", "llama70b_20l") for t in (1, 2, 4)}
    assert len(checks) == 42
    step = {(c.arch, c.tp, c.batch, c.context): c.measured_s for c in checks}
    for m in ("llama8b", "llama70b_20l"):
        assert step[(m, 4, 1, 2048)] < step[(m, 2, 1, 2048)] < step[(m, 1, 1, 2048)]
    assert all(abs(c.error) <= c.target for c in checks)
    # the first point of each model in each process, kept apart: replayed from a graph it equals its repeat (1 %)
    firsts = [p for p in sm.run_data(sm.RUN4)["tp"]["decode"] if "warmup_discarded_graph_s" in p]
    assert len(firsts) == 6
    assert all(abs(p["warmup_discarded_graph_s"] / p["graph_s"] - 1) < 0.01 for p in firsts)


def test_engine_attention_law_from_the_probe():
    # PyTorch's memory-efficient SDPA as the engine calls it: one block per (sequence, KV head) streams its keys,
    # about 21 ns a key; a wave of 132 SMs (H100 SXM / H200: 132 SMs, NVIDIA H100 whitepaper)
    law = sm.engine_attention_law()
    assert law.sms == 132
    assert 15e-9 < law.per_key_s < 25e-9 and 0 <= law.fixed_s < 30e-6
    pts = [r for r in sm._read("kernels4_gpu2.json", sm.RUN4)["decode_attention"] if r["kind"] == "engine"]
    for r in pts:  # every probed engine shape within 20 %
        kv = r["kv_bytes"]
        t = sm.engine_attention_s(r["batch"], r["kv_heads"], r["length"], kv, sm.read_bandwidth(sm.RUN4))
        assert abs(t / r["s"] - 1) < 0.20, r
    # twice the sequences on more than one wave: twice the time; on one wave, the same time
    one = sm.engine_attention_s(8, 8, 2048, 0.0, 1e12)
    assert sm.engine_attention_s(16, 8, 2048, 0.0, 1e12) == one
    assert sm.engine_attention_s(64, 8, 2048, 0.0, 1e12) == pytest.approx(law.fixed_s + 4 * 2048 * law.per_key_s)
    with pytest.raises(ValueError, match="batch"):
        sm.engine_attention_s(0, 8, 2048, 0.0, 1e12)


def test_graph_allreduce_measured_in_the_same_call():
    # an all-reduce of a decode-sized message inside a CUDA graph: tens of microseconds, more on 4 GPUs than on 2
    a2 = sm.graph_allreduce_s(2, 8192, sm.RUN4)
    a4 = sm.graph_allreduce_s(4, 8192, sm.RUN4)
    assert 5e-6 < a2 < a4 < 50e-6
    with pytest.raises(ValueError, match="tp"):
        sm.graph_allreduce_s(4, 8192, sm.RUN)  # the first call had 2 GPUs


def test_host_floor_moves_and_the_probe_next_to_the_point_follows_it():
    # the 32-layer eager probe over and over in one call: while the other GPUs worked and alone on one GPU; the
    # same step replayed from a CUDA graph hardly moves (the GPU), the eager one does (the host)
    # (the middle 80 % of the repeats: the 90th over the 10th percentile). Alone on an idle host it moves as much,
    # and the hypervisor took no CPU time from it (steal): the host's own speed moves, not other work
    for name in ("hostseries_busy_gpu3.json", "hostseries_alone_gpu0.json"):
        rep = sm._read(name, sm.RUN4)["host_series"]["repeats"]
        assert len(rep) >= 15
        e = sorted(r["eager_s"] for r in rep)
        g = sorted(r["graph_s"] for r in rep)
        p10, p90 = int(0.1 * (len(rep) - 1)), int(0.9 * (len(rep) - 1))
        assert e[p90] / e[p10] - 1 > 0.5  # twice the eager tolerance
        assert g[p90] / g[p10] - 1 < 0.15
        steal = rep[-1]["host_after"]["steal_jiffies"] - rep[0]["host_before"]["steal_jiffies"]
        assert steal <= 0.001 * (rep[-1]["host_after"]["jiffies"] - rep[0]["host_before"]["jiffies"])
    sp = sm.floor_spread(sm.RUN4)
    assert sp.n_probes == 8 and sp.spread > 0.25
    # eager points on the launch floor: with the floor at the host speed next to each point all 25 are within 25 %;
    # with the floor of the tiny models' own moment (no probe next to the point) some are not
    checks = [c for c in sm.check_hf_decode(sm.RUN4) if c.path == "eager"]
    assert all(abs(c.error) <= 0.25 for c in checks)
    plain = [sm.predict_hf(c.arch, "eager", c.batch, c.context, sm.RUN4).step_s / c.measured_s - 1 for c in checks]
    assert sum(abs(e) > 0.25 for e in plain) >= 4


def test_transformers_sdpa_beyond_its_bytes_from_the_probe():
    # transformers' SDPA at decode (mask, K and V expanded): the probed call takes more than its bytes at the read
    # rate where the cache is short (the kernel's per-call time) and about its bytes where it is long
    short = sm.hf_sdpa_excess_s("gemma3_4b", 1, 512, sm.RUN4)
    long = sm.hf_sdpa_excess_s("llama8b", 16, 8192, sm.RUN4)
    assert 5e-6 < short < 40e-6
    assert long < 0.25 * 477.8e-6  # the probe: 478 us a call there, nearly all of it bytes


def _probe_rows(heads, dq, dv):
    # the kernel probe's own file (run h200x4-2026-11-26-serve4, kernels4_gpu2.json, scripts/gpu/bench_kernels.py
    # decode_attention, kind "hf"), read here without the module's reader
    import json
    import pathlib

    f = pathlib.Path(sm.__file__).parent / "data/measured/h200x4-2026-11-26-serve4/kernels4_gpu2.json"
    return {(r["batch"], r["length"]): (r["s"], r["kv_bytes"]) for r in json.loads(f.read_text())["decode_attention"]
            if r.get("kind") == "hf" and "s" in r and (r["kv_heads"], r["head_dim"], r["v_head_dim"]) == (heads, dq, dv)}


def test_sdpa_excess_is_the_probe_at_probed_points():
    # source: the kernel probe of run h200x4-2026-11-26-serve4 (H200): 13 (batch, length) points for each of the
    # three head shapes; at each the table is the call's time less a null kernel less its K and V bytes at the read
    # rate, never below 0, and the rule returns exactly that value
    from mlcalc import serving

    bw, floor = sm.read_bandwidth(sm.RUN4), serving.null_kernel_s()
    for arch, shape in (("llama8b", (32, 128, 128)), ("gemma3_4b", (8, 256, 256)), ("dsv2lite_8l", (16, 192, 128))):
        rows = _probe_rows(*shape)
        table = sm.hf_sdpa_excess_table(arch, sm.RUN4)
        assert len(rows) == len(table) == 13
        for (b, L), (t, kv) in rows.items():
            assert table[(b, L)] == pytest.approx(max(0.0, t - floor - kv / bw), rel=1e-12)
            assert sm.hf_sdpa_excess_at(table, b, L) == table[(b, L)]
    gemma = sm.hf_sdpa_excess_table("gemma3_4b", sm.RUN4)
    # what the table shows of the kernel (hf_sdpa_excess_table's docstring): a fixed time a call at few blocks, the
    # same at 16x the bytes (Gemma's shape 1 x 512 vs 1 x 8192); 2 waves of blocks cost about twice one wave
    assert 17e-6 < gemma[(1, 512)] < 20e-6 and 17e-6 < gemma[(1, 8192)] < 21e-6
    assert 100e-6 < gemma[(24, 4096)] < 115e-6 and 50e-6 < gemma[(16, 8192)] < 65e-6
    llama = sm.hf_sdpa_excess_table("llama8b", sm.RUN4)
    assert all(8e-6 < llama[k] < 10e-6 for k in ((1, 512), (1, 8192), (2, 1024)))
    assert llama[(16, 8192)] == llama[(128, 512)] == 0.0  # at the read rate there


def test_sdpa_excess_between_probed_points_lies_between_the_neighbours():
    # the blind check's Gemma 3 CUDA-graph point 4 x 768 (blind10), which the probe never ran: 3,072 tokens, between
    # the probed 2,048 (2 x 1024) and 4,096 (8 x 512), linear in log tokens
    import math

    t = sm.hf_sdpa_excess_table("gemma3_4b", sm.RUN4)
    want = t[(2, 1024)] + math.log(3072 / 2048) / math.log(2) * (t[(8, 512)] - t[(2, 1024)])
    assert sm.hf_sdpa_excess_at(t, 4, 768) == pytest.approx(want, rel=1e-12)
    assert min(t[(2, 1024)], t[(8, 512)]) <= want <= max(t[(2, 1024)], t[(8, 512)])
    # every layer of Gemma 3 attends 768 < its window: the per-layer mean is the point's value (it was 0: no probe)
    assert sm.hf_sdpa_excess_s("gemma3_4b", 4, 768, sm.RUN4) == pytest.approx(want, rel=1e-12)
    # among points of equal tokens, linear in log batch: 12 x 1365 (16,380 tokens ~ the 16,384 row) lies between
    # 8 x 2048 and 16 x 1024 of that row and its 8,192-token neighbour
    near = [t[k] for k in ((8, 2048), (16, 1024), (1, 8192))]
    assert min(near) <= sm.hf_sdpa_excess_at(t, 12, 1365) <= max(near)
    # anywhere (batch 1..512, length 64..65,536) the rule stays within the table's range, finite and >= 0
    for arch in ("llama8b", "gemma3_4b", "dsv2lite_8l"):
        t = sm.hf_sdpa_excess_table(arch, sm.RUN4)
        lo, hi = min(t.values()), max(t.values())
        for b in (1, 3, 5, 12, 20, 48, 100, 200, 512):
            for L in (64, 600, 777, 1500, 3000, 6000, 12000, 65536):
                assert 0.0 <= lo <= sm.hf_sdpa_excess_at(t, b, L) <= hi
    # beyond the probe the end value holds (the least and the most tokens probed: 1 x 512 and 16 x 8192)
    t = sm.hf_sdpa_excess_table("gemma3_4b", sm.RUN4)
    assert sm.hf_sdpa_excess_at(t, 1, 100) == t[(1, 512)]
    assert sm.hf_sdpa_excess_at(t, 500, 512) == sm.hf_sdpa_excess_at(t, 64, 20000) == t[(16, 8192)]
    assert sm.hf_sdpa_excess_at({}, 4, 768) == 0.0  # a head shape the probe did not run: the bytes stand
    with pytest.raises(ValueError, match="batch"):
        sm.hf_sdpa_excess_at(t, 0, 512)
    with pytest.raises(ValueError, match="length"):
        sm.hf_sdpa_excess_at(t, 1, 0)


def test_sdpa_excess_read_along_tokens_predicts_left_out_probe_points_better():
    # why the rule reads the table along batch x length: each probed point left out and read from the other 12, the
    # mean miss of its excess is smaller than the same table read at each probed length in log batch, then in log
    # length (the first rule tried), for every head shape (us: Llama 0.6 vs 5.6, Gemma 3 10.8 vs 29.2, DeepSeek-V2
    # 13.3 vs 20.5 at the eager record's read rate); the worst left-out points are the wave steps (24 x 4096)
    def per_length(table, b, L):
        rows = {}
        for (pb, pl), e in sorted(table.items()):
            rows.setdefault(pl, []).append((float(pb), e))
        return sm._log_between([(float(pl), sm._log_between(rows[pl], b)) for pl in sorted(rows)], L)

    for arch, most in (("llama8b", 1e-6), ("gemma3_4b", 12e-6), ("dsv2lite_8l", 14e-6)):
        t = dict(sm.hf_sdpa_excess_table(arch, sm.RUN8))
        miss_tokens, miss_length = [], []
        for k, v in t.items():
            rest = {q: e for q, e in t.items() if q != k}
            miss_tokens.append(abs(sm.hf_sdpa_excess_at(rest, *k) - v))
            miss_length.append(abs(per_length(rest, *k) - v))
        mean_tokens, mean_length = sum(miss_tokens) / len(t), sum(miss_length) / len(t)
        assert mean_tokens < most < mean_length, arch
    gemma = dict(sm.hf_sdpa_excess_table("gemma3_4b", sm.RUN8))
    rest = {q: e for q, e in gemma.items() if q != (24, 4096)}
    assert gemma[(24, 4096)] - sm.hf_sdpa_excess_at(rest, 24, 4096) > 50e-6


def test_grouped_expert_matmul_at_prefill_sizes():
    # transformers' grouped expert matmul runs well below a dense matmul at a few hundred rows per expert and
    # approaches it at thousands (the probe: Mixtral's experts 287 TFLOP/s at 128 rows each, 669 at 2,048)
    mix = sm.arch_model("mixtral_8l")
    small, big = sm.grouped_prefill_rate(mix, 512), sm.grouped_prefill_rate(mix, 8192)
    assert 2.5e14 < small < 3.5e14 < 6e14 < big < sm.matmul_rate(sm.RUN4)
    assert sm.grouped_prefill_rate(mix, 64) == small  # held at the probed end
    with pytest.raises(ValueError, match="n_experts"):
        sm.grouped_prefill_rate(sm.arch_model("llama8b"), 512)


def test_grouped_law_factor_from_the_probe():
    # The kernel probe's grouped expert matmuls (mlcalc/data/measured/h200x4-2026-11-26-serve4, kernels4_gpu2.json,
    # on an NVIDIA H200): Mixtral's two expert products at 2,048 rows an expert took 5.752 ms and 2.953 ms, 1.05x and
    # 1.07x what the one matmul law charges them as grouped kernels; at 128 rows 1.60x and 1.53x
    import json
    import pathlib

    root = pathlib.Path(sm.__file__).parents[1]
    raw = json.loads((root / "mlcalc" / "data" / "measured" / sm.ATTN_RUN / "kernels4_gpu2.json").read_text())
    assert "H200" in raw["device_name"] and sm.ATTN_RUN_CHIP == "H200-SXM"
    mix = memory.model_preset("Mixtral 8x7B")
    for rows in (128, 512, 2048):
        pts = [r for r in raw["grouped_prefill"] if r["experts"] == 8 and r["rows"] == rows * 8]
        secs = sum(r["flops"] / r["flops_per_s"] / serving.gemm_law_s(rows, r["n"], r["k"], "H200-SXM", "bf16", 8)
                   * r["n"] * r["k"] for r in pts)
        assert len(pts) == 2
        assert sm.grouped_law_factor(mix, rows) == pytest.approx(secs / sum(r["n"] * r["k"] for r in pts))
    assert sm.grouped_law_factor(mix, 16) == sm.grouped_law_factor(mix, 128)  # held at the probed end
    assert 1.5 < sm.grouped_law_factor(mix, 128) and 1.0 < sm.grouped_law_factor(mix, 2048) < 1.1
    with pytest.raises(ValueError, match="n_experts"):
        sm.grouped_law_factor(memory.model_preset("Qwen3 235B-A22B"), 512)
    with pytest.raises(ValueError, match="rows"):
        sm.grouped_law_factor(mix, 0)
    with pytest.raises(ValueError, match="model"):
        sm.grouped_evidence(memory.model_preset("Llama-3.1 8B"), "H100-SXM", 1, sm.inflight(
            memory.model_preset("Llama-3.1 8B"), "H100-SXM", 1, 128, 128), 1000.0)


def test_grouped_experts_do_not_explain_the_tp8_mixtral_rows():
    # TensorRT-LLM 0.17's Mixtral 8x7B on 8 H100s (perf-overview.md): the three rows over 25 %, with the routed
    # experts at the book's measured grouped-kernel times, stay over 25 % (+26, +36, +28 %); closing them by the
    # experts alone would need 1.9-2.8x the law, where the probe gives 1.06-1.09x at their rows an expert
    mix = memory.model_preset("Mixtral 8x7B")
    missed = [c for c in sm.check_inflight() if c.model == "Mixtral 8x7B" and abs(c.error) > 0.25]
    assert {(c.source, c.gpus, c.input, c.output) for c in missed} == {
        ("trtllm-0.17-h100-fp8", 8, 128, 128), ("trtllm-0.17-h100-fp8", 8, 128, 2048),
        ("trtllm-0.17-h100-fp8", 8, 2048, 2048)}
    for c in missed:
        _, table, got = sm.inflight_as_stated(c)
        ev = sm.grouped_evidence(mix, table["chip"], c.gpus, got, c.published, table["dtype"])
        assert ev.tokens_per_s / c.published - 1 > 0.25
        assert ev.needed > 1.8 > 1.1 > ev.factor
        assert "ruled out" in c.cause and f"{ev.needed:.2f}x" in c.cause


def test_predictions_written_before_the_serve4_call():
    # scripts/gpu/serve4_predictions.json was committed before the call (the model of that commit, the previous H200
    # call's machine numbers): every point the call measured has its prediction there; what they scored is pinned
    import json
    import pathlib

    pre = json.loads((pathlib.Path(__file__).resolve().parents[2] / "scripts/gpu/serve4_predictions.json").read_text())
    assert pre["machine_from"] == sm.RUN2
    d = sm.run_data(sm.RUN4)
    within = collections.Counter()
    for r in pre["hf_decode"]:
        pt = next(p for p in d["archs"][r["arch"]]["decode"] if (p["batch"], p["context"]) == (r["batch"], r["context"]))
        if r["path"] + "_s" in pt:
            within[r["path"]] += abs(r["predicted_s"] / pt[r["path"] + "_s"] - 1) <= sm.TARGET[r["path"]]
    for r in pre["hf_prefill"]:
        pt = next(p for p in d["archs"][r["arch"]]["prefill"] if (p["batch"], p["prompt"]) == (r["batch"], r["prompt"]))
        within["prefill"] += abs(r["predicted_s"] / pt["prefill_s"] - 1) <= sm.TARGET["eager"]
    tp = {(p["model"], p["tp"], p["batch"], p["context"]): p["graph_s"] for p in d["tp"]["decode"]}
    assert len(pre["tp_decode"]) == len(tp) == 42
    for r in pre["tp_decode"]:
        within["engine"] += abs(r["predicted_s"] / tp[(r["model"], r["tp"], r["batch"], r["context"])] - 1) <= 0.20
    # before: eager 7 of 25 (the previous call's host floor), graph 19 of 23, engine 32 of 42, prefill 11 of 15;
    # after (this call's probes and the fixes they allowed): 25, 23, 40, 13 (test_measured_counts_within_tolerance)
    assert dict(within) == {"eager": 7, "graph": 19, "engine": 32, "prefill": 11}


def test_first_point_of_each_process_in_the_serve4_call():
    # the first decode point of each architecture's process, measured once and kept apart, against its repeat:
    # replayed from a graph within 3 %; eager it moves with the host (the floor probe next to it moves too)
    fp = sm.first_points(sm.RUN4)
    assert len(fp) == 10
    assert all(abs(p.ratio - 1) < 0.03 for p in fp if p.path == "graph")
    assert max(abs(p.ratio - 1) for p in fp if p.path == "eager") > 0.1


#: NVIDIA TensorRT-LLM, docs/source/performance/perf-overview.md at v0.17, 'Throughput Measurements' table (FP8,
#: output tokens/s of the whole system at maximum load): every row the book checks, as the page prints it
V017_ROWS = {
    ("H100-SXM", "Llama-3.1 8B", 1, 128, 128): 28836.77,
    ("H100-SXM", "Llama-3.1 8B", 1, 128, 2048): 21109.38,
    ("H100-SXM", "Llama-3.1 8B", 1, 2048, 128): 3556.73,
    ("H100-SXM", "Llama-3.1 8B", 1, 2048, 2048): 9488.42,
    ("H100-SXM", "Llama-3.1 70B", 2, 128, 128): 6645.12,
    ("H100-SXM", "Llama-3.1 70B", 2, 128, 2048): 6169.58,
    ("H100-SXM", "Llama-3.1 70B", 2, 2048, 128): 772.66,
    ("H100-SXM", "Llama-3.1 70B", 2, 2048, 2048): 2898.16,
    ("H100-SXM", "Llama-3.1 70B", 4, 128, 128): 11127.53,
    ("H100-SXM", "Llama-3.1 70B", 4, 128, 2048): 11511.93,
    ("H100-SXM", "Llama-3.1 70B", 4, 2048, 128): 1302.6,
    ("H100-SXM", "Llama-3.1 70B", 4, 2048, 2048): 5480.03,
    ("H100-SXM", "Llama-3.1 70B", 8, 128, 128): 14730.69,
    ("H100-SXM", "Llama-3.1 70B", 8, 128, 2048): 17061.82,
    ("H100-SXM", "Llama-3.1 70B", 8, 2048, 128): 1923.41,
    ("H100-SXM", "Llama-3.1 70B", 8, 2048, 2048): 8801.95,
    ("H100-SXM", "Mixtral 8x7B", 2, 128, 128): 27451.13,
    ("H100-SXM", "Mixtral 8x7B", 2, 128, 2048): 22830.08,
    ("H100-SXM", "Mixtral 8x7B", 2, 2048, 128): 3333.68,
    ("H100-SXM", "Mixtral 8x7B", 2, 2048, 2048): 10685.85,
    ("H100-SXM", "Mixtral 8x7B", 4, 128, 128): 41068.23,
    ("H100-SXM", "Mixtral 8x7B", 4, 128, 2048): 41164.73,
    ("H100-SXM", "Mixtral 8x7B", 4, 2048, 128): 5234.98,
    ("H100-SXM", "Mixtral 8x7B", 4, 2048, 2048): 19432.08,
    ("H100-SXM", "Mixtral 8x7B", 8, 128, 128): 50849.55,
    ("H100-SXM", "Mixtral 8x7B", 8, 128, 2048): 61607.7,
    ("H100-SXM", "Mixtral 8x7B", 8, 2048, 128): 6988.18,
    ("H100-SXM", "Mixtral 8x7B", 8, 2048, 2048): 30983.35,
    ("H200-SXM", "Llama-3.1 8B", 1, 128, 128): 29526.04,
    ("H200-SXM", "Llama-3.1 8B", 1, 128, 2048): 25398.86,
    ("H200-SXM", "Llama-3.1 8B", 1, 2048, 128): 3794.14,
    ("H200-SXM", "Llama-3.1 8B", 1, 2048, 2048): 11968.5,
    ("H200-SXM", "Llama-3.1 70B", 1, 128, 128): 4020.75,
    ("H200-SXM", "Llama-3.1 70B", 1, 128, 2048): 4165.68,
    ("H200-SXM", "Llama-3.1 70B", 1, 2048, 128): 465.99,
    ("H200-SXM", "Llama-3.1 70B", 1, 2048, 2048): 1913.8,
    ("H200-SXM", "Llama-3.1 70B", 8, 128, 128): 15355.84,
    ("H200-SXM", "Llama-3.1 70B", 8, 128, 2048): 21195.88,
    ("H200-SXM", "Llama-3.1 70B", 8, 2048, 128): 1983.03,
    ("H200-SXM", "Llama-3.1 70B", 8, 2048, 2048): 11142.47,
    ("H200-SXM", "Mixtral 8x7B", 1, 128, 128): 17157.72,
    ("H200-SXM", "Mixtral 8x7B", 1, 128, 2048): 15095.21,
    ("H200-SXM", "Mixtral 8x7B", 1, 2048, 128): 2009.67,
    ("H200-SXM", "Mixtral 8x7B", 1, 2048, 2048): 6940.32,
}

#: DeepGEMM README (deepseek-ai/DeepGEMM, February 2025), 'Performance' tables on H800: (TFLOPS, speedup over its
#: CUTLASS 3.6 baseline) per (layout, groups, m, n, k)
DEEPGEMM_ROWS = {
    ("dense", 1, 64, 2112, 7168): (206, 2.7),
    ("dense", 1, 64, 24576, 1536): (289, 1.7),
    ("dense", 1, 64, 32768, 512): (219, 1.8),
    ("dense", 1, 64, 7168, 16384): (336, 1.4),
    ("dense", 1, 64, 4096, 7168): (287, 1.4),
    ("dense", 1, 64, 7168, 2048): (295, 1.7),
    ("dense", 1, 128, 2112, 7168): (352, 2.4),
    ("dense", 1, 128, 24576, 1536): (535, 1.6),
    ("dense", 1, 128, 32768, 512): (358, 1.5),
    ("dense", 1, 128, 7168, 16384): (645, 1.4),
    ("dense", 1, 128, 4096, 7168): (533, 2.0),
    ("dense", 1, 128, 7168, 2048): (510, 1.7),
    ("dense", 1, 4096, 2112, 7168): (1058, 1.1),
    ("dense", 1, 4096, 24576, 1536): (990, 1.0),
    ("dense", 1, 4096, 32768, 512): (590, 1.0),
    ("dense", 1, 4096, 7168, 16384): (1358, 1.2),
    ("dense", 1, 4096, 4096, 7168): (1304, 1.1),
    ("dense", 1, 4096, 7168, 2048): (1025, 1.1),
    ("grouped contiguous", 4, 8192, 4096, 7168): (1297, 1.2),
    ("grouped contiguous", 4, 8192, 7168, 2048): (1099, 1.2),
    ("grouped contiguous", 8, 4096, 4096, 7168): (1288, 1.2),
    ("grouped contiguous", 8, 4096, 7168, 2048): (1093, 1.1),
    ("grouped masked", 1, 1024, 4096, 7168): (1233, 1.2),
    ("grouped masked", 1, 1024, 7168, 2048): (925, 1.2),
    ("grouped masked", 2, 512, 4096, 7168): (1040, 1.2),
    ("grouped masked", 2, 512, 7168, 2048): (916, 1.2),
    ("grouped masked", 4, 256, 4096, 7168): (932, 1.1),
    ("grouped masked", 4, 256, 7168, 2048): (815, 1.2),
}


def test_every_published_row_is_the_source_s_figure():
    got = {(c.chip, c.model, c.gpus, c.input, c.output): c.published for c in sm.check_inflight()
           if c.source.startswith("trtllm-0.17")}
    assert got == V017_ROWS
    table = sm.published()["fp8_gemm"]["rows"]
    assert {(r["layout"], r["groups"], r["m"], r["n"], r["k"]): (r["tflops"], r["speedup"]) for r in table} == DEEPGEMM_ROWS


def test_serve5_engine_matmuls_as_the_engine_runs_them():
    # the serve5 call (one H200): the engine's x @ W with W stored (in, out) against F.linear with W stored (out, in),
    # every engine matrix of Llama 3 8B / 70B and their tp 2 / 4 shards, batch 1-128, distinct copies in a CUDA graph
    pts = [p for p in sm._serve5("matmul")["points"] if "s" in p]
    assert len(pts) == 24 * 2 * 5 and sm._serve5("matmul")["env"]["device_name"] == "NVIDIA H200"
    hw = {(p["k"], p["n"], p["batch"]): p["s"] for p in pts if p["layout"] == "hw"}
    lin = {(p["k"], p["n"], p["batch"]): p["s"] for p in pts if p["layout"] == "linear"}
    # the fused gate-and-up matrix of the 70B layer (tp 1 and its tp 2 shard) at 128 rows: x @ W takes over 1.5x
    # F.linear's time (cuBLAS picks another kernel); at 1-32 rows the two layouts are within 10 %
    for k, n in ((8192, 57344), (8192, 28672)):
        assert hw[(k, n, 128)] > 1.5 * lin[(k, n, 128)]
        assert all(abs(hw[(k, n, b)] / lin[(k, n, b)] - 1) < 0.10 for b in (1, 8, 32))
    # the table itself: exact at a probed batch, between its neighbours elsewhere, carried to another read rate
    assert sm.engine_matmul_s(8192, 57344, 128) == hw[(8192, 57344, 128)]
    assert hw[(8192, 57344, 64)] < sm.engine_matmul_s(8192, 57344, 100) < hw[(8192, 57344, 128)]
    assert sm.engine_matmul_s(8192, 57344, 512) == hw[(8192, 57344, 128)]  # held at the probed end
    bw = sm.run5_read_bandwidth()
    assert sm.engine_matmul_s(8192, 8192, 8, bw / 2) == pytest.approx(2 * hw[(8192, 8192, 8)])
    with pytest.raises(ValueError, match="k, n"):
        sm.engine_matmul_s(8192, 8193, 8)
    with pytest.raises(ValueError, match="layout"):
        sm.engine_matmul_s(8192, 8192, 8, layout="nt")
    # the six 70B points at batch 128 on 1 and 2 GPUs, short by 20-23 % with the law, are within 20 % now
    for run in sm.RUNS:
        for c in sm.check_tp_decode(run):
            if c.arch == "llama70b_20l" and c.batch == 128 and c.tp <= 2:
                assert abs(c.error) <= 0.12


def test_serve5_engine_steps_and_profile():
    # the same call's engine steps: tp 1 and one GPU's shard of tp 2 / 4 (no all-reduce), replayed from a graph:
    # all 12 within 10 %, with the matmuls as the engine runs them and its other kernels as the serve5b call probed
    # them at full width (with the tiny model's floor for those: 11 of 12, 6-20 % short)
    checks = sm.check_run5_decode()
    assert len(checks) == 12 and all(abs(c.error) <= 0.10 for c in checks)
    assert all(c.card == "NVIDIA H200" for c in checks)
    lo, hi, floor = sm.engine_other_kernels_us()
    assert floor < lo < hi < 2.5 * floor
    # the probe (a separate call, the layer without its matmuls and attention) gives what the profiled steps spent in
    # those kernels, per layer, within 15 %; it grows with the batch where the tiny model's floor is one figure
    for p in sm._serve5("engine")["decode"]:
        other = sum(k["us"] for k in p["profile_graph"]["kernels"]
                    if not k["kernel"].startswith(("nvjet", "cudnn", "void cublasLt")))
        probed = sm.engine_small_kernels_s(sm.tp_model(p["model"]), p["batch"], p["tp_shard"])
        assert other / p["cfg"]["layers"] * 1e-6 == pytest.approx(probed, rel=0.15)
    m70 = sm.tp_model("llama70b_20l")
    assert sm.engine_small_kernels_s(m70, 1) < sm.engine_small_kernels_s(m70, 32) < sm.engine_small_kernels_s(m70, 128)
    assert sm.engine_small_kernels_s(m70, 512) == sm.engine_small_kernels_s(m70, 128)  # held at the probed end
    with pytest.raises(ValueError, match="tp"):
        sm.engine_small_kernels_s(m70, 8, tp=8)
    # every engine point of every call is within 13 % now; the load test's decode steps -8..-13 % (LOAD_MISS_CAUSE)
    for run in sm.RUNS:
        assert all(abs(c.error) <= 0.13 for c in sm.check_tp_decode(run) + sm.check_load_steps(run))
        assert all(-0.13 <= c.error <= -0.08 for c in sm.check_load_steps(run))
    # the profile accounts for the step: the GPU is busy 90-100 % of the replayed step's time
    for p in sm._serve5("engine")["decode"]:
        assert 0.9 < p["profile_graph"]["gpu_busy_us"] * 1e-6 / p["graph_s"] <= 1.0
    # the 70B gate-and-up at batch 128 in the engine's own step takes what the matmul probe timed for x @ W (10 %)
    p = next(p for p in sm._serve5("engine")["decode"]
             if (p["model"], p["tp_shard"], p["batch"], p["context"]) == ("llama70b_20l", 1, 128, 2048))
    op = next(o for o in p["profile_eager"]["ops"] if o["op"] == "aten::mm" and "57344" in o["shapes"])
    assert op["device_us"] / op["count"] * 1e-6 == pytest.approx(sm.engine_matmul_s(8192, 57344, 128), rel=0.10)


def test_predictions_written_before_the_serve5_call():
    # scripts/gpu/serve5_predictions.json was committed before the call (the model of that commit, the serve4 call's
    # machine numbers): the engine steps 9 of 12 within 20 % (misses: the 70B layer at batch 128, -21..-26 %),
    # DeepSeek-V2-Lite's prefill 1 of 6 within 25 % (-28..-34 %, the known miss), the engine matmuls 110 of 120
    import json
    import pathlib

    pre = json.loads((pathlib.Path(__file__).resolve().parents[2] / "scripts/gpu/serve5_predictions.json").read_text())
    assert pre["machine_from"] == sm.RUN4
    eng = {(p["model"], p["tp_shard"], p["batch"], p["context"]): p["graph_s"] for p in sm._serve5("engine")["decode"]}
    e = [r["predicted_s"] / eng[(r["model"], r["tp_shard"], r["batch"], r["context"])] - 1 for r in pre["engine_decode"]]
    assert len(e) == 12 and sum(abs(x) <= 0.20 for x in e) == 9
    mla = {(p["batch"], p["prompt"]): p["prefill_s"] for p in sm._serve5("mla")["prefill"]}
    e = [r["predicted_s"] / mla[(r["batch"], r["prompt"])] - 1 for r in pre["mla_prefill"]]
    assert len(e) == 6 and sum(abs(x) <= 0.25 for x in e) == 1
    mm = {(p["k"], p["n"], p["batch"]): p["s"] for p in sm._serve5("matmul")["points"] if p["layout"] == "hw"}
    e = [r["predicted_s"] / mm[(r["k"], r["n"], r["batch"])] - 1 for r in pre["matmul"]]
    assert len(e) == 120 and sum(abs(x) <= 0.20 for x in e) == 110


def test_serve5_moe_prefill_expert_rows():
    # the serve5 call located DeepSeek-V2-Lite's missing prefill time (27-33 % short): the profiled grouped matmuls
    # take what the model charges, SDPA too; the element-wise passes over the k sorted expert rows
    # (grouped_mm_experts_forward: gathers, masks, the gate, the fp32 routing product and sum) run at about half the
    # read rate (PyTorch's non-vectorised kernel: broadcast masks and weights, a strided half, a dtype change)
    rate = sm.expert_rows_rate()
    assert 0.4 * sm.run5_read_bandwidth() < rate < 0.6 * sm.run5_read_bandwidth()
    dsv2 = sm.arch_model("dsv2lite_8l")
    assert sm.expert_rows_bytes_per_token(sm.arch_model("llama8b")) == 0.0
    for p in sm._serve5("mla")["prefill"]:
        pr = sm.predict_hf_prefill("dsv2lite_8l", p["batch"], p["prompt"], sm.RUN4)
        grouped = sum(o["self_device_us"] for o in p["profile"]["ops"] if o["op"] == "aten::_grouped_mm") * 1e-6
        routed = dsv2.n_moe_layers * dsv2.experts_per_token * dsv2.mlp_params_per_expert()
        charged = 2.0 * routed * p["batch"] * p["prompt"] / sm.grouped_prefill_rate(dsv2, p["batch"] * p["prompt"])
        assert grouped == pytest.approx(charged, rel=0.20)
        sdpa = sum(o["self_device_us"] for o in p["profile"]["ops"] if "attention_forward" in o["op"]) * 1e-6
        assert sdpa == pytest.approx(pr.attention_s, rel=0.25)
        # the GPU parts now land within 20 % of the profiled GPU busy time at every point
        assert abs((pr.matmul_s + pr.attention_s + pr.elementwise_s) / (p["profile"]["gpu_busy_us"] * 1e-6) - 1) < 0.20
    # Mixtral's prefill, which no part of the rate came from (its k = 2 rows of width 4,096 / 14,336), follows:
    # every compute-bound point of the three earlier calls is within 16 % (was 17-24 % short)
    for run in sm.RUNS:
        for c in sm.check_hf_prefill(run):
            if c.arch == "mixtral_8l":
                assert abs(c.error) <= 0.25 and (c.bound != "compute" or -0.16 < c.error < 0)
            if c.arch == "dsv2lite_8l" and abs(c.error) > c.target:  # each remaining miss states its host cause
                assert "host" in sm.miss_cause(c, run)


def test_predictions_written_before_the_serve5b_call():
    # scripts/gpu/serve5b_predictions.json (committed before the call): the model charged the engine's other kernels
    # the tiny model's figure at every width and batch; the probe found it within 20 % at 1-8 rows (14 of 30 in
    # all) and short at 32 rows and more, by up to half at 128
    import json
    import pathlib

    pre = json.loads((pathlib.Path(__file__).resolve().parents[2] / "scripts/gpu/serve5b_predictions.json").read_text())
    got = {(p["model"], p["tp_shard"], p["batch"]): p["per_layer_s"] for p in sm._serve5("small")["points"]}
    e = {(r["model"], r["tp_shard"], r["batch"]): r["predicted_s"] / got[(r["model"], r["tp_shard"], r["batch"])] - 1
         for r in pre["small"]}
    assert len(e) == 30 and sum(abs(x) <= 0.20 for x in e.values()) == 14
    assert all(abs(x) <= 0.20 for (m, t, b), x in e.items() if b <= 8)
    assert all(x < 0 for (m, t, b), x in e.items() if b >= 32) and min(e.values()) < -0.5


def test_decode_step_takes_a_layers_matmul_time_as_measured():
    # serving.decode_step(matmul_layer_s=...): the layers' weight matmuls at a time given (a program's own kernels as
    # timed) instead of the law; the same seconds as the law's give the same step, a longer time a longer step
    model, law = sm.tp_model("llama70b_20l"), serving.chip_matmul_law("H200-SXM")
    bw, rate = serving.read_bandwidth("H200-SXM"), serving.matmul_rate("H200-SXM")
    base = serving.decode_step(model, 128, 2048, bw, rate, matmul_law=law, fused=True)
    same = serving.decode_step(model, 128, 2048, bw, rate, matmul_law=law, fused=True,
                               matmul_layer_s=serving.kernel_weight_s(model, 128, law, True)[0])
    assert same.step_s == pytest.approx(base.step_s)
    slow = serving.decode_step(model, 128, 2048, bw, rate, matmul_law=law, fused=True,
                               matmul_layer_s=sm.engine_layer_matmul_s(model, 128, 1, bw))
    assert slow.step_s > base.step_s and slow.outside_s == base.outside_s  # the output projection keeps the law
    with pytest.raises(ValueError, match="matmul_layer_s"):
        serving.decode_step(model, 1, 64, bw, rate, matmul_layer_s=-1.0)


def test_serve7_call_measured_the_eager_misses_again():
    # the serve7 call (one H200): the 23 eager decode and 6 prefill configurations that missed in the first two calls,
    # with passing controls, each timing group (5 a point) next to the host probe, one process per architecture:
    # every decode point within 25 % eager (28 of 28) and 20 % replayed from a graph (24 of 24; Gemma 3 captures no
    # graph once the sliding cache rolls), prefill 10 of 11 (Gemma 3 1 x 512: the host's pace moved within the point)
    assert sm.card(sm.RUN7) == "NVIDIA H200" and sm.RUN7 in sm.RUNS
    c7 = _counts(sm.RUN7)
    assert c7[("decode", "eager", "transformers", True)] == 28 and ("decode", "eager", "transformers", False) not in c7
    assert c7[("decode", "graph", "transformers", True)] == 24 and ("decode", "graph", "transformers", False) not in c7
    assert c7[("prefill", "eager", "transformers", True)] == 10
    miss = [c for c in sm.all_checks(sm.RUN7) if abs(c.error) > c.target]
    assert [(c.arch, c.what, c.batch, c.context) for c in miss] == [("gemma3_4b", "prefill", 1, 512)]
    assert sm.miss_cause(miss[0], sm.RUN7).startswith("host pace moved within the point")
    # every point carried its host probe: before each of the 5 groups and after the last
    for rec in sm.run_data(sm.RUN7)["archs"].values():
        for p in rec["decode"]:
            assert len(p["eager"]["groups_in_order_s"]) == 5 and len(p["eager"]["host_probe_s"]) == 6
        for p in rec["prefill"]:
            assert len(p["timing"]["host_probe_s"]) == 6
    # the floor probe repeated in the same call (start, middle, end): the host's spread is recorded, 61 % (26.8 to
    # 43.3 ms for the 32-layer step) while its graph replay stayed within 1 %
    sp = sm.floor_spread(sm.RUN7)
    assert sp.n_probes == 3 and 0.5 < sp.spread < 0.7 and sp.graph_max_s / sp.graph_min_s < 1.01
    # and the host probe next to every timing group: 324 samples, 5.9 to 18.0 ms (3.0 x; the serve4 call 2.2 x)
    hs = sm.host_probe_spread(sm.RUN7)
    assert hs.n_samples == 324 and 0.0055 < hs.min_s < 0.0065 and 0.017 < hs.max_s < 0.019 and 2.9 < hs.ratio < 3.1
    assert 2.1 < sm.host_probe_spread(sm.RUN4).ratio < 2.4 and sm.host_probe_spread(sm.RUN) is None
    # the first point of each process, kept apart: eager 0.64-1.51 x its repeat (both ways: the host), graph within 7 %
    fp = sm.first_points(sm.RUN7)
    assert len(fp) == 10
    assert all(abs(f.ratio - 1) < 0.07 for f in fp if f.path == "graph")
    eager = [f.ratio for f in fp if f.path == "eager"]
    assert min(eager) < 0.7 and max(eager) > 1.4


def test_serve7_remeasured_every_old_eager_miss_within_tolerance():
    # each miss of the first two calls keeps its record and its cause (host floor: no probe next to the point); the
    # same configuration measured again with the probe next to it is within the tolerance, and the cause says so
    old = [(run, c) for run in (sm.RUN, sm.RUN2) for c in sm.check_hf_decode(run) + sm.check_hf_prefill(run)
           if c.path == "eager" and abs(c.error) > c.target]
    assert len(old) == 30  # 23 decode, 7 prefill (the first call's DeepSeek-V2-Lite 8 x 512 prefill: host and GPU even)
    for run, c in old:
        again = sm.measured_again(c)
        assert again is not None and abs(again.error) <= again.target, c
        cause = sm.miss_cause(c, run)
        assert "host" in cause and "measured again in the serve7 call" in cause
    # per architecture and one-signed within a call, but the sign follows the host, not the model: the same code and
    # point under-predicted in the first call and over-predicted in the second (Gemma 3 at batch 1 x 512)
    sign = {(run, c.arch, c.batch, c.context): c.error for run, c in old if c.what == "decode"}
    assert sign[(sm.RUN, "gemma3_4b", 1, 512)] < -0.25 and sign[(sm.RUN2, "gemma3_4b", 1, 512)] > 0.25
    # the tiny models that set a floor were themselves timed at one pace: Gemma 3's 8-layer model ran at 1.9 x its
    # 2-layer model's time per operation in the second call (an inflated per-layer floor: +80/+90 %), at 1.2 x in
    # the first (-30..-44 %)
    g2 = sm.host_evidence(next(c for run, c in old if run == sm.RUN2 and c.arch == "gemma3_4b"), sm.RUN2)
    g1 = sm.host_evidence(next(c for run, c in old if run == sm.RUN and c.arch == "gemma3_4b"), sm.RUN)
    assert g2.tiny_us_per_op[1] / g2.tiny_us_per_op[0] > 1.8 and g1.tiny_us_per_op[1] / g1.tiny_us_per_op[0] < 1.3


def test_serve8_measured_every_eager_point_in_one_protocol():
    # the serve8 call (one H200): every eager decode and prefill point of the earlier calls (65 + 40), one process per
    # architecture pinned to one vCPU, the host probe beside each of 5 timing groups: the eager records are its points,
    # decode 65 of 65 within 25 %, prefill 36 of 36 (4 prefill points cut by their process's time bound), their graph
    # replays 56 of 56 within 20 %
    assert sm.card(sm.RUN8) == "NVIDIA H200" and sm.EAGER_RUN == sm.RUN8 in sm.RUNS
    c8 = _counts(sm.RUN8)
    assert c8[("decode", "eager", "transformers", True)] == 65 and ("decode", "eager", "transformers", False) not in c8
    assert c8[("decode", "graph", "transformers", True)] == 56 and ("decode", "graph", "transformers", False) not in c8
    assert c8[("prefill", "eager", "transformers", True)] == 36 and ("prefill", "eager", "transformers", False) not in c8
    assert len(sm.eager_checks("decode")) == 65 and len(sm.eager_checks("prefill")) == 36
    # the same points as the earlier calls: the first calls' 8 (MHA's own 8) and the serve4 call's 5 per architecture
    for arch in sm.ARCHS:
        pts = {(c.batch, c.context) for c in sm.eager_checks("decode") if c.arch == arch}
        old = {(c.batch, c.context) for run in (sm.RUN, sm.RUN4) for c in sm.check_hf_decode(run)
               if c.arch == arch and c.path == "eager"}
        assert pts == old, arch
    skipped = [(a, p["batch"], p["prompt"]) for a, r in sm.run_data(sm.RUN8)["archs"].items() for p in r["prefill"]
               if "prefill_s" not in p]
    assert sorted(skipped) == [("dsv2lite_8l", 2, 4096), ("llama8b", 1, 4096), ("llama8b", 2, 4096), ("mha7b", 2, 4096)]
    for rec in sm.run_data(sm.RUN8)["archs"].values():
        for p in rec["decode"]:
            assert len(p["eager"]["groups_in_order_s"]) == 5 and len(p["eager"]["host_probe_s"]) == 6
        for p in rec["prefill"]:
            assert "prefill_s" not in p or len(p["timing"]["host_probe_s"]) == 6
    # each process pinned to one vCPU, the floor probes too
    for n in sm.run_data(sm.RUN8)["names"]:
        if n.startswith(("arch_", "probe_")):
            assert len(sm._read(n, sm.RUN8)["env"]["cpu_affinity"]) == 1, n
    # the floor probe at the start, middle and end: 42 % spread (31.8-45.2 ms), its graph replay within 1 %; the host
    # probe beside every group: 696 samples, 5.9 to 19.4 ms (3.3 x: pinning did not narrow it, serve7 unpinned 3.0 x)
    sp = sm.floor_spread(sm.RUN8)
    assert sp.n_probes == 3 and 0.35 < sp.spread < 0.5 and sp.graph_max_s / sp.graph_min_s < 1.01
    hs = sm.host_probe_spread(sm.RUN8)
    assert hs.n_samples == 696 and 3.1 < hs.ratio < 3.5 and hs.ratio > sm.host_probe_spread(sm.RUN7).ratio
    # the pinned vCPU's pace moved within each process (its meter's 5th percentile 0.40-0.56 x the scan's pace) and
    # the host probe followed it: log probe time against log pace, correlation -0.83 to -0.94
    pace = sm.host_pace()
    assert len(pace) == 8
    assert all(0.35 < h.meter_p05 / h.scan_chosen < 0.6 and h.scan_chosen > 1.4 * h.scan_slowest for h in pace)
    arch = [h for h in pace if h.probe_samples]
    assert len(arch) == 5 and all(h.corr < -0.8 and h.probe_samples >= 130 for h in arch)
    # the first point of each process, kept apart: eager 0.87-1.44 x its repeat, graph within 7 %
    fp = sm.first_points(sm.RUN8)
    assert len(fp) == 10 and all(abs(f.ratio - 1) < 0.08 for f in fp if f.path == "graph")
    eager = [f.ratio for f in fp if f.path == "eager"]
    assert min(eager) < 0.9 and max(eager) > 1.4


def test_eager_history_keeps_each_calls_score():
    # the earlier calls' eager points are history, each with its own score and how it measured the host: the first two
    # calls (no probe beside the points) 30 + 27 of 80 decode and 22 + 21 of 50 prefill; serve4 and serve7 (a probe
    # beside every group) 25 + 28 of 53 and 15 + 10 of 26; the record (serve8) 65 of 65 and 36 of 36
    got = {s.run: (s.decode_within, s.decode_n, s.prefill_within, s.prefill_n, s.record) for s in sm.eager_scores()}
    assert got == {sm.RUN: (30, 40, 22, 25, False), sm.RUN2: (27, 40, 21, 25, False), sm.RUN4: (25, 25, 15, 15, False),
                   sm.RUN7: (28, 28, 10, 11, False), sm.RUN8: (65, 65, 36, 36, True)}
    assert all("no host probe" in sm.EAGER_PROTOCOL[r] for r in (sm.RUN, sm.RUN2))
    assert all("probe beside every timing group" in sm.EAGER_PROTOCOL[r] for r in (sm.RUN4, sm.RUN7, sm.RUN8))
    # every miss of the history was measured again in the serve8 call, and its cause gives that measurement
    for run in (sm.RUN, sm.RUN2, sm.RUN7):
        for c in sm.check_hf_decode(run) + sm.check_hf_prefill(run):
            if c.path == "eager" and abs(c.error) > c.target:
                again = sm.measured_again(c, sm.RUN8)
                assert again is not None and abs(again.error) <= again.target, c
                assert "in the serve8 call" in sm.miss_cause(c, run)
    with pytest.raises(ValueError, match="run"):
        sm.measured_again(sm.eager_checks("decode")[0], sm.RUN4)


def test_predictions_written_before_the_serve8_call():
    # scripts/gpu/serve8_predictions.json was committed before the call: serve7's rule (the serve4 call's tiny models
    # in probe units, its machine numbers) as a function of the probe beside each point; scored with the probes the
    # call then timed: decode 65 of 65 within 25 %, prefill 36 of 36; with the serve7 call's tiny models the same
    import json
    import pathlib
    import sys

    root = pathlib.Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "scripts" / "gpu"))
    pytest.importorskip("torch")
    import predict_serve8 as ps

    pre = json.loads((root / "scripts/gpu/serve8_predictions.json").read_text())
    assert pre["machine_from"] == {"tiny": sm.RUN4, "tiny7": sm.RUN7}
    assert len(pre["decode"]) == 65 and len(pre["prefill"]) == 40
    archs = sm.run_data(sm.RUN8)["archs"]
    score = {}
    for col in ("tiny", "tiny7"):
        dec, pf = [], []
        for p in pre["decode"]:
            pt = next(x for x in archs[p["arch"]]["decode"] if (x["batch"], x["context"]) == (p["batch"], p["context"]))
            dec.append(ps.decode_s(p[col], sm.point_host_s(pt["eager"])) / pt["eager_s"] - 1)
        for p in pre["prefill"]:
            pt = next(x for x in archs[p["arch"]]["prefill"] if (x["batch"], x["prompt"]) == (p["batch"], p["prompt"]))
            if "prefill_s" in pt:
                pf.append(ps.prefill_s(p[col], sm.point_host_s(pt["timing"])) / pt["prefill_s"] - 1)
        score[col] = (len(dec), sum(abs(e) <= 0.25 for e in dec), len(pf), sum(abs(e) <= 0.25 for e in pf))
    assert score == {"tiny": (65, 65, 36, 36), "tiny7": (65, 65, 36, 36)}


def test_eager_op_counts_are_the_programs():
    # transformers 5.17 dispatches the same ATen operations on the CPU (scripts/gpu/count_eager_ops.py) as every GPU
    # call counted on its tiny models: the per-architecture part of the floor is the program's operation count
    import json
    import pathlib

    cpu = json.loads((pathlib.Path(sm.__file__).parent / "data" / "measured" / sm.RUN7 / "cpu_eager_ops.json").read_text())
    assert cpu["transformers"] == "5.17.0"
    for run in sm.RUNS:
        for arch in sm.ARCHS:
            t = {x["n_layers"]: x["aten_ops"] for x in sm.run_data(run)["archs"][arch]["tiny"]}
            assert (t[2], t[8]) == (cpu["archs"][arch]["aten_ops_2_layers"], cpu["archs"][arch]["aten_ops_8_layers"])
            assert sm.run_data(run)["archs"][arch]["attn_implementation"] == cpu["archs"][arch]["attn_implementation"]
    # Gemma 3's extra norms (4 RMSNorms and q/k norms: 6 pow/rsqrt/mean a layer against Llama's 2), MHA without
    # repeat_kv (57 against 63), MLA + 64 experts 119, Mixtral's routing 100
    per = {a: cpu["archs"][a]["per_layer"] for a in sm.ARCHS}
    assert per["llama8b"] == 63 and per["mha7b"] == 57 and per["mixtral_8l"] == 100 and per["dsv2lite_8l"] == 119
    assert cpu["archs"]["gemma3_4b"]["per_layer_by_op"]["rsqrt"] == 6 == 3 * cpu["archs"]["llama8b"]["per_layer_by_op"]["rsqrt"]
    assert sm.op_counts("llama8b", sm.RUN7) == (56.0, 63.0) and sm.step_ops("llama8b", sm.RUN7) == 56 + 32 * 63


def test_predictions_written_before_the_serve7_call():
    # scripts/gpu/serve7_predictions.json was committed before the call: each point's step as a function of the host
    # probe timed next to it (the serve4 call's tiny models in probe units, its machine numbers); scored with the
    # probes the call then timed: decode 28 of 28 within 25 %, prefill 10 of 11 (Gemma 3 1 x 512 prefill +28 %).
    # The operation-count rule written beside it (ATen operations x the probe's time per operation): 27 and 10.
    import json
    import pathlib
    import sys

    root = pathlib.Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "scripts" / "gpu"))
    pytest.importorskip("torch")
    import predict_serve7 as ps

    pre = json.loads((root / "scripts/gpu/serve7_predictions.json").read_text())
    assert pre["machine_from"] == sm.RUN4
    archs = sm.run_data(sm.RUN7)["archs"]
    score = {}
    for rule in ("tiny", "ops"):
        dec = []
        for p in pre["decode"]:
            pt = next(x for x in archs[p["arch"]]["decode"] if (x["batch"], x["context"]) == (p["batch"], p["context"]))
            dec.append(ps.decode_s(p, sm.point_host_s(pt["eager"]), rule) / pt["eager_s"] - 1)
        pf = []
        for p in pre["prefill"]:
            pt = next(x for x in archs[p["arch"]]["prefill"] if (x["batch"], x["prompt"]) == (p["batch"], p["prompt"]))
            pf.append(ps.prefill_s(p, sm.point_host_s(pt["timing"]), rule) / pt["prefill_s"] - 1)
        score[rule] = (len(dec), sum(abs(e) <= 0.25 for e in dec), len(pf), sum(abs(e) <= 0.25 for e in pf))
    assert score == {"tiny": (28, 28, 11, 10), "ops": (28, 27, 11, 10)}


def test_decode_first_point_of_a_process():
    # the two misses of the decode family (H100, 1B and 8B at batch 1, 545 positions: +26 %, +103 %) are the first
    # point of their process, in a run made before bench_decode.py kept a warm-up point apart; the serve7 call
    # measured it apart: the first point 1.2-1.3 x the same point again (the H100's 8B: 1.7 x its later 4,129-position
    # point), and predicted so before the call (>= 1.15 x)
    for key in ("1b", "8b"):
        assert 1.15 <= serving.first_point_ratio(key) < 1.35
    misses = [(run, c) for run in serving.DECODE_RUNS for c in serving.check_decode(run) if abs(c.error) > 0.25]
    assert [(run, c.model, c.batch, c.context) for run, c in misses] == [
        ("h100-2026-11-26-decode", "1b", 1, 545), ("h100-2026-11-26-decode", "8b", 1, 545)]
    for run, c in misses:
        assert serving.decode_miss_cause(c, run).startswith("the first point of its process")
    assert all(serving.decode_miss_cause(c, run) == "" for run in serving.DECODE_RUNS for c in serving.check_decode(run)
               if abs(c.error) <= 0.25)
    with pytest.raises(ValueError, match="model"):
        serving.first_point_ratio("70b")


def test_sglang_concurrency_rows_from_the_cookbook():
    # SGLang cookbook, Qwen3 page (8 x B200, TP 8, SGLang 0.5.6): bench_serving at --max-concurrency 1, 16, 64/100;
    # the page's totals give the mean lengths and its "Concurrency" the requests in flight
    checks = sm.check_concurrency()
    assert len(checks) == 9 and {c.engine for c in checks} == {"SGLang 0.5.6"} and {c.gpus for c in checks} == {8}
    first = next(c for c in checks if c.concurrency == 1 and c.output < 1000)
    assert (first.input, first.output, first.batch) == (610, 421, 1) and first.published_s == pytest.approx(0.01012)
    # at concurrency 1 the time per output token is SGLang's decode step alone, at batch 16 the others' prefills join it
    m = memory.model_preset("Qwen3 235B-A22B")
    assert first.predicted_s == sm.sglang_decode_step(m, "B200", 1, 610 + 210, 8).step_s
    c16 = next(c for c in checks if c.concurrency == 16 and c.input < 1000 and c.output < 1000)
    step = sm.sglang_decode_step(m, "B200", c16.batch, c16.input + c16.output // 2, 8).step_s
    assert c16.predicted_s > step
    for c in checks:
        assert math.isfinite(c.predicted_s) and c.predicted_s > 0
        assert bool(c.cause) == (abs(c.error) > 0.25)
    # every row within 25 % (SGLang's step: custom all-reduce, matmul kernels, grouped fused-MoE call); the planner's
    # "cuda-graph" step (NCCL's law for the all-reduces, every weight at the read rate) had 5 of 9, the four at
    # concurrency 1 and one at 16 over by 26-37 %
    assert sum(abs(c.error) <= 0.25 for c in checks) == 9
    planner = [serving.predict_decode(m, "B200", c.batch, c.input + c.output // 2, "cuda-graph", 8).step_s
               / c.published_s - 1 for c in checks if c.batch == 1]
    assert len(planner) == 3 and all(e > 0.25 for e in planner)
    with pytest.raises(ValueError, match="output"):
        sm.concurrent_tpot_s(m, "B200", 8, 4, 100, 1)


def test_sglang_decode_step_against_the_cookbook():
    # SGLang cookbook, Qwen3 page (sgl-cookbook docs/autoregressive/Qwen/Qwen3.md @230dd7f; 8 x B200, TP 8, SGLang
    # 0.5.6, bf16): 10.12 ms per output token at concurrency 1, 610 tokens in and 421 out (10.23 ms at 610 / 4,445,
    # 10.31 at 4,194 / 421); one request in flight, so each later token waits one decode step of batch 1
    m = memory.model_preset("Qwen3 235B-A22B")
    got = sm.sglang_decode_step(m, "B200", 1, 610 + 421 // 2, 8)
    assert abs(got.step_s / 10.12e-3 - 1) <= 0.25
    # its all-reduces: two a layer, 8 KiB of bf16 each, SGLang's custom kernel (vLLM's, as sgl-kernel 0.3.18 ships
    # it) at SGLang PR #2904's 'vllm' table, 8 x H100: 2,048 float32 elements lie between 512 (10.1 us) and 4,096 (9.3)
    ar = sm.sglang_allreduce_s(m, "B200", 1, 8)
    each = ar / (2 * m.n_layers)
    assert each == pytest.approx(10.1e-6 + (9.3e-6 - 10.1e-6) * (2048 - 512) / (4096 - 512))
    assert each < serving.comm_s(m, "B200", 1, 8) / (2 * m.n_layers) / 5  # NCCL's law: 56 us
    # the matmuls kernel by kernel, the routed experts as the fused-MoE call's two grouped kernels: per layer at least
    # what the planner's read-rate step charges
    plain = serving.predict_decode(m, "B200", 1, 820, "cuda-graph", 8)
    assert got.layer_s > plain.layer_s
    # the kernels: qkv, out, router, then the experts (gate-and-up, down) grouped; a dense model's are never grouped
    ks = serving.decode_kernels(m, 1, True, 8, 1, 2.0, grouped_experts=True)
    assert [g for *_, g in ks] == [False, False, False, True, True]
    assert [g for *_, g in serving.decode_kernels(m, 1, True, 8)] == [False] * 5
    dense = memory.model_preset("Llama-3.1 8B")
    assert serving.decode_kernels(dense, 8, True, 1, 1, 2.0, True) == serving.decode_kernels(dense, 8, True, 1)
    # beyond the custom kernel's reach (8 MiB, or a GPU count it does not serve) SGLang calls NCCL
    assert sm.SGLANG_CUSTOM_AR_MAX_BYTES == 8 * 2**20 and sm.SGLANG_CUSTOM_AR_GPUS == (2, 4, 6, 8)
    big = 1024  # 1,024 x 4,096 x 2 bytes = 8 MiB
    assert sm.sglang_allreduce_s(m, "B200", big, 8) == serving.comm_s(m, "B200", big, 8)
    assert sm.sglang_allreduce_s(m, "B200", 4, 3) == serving.comm_s(m, "B200", 4, 3)
    assert sm.sglang_allreduce_s(m, "B200", 4, 1) == 0.0
    for bad in ({"batch": 0}, {"context": -1}, {"tp": 0}):
        kw = {"batch": 1, "context": 820, "tp": 8} | bad
        with pytest.raises(ValueError, match=next(iter(bad))):
            sm.sglang_decode_step(m, "B200", **kw)
    with pytest.raises(ValueError, match="tokens"):
        sm.sglang_allreduce_s(m, "B200", 0, 8)


def test_published_custom_allreduce_table():
    # SGLang PR #2904 (https://github.com/sgl-project/sglang/pull/2904), 'unit test performance in H100 (without cuda
    # graph)', table 'custom allreduce': tp 2/4/8, data size 512 -> 0.0037/0.0048/0.0059 ms, 4096 ->
    # 0.0039/0.0037/0.0057, 32768 -> 0.0045/0.0048/0.0078, 1048576 -> 0.0199/0.0311/0.0338; table 'vllm': tp 8,
    # 32768 -> 0.0118 ms. Data size = elements of the test's float32 tensor (sgl-kernel/tests/test_trt_reduce.py).
    b = sm.ALLREDUCE_TABLE_BYTES_PER_ELEMENT
    assert b == 4
    assert sm.published_allreduce_s(512 * b, 2) == pytest.approx(3.7e-6)
    assert sm.published_allreduce_s(4096 * b, 4) == pytest.approx(3.7e-6)
    assert sm.published_allreduce_s(32768 * b, 8) == pytest.approx(7.8e-6)
    assert sm.published_allreduce_s(1048576 * b, 8) == pytest.approx(33.8e-6)
    assert sm.published_allreduce_s(32768 * b, 8, kernel="vllm") == pytest.approx(11.8e-6)
    # linear between published sizes, the smallest size's figure below it
    mid = sm.published_allreduce_s((4096 + 32768) / 2 * b, 8)
    assert mid == pytest.approx((5.7e-6 + 7.8e-6) / 2)
    assert sm.published_allreduce_s(8, 8) == pytest.approx(5.9e-6)
    for bad in ({"message_bytes": 1048577 * b, "gpus": 8}, {"message_bytes": 1024, "gpus": 3},
                {"message_bytes": -1, "gpus": 8}, {"message_bytes": 1024, "gpus": 8, "kernel": "nccl"}):
        with pytest.raises(ValueError):
            sm.published_allreduce_s(**bad)


def test_vllm_nightly_latency_rows():
    # vLLM Buildkite 'performance-benchmark', 'Latency tests' (input 32, output 128, batch 8: tests/latency-tests-header.md)
    # build 9515 (https://buildkite.com/vllm/performance-benchmark/builds/9515), H200: latency_llama70B_tp4 mean
    # 2077.53 ms, latency_llama8B_tp1 833.421 ms, latency_mixtral8x7B_tp2 1917.44 ms;
    # build 9523 (https://buildkite.com/vllm/performance-benchmark/builds/9523), A100-SXM4-80GB: 3990.59, 1579.27, 3643.84
    checks = sm.check_latency()
    got = {(c.chip, c.model): c for c in checks}
    published = {("H200-SXM", "Llama-3 70B"): 2.07753, ("H200-SXM", "Llama-3.1 8B"): 0.833421,
                 ("H200-SXM", "Mixtral 8x7B"): 1.91744, ("A100-80GB", "Llama-3 70B"): 3.99059,
                 ("A100-80GB", "Llama-3.1 8B"): 1.57927, ("A100-80GB", "Mixtral 8x7B"): 3.64384}
    assert set(got) == set(published) and len(checks) == 6
    tp = {"Llama-3 70B": 4, "Llama-3.1 8B": 1, "Mixtral 8x7B": 2}
    for key, c in got.items():
        assert c.published_s == pytest.approx(published[key]) and c.gpus == tp[c.model]
        assert (c.batch, c.input, c.output) == (8, 32, 128)
        # the prefill of 8 x 32 tokens and 127 decode steps, nothing else
        m = memory.model_preset(c.model)
        step = serving.predict_decode(m, c.chip, 8, 32 + 64, "cuda-graph", c.gpus).step_s
        pre = serving.predict_prefill(m, c.chip, 8, 32, "cuda-graph", c.gpus)
        assert c.predicted_s == pytest.approx(pre + 127 * step, rel=1e-12)
        assert (abs(c.error) > 0.25) == bool(c.cause)
    # every row under-predicts, by a few ms a step (host work between replays) that does not grow with the step:
    # on the H200 the shortest step misses, the others are within 25 %
    for chip in ("H200-SXM", "A100-80GB"):
        extra = [(c.published_s - c.predicted_s) / 127 for c in checks if c.chip == chip]
        assert all(0.001 < e < 0.006 for e in extra)
    assert [k for k, c in got.items() if abs(c.error) > 0.25] == [("H200-SXM", "Llama-3.1 8B")]
    miss = got[("H200-SXM", "Llama-3.1 8B")]
    assert miss.cause.startswith("no cause stated by the source")
    # what ran: vLLM PR #9768 '[perf bench] H200 development' (2024-10-28) links build 9515 as its working benchmark
    assert "PR #9768" in miss.cause and "v0.6.3.post1" in miss.cause and "2.3 ms a decode step" in miss.cause
    # ruled out: the matmuls' fixed time per kernel (our probe's law, 4 kernels a layer) adds 0.51 ms of the 2.3 ms a
    # step, and the row still misses by more than 25 %
    assert "adds 0.51 ms a step (the row would be -28%)" in miss.cause
    m = memory.model_preset("Llama-3.1 8B")
    with pytest.raises(ValueError, match="output"):
        sm.latency_miss_cause(m, "H200-SXM", 8, 1, 32, 1, 0.8, 0.5, [0.002], [0.004])


def test_published_fused_moe_call_against_the_graph_path():
    # SGLang PR #11730 (https://github.com/sgl-project/sglang/pull/11730), '# Without tuned kernel',
    # tuning_fused_moe_triton.py --model Qwen/Qwen3-235B-A22B-Instruct-2507 --tp-size 8 --dtype fp8_w8a8 on an H200:
    # batch 1 -> 31.70 us, 2 -> 36.56, 4 -> 49.67, 8 -> 66.87, 16 -> 92.36, 24 -> 117.38, 32 -> 124.99
    rows = sm.check_moe_kernel()
    pub = {1: 31.70, 2: 36.56, 4: 49.67, 8: 66.87, 16: 92.36, 24: 117.38, 32: 124.99}
    assert {c.batch: round(c.published_s * 1e6, 2) for c in rows} == pub
    m = memory.model_preset("Qwen3 235B-A22B")
    # one token reads its 8 experts' shares once: 8 x 3 x 4,096 x 1,536 / 8 FP8 bytes at the H200's read rate
    read = 8 * 3 * 4096 * 1536 / 8 / serving.read_bandwidth("H200-SXM")
    assert round(read * 1e6, 1) == 4.6
    assert sm.moe_block_s(m, "H200-SXM", 1, 8, "fp8") > read
    # the known miss, stated in check_moe_kernel: the path charges 53-66 % of the published call at every batch
    assert all(-0.48 < c.error < -0.33 for c in rows)
    assert round(min(c.error for c in rows), 2) == -0.47 and round(max(c.error for c in rows), 2) == -0.34
    # a dense model has no expert block
    with pytest.raises(ValueError):
        sm.moe_block_s(memory.model_preset("Llama-3.1 8B"), "H200-SXM", 1)
    # interpolated between the published batches, held at the ends
    assert sm.moe_kernel_share(1) == (rows[0].published_s, rows[0].modelled_s)
    assert sm.moe_kernel_share(500)[0] == rows[-1].published_s


def test_inflight_moe_misses_leave_what_the_dense_rows_leave():
    # TensorRT-LLM v0.17 perf-overview (H100 and H200 FP8): the tensor-parallel Mixtral 8x7B rows that miss (3 by the
    # one matmul law with the prompts packed as the scheduler packs them; 4 with every iteration carrying its share
    # of them; 7 by FP8's former bytes + FLOPs), each set beside the same table's Llama 3.1 70B row on as many GPUs
    # at the same lengths. In 2 of the 3 (H100, TP 8, 128/2048 and 2048/2048) the published throughput leaves
    # 1.1-1.2x as much time per token and layer beyond the model as the dense row does, so what the model misses
    # there is not in the experts; the other (H100, TP 8, 128/128: 6.1x) says "not found".
    misses = [c for c in sm.check_inflight() if c.model == "Mixtral 8x7B" and c.cause]
    assert len(misses) == 3
    alike = [c for c in misses if "not the experts" in c.cause]
    assert {(c.gpus, c.input, c.output) for c in alike} == {(8, 128, 2048), (8, 2048, 2048)}
    odd = [c for c in misses if c not in alike]
    assert {(c.chip, c.gpus, c.input, c.output) for c in odd} == {("H100-SXM", 8, 128, 128)}
    assert all("not found" in c.cause for c in odd)
    for c in misses:
        m, d = memory.model_preset(c.model), memory.model_preset("Llama-3.1 70B")
        twin = sm.dense_twin(c.source, c.model, c.gpus, c.input, c.output)
        assert twin is not None and abs(twin.error) <= 0.25  # the dense row is within 25 %
        got = sm.inflight(m, c.chip, c.gpus, c.input, c.output, uniform=True)  # as the table states the run
        dg = sm.inflight(d, c.chip, c.gpus, c.input, c.output, uniform=True)
        ratio = sm.inflight_leftover(m, got, c.published) / sm.inflight_leftover(d, dg, twin.published)
        assert (0.75 <= ratio <= 1.35) == (c in alike)
        # the modelled Mixtral layer is cheaper per token than the 70B one, so the same leftover is a larger share
        assert got.iteration_s / ((got.batch + got.prefill_tokens) * m.n_layers) < \
            dg.iteration_s / ((dg.batch + dg.prefill_tokens) * d.n_layers)
        assert c.cause.startswith("no cause stated by the source")


def test_grouped_law_fits_sglang_call_but_not_vllm_mixtral():
    # Our probe's grouped-matmul law (h200x2-2026-11-26-serve2: transformers' grouped expert matmul on an H200, batch
    # 1-128) gives SGLang PR #11730's fused-MoE call (Qwen3-235B-A22B, 8 x H200, FP8: 31.70 us at 1 token, 124.99 at
    # 32) within -1 to +8 %: a check the law was not fitted to
    rows = sm.check_moe_kernel()
    for c in rows:
        assert -0.02 < c.grouped_s / c.published_s - 1 < 0.08, c
    assert round(rows[0].grouped_s * 1e6, 1) == 31.7
    # ... yet it is not the path's expert term: vLLM's nightly latency test (build 9515 H200, 9523 A100; Mixtral 8x7B,
    # TP 2, batch 8, 32 in / 128 out) leaves 2.3-2.8 ms a decode step beyond the modelled step, and the same tables'
    # dense rows 1.7-5.0 ms, while charging the grouped law would add 6.0 ms (H200) and 13.7 ms (A100) a step
    m = memory.model_preset("Mixtral 8x7B")
    for c in (c for c in sm.check_latency() if c.model == "Mixtral 8x7B"):
        left = (c.published_s - c.predicted_s) / (c.output - 1)
        extra = sm.grouped_extra_per_step_s(m, c.chip, c.batch, c.gpus)
        assert 0 < left < 0.003 and extra > 2 * left, (c.chip, left, extra)
    assert round(sm.grouped_extra_per_step_s(m, "H200-SXM", 8, 2) * 1e3, 1) == 6.0
    assert round(sm.grouped_extra_per_step_s(m, "A100-80GB", 8, 2) * 1e3, 1) == 13.7


def test_trtllm_bench_caps_follow_tuning_py():
    # tensorrt_llm/bench/build/tuning.py: KV room of the whole group over max(tp, KV heads) heads, requests at most
    # 4,096 rounded up (64 min, 32 / 128 / 256 steps), tokens (1 + in/out) each, at most 32,768 (2,048 min)
    qwen = memory.model_preset("Qwen3 235B-A22B")
    assert sm.trtllm_bench_caps(qwen, "H100-SXM", 8, 128, 2048) == (1024, 2048)
    assert sm.trtllm_bench_caps(qwen, "H200-SXM", 8, 128, 128) == (4096, 8192)  # both 4,096-request caps
    bs, tok = sm.trtllm_bench_caps(qwen, "H200-SXM", 8, 20000, 2000)
    assert bs % 32 == 0 and tok % 256 == 0 and tok >= 2048
    with pytest.raises(ValueError, match="tp"):
        sm.trtllm_bench_caps(qwen, "H100-SXM", 1, 128, 2048)  # 235 G FP8 parameters do not fit one 80 GB card


def test_attention_dp_gap_shares_per_mechanism():
    # TensorRT-LLM's attention-DP code, quantified on the v1.0 Qwen3-235B rows: the heap deals the uniform requests
    # evenly (at most one apart), the caps sit above a rank's batch, the collectives move the modelled bytes; only the
    # run's last, smaller wave explains any of the gap, and never most of it
    qwen = memory.model_preset("Qwen3 235B-A22B")
    g = sm.attention_dp_gap_shares(qwen, "H100-SXM", 8, 128, 2048, 19658, requests=3000)
    assert (g.rank_min, g.rank_max, g.rank_batch, g.caps_bind) == (375, 375, 220, False)
    assert g.sync_share == 0.0 and g.caps_share == 0.0 and 0.0 < g.wave_share < 0.2
    # closing the gap would take the collectives 4.6x or the matmuls 2.6x (by the one matmul law; over 3x by FP8's
    # former bytes + FLOPs) their modelled time
    assert g.gap_s > 0 and g.comm_factor > 4 and g.gemm_factor > 2.5
    one = sm.attention_dp_gap_shares(qwen, "H200-SXM", 8, 128, 2048, 42821, requests=3000)
    assert one.rank_batch == one.rank_max == 375 and one.wave_share == 0.0  # every request at once: one wave
    moe = [c for c in sm.check_inflight() if c.attention_dp and c.cause]
    assert all("_balance_requests_across_ranks" in c.cause and "ncclReduce" in c.cause for c in moe)
    assert all("Unexplained by (1)-(5):" in c.cause for c in moe)


def _raw_gemm(dtype: str, n: int, k: int, m: int) -> float:
    """One point of the gemm-tiles call read from its raw file (the median of its three groups), not through the
    compact table the module reads."""
    import json
    import pathlib

    raw = json.loads((pathlib.Path(sm.__file__).parent / "data" / "measured" / f"{sm.GEMM_TIMES_RUN}-record"
                      / "gemm_tiles.json").read_text())
    hit = [r for r in raw["points"] if (r["dtype"], r["n"], r["k"], r["m"]) == (dtype, n, k, m)]
    assert len(hit) == 1
    return statistics.median(hit[0]["groups_s"])


def test_measured_gemm_times_are_the_call():
    # scripts/gpu/gemm_tiles.py on one H100 SXM (2026-11-27): the compact table holds each point's median group, to
    # 0.1 ns; between measured row counts linear in M, beyond the last in proportion to M; a shape not measured: None
    assert sm.measured_gemm_card() == "NVIDIA H100 80GB HBM3"
    for dt, n, k, m in (("fp8", 6144, 4096, 1530), ("bf16", 28672, 4096, 1), ("fp8", 57344, 8192, 4096)):
        assert sm.measured_gemm_s(m, n, k, dt) == pytest.approx(_raw_gemm(dt, n, k, m), abs=1e-10)
    lo, hi = _raw_gemm("fp8", 4096, 4096, 1024), _raw_gemm("fp8", 4096, 4096, 1530)
    assert sm.measured_gemm_s(1277, 4096, 4096, "fp8") == pytest.approx(lo + (hi - lo) * (1277 - 1024) / 506, rel=1e-6)
    assert sm.measured_gemm_s(8192, 4096, 4096, "fp8") == pytest.approx(2 * _raw_gemm("fp8", 4096, 4096, 4096),
                                                                       rel=1e-6)
    assert sm.measured_gemm_s(64, 4096, 4097, "fp8") is None
    with pytest.raises(ValueError, match="m="):
        sm.measured_gemm_s(0, 4096, 4096, "fp8")


def test_gemm_evidence_sums_the_measured_products():
    # Llama 3.1 8B on one H100, 128/128: the iteration carries 8,192 tokens (the 4,096-request cap); its 32 layers'
    # products as an FP8 engine runs them: QKV (6,144 x 4,096), output (4,096 x 4,096), gate+up (28,672 x 4,096) and
    # down (4,096 x 14,336), each measured to 4,096 rows, so at 8,192 twice that
    llama = memory.model_preset("Llama-3.1 8B")
    got = sm.inflight(llama, "H100-SXM", 1, 128, 128)
    ev = sm.gemm_evidence(llama, "H100-SXM", 1, got)
    assert ev is not None and ev.tokens == 8192
    hand = 32 * 2 * sum(_raw_gemm("fp8", n, k, 4096) for n, k in ((6144, 4096), (4096, 4096), (28672, 4096),
                                                                   (4096, 14336)))
    assert ev.measured_s == pytest.approx(hand, rel=1e-6)
    # the model's own layer matmuls are its iteration's GEMM term less the output projection's (one law for both)
    head_s = serving.gemm_law_s(round(got.batch + got.batch / 128), 128256, 4096, "H100-SXM", "fp8")
    assert ev.modelled_s == pytest.approx(got.gemm_s - head_s, rel=1e-9)
    assert ev.iteration_s == pytest.approx(got.iteration_s - ev.modelled_s + ev.measured_s)
    # measured at 8,192 rows the products take longer than the one law at the sustained rate (15 %; 9 % more than
    # FP8's former bytes + FLOPs at the achievable rate), and the tile rule finds almost nothing to lose at these
    # shapes: the gap is the rate these shapes reach, not quantization (the law's M >= 1,530 band, test_gemm_law.py)
    assert 1.10 < ev.measured_s / ev.modelled_s < 1.20
    assert sm.layers_gemm_useful(llama, 8192, 1, "H100-SXM") > 0.95
    # not measured: the 405B's shapes, and attention data parallelism's rows are never asked
    big = memory.model_preset("Llama-3.1 405B")
    assert sm.gemm_evidence(big, "H100-SXM", 8, sm.inflight(big, "H100-SXM", 8, 128, 128)) is None


def test_gemm_evidence_across_the_inflight_rows():
    # tile15's finding (by FP8's former bytes + FLOPs: 75 of the 84 rows with measured shapes within 25 %, 70 with
    # the measured products in place) after the one matmul law: 79 within as modelled, 73 with the measured products;
    # with the same-length requests' prompts packed into the iterations the scheduler gives them (flight17): 81 as
    # modelled, 78 with the measured products (each kind of iteration at its own rows): the law is faster than the
    # measured products at 8,192+ rows (its M >= 1,530 band) and the rows there come closer with them, while
    # mid-sized iterations still go further: time missing elsewhere, as the causes say
    rows = sm.inflight_gemm_evidence()
    n = len(rows)
    before = sum(abs(c.error) <= 0.25 for c, _, _, _ in rows)
    after = sum(abs(ev.tokens_per_s / c.published - 1) <= 0.25 for c, _, _, ev in rows)
    assert (n, before, after) == (84, 81, 78)


def test_gemm_tiles_blind_record():
    # The predictions committed before the call (scripts/gpu/gemm_tiles_predictions.json, 2e7dbb1) scored on it by
    # the rule stated there: at M >= 512, the tiled prediction closer than the flat one on most points of each dtype
    # and its median |error| within 15 %. bf16 (F.linear, the longer of bytes and FLOPs): held, 222 of 224 closer,
    # 13.4 %. FP8 (_scaled_mm, bytes + FLOPs): failed, 67 of 224 closer, 15.6 % (flat 10.4 %): the serving model's
    # FP8 sum is already slow at these shapes and the tile rule adds to it.
    import json
    import pathlib

    root = pathlib.Path(sm.__file__).parents[1]
    pred = json.loads((root / "scripts" / "gpu" / "gemm_tiles_predictions.json").read_text())
    raw = json.loads((root / "mlcalc" / "data" / "measured" / f"{sm.GEMM_TIMES_RUN}-record" / "gemm_tiles.json")
                     .read_text())
    by = {(p["n"], p["k"], p["m"], p["dtype"]): p["H100-SXM"] for p in pred["points"]}
    for dt, closer_want, med_want in (("bf16", 222, 0.134), ("fp8", 67, 0.156)):
        pts = [r for r in raw["points"] if r["dtype"] == dt and r["m"] >= 512]
        flat = [abs(by[(r["n"], r["k"], r["m"], dt)]["flat_s"] / r["s"] - 1) for r in pts]
        tiled = [abs(by[(r["n"], r["k"], r["m"], dt)]["tiled_s"] / r["s"] - 1) for r in pts]
        assert len(pts) == 224
        assert sum(t < f for t, f in zip(tiled, flat)) == closer_want
        assert round(statistics.median(tiled), 3) == med_want


def test_moe_mapping_cost_of_the_code_default():
    # TensorRT-LLM's code (tensorrt_llm/mapping.py Mapping.__init__): with no '--ep' the experts run tensor-parallel,
    # moe_tp_size = tp_size = 8, moe_ep_size = 1, so every GPU holds all 128 Qwen3 experts 1536 / 8 = 192 wide. Each
    # expert still carries all tokens x 8 / 128 rows (H100 128/2048: 1,870 tokens -> 117), so the book's M x N tile and
    # wave model finds the same efficiency as 16 whole experts a GPU; what differs is that every GPU routes and runs
    # all ranks' tokens (the book's tensor-parallel expert rule), 11.3 ms a step: 27 % of the gap to the published
    # 19,658 tokens/s, the row +85 % -> +50 % (by FP8's former bytes + FLOPs: 24 %, +109 % -> +66 %).
    qwen = memory.model_preset("Qwen3 235B-A22B")
    c = sm.moe_mapping_cost(qwen, "H100-SXM", 8, 128, 2048, 19658, requests=3000)
    assert (c.expert_rows, c.slice_width) == (117, 192)
    assert c.shape_efficiency_tp == pytest.approx(c.shape_efficiency_ep, abs=0.01)
    assert 0.010 < c.extra_s < 0.013 and 0.2 < c.gap_share < 0.3 and 0.45 < c.error_if_charged < 0.55
    assert 0.0 < c.shape_extra_s < c.extra_s
    # in the tile a Hopper library picks (compute.gemm_kernel, K padded to its depth) the 192-deep down projection
    # wastes more than 1,536-deep ones, yet the thin slices' arithmetic is under 5 % of the gap on every row
    assert c.kernel_useful_tp < c.kernel_useful_ep and 0.0 < c.kernel_extra_s < 0.05 * c.extra_s / c.gap_share
    # charged on every v1.0 row that misses (15 of 17 by the one matmul law) it would explain 16-83 % of the gap, and
    # 7 of the 15 would come within 25 % (by FP8's former law: 14-66 % on 17, one within); the thin slices'
    # arithmetic stays under 6 % of each gap
    rows = []
    tables = sm.published()["inflight"]["tables"]
    missed = {(c.source, c.input, c.output) for c in sm.check_inflight() if c.attention_dp and c.cause}
    for r in (c for c in sm._inflight_rows() if c.attention_dp and (c.source, c.input, c.output) in missed):
        t = tables[r.source]
        kw = sm.stated_layout(t, qwen, r.input, r.output)
        rows.append(sm.moe_mapping_cost(qwen, t["chip"], 8, r.input, r.output, r.published, t["dtype"],
                                        kw.get("requests")))
    assert len(rows) == 15 and all(0.15 < m.gap_share < 0.85 for m in rows)
    assert all(0.0 < m.kernel_extra_s < 0.06 * m.extra_s / m.gap_share for m in rows)
    assert sum(abs(m.error_if_charged) <= 0.25 for m in rows) == 7
    with pytest.raises(ValueError, match="model"):
        sm.moe_mapping_cost(memory.model_preset("Llama-3.1 8B"), "H100-SXM", 8, 128, 2048, 1000.0)
    with pytest.raises(ValueError, match="tp"):
        sm.moe_mapping_cost(qwen, "H100-SXM", 3, 128, 2048, 1000.0)
    moe = [c for c in sm.check_inflight() if c.attention_dp and c.cause]
    assert all(sm.MOE_MAPPING_EVIDENCE in c.cause and "(5) the MoE mapping" in c.cause for c in moe)
    for phrase in ("moe_tp_size = tp_size", "'--ep $ep_size'", "ep:8-gpus:8", "'CUTLASS'", "0171265e", "05ebebb2"):
        assert phrase in sm.MOE_MAPPING_EVIDENCE


def test_thin_slice_probe_against_the_blind_predictions():
    # moetp15's GPU call (one NVIDIA H100 80GB HBM3, torch 2.11.0+cu130, scripts/gpu/moetp15_grouped.py): one MoE
    # layer's two grouped matmuls, Qwen3-235B's experts whole (16 a GPU) against split 8 ways (128, 192 wide). The law
    # in the package is the one the predictions were committed with before the call (scripts/gpu/
    # moetp15_predictions.json, predict_moetp15.py): it reproduces every predicted time.
    import json
    from pathlib import Path

    qwen = memory.model_preset("Qwen3 235B-A22B")
    pred = json.loads((Path(__file__).parents[2] / "scripts/gpu/moetp15_predictions.json").read_text())
    for c in pred["cases"]:
        got = sm.grouped_expert_matmuls_s(qwen, c["chip"], c["dtype"], c["experts"], c["width"], c["rows_per_expert"])
        assert got == pytest.approx(c["kernel_s"], rel=1e-9)
    law = {r["dtype"]: {} for r in pred["ratios"]}
    for r in pred["ratios"]:
        if r["chip"] == "H100-SXM":
            law[r["dtype"]][r["rows_per_expert"]] = r["kernel_tp_over_ep"]
    # the stated rule: FP8 at 112-1,024 rows, the book's law holds within +-25 %; the thin-slice hypothesis wants the
    # measured ratio at 1.5x the law's or more. Measured: 2.0-3.7x against the law's 1.3-1.8x, so the hypothesis
    # holds for torch's FP8 grouped kernel at every scored row, and the law's bf16 ratios stay within 25 %.
    fp8 = {n: t / e for n, e, t in sm.thin_slice_probe("fp8")}
    assert sorted(fp8) == [64, 112, 240, 480, 1024]
    assert all(fp8[n] >= 1.5 * law["fp8"][n] for n in (112, 240, 480, 1024))
    assert all(abs(law["fp8"][n] / fp8[n] - 1) > 0.25 for n in (112, 240, 480, 1024))
    bf16 = {n: t / e for n, e, t in sm.thin_slice_probe("bf16")}
    assert all(abs(law["bf16"][n] / bf16[n] - 1) <= 0.25 for n in bf16)
    with pytest.raises(ValueError, match="dtype"):
        sm.thin_slice_probe("int8")
    moe = [c for c in sm.check_inflight() if c.attention_dp and c.cause]  # the 15 misses
    assert len(moe) == 15 and all("Measured on one H100 (moetp15's probe" in c.cause for c in moe)


def test_v090_engine_facts_and_the_moe_allreduce_record():
    # every v0.9.0 table states its context attention in 16-bit, sourced (plugin.py at 250d9c2: use_fp8_context_fmha
    # False; performance.md's build commands without --use_fp8_context_fmha); the in-flight tables state none
    pub = sm.published()
    v090 = [t for t in (*pub["tables"].values(), *pub["first_token"].values()) if "0.9.0" in t["date"]]
    assert len(v090) == 4 and all(sm.engine_facts(t) == {"attention_dtype": "fp16"} for t in v090)
    assert all("use_fp8_context_fmha" in t["context_fmha_source"] and "250d9c2" in t["context_fmha_source"] for t in v090)
    assert all(sm.engine_facts(t) == {} for t in pub["inflight"]["tables"].values())
    # the first tokens are those engine facts' predict_prefill
    c = next(c for c in sm.check_first_token() if (c.model, c.chip, c.input) == ("Llama-2 7B", "H100-SXM", 2048))
    m = memory.model_preset("Llama-2 7B")
    assert c.predicted_s == serving.predict_prefill(m, "H100-SXM", 1, 2048, "cuda-graph", 1, weight_dtype="fp8",
                                                    attention_dtype="fp16")
    # Mixtral's per-expert all-reduces (tensorrt_llm/layers/moe.py, mlp.py, linear.py at 250d9c2): a record, not
    # charged. On the per-dtype law they put 5 of the 12 v0.9.0 Mixtral rows outside 25 % (12 within uncharged)
    from mlcalc import serving_record as rec
    assert rec.trtllm_v090_moe_allreduces(memory.model_preset("Mixtral 8x7B"), 2) == 8
    assert rec.trtllm_v090_moe_allreduces(memory.model_preset("Mixtral 8x7B"), 1) == 0
    assert rec.trtllm_v090_moe_allreduces(m, 4) == 1
    rows = rec.moe_allreduce_checks()
    assert len(rows) == 12 and {r.allreduces for r in rows} == {8}
    assert sum(abs(r.error) <= 0.25 for r in rows) == 12 and sum(abs(r.error_charged) <= 0.25 for r in rows) == 7
    assert all(r.error_charged < r.error if r.output else r.error_charged > r.error for r in rows)  # slower steps
