"""The network model against this book's own 4-GPU measurement (issue 13, item 3).

Source of every measured number below: mlcalc/data/measured/h200x4-2026-11-26-net5/ (all five collectives
over 4 NVIDIA H200s of one node, NVLink 4 through NVSwitch, NCCL 2.28.9, NVLS off, torch 2.11) and
h200x4-2026-11-26-net5-2of4/ (the same run over 2 of the same 4 GPUs), read through mlcalc.measured.
The H200's NVLink 4 is the H100 SXM's, so the model is one DGX-H100 node with 2 or 4 GPUs.
Nothing in mlcalc.network is fitted to these points.
"""

from dataclasses import replace

import pytest

from mlcalc import measured
from mlcalc import network as net

GIB = 2**30
RUN4, RUN2 = "h200x4-2026-11-26-net5", "h200x4-2026-11-26-net5-2of4"
OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv")


def _curve(run: str, op: str) -> measured.BusbwCurve:
    found = [c for c in measured.run(run) if isinstance(c, measured.BusbwCurve) and c.op == op]
    assert len(found) == 1, (run, op)
    return found[0]


def _ratio(run: str, op: str, n: int, size: float = GIB) -> float:
    """measured / model bus bandwidth."""
    curve = _curve(run, op)
    assert curve.n_ranks == n and curve.info.accelerator == "H200-SXM"
    model = net.fabric_collective_time(size, net.fabric("DGX-H100", 1, gpus_per_node=n), op).busbw_bytes_per_s
    return curve.busbw_bytes_per_s_at(size) / model


def test_the_runs_are_what_the_chapter_says():
    # Source: the run's own records (collectives.json, machine.txt): 4 x H200, NCCL 2.28.9, 1 GiB largest size.
    for run, n in ((RUN4, 4), (RUN2, 2)):
        for op in OPS:
            c = _curve(run, op)
            assert c.n_ranks == n
            assert c.info.device_name == "NVIDIA H200"
            assert "NCCL 2.28.9" in c.info.software
            assert c.sizes_bytes[-1] == GIB
    # busbw_curves picks them by GPU count
    assert any(c.info.label.startswith(RUN4) for c in measured.busbw_curves("all_gather", n_ranks=4))


@pytest.mark.parametrize("op", OPS)
def test_four_gpus_at_1_gib_within_15_percent_of_the_model(op):
    # Source: our 4 x H200 measurement (h200x4-2026-11-26-net5): all-reduce 354.8, all-gather 326.7,
    # reduce-scatter 326.1, all-to-all 335.9, send/recv 358.2 GB/s busbw at 1 GiB; the model gives ~367.
    assert 1 / 1.15 <= _ratio(RUN4, op, 4) <= 1.15


@pytest.mark.parametrize("op", ("all_reduce", "all_to_all", "send_recv"))
def test_two_gpus_at_1_gib_within_15_percent_of_the_model(op):
    # Source: our measurement over 2 of the same 4 H200s (h200x4-2026-11-26-net5-2of4): all-reduce 329.0,
    # all-to-all 331.3, send/recv 359.5 GB/s busbw at 1 GiB.
    assert 1 / 1.15 <= _ratio(RUN2, op, 2) <= 1.15


@pytest.mark.parametrize("op", ("all_gather", "reduce_scatter"))
def test_two_gpu_all_gather_and_reduce_scatter_within_15_percent_with_nccls_channels(op):
    # Source: our measurement over 2 of the same 4 H200s (h200x4-2026-11-26-net5-2of4): all-gather 268.1,
    # reduce-scatter 274.4 GB/s at 1 GiB. With the link alone the model said ~367 (73% and 75% of it: issue 24's
    # miss). NCCL's ring kernel on 24 channels (nccl_ring_busbw_bytes_per_s) gives 24 / (24 / 370 + 1 / 38.4) =
    # 264 GB/s (262.5 with the latency at 1 GiB): within 2% and 5%, and 324 over 4 GPUs (measured 326.7, 326.1).
    assert 0.98 <= _ratio(RUN2, op, 2) <= 1.07
    assert 0.98 <= _ratio(RUN4, op, 4) <= 1.03
    link_only = replace(net.fabric("DGX-H100", 1, gpus_per_node=2), ring_channels=0)
    assert _curve(RUN2, op).busbw_bytes_per_s_at(GIB) < 0.78 * net.fabric_collective_time(
        GIB, link_only, op).busbw_bytes_per_s


TWO_GPU_RUNS = ("h200x2-2026-11-26", "h200x2-2026-11-26-collectives2", "h200x2-2026-11-26-collectives3",
                "h200x2-2026-11-26-net5", RUN2, "h200x4-2026-11-26-net5-2of4-run2")


@pytest.mark.parametrize("run", TWO_GPU_RUNS)
def test_the_two_gpu_miss_is_the_ring_kernel_not_the_link(run):
    # The stated cause of the 2-GPU all-gather and reduce-scatter misses (mlcalc/data/measured/
    # h200x4-2026-11-26-net5-2of4/misses.json), checked against every 2-GPU H200 sweep bundled (NCCL 2.28.9, NVLS off):
    # on the same 2 GPUs in the same call, all-to-all sends the same bytes per rank (half the buffer each way) and
    # all-reduce runs the same ring reduce-scatter + all-gather, both at 326-331 GB/s busbw at 1 GiB (send/recv
    # 358-360 where the sweep has it), while all-gather and reduce-scatter stay at 266-276 GB/s. If a later sweep
    # brought them up to the link's rate, this cause would be wrong and this test says so.
    curves = {c.op: c for c in measured.run(run) if isinstance(c, measured.BusbwCurve)}
    at = {op: c.busbw_bytes_per_s_at(GIB) for op, c in curves.items()}
    assert all(c.n_ranks == 2 and c.info.device_name == "NVIDIA H200" for c in curves.values())
    for slow in ("all_gather", "reduce_scatter"):
        assert at["all_reduce"] >= 1.15 * at[slow], (run, slow)
        for fast, factor in (("all_to_all", 1.15), ("send_recv", 1.25)):
            if fast in at:  # the first three sweeps ran all-reduce, all-gather and reduce-scatter only
                assert at[fast] >= factor * at[slow], (run, fast, slow)


def test_the_accuracy_page_has_no_collectives_miss_left():
    # Every case of the collectives family is within its ±15% with NCCL's channels in the model (issue 24); a case
    # within carries no cause. Before: the 2-GPU all-gather and reduce-scatter were out (+36.9%, +33.8%).
    from mlcalc import accuracy

    cases = accuracy.cases("collectives")
    assert len(cases) == 10
    assert all(abs(c.error) <= accuracy.FAMILIES["collectives"].target for c in cases)
    assert all(not c.cause for c in cases)


def test_eight_gpu_ring_all_gather_against_published_h100_numbers():
    # Source: NVIDIA/nccl-tests issue 326 (8 x H100 SXM, NVLink through NVSwitch, all_gather_perf -b 128M -e 16384M
    # -g 8): all-gather and all-reduce bus bandwidth level off at ~360 GB/s, and NCCL's maintainer: "360 GB/s is
    # exactly what we'd expect on H100". NVIDIA/nccl issue 1281 (H100): reduce-scatter 360, all-gather 350 GB/s busbw.
    # The model's ring at 8 GiB on one DGX-H100 node gives ~369 GB/s for both: within 3% of 360 and 6% of 350. On 8
    # GPUs the ring kernels reach the link's rate, as they do on 4 of our H200s; the miss is the 2-GPU case.
    eight = net.fabric("DGX-H100", 1)
    for op, published in (("all_gather", 360e9), ("all_gather", 350e9), ("reduce_scatter", 360e9)):
        model = net.fabric_collective_time(2**33, eight, op).busbw_bytes_per_s
        assert model == pytest.approx(published, rel=0.06), (op, published)


def test_measured_busbw_rises_from_two_gpus_to_four_and_so_does_the_model():
    # Source: our 4 x H200 run (both folders): all-reduce 329.0 -> 354.8, all-gather 268.1 -> 326.7,
    # reduce-scatter 274.4 -> 326.1 GB/s at 1 GiB. NCCL's ring kernel has one receive-only step per chunk whatever
    # the GPU count, so its share of the time falls from 1/2 (2 GPUs) to 1/4 (4 GPUs) for all-gather and
    # reduce-scatter, and from 1/3 to 1/7 for all-reduce: the model rises with it (262.5 -> 323.9, 306.8 -> 344.6).
    for op in ("all_reduce", "all_gather", "reduce_scatter"):
        measured2, measured4 = (_curve(r, op).busbw_bytes_per_s_at(GIB) for r in (RUN2, RUN4))
        m2, m4 = (net.fabric_collective_time(GIB, net.fabric("DGX-H100", 1, gpus_per_node=n), op).busbw_bytes_per_s
                  for n in (2, 4))
        assert measured4 > 1.05 * measured2 and m4 > 1.05 * m2
        assert m4 / m2 == pytest.approx(measured4 / measured2, rel=0.06), op


def test_four_gpu_send_recv_step_below_256_mib_is_a_stated_miss():
    # Source: our 4 x H200 run (h200x4-2026-11-26-net5): send/recv (each rank to the next, from the previous)
    # stays near 134-162 GB/s up to 128 MiB and jumps to 303 GB/s at 256 MiB; the model, which knows nothing of
    # this step, is about twice too high below it (collectives chapter). Unexplained; pinned as stated.
    assert 0.40 <= _ratio(RUN4, "send_recv", 4, 2**27) <= 0.50
    assert _ratio(RUN4, "send_recv", 4, 2**28) >= 0.80


RUN4B, RUN2B = "h200x4-2026-11-26-net5-run2", "h200x4-2026-11-26-net5-2of4-run2"


@pytest.mark.parametrize("op", OPS)
def test_a_second_four_gpu_machine_repeats_every_collective_within_2_percent(op):
    # Source: a later call asked for 4 x H100 and got 4 x H200 again (another host: mlcalc/data/measured/
    # h200x4-2026-11-26-net5-run2 and -2of4-run2, same software). At 1 GiB, over 4 GPUs: all-reduce 352.7,
    # all-gather 325.0, reduce-scatter 329.7, all-to-all 336.6, send/recv 359.2 GB/s; over 2 of them 326.3, 268.8,
    # 274.7, 331.0, 359.2. So the 2-GPU all-gather and reduce-scatter miss above is the hardware's, not one host's.
    for first, again, n in ((RUN4, RUN4B, 4), (RUN2, RUN2B, 2)):
        a, b = _curve(first, op), _curve(again, op)
        assert b.n_ranks == n and b.info.device_name == "NVIDIA H200"
        assert b.busbw_bytes_per_s_at(GIB) == pytest.approx(a.busbw_bytes_per_s_at(GIB), rel=0.02)
    if op in ("all_gather", "reduce_scatter"):  # the former 2-GPU miss: within 5% with NCCL's channels
        assert 0.98 <= _ratio(RUN2B, op, 2) <= 1.05


def _time_ratio(run: str, n: int, size: int) -> float:
    """model / measured all-reduce time at one of the curve's sizes."""
    curve = _curve(run, "all_reduce")
    t = dict(zip(curve.sizes_bytes, curve.time_s))[size]
    return net.fabric_collective_time(size, net.fabric("DGX-H100", 1, gpus_per_node=n)).time_s / t


@pytest.mark.parametrize("size", [2**k for k in range(23, 29)])
def test_all_reduce_law_at_tensor_parallel_sizes(size):
    # The sizes a tensor-parallel serving iteration all-reduces (mlcalc.serving.comm_s: tokens x hidden x 2 bytes;
    # 1,000-8,000 tokens of a 4,096-8,192 hidden: 8-128 MiB), not only the 1 GiB above. Source: both 4 x H200 runs
    # (h200x4-2026-11-26-net5 and -run2): 59.5 / 94.2 / 172.9 / 321.6 / 614.0 / 1184.5 us from 8 to 256 MiB on the
    # first; the law is within 11 % of each (-2 to +10 %, +10.1 % at 8 MiB on -run2). Over 2 of the GPUs (-2of4 and
    # -2of4-run2: 46.0 / 74.9 / 136.6 / 247.6 / 468.6 / 894.8 us) it is 1-10 % fast at these sizes. With the link alone
    # it was 17-23 % fast on 2 GPUs at every size; NCCL's ring kernel (24 channels, one receive-only step in three,
    # nccl_ring_busbw_bytes_per_s) takes the law to 306.8 GB/s at 1 GiB against the measured 329.
    for run in (RUN4, RUN4B):
        assert 0.97 <= _time_ratio(run, 4, size) <= 1.11, run
    for run in (RUN2, RUN2B):
        assert 0.89 <= _time_ratio(run, 2, size) <= 1.0, run


def test_small_all_reduce_latency_is_a_stated_limit():
    # Source: both runs above (h200x4-2026-11-26-net5 and its 2-of-4 run): from 32 KiB to 2 MiB the measured all-reduce
    # stays at 23-31 us on 2 GPUs and on 4, while the law's Ring/Simple latency (NCCL tuning.cc: 8.4 us + 3.4 us per
    # step, 2 (n - 1) steps) is 15.2 us for 2 GPUs and 28.8 us for 4. The stated limit (links.json
    # nccl_latency.measured_limit): the law 25-45 % slow on 4 GPUs at 1-2 MiB and 25-35 % fast on 2 GPUs there. This
    # pins that state: a change of the law or the data shows here and must change the stated limit with it.
    assert "measured_limit" in net._raw()["nccl_latency"]
    for size in (2**20, 2**21):
        assert 1.25 <= _time_ratio(RUN4, 4, size) <= 1.45
        assert 0.65 <= _time_ratio(RUN2, 2, size) <= 0.80
    for run, _n in ((RUN4, 4), (RUN2, 2)):
        curve = _curve(run, "all_reduce")
        small = [t for s, t in zip(curve.sizes_bytes, curve.time_s) if 2**15 <= s <= 2**21]
        assert 23e-6 <= min(small) and max(small) <= 31e-6
