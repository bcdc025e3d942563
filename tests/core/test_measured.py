"""mlcalc.measured: reading this tool's JSON, nccl-tests output and mamf-finder logs; the book's runs."""

from __future__ import annotations

import json

import pytest

from mlcalc import measured, network, spec
from mlcalc import gpt_program as predict

# The shape of nccl-tests output (nccl-tests README, "all_reduce_perf -b 8 -e 128M -f 2 -g 8"),
# 2 ranks; busbw = algbw * 2(n-1)/n = algbw for n = 2.
NCCL_TEXT = """\
# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  41170 on     node-1 device  0 [0x18] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  41171 on     node-1 device  1 [0x2a] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2     float     sum      -1    10.00    0.00    0.00      0     9.90    0.00    0.00      0
     1048576        262144     float     sum      -1    20.00   52.43   52.43      0    19.00   55.19   55.19      0
   134217728      33554432     float     sum      -1   400.00  335.54  335.54      0   401.00  334.71  334.71      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 129.3
"""

# The summary that mamf-finder.py prints (ml-engineering, compute/accelerator/benchmarks/README.md).
MAMF_TEXT = """\
** Dtype: torch.bfloat16

** Platform/Device info:
- Linux node-1 6.8.0 x86_64
- _CudaDeviceProperties(name='NVIDIA H100 80GB HBM3', major=9, minor=0, total_memory=81008MB, multi_processor_count=132)

     1 |  756.1(mean)  758.2(median)  762.3(max) @ 8192x4096x4096        | best:  756.1(mean)  758.2(median)  762.3(max) TFLOPS

Tried 80 shapes => the best outcomes were:
mean:   756.1 TFLOPS @ 8192x4096x4096 (MxNxK)
median: 758.2 TFLOPS @ 8192x4096x4096 (MxNxK)
max:    762.3 TFLOPS @ 8192x4096x4096 (MxNxK)
"""

MAMF_HEADLINE = """\
Tried 24 shapes => the best outcomes were:
MAMF (max achievable,  boost burst): 842 TFLOPS @ 3072x2816x20480 (MxNxK)  172W 1980MHz
MSMF (max sustainable, saturated):   722 TFLOPS @ 3072x2816x8192 (MxNxK)  681W 1612MHz
"""


def test_accelerator_key():
    assert measured.accelerator_key("NVIDIA H100 80GB HBM3") == "H100-SXM"
    assert measured.accelerator_key("NVIDIA H200") == "H200-SXM"
    assert measured.accelerator_key("Some NPU") == ""


def test_parse_nccl_tests():
    c = measured.parse_nccl_tests(NCCL_TEXT, op="all_reduce")
    assert c.n_ranks == 2 and c.info.accelerator == "H100-SXM"
    assert c.sizes_bytes == (8, 1048576, 134217728)
    assert c.time_s[-1] == pytest.approx(400e-6)
    # algbw = size / time (nccl-tests doc/PERFORMANCE.md): 134217728 B / 400 us = 335.54 GB/s
    assert c.algbw_gbps[-1] == pytest.approx(134217728 / 400e-6 / 1e9, rel=1e-4)
    assert c.peak_busbw_bytes_per_s == pytest.approx(335.54e9)
    # log-size interpolation halfway between 1 MiB and 128 MiB
    mid = (1048576 * 134217728) ** 0.5
    assert c.busbw_bytes_per_s_at(mid) == pytest.approx((52.43e9 + 335.54e9) / 2)
    assert c.busbw_bytes_per_s_at(1) == pytest.approx(0.0)
    assert c.busbw_bytes_per_s_at(1e12) == pytest.approx(335.54e9)


def test_parse_nccl_tests_without_root_column_and_op_from_text():
    old = NCCL_TEXT.replace("      -1 ", " ").replace("# Using devices", "# all_gather_perf\n# Using devices")
    c = measured.parse_nccl_tests(old)
    assert c.op == "all_gather" and c.busbw_gbps[1] == pytest.approx(52.43)


def test_parse_nccl_tests_bad_input():
    with pytest.raises(ValueError, match="no nccl-tests data rows"):
        measured.parse_nccl_tests("hello", op="all_reduce")
    with pytest.raises(ValueError, match="op=None"):
        measured.parse_nccl_tests(NCCL_TEXT)
    with pytest.raises(ValueError, match="op='gossip'"):
        measured.parse_nccl_tests(NCCL_TEXT, op="gossip")


def test_parse_mamf_log():
    r = measured.parse_mamf_log(MAMF_TEXT)
    assert (r.dtype, r.info.accelerator) == ("bf16", "H100-SXM")
    assert r.best_tflops == pytest.approx(758.2) and r.best_shape == (8192, 4096, 4096)
    assert measured.parse_mamf_log(MAMF_TEXT, statistic="max").best_tflops == pytest.approx(762.3)
    assert r.sweep[0].tflops == pytest.approx(758.2)
    h = measured.parse_mamf_log(MAMF_HEADLINE)
    assert (h.best_tflops, h.sustained_tflops, h.sustained_shape) == (842.0, 722.0, (3072, 2816, 8192))
    with pytest.raises(ValueError, match="mamf-finder"):
        measured.parse_mamf_log("nothing here")
    with pytest.raises(ValueError, match="statistic='best'"):
        measured.parse_mamf_log(MAMF_TEXT, statistic="best")


def test_load_dispatches_on_content(tmp_path):
    (tmp_path / "all_reduce_perf.txt").write_text(NCCL_TEXT)
    (tmp_path / "mamf.txt").write_text(MAMF_TEXT)
    src = measured.run("h100-2026-11-26")[0].info.label.split("/")[0]
    bench_json = measured.resources.files("mlcalc.data").joinpath(f"measured/{src}/bandwidth.json").read_text()
    (tmp_path / "bw.json").write_text(bench_json)
    [c] = measured.load(tmp_path / "all_reduce_perf.txt")
    assert isinstance(c, measured.BusbwCurve) and c.op == "all_reduce"
    [m] = measured.load(tmp_path / "mamf.txt", label="mine")
    assert m.info.label == "mine"
    copies = measured.load(tmp_path / "bw.json")
    assert {r.kind for r in copies} == {"d2d", "h2d", "d2h"}
    # A reader's results replace the bundled ones.
    assert measured.best_matmul_flops("H100-SXM", results=[m]) == pytest.approx(758.2e12)
    assert measured.busbw_curve("all_reduce", results=[c]).n_ranks == 2
    (tmp_path / "x.txt").write_text("nothing")
    with pytest.raises(ValueError, match="not an mlcalc.bench JSON"):
        measured.load(tmp_path / "x.txt")
    with pytest.raises(ValueError, match="no such file"):
        measured.load(tmp_path / "missing.json")
    with pytest.raises(ValueError, match="schema=0"):
        measured.from_bench({**json.loads(bench_json), "schema": 0})


def test_bundled_matmul_best_is_at_least_8192_cubed():
    # The requirement: the sweep must find at least what 8192 x 8192 x 8192 gives in the same run.
    found = [r for r in measured.bundled() if isinstance(r, measured.MatmulResult)]
    assert {(r.info.accelerator, r.dtype) for r in found} >= {("H100-SXM", "bf16"), ("H100-SXM", "fp8")}
    for r in found:
        assert r.reference_shape == (8192, 8192, 8192)
        assert r.best_tflops >= r.reference_tflops


def test_bundled_h100_numbers_sit_below_the_datasheet():
    h100 = spec("H100-SXM")
    for dtype in ("bf16", "fp8"):
        r = measured.matmul("H100-SXM", dtype)
        # measured / dense datasheet peak (NVIDIA H100 datasheet, via the catalogue)
        assert 0.5 < r.best_flops_per_s / h100.peak_flops(dtype) < 1.0
        assert r.sustained_flops_per_s <= r.best_flops_per_s
    d2d = measured.copy_bandwidth("H100-SXM", "d2d")
    assert 0.6 < d2d.memory_bytes_per_s / h100.memory_bandwidth_bytes_per_s < 1.0
    # Host copies against PCIe 5.0 x16, 64 GB/s each way (PCI-SIG, via mlcalc.network's link data)
    for kind in ("h2d", "d2h"):
        pcie = network.link("PCIe5-x16").bytes_per_s
        assert 0.5 < measured.copy_bandwidth("H100-SXM", kind).peak_bytes_per_s / pcie < 1.0


def test_bundled_collectives_are_correct_and_below_nvlink():
    nvlink = network.link("NVLink4-H100").bytes_per_s  # 450 GB/s each way (NVIDIA datasheet)
    for op in ("all_reduce", "all_gather", "reduce_scatter"):
        curves = measured.busbw_curves(op)
        assert {c.n_ranks for c in curves} == {2, 4}  # 2 x H200 runs and the 4 x H200 run
        assert measured.busbw_curve(op).n_ranks == 2 and measured.busbw_curve(op, n_ranks=4).n_ranks == 4
        for c in curves:
            assert max(c.busbw_gbps) * 1e9 < nvlink
            assert list(c.sizes_bytes) == sorted(c.sizes_bytes)


def _h100_comparison():
    run1 = measured.train_cases("h100-2026-11-26/")
    run2 = measured.train_cases("h100-2026-11-26-run2/")
    key = lambda c: (c.model, c.batch, c.seq_len, c.recompute)  # noqa: E731
    fastest = {key(c): min(c.step_s, d.step_s) for c, d in zip(run1, run2) if key(c) == key(d)}
    shapes = measured.matmul("H100-SXM", "bf16", measured.run("h100-2026-11-26-run2"))
    bw = measured.copy_bandwidth("H100-SXM", "d2d").memory_bytes_per_s
    return predict.compare(run2, shapes.flops_per_s_at, bw,
                           lambda b, a, s: measured.attention_rate(b, a, s, "h100-2026-11-26-run2/"),
                           step_s_of=lambda c: fastest[key(c)])


def test_predictions_meet_the_targets_on_the_h100():
    # The targets: memory within 10%, step time within 20% with the measured matmul rate.
    rows = _h100_comparison()
    assert len(rows) == 20
    for r in rows:
        assert abs(r.program_memory_error) <= 0.10, r
        assert abs(r.program_time_error) <= 0.20, r
    # The textbook formula misses small models by far more: the fp32 logits and autocast copies.
    assert min(r.textbook_memory_error for r in rows) < -0.25


def test_measured_bad_input():
    with pytest.raises(ValueError, match="dtype='fp4'"):
        measured.matmul("H100-SXM", "fp4")
    with pytest.raises(ValueError, match="kind='p2p'"):
        measured.copy_bandwidth("H100-SXM", "p2p")
    with pytest.raises(ValueError, match="op='gossip'"):
        measured.busbw_curve("gossip")
    with pytest.raises(ValueError, match="run='nope'"):
        measured.run("nope")
    with pytest.raises(ValueError, match="size_bytes=0"):
        measured.busbw_curve("all_reduce").busbw_bytes_per_s_at(0)
    with pytest.raises(ValueError, match="shape=1x2x3"):
        measured.matmul("H100-SXM").flops_per_s_at(1, 2, 3)


def test_register_measured_with_compute():
    from mlcalc import compute

    name = measured.register_measured(name="mine")
    try:
        assert compute.achievable_flops("H100-SXM", "bf16", source=name) == pytest.approx(
            measured.best_matmul_flops("H100-SXM", "bf16"))
    finally:
        compute.unregister_flops_table(name)



def test_bundled_collectives_are_every_bundled_curve():
    # The quick reader (collectives.json files only) misses no curve that reading every file finds.
    every = [r for r in measured.bundled() if isinstance(r, measured.BusbwCurve)]
    assert sorted((r.info.label, r.op, r.n_ranks) for r in measured.bundled_collectives()) == \
        sorted((r.info.label, r.op, r.n_ranks) for r in every)
