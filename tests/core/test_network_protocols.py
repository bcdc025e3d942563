"""NCCL's protocol choice (LL, LL128, Simple) by its own tuning model (mlcalc.network.nccl_tuner_table / nccl_tuned_pick).

Source of every constant: NVIDIA/nccl src/graph/tuning.cc at tag v2.28.9-1 (commit dbc86fd06e8b0c4517b95d8958a09ccacf9520c9):
baseLatencies {Tree: 6.8, 14.0, 8.4; Ring: 6.6, 14.0, 8.4} us; NVLink hwLatencies {Tree: .6, 1.25, 4.0; Ring: .6, 1.9, 3.4};
llMaxBws Hopper one node 141.0; perChMaxRingLL128Bws Hopper 36.7; ring LL busBw = min(llMaxBw, busBw x .5), LL128
min(busBw x .92, nChannels x 36.7); algbw = busBw x nRanks / nsteps. The version the book's runs used (NCCL 2.28.9).
"""

import pytest

from mlcalc import network as net

US = 1e-6


def _row(collective, n, algorithm, protocol, key="NVLink4-H100"):
    return next(r for r in net.nccl_tuner_table(collective, n, key) if (r.algorithm, r.protocol) == (algorithm, protocol))


def test_the_constants_are_tuning_cc_at_2_28_9():
    t = net.nccl_tuning()
    assert "dbc86fd06e8b0c4517b95d8958a09ccacf9520c9" in t["source"] and t["nccl_version"] == "2.28.9"
    assert t["base_latency_us"] == {"tree": [6.8, 14.0, 8.4], "ring": [6.6, 14.0, 8.4]}
    assert t["nvlink_step_latency_us"]["ring"] == [0.6, 1.9, 3.4]
    assert t["ll_max_busbw_GBps"]["90"] == 141.0 and t["ring_ll128_per_channel_GBps"]["90"] == 36.7
    # the Ring/Simple latency of the table is the one the law has charged all along (links.json nccl_latency)
    assert t["base_latency_us"]["ring"][2] * US == pytest.approx(net.nccl_base_latency_s())
    assert t["nvlink_step_latency_us"]["ring"][2] * US == pytest.approx(net.link("NVLink4-H100").step_latency_s)


def test_h100_ring_bandwidths_as_nccl_prices_them():
    # An H100 node: NCCL's ring search gives 12 channels at 30 GB/s (nccl_ring_channels(18, 90)): Simple 360 GB/s busbw;
    # LL min(141, 180) = 141; LL128 min(0.92 x 360 = 331.2, 12 x 36.7 = 440.4) = 331.2. All-reduce on 4 GPUs: x 4/6.
    assert _row("all_reduce", 4, "ring", "Simple").algbw_bytes_per_s == pytest.approx(240e9)
    assert _row("all_reduce", 4, "ring", "LL").algbw_bytes_per_s == pytest.approx(141e9 * 4 / 6)
    assert _row("all_reduce", 4, "ring", "LL128").algbw_bytes_per_s == pytest.approx(331.2e9 * 4 / 6)
    assert _row("all_gather", 2, "ring", "LL").algbw_bytes_per_s == pytest.approx(282e9)


def test_latencies_per_protocol():
    # Ring all-reduce on 4 GPUs: 2 (n - 1) = 6 steps. LL 6.6 + 6 x 0.6 = 10.2 us; LL128 14 + 6 x 1.9 = 25.4; Simple
    # 8.4 + 6 x 3.4 = 28.8 (the law's). Tree on one node: 2 (n - 1) hops, LL128 14 + 6 x 1.25 = 21.5.
    assert _row("all_reduce", 4, "ring", "LL").latency_s == pytest.approx(10.2 * US)
    assert _row("all_reduce", 4, "ring", "LL128").latency_s == pytest.approx(25.4 * US)
    assert _row("all_reduce", 4, "ring", "Simple").latency_s == pytest.approx(28.8 * US)
    assert _row("all_reduce", 4, "tree", "LL128").latency_s == pytest.approx(21.5 * US)
    assert _row("reduce_scatter", 2, "ring", "LL").latency_s == pytest.approx(7.2 * US)


@pytest.mark.parametrize("n, size, pick", [
    (4, 2**13, "ring/LL"), (4, 2**20, "ring/LL"), (4, 2**22, "ring/LL128"), (4, 2**26, "ring/Simple"),
    (2, 2**13, "ring/LL"), (2, 2**20, "ring/LL"), (2, 2**22, "ring/Simple")])
def test_the_pick_is_the_least_modelled_time(n, size, pick):
    # enqueue.cc topoGetAlgoInfo: the least latency + bytes / bandwidth. 4 GPUs, 4 MiB: LL 10.2 + 4194304 / 94e3 = 54.8
    # us, LL128 25.4 + 19.0 = 44.4, Simple 28.8 + 17.5 = 46.3: LL128.
    got = net.nccl_tuned_pick(size, n, "all_reduce")
    assert f"{got.algorithm}/{got.protocol}" == pick
    every = net.nccl_tuned_choices(size, n, "all_reduce")
    assert got.time_s == min(r.time_s for r in every)


def test_forcing_a_protocol_as_nccl_proto_does():
    r = net.nccl_tuned_pick(2**26, 4, "all_reduce", protocols=("LL",))
    assert r.protocol == "LL" and r.time_s == pytest.approx(10.2 * US + 2**26 / (141e9 * 4 / 6))


def test_tree_correction_at_its_size():
    # tuning.cc treeCorrectionFactor[LL128][log2(1 MiB / 64) = 14] = 0.6
    r = next(x for x in net.nccl_tuned_choices(2**20, 4, "all_reduce") if (x.algorithm, x.protocol) == ("tree", "LL128"))
    assert r.time_s == pytest.approx(21.5 * US + 2**20 / (0.6 * r.algbw_bytes_per_s))


@pytest.mark.parametrize("call, name", [
    (lambda: net.nccl_tuner_table("all_to_all", 4), "collective"),
    (lambda: net.nccl_tuner_table("all_reduce", 1), "n_ranks"),
    (lambda: net.nccl_tuner_table("all_reduce", 4, "PCIe4-x16"), "intra_key"),
    (lambda: net.nccl_tuned_choices(-1.0, 4), "message_bytes"),
    (lambda: net.nccl_tuned_pick(1024, 4, protocols=("LL256",)), "protocols"),
    (lambda: net.nccl_tuned_pick(1024, 4, protocols=()), "protocols"),
])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# ---------------------------------------------------------------------------------------------------------------
# Against our measurement: mlcalc/data/measured/h200x4-2026-11-28-lat16 (scripts/gpu/lat16_bench.py; 4 x NVIDIA H200,
# asked as nvidia-h100-x4; NCCL 2.28.9, torch 2.11.0+cu130, NVLS off, bf16), predictions committed before the call
# (scripts/gpu/lat16_predictions.json) and scored by its rule (scored.json, scripts/gpu/score_lat16.py).

from pathlib import Path  # noqa: E402

from mlcalc import accuracy, measured  # noqa: E402

RUN = measured.SMALL_COLLECTIVES_RUN
SIZES = [2**k for k in range(10, 27)]
DATA = Path(__file__).resolve().parents[2] / "mlcalc" / "data" / "measured" / RUN


def _points(**want):
    return [p for p in measured.small_collectives() if all(getattr(p, k) == v for k, v in want.items())]


def test_the_run_is_what_its_readme_says():
    rows = measured.small_collectives()
    nccl = [p for p in rows if p.engine == "nccl"]
    # 102 points (3 collectives x 2 GPU counts x 17 sizes) under 4 NCCL_PROTO settings with NCCL's log, and eager +
    # graph under the defaults without it; torch's one-shot and two-shot all-reduce, graph and eager
    assert len(nccl) == 102 * 4 + 102 * 2 and len(rows) - len(nccl) == 2 * 2 * 2 * 17
    assert {p.n_ranks for p in rows} == {2, 4} and sorted({p.size_bytes for p in rows}) == SIZES
    assert "NVIDIA H200" in (DATA / "machine.txt").read_text() and "(2, 28, 9)" in (DATA / "machine.txt").read_text()


def test_nccls_logged_pick_is_its_tuning_model_at_every_point():
    # NCCL's INFO log (rank 0's per-call 'Bytes -> Algo' lines) against nccl_tuned_pick: 102 of 102 under its defaults,
    # and with NCCL_PROTO forced, 102 of 102 (LL, Simple) and 101 of 102 (LL128: the 2-GPU all-reduce at 128 KiB ran
    # Tree/LL128, the model says Ring/LL128, because NCCL's search gives the 2-GPU tree more bandwidth than the ring's
    # speed the model lends it: its log prints Tree 180.6 GB/s for LL128 on 2 GPUs, the model 128.8).
    for proto, allowed, expect in (("unset", net.NCCL_PROTOCOLS, 102), ("LL", ("LL",), 102),
                                   ("LL128", ("LL128",), 101), ("Simple", ("Simple",), 102)):
        got = 0
        for p in _points(engine="nccl", mode="graph", nccl_proto=proto):
            pick = net.nccl_tuned_pick(p.size_bytes, p.n_ranks, p.collective, protocols=allowed)
            got += p.logged == (f"{pick.algorithm}/{pick.protocol}",)
        assert got == expect, proto


def _table(n):
    """NCCL's printed tuning table (latency us / bandwidth GB/s per algorithm x protocol) for the n-GPU communicator."""
    lines = (DATA / "tuning_tables.txt").read_text().splitlines()
    heads = [i for i, ln in enumerate(lines) if "Channel 00/24 :" in ln]
    start = next(i for i in heads if len(lines[i].split(":")[-1].split()) == n)
    out = {}
    for ln in lines[start:]:
        for coll in ("AllReduce", "AllGather"):
            if f"{coll} |" in ln and coll not in out:
                cells = [c.strip() for c in ln.split("|")[1:7]]
                out[coll] = [tuple(float(x) for x in c.split("/")) for c in cells]
        if len(out) == 2:
            return out
    raise AssertionError(n)


@pytest.mark.parametrize("n", [2, 4])
def test_the_model_reproduces_nccls_printed_table(n):
    # NCCL prints latency (us) / algbw (GB/s) of Tree and Ring x LL, LL128, Simple when it makes a communicator
    # (tuning_tables.txt). Ring: equal for 2 and 4 GPUs, both collectives; Tree: equal for 4 GPUs; for 2 the log's tree
    # bandwidth is above the model's (stated in the test above), its latencies equal.
    printed = _table(n)
    for coll, name in (("all_reduce", "AllReduce"), ("all_gather", "AllGather")):
        for r in net.nccl_tuner_table(coll, n):
            col = ("tree", "ring").index(r.algorithm) * 3 + net.NCCL_PROTOCOLS.index(r.protocol)
            lat, bw = printed[name][col]
            assert r.latency_s * 1e6 == pytest.approx(lat, abs=0.051), (coll, r)
            if r.algorithm == "ring" or n == 4:
                assert r.algbw_bytes_per_s / 1e9 == pytest.approx(bw, abs=0.051), (coll, r)
            else:
                assert bw > r.algbw_bytes_per_s / 1e9


def test_in_a_graph_the_small_all_reduce_is_neither_the_law_nor_nccls_model():
    # The blind record (scored.json): in a CUDA graph at 1-64 KiB, all-reduce took 14.0-14.9 us on 2 GPUs and 16.7-18.7
    # on 4; eager, the same calls took 37-69 us (the host's launch path). The law (Ring/Simple, 15.2 and 28.8 us) is
    # within 3-9 % on 2 GPUs and 55-72 % slow on 4; NCCL's own model (Ring/LL: 7.8-8.3 and 10.2-10.9 us) 39-47 %
    # fast on both. By the rule fixed before the call the law was kept (61 of 102 points within 20 % against 9).
    for n, lo, hi in ((2, 13.95e-6, 14.95e-6), (4, 16.65e-6, 18.75e-6)):
        fab = net.fabric("DGX-H100", 1, gpus_per_node=n)
        for p in _points(engine="nccl", mode="graph", nccl_proto="unset", nccl_log=False, collective="all_reduce",
                         n_ranks=n):
            if p.size_bytes > 2**16:
                continue
            assert lo <= p.time_s <= hi
            law = net.fabric_collective_time(p.size_bytes, fab).time_s / p.time_s - 1
            assert (0.02 <= law <= 0.09) if n == 2 else (0.55 <= law <= 0.73)
            assert -0.47 <= net.nccl_tuned_pick(p.size_bytes, n).time_s / p.time_s - 1 <= -0.38
    for p in _points(engine="nccl", mode="eager"):
        if p.size_bytes <= 2**16:
            assert 37e-6 <= p.time_s <= 70e-6


def test_the_blind_score_is_the_record():
    import json
    s = json.loads((DATA / "scored.json").read_text())
    assert (s["graph_scores"]["law_s"]["within"], s["graph_scores"]["nccl_s"]["within"]) == (61, 9)
    assert s["better"] == "law_s" and s["engine_takes_nccl_choice"] is False
    assert s["logged_pick_equals_model"]["unset"] == 102


def test_torchs_one_shot_all_reduce_in_a_graph():
    # torch.ops.symm_mem.one_shot_all_reduce (symmetric memory, multicast off) in a CUDA graph: 6.3-7.5 us from 1 to
    # 32 KiB on 2 and 4 H200s, under half NCCL's 14.0-18.7 us in the same call; two-shot 13.0 us at 1 MiB on 4 GPUs,
    # one-shot 18.4 (it reads every peer's whole buffer). No law charges it (network.engine_allreduce_paths).
    for p in _points(engine="torch_symm_mem_one_shot", mode="graph"):
        if p.size_bytes <= 2**15:
            assert 6.2e-6 <= p.time_s <= 7.6e-6
            nccl = _points(engine="nccl", mode="graph", nccl_proto="unset", nccl_log=False, collective="all_reduce",
                           n_ranks=p.n_ranks, size_bytes=p.size_bytes)[0]
            assert p.time_s < 0.55 * nccl.time_s
    two, one = (_points(engine=f"torch_symm_mem_{k}", mode="graph", n_ranks=4, size_bytes=2**20)[0].time_s
                for k in ("two_shot", "one_shot"))
    assert two == pytest.approx(13.0e-6, abs=0.1e-6) and one == pytest.approx(18.4e-6, abs=0.1e-6)


def test_the_small_collectives_family():
    # small17: the family prices the protocol NCCL picks (network.nccl_protocol_time): 20 of 30 within 20 % (17 under
    # Ring/Simple everywhere). Every miss is fast (-20 to -31 %) and names the protocol NCCL ran and this host's floor.
    cases = accuracy.cases("collectives-small")
    assert len(cases) == 30 and sum(abs(c.error) <= 0.20 for c in cases) == 20
    assert max(c.error for c in cases) < 0.06 and min(c.error for c in cases) > -0.31
    for c in cases:
        assert bool(c.cause) == (abs(c.error) > 0.20)
        assert not c.cause or ("the protocol the law prices" in c.cause and "graph_call_floor" in c.cause)


# --------------------------------------------------------------------------- the law in NCCL's protocol (small17)
# nccl_protocol_time: the law's Ring/Simple time (the anchor) moved to the protocol NCCL's tuner picks by NCCL's own
# relations between protocols (src/graph/tuning.cc at v2.28.9-1): baseLat LL / Simple 6.6 / 8.4, hwLat[NVLink] LL /
# Simple 0.6 / 3.4, ring LL busBw min(llMaxBw 141, 0.5 x 360) / 360 of NCCL's Simple (src/include/device.h: an LL
# line of 16 bytes carries 8 of data), LL128 0.92 = 120/128; plus one floor per call in a CUDA graph.
FOUR = net.fabric("DGX-H100", 1, gpus_per_node=4)
TWO = net.fabric("DGX-H100", 1, gpus_per_node=2)


def test_protocol_law_latency_is_the_laws_scaled_by_nccls_relations():
    # 4-GPU all-reduce, 8 KiB: Ring/LL. The law's Simple latency 8.4 + 6 x 3.4 = 28.8 us becomes 8.4 x 6.6/8.4 +
    # 6 x 3.4 x 0.6/3.4 = 10.2 us; the floor 3.65 us on top; the bytes at the LL rate: 8192 x 1.5 / (141/360 of the
    # law's 346.6 GB/s ring) = 0.09 us. Measured in lat16's graph: 17.5 us.
    r = net.nccl_protocol_time(8192, FOUR)
    assert (r.algorithm, r.protocol) == ("ring", "LL")
    assert r.latency_s == pytest.approx(10.2 * US) and r.floor_s == pytest.approx(3.65 * US)
    law = net.fabric_collective_time(8192, FOUR)
    assert r.bandwidth_s == pytest.approx(law.bandwidth_s * 360 / 141)
    assert r.time_s == pytest.approx(r.floor_s + r.latency_s + r.bandwidth_s)


def test_protocol_law_keeps_the_simple_anchor_where_nccl_runs_simple():
    # 64 MiB on 4 GPUs: NCCL picks Ring/Simple; the law is the old one plus the floor. 1 GiB (the collectives family):
    # the floor is 3.65 us of about 4.3 ms.
    for size in (2**26, 2**30):
        r, law = net.nccl_protocol_time(size, FOUR), net.fabric_collective_time(size, FOUR)
        assert r.protocol == "Simple" and r.time_s == pytest.approx(law.time_s + 3.65 * US)


def test_protocol_law_ll128_at_4_mib():
    # 4-GPU all-reduce, 4 MiB: Ring/LL128 (NCCL's log agrees): latency 8.4 x 14/8.4 + 6 x 1.9 = 25.4 us, bytes at 0.92
    # of the law's rate (LL128 sends 120 bytes of data in every 128, tuning.cc '.92 /*120.0/128.0*/').
    r, law = net.nccl_protocol_time(2**22, FOUR), net.fabric_collective_time(2**22, FOUR)
    assert r.protocol == "LL128" and r.latency_s == pytest.approx(25.4 * US)
    assert r.bandwidth_s == pytest.approx(law.bandwidth_s / 0.92)


def test_the_floor_is_the_serve_runs_median():
    # links.json nccl_latency graph_call_floor_us: the median over the serve run's 8 graph all-reduces (2 x H200,
    # 8 KiB-2 MiB; tp.json) of the measured time less the law with no floor. lat16 is not used.
    import statistics

    from mlcalc import servemeasured as sm
    over = [p["graph_s"] - net.nccl_protocol_time(p["bytes"], net.fabric("DGX-H100", 1, gpus_per_node=p["tp"]),
                                                   floor_s=0.0).time_s
            for p in sm.run_data("h200x2-2026-11-26-serve")["tp"]["allreduce"]]
    assert len(over) == 8
    assert net.nccl_graph_floor_s() == pytest.approx(round(statistics.median(over) * 1e6, 2) * US)


def test_the_protocol_law_on_lat16s_102_points():
    # lat16's 102 graph points under NCCL's defaults (scored.json's graph_s): 77 within 20 % (Ring/Simple: 61),
    # every protocol NCCL ran priced as it ran.
    import json
    s = json.loads((DATA / "scored.json").read_text())
    errs = [net.nccl_protocol_time(q["size_bytes"], net.fabric("DGX-H100", 1, gpus_per_node=q["n"]), q["coll"]).time_s
            / q["graph_s"] - 1 for q in s["points"]]
    assert len(errs) == 102 and sum(abs(e) <= 0.20 for e in errs) == 77
    assert sum(abs(q["law_error"]) <= 0.20 for q in s["points"]) == 61


@pytest.mark.parametrize("call, name", [
    (lambda: net.nccl_protocol_time(1024, net.fabric("DGX-H100", 2)), "n_nodes"),
    (lambda: net.nccl_protocol_time(1024, FOUR, "all_to_all"), "collective"),
    (lambda: net.nccl_protocol_time(-1.0, FOUR), "message_bytes"),
    (lambda: net.nccl_protocol_time(1024, FOUR, floor_s=-1.0), "floor_s"),
    (lambda: net.nccl_protocol_time(1024, FOUR, intra_key="PCIe4-x16"), "intra_key"),
    (lambda: net.nccl_protocol_time(1024, net.fabric("DGX-H100", 1, gpus_per_node=1)), "n_ranks"),
])
def test_protocol_law_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_engine_paths_name_a_source():
    paths = net.engine_allreduce_paths()
    assert set(paths) == {"book_graph_engine", "sglang", "tensorrt_llm", "torch_symmetric_memory"}
    assert all(p["source"] and p["runs"] and p["charged"] for p in paths.values())
    assert "pull/2904" in paths["sglang"]["source"] and "pull/9145" in paths["tensorrt_llm"]["source"]


def test_bad_run_names_the_parameter():
    with pytest.raises(ValueError, match="run"):
        measured.small_collectives("no-such-run")
    with pytest.raises(ValueError, match="name"):
        measured.small_collectives("h200x4-2026-11-26-net5")
