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
