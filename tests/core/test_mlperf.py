"""MLPerf Inference's LLM results (mlcalc/data/mlperf_inference.json) against the in-flight model (mlcalc.mlperf)."""

import math

import pytest

from mlcalc import memory, mlperf
from mlcalc import servemeasured as sm


def _row(round_, submitter, benchmark, chip, scenario):
    return next(r for r in mlperf.results() if (r["round"], r["submitter"], r["benchmark"], r["chip"], r["scenario"])
                == (round_, submitter, benchmark, chip, scenario))


def test_published_figures_are_the_logs():
    # mlcommons/inference_results_v4.1 @ a2f5d66, closed/NVIDIA/results/DGX-H100_H100-SXM-80GBx8_TRT/llama2-70b-99.9/
    # Offline/performance/run_1/mlperf_log_summary.txt: 'Samples per second: 84.4792', 'Tokens per second: 24524.9'
    h100 = _row("v4.1", "NVIDIA", "llama2-70b", "H100-SXM", "Offline")
    assert (h100["samples_per_s"], h100["tokens_per_s"], h100["gpus"], h100["tp"]) == (84.4792, 24524.9, 8, 2)
    assert h100["commit"] == "a2f5d66d17e8f75c02fd74dfe810ecca6a046696" and h100["precision"] == "fp8"
    # mlcommons/inference_results_v5.1 @ 965182b, closed/ASUSTeK/results/ESC_N8_H200-SXM-141GBx8_TRT/mixtral-8x7b/
    # Server/performance/run_1/mlperf_log_summary.txt: 'Completed tokens per second: 59992.81', 'Mean Time to Output
    # Token (ns) : 166580487', 'Mean latency (ns) : 24622732028'
    mx = _row("v5.1", "ASUSTeK", "mixtral-8x7b", "H200-SXM", "Server")
    assert (mx["tokens_per_s"], mx["tpot_mean_ms"], mx["latency_mean_ms"]) == (59992.81, 166.580, 24622.732)
    assert mx["commit"] == "965182b03376a00fcae415c54e560e1c83937932" and (mx["tp"], mx["max_batch"]) == (1, 3072)
    # ... closed/Quanta_Cloud_Technology/results/D74U-7U_H200-SXM-141GBx8_TRT/llama3.1-8b/Offline/performance/run_1/
    # mlperf_log_summary.txt: 'Samples per second: 444.667', 'Tokens per second: 56917.3'
    q8 = _row("v5.1", "Quanta Cloud Technology", "llama3.1-8b", "H200-SXM", "Offline")
    assert (q8["samples_per_s"], q8["tokens_per_s"], q8["tp"], q8["max_tokens"]) == (444.667, 56917.3, 1, 1536)
    # ... closed/Nebius/results/H200-SXM-141GBx8_TRT/llama3.1-405b/Server/performance/run_1/mlperf_log_summary.txt:
    # 'Completed tokens per second: 295.36', 'Mean latency (ns) : 38038254686', 'Mean Time to Output Token (ns) :
    # 56181492', 'ttft_latency (ns): 6000000000', 'tpot_latency (ns): 175000000'; its config: tensor_parallelism 8,
    # runtime max_batch_size 64
    nb = _row("v5.1", "Nebius", "llama3.1-405b", "H200-SXM", "Server")
    assert (nb["tokens_per_s"], nb["latency_mean_ms"], nb["tpot_mean_ms"]) == (295.36, 38038.255, 56.181)
    assert (nb["tp"], nb["max_batch"]) == (8, 64) and mlperf.tpot_limit_s(nb) == 0.175
    assert len(mlperf.results()) == 15
    assert {r["scenario"] for r in mlperf.results()} == set(mlperf.SCENARIOS)
    for r in mlperf.results():  # every row names where it was read and the configuration it ran
        assert r["path"].endswith("mlperf_log_summary.txt") and r["config"] and r["repo"].startswith("mlcommons/")
        assert ("tpot_mean_ms" in r) == (r["scenario"] != "Offline")


def test_rules_and_dataset_facts():
    # MLCommons, MLPerf Inference Rules (inference_policies @ ac93e89): Llama2-70b 'TTFT/TPOT: 2000 ms/200 ms',
    # tokens_per_sample=294.45; Mixtral-8x7B 'TTFT/TPOT: 2000 ms/200 ms', tokens_per_sample=144.84
    d = mlperf.data()
    # ... and Llama2-70b 'Interactive category: TTFT/TPOT: 450 ms/40 ms'
    assert d["limits"]["llama2-70b"]["Server"] == d["limits"]["mixtral-8x7b"]["Server"] == {"ttft_ms": 2000,
                                                                                             "tpot_ms": 200}
    assert d["limits"]["llama2-70b"]["Interactive"] == {"ttft_ms": 450, "tpot_ms": 40}
    assert "Interactive" not in d["limits"]["mixtral-8x7b"]
    # ... Llama3.1-8B 'Conversational category: TTFT/TPOT: 2000 ms/100 ms. Interactive category: TTFT/TPOT: 500 ms/30
    # ms.'; Llama3.1-405B 'Server: TTFT/TPOT: 6000 ms/175 ms. Interactive: TTFT/TPOT: 4500 ms/80 ms.'
    assert d["limits"]["llama3.1-8b"] == {"Server": {"ttft_ms": 2000, "tpot_ms": 100},
                                          "Interactive": {"ttft_ms": 500, "tpot_ms": 30}}
    assert d["limits"]["llama3.1-405b"] == {"Server": {"ttft_ms": 6000, "tpot_ms": 175},
                                            "Interactive": {"ttft_ms": 4500, "tpot_ms": 80}}
    assert d["datasets"]["llama3.1-405b"]["output_tokens_per_sample"] == 684.68
    assert d["datasets"]["llama2-70b"]["output_tokens_per_sample"] == 294.45
    assert d["datasets"]["mixtral-8x7b"]["output_tokens_per_sample"] == 144.84
    assert all("mlperf_lengths.json" in ds["input_source"] for ds in d["datasets"].values())
    # a row's mean output is its log's tokens over samples: 24,524.9 / 84.4792 = 290.3
    assert mlperf.output_tokens(_row("v4.1", "NVIDIA", "llama2-70b", "H100-SXM", "Offline")) == 290


def _mean(table):
    return sum(length * n for length, n in table) / sum(n for _, n in table)


def test_dataset_lengths_are_the_csvs():
    # openshift-psap/performance-dashboard, mlperf-data/summaries/<name>.csv (llama2-70b-99 and llama3-1-8b-datacenter
    # @ 7cd1065, mixtral-8x7b and llama3-1-405b @ 67033ba): one row a sample, input_length,output_length. Their sums
    # and row counts, read off the CSVs: 5,463,976 / 24,576 (llama2-70b-99), 6,410,905 / 15,000 (mixtral-8x7b),
    # 11,639,915 / 13,368 (llama3-1-8b-datacenter), 78,380,323 / 8,313 (llama3-1-405b) input tokens / samples.
    # The committed frequency tables must give the same means.
    ds = mlperf.lengths()["datasets"]
    csv_mean = {"llama2-70b": 5_463_976 / 24_576, "mixtral-8x7b": 6_410_905 / 15_000,
                "llama3.1-8b": 11_639_915 / 13_368, "llama3.1-405b": 78_380_323 / 8_313}
    assert set(ds) == set(csv_mean)
    for key, want in csv_mean.items():
        table = ds[key]["input"]["counts"]
        assert sum(n for _, n in table) == ds[key]["samples"]
        assert _mean(table) == pytest.approx(want, rel=1e-12), key
        assert mlperf.mean_input(key) == pytest.approx(want, rel=1e-12)
        assert ds[key]["input"]["sum"] == sum(length * n for length, n in table)
        assert [length for length, _ in table] == sorted({length for length, _ in table})  # one entry a length
        assert ds[key]["input"]["min"] == table[0][0] and ds[key]["input"]["max"] == table[-1][0]
        assert ds[key]["blob"] and ds[key]["commit"] and ds[key]["path"].endswith(".csv") and ds[key]["extracted_from"]
    assert round(mlperf.mean_input("llama2-70b"), 2) == 222.33 and mlperf.input_tokens("llama2-70b") == 222
    assert round(mlperf.mean_input("mixtral-8x7b"), 2) == 427.39 and mlperf.input_tokens("mixtral-8x7b") == 427
    # one published number per dataset, from MLCommons (mlcommons/inference @ b66003e for the first two):
    # Llama 2 70B: 24,576 samples (language/llama2-70b/README.md, open_orca_gpt4_tokenized_llama.sampled_24576)
    assert ds["llama2-70b"]["samples"] == 24_576
    # Mixtral 8x7B: "{'tokens_per_sample': 144.84}" (language/mixtral-8x7b/README.md): the output column's mean is
    # the reference output's, which names the column (tok_ref_output_len)
    assert round(_mean(ds["mixtral-8x7b"]["output"]["counts"]), 2) == 144.84 and ds["mixtral-8x7b"]["samples"] == 15_000
    # Llama 3.1 405B: 'tokens_per_sample': 684.68 (language/llama3.1-405b/README.md, 'Accuracy Target'), 8,313 samples
    assert round(_mean(ds["llama3.1-405b"]["output"]["counts"]), 2) == 684.68 and ds["llama3.1-405b"]["samples"] == 8313
    # Llama 3.1 8B: "'gen_num': 13368" (language/llama3.1-8b/README.md, 'Accuracy Target'); its output column is
    # characters / 4, an estimate, and says so
    assert ds["llama3.1-8b"]["samples"] == 13_368 and "ESTIMATE" in ds["llama3.1-8b"]["output_is"]
    # Llama 2 70B's output column is the dataset's GPT-4 answer (218.89 a sample), not the 294.45 tokens the
    # benchmark's reference run generates: the cases take the output from each run's log instead
    assert round(_mean(ds["llama2-70b"]["output"]["counts"]), 2) == 218.89
    assert "GPT-4" in ds["llama2-70b"]["output_is"]
    with pytest.raises(ValueError, match="benchmark="):
        mlperf.mean_input("gpt-j")


def test_inflight_caps_default_is_unchanged_and_caps_bind():
    m = memory.model_preset("Llama-3.1 8B")
    assert sm.inflight(m, "H100-SXM", 1, 2048, 2048) == sm.inflight(m, "H100-SXM", 1, 2048, 2048, caps=None)
    free = sm.inflight(m, "H100-SXM", 1, 128, 128, caps=(100_000, 1_000_000))
    assert free.batch == free.kv_tokens // 256  # only the KV room binds
    assert sm.inflight(m, "H100-SXM", 1, 128, 128, caps=(300, 1_000_000)).batch == 300
    assert sm.inflight(m, "H100-SXM", 1, 128, 128, caps=(100_000, 1000)).batch == 500  # 1,000 tokens / (1 + 1)
    with pytest.raises(ValueError, match="caps"):
        sm.inflight(m, "H100-SXM", 1, 128, 128, caps=(0, 1000))
    with pytest.raises(ValueError, match="caps"):
        sm.inflight(memory.model_preset("Mixtral 8x7B"), "H100-SXM", 2, 128, 128, attention_dp=True, caps=(8, 8))


def test_scenarios():
    off = _row("v5.1", "ASUSTeK", "llama2-70b", "H200-SXM", "Offline")
    full = mlperf.replica_at_load(off)
    # Offline: the KV room at 90 % of the memory beside the FP8 weights, within the submission's 2,048 requests and
    # 1,536 tokens an iteration, one GPU a replica and eight replicas
    assert full.batch <= 2048 and full.batch * (1 + 222 / 292) <= 1536
    assert mlperf.predicted_tokens_per_s(off) == pytest.approx(8 * full.tokens_per_s)
    # Server: full load when its iteration keeps the 200 ms TPOT limit ...
    srv = _row("v5.1", "ASUSTeK", "llama2-70b", "H200-SXM", "Server")
    assert mlperf.replica_at_load(srv).iteration_s <= mlperf.tpot_limit_s(srv)
    # ... else the largest batch that does: a Mixtral replica given room for 16,384 requests runs over the limit
    wide = dict(_row("v5.1", "ASUSTeK", "mixtral-8x7b", "H200-SXM", "Server"), max_batch=16384, max_tokens=65536)
    over = mlperf._replica(wide, 427, 147)
    cut = mlperf.replica_at_load(wide)
    assert over.iteration_s > 0.2 >= cut.iteration_s and cut.batch < over.batch
    assert mlperf._replica(wide, 427, 147, cut.batch + 1).iteration_s > 0.2
    # Little's law on the log: 116.81 samples/s x 53.977 s mean latency / 8 replicas = 788 requests a GPU
    assert mlperf.in_flight(srv) == 788
    # Interactive (40 ms TPOT): the submission's caps (512 requests, 256 tokens an iteration) allow 145 requests of
    # 222 in and 293 out, whose iteration (35 ms by the one matmul law; over 40 by FP8's former bytes + FLOPs) is
    # within 40 ms: the replica runs them all
    inter = _row("v5.1", "Cisco", "llama2-70b", "H200-SXM", "Interactive")
    full, cut = mlperf._replica(inter, 222, 293), mlperf.replica_at_load(inter)
    assert full.batch == 145 == int(256 // (1 + 222 / 293)) == cut.batch and 0.03 < full.iteration_s <= 0.04
    with pytest.raises(ValueError, match="scenario="):
        mlperf.in_flight(off)
    with pytest.raises(ValueError, match="scenario="):
        mlperf.tpot_limit_s(off)
    with pytest.raises(ValueError, match="tp="):
        mlperf.replicas(dict(off, tp=3))


def test_leftover_is_what_the_published_figure_leaves():
    # throughput: batch / (published per replica) - iteration, spread over the iteration's tokens and layers
    for row in mlperf.results():
        got = mlperf.replica_at_load(row)
        per = (got.batch + got.prefill_tokens) * memory.model_preset(mlperf.data()["datasets"][row["benchmark"]]
                                                                     ["model"]).n_layers
        left, mod = mlperf.leftover(row, "throughput")
        pub_iteration = got.batch / (row["tokens_per_s"] / mlperf.replicas(row))
        assert left * per == pytest.approx(pub_iteration - got.iteration_s) and mod * per == pytest.approx(got.iteration_s)
        assert (left > 0) == (got.tokens_per_s * mlperf.replicas(row) > row["tokens_per_s"])  # the model the faster
    with pytest.raises(ValueError, match="quantity="):
        mlperf.leftover(mlperf.results()[0], "latency")


def test_cases():
    cs = mlperf.check()
    assert len(cs) == 25 and sum(c.quantity == "tpot" for c in cs) == 10
    assert all(c.quantity == "throughput" or c.scenario != "Offline" for c in cs)
    for c in cs:
        assert c.error == pytest.approx(c.predicted / c.published - 1)
        assert (abs(c.error) > mlperf.TARGET) == bool(c.cause)
        assert c.input == mlperf.input_tokens(c.benchmark) and "measured mean" in c.note and "assumed" not in c.note
        assert "openshift-psap/performance-dashboard" in c.note
        assert all(c.cause.startswith("no cause stated by the source") for c in cs if c.cause)
    # Llama 2 70B at the measured 222 tokens in: 12 of 13 within 25 %. v5.1 Cisco's and Dell's Interactive
    # throughputs (+60 %, +43 % while the simulator priced a prompt chunk added to a decode batch at the full-load
    # secant) are within now that an iteration pays the tiles of all its rows (+23 %, +10 %): the submissions' 256-token
    # budget puts every iteration that carries a prompt chunk past the 128-row tile step. The miss is v4.1 NVIDIA's
    # H100 Server throughput (+26 %; +24 % before, one bracket of the search: its full-load rate now passes), whose
    # mean TPOT at the load the run held is -22 %: the run's TP 2 iterations were slower than the model's
    llama = [c for c in cs if c.benchmark == "llama2-70b"]
    assert len(llama) == 13 and sum(abs(c.error) <= 0.25 for c in llama) == 12
    miss = [c for c in llama if c.cause]
    assert {(c.round, c.submitter, c.chip, c.scenario, c.quantity) for c in miss} == {
        ("v4.1", "NVIDIA", "H100-SXM", "Server", "throughput")}
    assert all("the run's iterations were slower than the model's" in c.cause for c in miss)
    inter = [c for c in llama if c.scenario == "Interactive" and c.quantity == "throughput"]
    assert len(inter) == 2 and all(0 < c.error < 0.25 for c in inter)
    # every Server and Interactive throughput miss states the simulated load against the run's (Little's law)
    for c in cs:
        if c.cause and c.quantity == "throughput" and c.scenario != "Offline" and c.benchmark != "mixtral-8x7b":
            row = next(r for r in mlperf.results() if c.where.endswith(r["path"]))
            assert f"the {mlperf.in_flight(row):,} the run held" in c.cause
            assert c.batch == round(mlperf.server_rate(row).at.mean_batch)
    # Llama 3.1 405B: the TTFT limit binds well below full load (the 9,429-token prompts queue). With the tensor-
    # parallel all-reduces run as Nebius's engine runs them, inside the row-parallel products over NVLink SHARP
    # (its gemm_allreduce_plugin), the throughputs go from -38 % and -47 % to +17 % and +26 %: the Server within, the
    # Interactive one over by a point, its mean TPOT at the load the run held -16 % (the run's iterations slower)
    l405 = [c for c in cs if c.benchmark == "llama3.1-405b" and c.quantity == "throughput"]
    assert all(c.error > 0 and "gemm_allreduce_plugin" in c.note for c in l405)
    assert [c.scenario for c in l405 if c.cause] == ["Interactive"]
    assert all("the TTFT limit binds" in c.cause and "iterations were slower" in c.cause for c in l405 if c.cause)
    # Mixtral 8x7B at the measured 427 tokens in: all three within (+20 %, +22 %, TPOT -15 %; +27 %, +35 % and -20 %
    # before) once the checkpoint's 9.375 % of 16-bit weights (effective_bits 8.75) is priced
    mix = [c for c in cs if c.benchmark == "mixtral-8x7b"]
    assert len(mix) == 3 and all(abs(c.error) <= 0.25 and "effective_bits 8.75" in c.note for c in mix)
    assert all((c.error > 0) == (c.quantity == "throughput") for c in mix)
    # Llama 3.1 8B (871 in, 128 out, 8 x H200 TP 1) and 405B (9,429 in, about 655 out, one replica of 8 H200s):
    # every mean TPOT at the load the run held within 25 % (405B: -13 %, -16 % with the fused all-reduces; +15 %,
    # +4 % with the ring's after the matmuls)
    l3 = [c for c in cs if c.benchmark.startswith("llama3.1")]
    assert len(l3) == 9 and all(abs(c.error) <= 0.25 for c in l3 if c.quantity == "tpot")
    assert sum(abs(c.error) <= 0.25 for c in cs) == 23


def test_allowed_over_is_loadgen_early_stopping():
    # mlcommons/inference loadgen/mlperf.conf: "*.MultiStream.min_query_count = 662", the fewest queries for which
    # early stopping at the 99th percentile (confidence 0.99) can pass with one query over (results.cc: "Need to
    # process at least h_min + 1 queries", h_min = find_min_passing(1, ...) = 661)
    assert mlperf.allowed_over(662) == 1 and mlperf.allowed_over(661) == 0
    # none over needs 459 queries: 0.99 ** 459 = 0.0099 <= 0.01 < 0.99 ** 458
    assert mlperf.allowed_over(459) == 0 and mlperf.allowed_over(458) == -1
    # Nebius's 405B Server run (8,313 queries, one pass of the dataset): 62 over at most (LoadGen's own binary
    # search over the regularized beta, early_stopping.cc, ported by hand: t = 62 needs 8,282 queries, 63 needs 8,397)
    assert mlperf.allowed_over(8313) == 62
    for r in mlperf.results():
        if r["scenario"] != "Offline":
            assert r["queries"] % mlperf.lengths()["datasets"][r["benchmark"]]["samples"] == 0  # whole passes
            assert 0.0074 < mlperf.allowed_share(r) < 0.0099
    for bad in ({"queries": 0}, {"percentile": 1.0}, {"confidence": 0.0}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            mlperf.allowed_over(**({"queries": 100} | bad))


def test_bisect_rate_bounds():
    # a threshold known in closed form: every rate up to 0.3 passes; 8 halvings of (0, 1] end within 1/256 of it
    lo, above = mlperf.bisect_rate(lambda r: r <= 0.3, 1.0, 8)
    assert lo <= 0.3 < above and above - lo == pytest.approx(1 / 256)
    assert mlperf.bisect_rate(lambda r: True, 2.0, 8) == (2.0, 2.0)  # the top passes: it is the answer
    assert mlperf.bisect_rate(lambda r: False, 2.0, 8)[0] == 0.0
    calls = []
    mlperf.bisect_rate(lambda r: calls.append(r) or r < 0.5, 1.0, 5)
    assert len(calls) == 6  # the top, then one simulation a halving: the search's cost is bounded
    # a first try below the top brackets a rate near it in a few calls; the tolerance ends the halvings early
    calls.clear()
    lo, above = mlperf.bisect_rate(lambda r: calls.append(r) or r <= 0.97, 1.0, 8, 0.02, 15 / 16)
    assert calls[:2] == [1.0, 15 / 16] and len(calls) == 4 and lo <= 0.97 < above and above - lo <= 0.02 * lo
    calls.clear()
    lo, above = mlperf.bisect_rate(lambda r: calls.append(r) or r <= 0.3, 1.0, 8, 0.0, 15 / 16)
    assert lo <= 0.3 < above and above - lo == pytest.approx(15 / 16 / 256) and len(calls) == 10
    for bad in ({"hi": 0.0}, {"steps": 0}, {"steps": 41}):
        args = {"hi": 1.0, "steps": 8} | bad
        with pytest.raises(ValueError, match=next(iter(bad))):
            mlperf.bisect_rate(lambda r: True, args["hi"], args["steps"])
    for bad in ({"tol": -0.1}, {"first": 1.5}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            mlperf.bisect_rate(lambda r: True, 1.0, 8, **bad)


def _md1_wait_cdf(x, lam, s):
    # M/D/1 FIFO waiting time (Erlang 1909; e.g. Kleinrock, "Queueing Systems", vol. 1): P(W <= x) =
    # (1 - rho) sum_{k=0}^{floor(x/s)} (lam (k s - x))^k / k! exp(-lam (k s - x))
    import math
    rho = lam * s
    return (1 - rho) * sum((lam * (k * s - x)) ** k / math.factorial(k) * math.exp(-lam * (k * s - x))
                           for k in range(int(x // s) + 1))


def test_rate_search_against_md1():
    # One request at a time, each a 100-token prompt whose prefill takes s = 50 ms and one output token: the
    # simulator is an M/D/1 queue and TTFT = wait + s. The largest rate whose p99 TTFT is within 5 s: closed form
    # from Erlang's waiting-time distribution, against the bisection over seeded simulations (4,000 requests).
    from mlcalc import serving
    s, limit = 0.05, 0.25
    step = serving.StepModel((1,), (1e-3,), 0.0, s / 100, 0.0, 0.0, 10 ** 6, 1.0, False)
    lo, hi = 0.0, 1 / s
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _md1_wait_cdf(limit - s, mid, s) >= 0.99 else (lo, mid)
    closed = lo
    import random
    rng = random.Random(0)
    gaps = [rng.expovariate(1.0) for _ in range(4000)]

    def ok(rate):
        t, reqs = 0.0, []
        for g in gaps:
            t += g / rate
            reqs.append((t, 100, 1))
        got = serving.simulate_replica(step, reqs, max_batch=1, max_requests=4000)
        return got.ttft_p99_s <= limit

    found, _ = mlperf.bisect_rate(ok, 1 / s, 10)
    assert 0.5 < closed * s < 0.9  # a loaded queue, not a trivial one
    assert found == pytest.approx(closed, rel=0.06)


def test_step_model_is_the_inflight_iteration():
    from mlcalc import serving
    for row in mlperf.results():
        p, o = mlperf.input_tokens(row["benchmark"]), mlperf.output_tokens(row)
        full = mlperf._replica(row, p, o)
        # token_work_s is inflight's arithmetic term by term (attention aside)
        work = mlperf.token_work_s(row, full.batch + full.prefill_tokens, full.batch + full.batch / o)
        assert work == pytest.approx(full.gemm_s + full.comm_s + full.routing_s + full.norm_s, rel=1e-12)
        if row["scenario"] == "Offline":
            continue
        st = mlperf.step_model(row)
        b, pre = full.batch, full.prefill_tokens
        # by rows: the iteration of b decode and pre prompt tokens is the table at b + pre rows, then the cache
        # read and the prompts' attention
        rows = round(b + pre)
        # by rows: the iteration of b decode and pre prompt tokens is the layers' table at b + pre rows, the output
        # projection's at the b rows that sample (the prompts that end in it aside: b / o of them), then the cache
        # read and the prompts' attention
        layers, head = serving_base(st, rows), serving._head(st, b)
        assert layers == pytest.approx(mlperf.token_work_s(row, rows, 0), rel=mlperf.ROWS_TOL)  # the table's line
        assert layers + head == pytest.approx(mlperf.token_work_s(row, rows, b), rel=mlperf.ROWS_TOL)
        it = layers + head + st.per_cached_token_s * b * (p + o // 2) + st.attention_per_pair_s * pre * (p + 1) / 2
        assert it == pytest.approx(full.iteration_s, rel=0.003)
        assert st.kv_capacity_tokens == full.kv_tokens and st.serial and st.by_rows
        assert st.batches[0] == 1 and st.batches[-1] == mlperf.sim_batch(row)[1]
        assert mlperf.sim_batch(row)[0] <= mlperf.sim_batch(row)[1]


def serving_base(st, b):
    from mlcalc import serving
    return serving._base(st, b)


def test_server_search_holds_the_limits_and_breaks_above():
    rows = [r for r in mlperf.results() if r["scenario"] != "Offline"]
    for row in rows:
        got = mlperf.server_rate(row)
        ttft, tpot = mlperf.limits_s(row)
        # valid as LoadGen's early stopping judges a run of the row's own queries, which is stricter than the
        # 99th percentiles within the limits
        allowed = mlperf.allowed_share(row) * got.at.measured
        assert got.at.ttft_over <= allowed and got.at.tpot_over <= allowed and not got.at.queue_growing
        assert got.at.ttft_p99_s <= ttft and got.at.tpot_p99_s <= tpot
        assert got.at.measured == got.requests - int(got.requests * 0.1)
        assert 0 < got.rate_per_s <= got.capacity_per_s
        # enough requests that SEARCH_TAIL are expected beyond a limit at the allowed share, or ten lifetimes;
        # never more than the run issued
        assert min(row["queries"], 20_000) >= got.requests >= min(row["queries"], 20_000, math.ceil(
            mlperf.SEARCH_TAIL / (mlperf.allowed_share(row) * 0.9)))
        assert got.requests == mlperf.search_requests(row) and got.steps == mlperf.SEARCH_STEPS
        if got.binds == "capacity":
            assert got.rate_per_s == got.above_per_s == got.capacity_per_s
        else:  # just above (within the tolerance, or one halving) a limit breaks, the one named
            assert not mlperf.passes(row, got.above)
            assert got.above_per_s - got.rate_per_s <= max(mlperf.SEARCH_TOL * got.rate_per_s,
                                                           got.capacity_per_s / 2 ** got.steps) * (1 + 1e-12)
            share = allowed
            assert got.binds == {"TTFT": "TTFT" if got.above.ttft_over > share else "",
                                 "TPOT": "TPOT" if got.above.tpot_over > share else "",
                                 "queue": "queue" if got.above.queue_growing else ""}[got.binds]
        assert mlperf.predicted_tokens_per_s(row) == pytest.approx(
            got.rate_per_s * mlperf.output_tokens(row) * mlperf.replicas(row))
    # deterministic: the same seed gives the same simulation, a fresh search the same rate
    row = next(r for r in rows if r["scenario"] == "Interactive")
    got = mlperf.server_rate(row)
    assert mlperf.simulate(row, got.rate_per_s) == got.at
    assert mlperf.poisson_requests(row, 1.0, 50) == mlperf.poisson_requests(row, 1.0, 50)
    mlperf._SEARCHES.clear()
    assert mlperf.server_rate(row) == got
    # prompts are the dataset's in LoadGen's equal-issue order: a whole pass holds every sample once, exactly the
    # dataset's frequency table; every drawn length is in its table; the output is the row's mean
    import collections
    table = mlperf.lengths()["datasets"][row["benchmark"]]["input"]["counts"]
    gaps, prompts = mlperf._draw(row["benchmark"], sum(n for _, n in table) + 5, 0)
    assert sorted(collections.Counter(prompts[:-5]).items()) == sorted(map(tuple, table))
    sizes = {n for n, _ in table}
    reqs = mlperf.poisson_requests(row, 2.0, 5000)  # the mean of 4,999 exponential gaps: within 5 % is 3.5 sigma
    assert {p for _, p, _ in reqs} <= sizes and {o for _, _, o in reqs} == {mlperf.output_tokens(row)}
    assert sum(b - a for (a, _, _), (b, _, _) in zip(reqs, reqs[1:])) / 4999 == pytest.approx(0.5, rel=0.05)
    with pytest.raises(ValueError, match="prompt="):
        mlperf.predicted_tokens_per_s(row, 222)
    with pytest.raises(ValueError, match="scenario="):
        mlperf.server_rate(mlperf.results()[0])
    with pytest.raises(ValueError, match="n="):
        mlperf.poisson_requests(row, 1.0, 20_001)


def test_simulator_request_bound():
    from mlcalc import serving
    st = serving.StepModel((1,), (1e-3,), 0.0, 1e-5, 0.0, 0.0, 10 ** 6, 1.0, False)
    reqs = [(0.01 * (i + 1), 10, 2) for i in range(2001)]
    with pytest.raises(ValueError, match="requests="):
        serving.simulate_replica(st, reqs)  # the reader's bound is unchanged
    assert serving.simulate_replica(st, reqs, max_requests=2001).requests == 2001
    with pytest.raises(ValueError, match="max_requests="):
        serving.simulate_replica(st, reqs, max_requests=serving.SIM_MAX_REQUESTS_CHECK + 1)


def test_shape_slowdown_is_the_tile_rule():
    # the Llama 3.1 8B Offline iteration (196 requests, 1,530 tokens, H200: 132 SMs): the FLOP-weighted useful share
    # of its four products, each at the tile mlcalc.compute.gemm_kernel picks for it
    from mlcalc import compute, serving
    row = next(r for r in mlperf.results() if r["benchmark"] == "llama3.1-8b" and r["scenario"] == "Offline")
    got = mlperf.replica_at_load(row)
    assert round(got.batch + got.prefill_tokens) == 1530
    work = {(6144, 4096): 6144 * 4096, (4096, 4096): 4096 * 4096, (28672, 4096): 28672 * 4096,
            (4096, 14336): 4096 * 14336}
    hand = sum(w * compute.gemm_kernel(1530, n, k, 132, "fp8").useful for (n, k), w in work.items()) / sum(
        work.values())
    useful, extra = mlperf.shape_slowdown(row, got)
    assert useful == pytest.approx(hand, rel=1e-12) and 0.8 < useful < 0.95
    flops_s = 2 * sum(work.values()) * 32 * 1530 / serving.matmul_rate("H200-SXM", "fp8")
    assert extra == pytest.approx(flops_s * (1 / useful - 1))
    mix = next(r for r in mlperf.results() if r["benchmark"] == "mixtral-8x7b")
    with pytest.raises(ValueError, match="row="):
        mlperf.shape_slowdown(mix, mlperf.replica_at_load(mix))
    # the row was a +25 % miss with the per-dtype law (FP8: bytes + FLOPs at the table's rate, no tile share); the
    # one law charges the tile share itself (mlcalc.serving.gemm_law_s) and the row is within 25 % (+11 %), its
    # matmuls within 3 % of the measured products (tile15's H100 call)
    case = next(c for c in mlperf.check() if c.benchmark == "llama3.1-8b" and c.scenario == "Offline")
    assert 0.05 < case.error <= 0.25 and case.cause == ""
    ev = sm.gemm_evidence(memory.model_preset("Llama-3.1 8B"), "H200-SXM", 1, got)
    assert ev is not None and abs(ev.modelled_s / ev.measured_s - 1) < 0.03


def test_rows_table_follows_the_work_at_every_row():
    # the simulator's iteration is the in-flight model's at every row count it can carry: the table is
    # token_work_s at its points (layers; the output projection apart) and, between them, within two ROWS_TOL of it
    # at every row of the Interactive budget (256) and of Mixtral's first 1,100 (its experts' tiles step at 513-515)
    from mlcalc import serving
    for row, top in ((_row("v5.1", "Cisco", "llama2-70b", "H200-SXM", "Interactive"), 256),
                     (_row("v5.1", "ASUSTeK", "mixtral-8x7b", "H200-SXM", "Server"), 1100)):
        st = mlperf.step_model(row)
        for n in range(1, top + 1):
            bare, full = mlperf.token_work_s(row, n, 0), mlperf.token_work_s(row, n, n)
            assert serving._base(st, n) == pytest.approx(bare, rel=2 * mlperf.ROWS_TOL)
            assert serving._head(st, n) == pytest.approx(full - bare, rel=2 * mlperf.ROWS_TOL)
    # the step the table keeps: Llama 2 70B in FP8 on one H200 costs a third more at 129 rows than at 128 (the tile
    # rule's next 128-row tile), so the Interactive runs' 256-token iterations with a prompt chunk cost more than
    # their decode rows alone
    row = _row("v5.1", "Cisco", "llama2-70b", "H200-SXM", "Interactive")
    st = mlperf.step_model(row)
    assert serving._base(st, 129) > 1.3 * serving._base(st, 128) and 129 in st.batches


def test_mixed_iteration_pays_all_its_rows():
    # one replica by rows, worked by hand: the layers cost 10 ms up to 64 rows and 20 ms from 65 (one step), the
    # output projection 1 ms at any rows that sample; no cache or attention cost; a 128-token budget. A (t = 0,
    # 40-token prompt, 3 out) prefills alone: 40 rows, 10 + 1 ms, first token at 11 ms. B (t = 0.1 ms, 100 tokens,
    # 2 out) then prefills beside A's decode: 101 rows, 20 + 1 ms, first token at 32 ms; one decode step of both
    # (2 rows, 11 ms) ends both at 43 ms. A's TPOT (43 - 11) / 2 = 16 ms, B's 11 ms. The per-prompt-token secant,
    # which the simulator read before, is not read by rows (set absurdly high here).
    from mlcalc import serving
    st = serving.StepModel((1, 64, 65, 128), (0.010, 0.010, 0.020, 0.020), 0.0, 1.0, 0.0, 0.0, 10 ** 6, 1.0, True,
                           by_rows=True, head_s=(0.001,) * 4)
    got = serving.simulate_replica(st, [(0.0, 40, 3), (0.0001, 100, 2)], max_batch=64, chunk_tokens=128)
    assert got.ttft_mean_s == pytest.approx((0.011 + 0.0319) / 2)
    assert got.tpot_mean_s == pytest.approx((0.016 + 0.011) / 2) and got.tpot_p99_s == pytest.approx(0.016)
    assert got.mean_batch == pytest.approx((1 * 0.021 + 2 * 0.011) / 0.032)
    # unchunked, a prefill iteration of a prompt alone by rows: 100 rows, 20 + 1 ms
    alone = serving.simulate_replica(st, [(0.001, 100, 1)], max_batch=64)
    assert alone.ttft_p99_s == pytest.approx(0.021)


def test_gemm_allreduce_fusion_of_the_405b_engine():
    # Nebius's Llama 3.1 405B engine (mlcommons/inference_results_v5.1 @ 965182b, closed/Nebius/configs/
    # H200-SXM-141GBx8/{Server,Interactive}/llama3_1-405b.py: trtllm_build_flags 'gemm_allreduce_plugin':
    # 'float16'); no other checked row's configuration sets it (v5.1: only 405B configurations do; v4.1 NVIDIA's
    # builder passes --use_custom_all_reduce and --reduce_fusion instead)
    from mlcalc import network, serving
    flagged = {(r["submitter"], r["benchmark"]) for r in mlperf.results() if mlperf.gemm_allreduce(r)}
    assert flagged == {("Nebius", "llama3.1-405b")}
    assert all("'gemm_allreduce_plugin': 'float16'" in r["config"] for r in mlperf.results() if mlperf.gemm_allreduce(r))
    # TensorRT-LLM (tensorrt_llm/quantization/layers.py, FP8RowLinear.forward: with the plugin set the FP8
    # row-parallel product and its all-reduce are one gemm_allreduce call; cpp/tensorrt_llm/kernels/cutlass_kernels/
    # allreduce_gemm/allreduce_gemm_impl_sm90.h: the epilogue marks output tiles done and a multicast warp group
    # reduces them while the product runs): each of a layer's two row-parallel products with its all-reduce takes
    # the longer of the two; the all-reduce over NVLink SHARP (NVLS). By hand on one replica of 8 H200s: the attention
    # output (t x 16,384 x 2,048 per GPU) and the down projection (t x 16,384 x 6,656), 126 layers
    model, chip = memory.model_preset("Llama-3.1 405B"), "H200-SXM"
    nvls, ring = serving._fabric(chip, 8, 1, "nvls"), serving._fabric(chip, 8, 1)
    for t in (1, 64, 2560):
        ar = network.fabric_collective_time(t * 16384 * 2, nvls).time_s
        assert ar <= network.fabric_collective_time(t * 16384 * 2, ring).time_s
        att, down = serving.gemm_law_s(t, 16384, 2048, chip, "fp8"), serving.gemm_law_s(t, 16384, 6656, chip, "fp8")
        hand = 126 * (max(0.0, ar - att) + max(0.0, ar - down))
        assert serving.gemm_allreduce_comm_s(model, chip, t, 8) == pytest.approx(hand, rel=1e-12)
        assert hand < serving.comm_s(model, chip, t, 8)
        assert sm.inflight_comm_s(model, chip, t, 8, "fp8", True) == pytest.approx(hand, rel=1e-12)
        assert sm.inflight_comm_s(model, chip, t, 8) == serving.comm_s(model, chip, t, 8)
    # a 2,560-token chunk: the ring's all-reduces after the matmuls, 117 ms, against 28 ms left by the fusion
    assert serving.comm_s(model, chip, 2560, 8) == pytest.approx(0.117, abs=0.002)
    assert serving.gemm_allreduce_comm_s(model, chip, 2560, 8) == pytest.approx(0.028, abs=0.002)
    # the in-flight iteration carries it in its comm term only
    one = sm.inflight(model, chip, 8, 9429, 655, caps=(64, 2560))
    fused = sm.inflight(model, chip, 8, 9429, 655, caps=(64, 2560), gemm_allreduce=True)
    assert fused.gemm_s == one.gemm_s and fused.comm_s < one.comm_s
    assert fused.iteration_s == pytest.approx(one.iteration_s - one.comm_s + fused.comm_s)
    # an MoE layer's feed-forward all-reduce follows the experts, not a row-parallel product: on the ring as before
    mix = memory.model_preset("Mixtral 8x7B")
    ar2 = network.fabric_collective_time(512 * mix.hidden * 2, serving._fabric("H100-SXM", 2, 1, "nvls")).time_s
    ring2 = network.fabric_collective_time(512 * mix.hidden * 2, serving._fabric("H100-SXM", 2, 1)).time_s
    att2 = serving.gemm_law_s(512, mix.hidden, mix.attn_out_width // 2, "H100-SXM", "fp8")
    assert serving.gemm_allreduce_comm_s(mix, "H100-SXM", 512, 2) == pytest.approx(
        mix.n_layers * (max(0.0, ar2 - att2) + ring2), rel=1e-12)
    assert serving.gemm_allreduce_comm_s(model, chip, 64, 1) == 0.0
    with pytest.raises(ValueError, match="tp="):
        serving.gemm_allreduce_comm_s(model, chip, 64, 16)  # its multicast memory is one node's
    with pytest.raises(ValueError, match="gemm_allreduce="):
        sm.inflight(mix, "H100-SXM", 2, 128, 128, attention_dp=True, gemm_allreduce=True)


def test_mixed_precision_checkpoint_of_the_mixtral_runs():
    # ASUSTeK's Mixtral 8x7B checkpoint (mlcommons/inference_results_v5.1 @ 965182b, closed/ASUSTeK/configs/
    # ESC_N8_H200-SXM-141GBx8/{Offline,Server}/mixtral-8x7b.py: trtllm_checkpoint_flags 'effective_bits': 8.75;
    # closed/ASUSTeK/code/mixtral-8x7b/modelopt/quantize.py: mtq.auto_quantize over ["FP8_DEFAULT_CFG", None]
    # under constraints={"effective_bits": effective_bits}, lm_head disabled). ModelOpt (NVIDIA/TensorRT-Model-
    # Optimizer @ 17e0c3f, modelopt/torch/quantization/algorithms.py): a format's bits are 16 x its compression, FP8
    # (4, 3) -> (4 + 3 + 1) / 16, none 1.0, and the effective bits 16 x total compressed size / total weight
    # elements; so 8.75 = 16 (0.5 (1 - w) + w): w = 0.09375 of the quantizable weights stay 16-bit
    rows = [r for r in mlperf.results() if r.get("effective_bits") is not None]
    assert {(r["benchmark"], r["effective_bits"]) for r in rows} == {("mixtral-8x7b", 8.75)} and len(rows) == 2
    assert all(mlperf.wide_share(r) == 0.09375 for r in rows)
    assert all(mlperf.wide_share(r) == 0.0 for r in mlperf.results() if r not in rows)
    # the matmuls: that share of every layer's products in bf16, the rest in FP8; the output projection in FP8
    from mlcalc import serving
    m, w = memory.model_preset("Mixtral 8x7B"), 0.09375
    for t in (64, 2048, 9215):
        head = serving.gemm_law_s(t, m.vocab, m.hidden, "H200-SXM", "fp8")
        fp8, bf16 = (serving.layers_gemm_law_s(m, t, 1, "H200-SXM", d) for d in ("fp8", "bf16"))
        assert sm.inflight_gemm_s(m, "H200-SXM", 1, t, t, "fp8", w) == pytest.approx((1 - w) * fp8 + w * bf16 + head)
        assert sm.inflight_gemm_s(m, "H200-SXM", 1, t, t, "fp8", 0.0) == pytest.approx(fp8 + head)
    # ... and those weights take 2 bytes: less KV room
    assert sm.inflight(m, "H200-SXM", 1, 427, 146, wide_share=w).kv_tokens < sm.inflight(m, "H200-SXM", 1, 427,
                                                                                           146).kv_tokens
    for bad in (7.0, 16.5):
        with pytest.raises(ValueError, match="effective_bits="):
            mlperf.wide_share(dict(rows[0], effective_bits=bad))
    with pytest.raises(ValueError, match="wide_share="):
        sm.inflight_gemm_s(m, "H200-SXM", 1, 64, 64, "fp8", 1.5)


def test_v41_token_budget_is_the_configuration():
    # mlcommons/inference_results_v4.1 @ a2f5d66, closed/NVIDIA/configs/llama2-70b/__init__.py: GPUBaseConfig
    # max_num_tokens = 4096 (code/llama2-70b/tensorrt/builder.py passes it as --max_num_tokens)
    for r in mlperf.results():
        if r["round"] == "v4.1":
            assert r["max_tokens"] == 4096 and "max_num_tokens = 4096" in r["config"]
