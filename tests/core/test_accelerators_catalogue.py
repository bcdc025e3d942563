"""The extended catalogue: datasheet numbers per chip, dense never mixed with sparse, links per direction."""

import pytest

from mlcalc import accelerators, catalogue, spec

ISSUE_CHIPS = {
    "V100-SXM2-32GB", "A100-40GB", "A100-80GB", "H100-SXM", "H100-PCIe", "H100-NVL", "H200-SXM", "B200", "GB200",
    "MI250X", "MI300X", "MI325X", "MI355X", "Gaudi2", "Gaudi3", "TPU-v5e", "TPU-v5p", "TPU-v6e", "Trainium2",
}


def test_catalogue_has_every_chip_of_the_chapter():
    assert ISSUE_CHIPS <= set(catalogue())


def test_every_scale_up_figure_is_per_direction_and_sourced():
    for acc in catalogue().values():
        assert "scale_up_gbps_per_direction" in acc.extra, acc.key
        assert acc.extra.get("scale_up_note"), acc.key
        if acc.scale_up_bytes_per_s is not None:
            assert acc.sources.get("scale_up_gbps_per_direction", "").startswith("https://"), acc.key


def test_dtypes_are_known_and_positive():
    for acc in catalogue().values():
        assert set(acc.dense_tflops) <= set(accelerators.DTYPES), acc.key
        assert all(v > 0 for v in acc.dense_tflops.values()), acc.key


# Dense, never sparse: on every chip with both, bf16 is at most the fp8 figure and fp8 at most
# twice bf16 (a sparse figure slipped into one column would break the 2x ladder).
# The one exception, stated: AWS Neuron documentation, Trainium3: 2,517 MXFP8 and 671 BF16 TFLOPS, both
# dense (its sparse BF16 is the 2,517 too); each NeuronCore-v4 has a 512x128 MXFP8 systolic array beside
# a 128x128 BF16 one, so fp8 runs at about 4x bf16 there.
FP8_OVER_BF16 = {"Trainium3": 4.0}


def test_no_sparse_figure_slipped_in():
    for acc in catalogue(include_announced=True).values():
        t = acc.dense_tflops
        if "bf16" in t and "fp8" in t:
            assert t["bf16"] <= t["fp8"] <= FP8_OVER_BF16.get(acc.key, 2) * t["bf16"] + 1, acc.key
        if "tf32" in t and "bf16" in t:
            assert t["tf32"] <= t["bf16"], acc.key


# NVIDIA V100 datasheet, SXM2: 15.7 TFLOPS fp32, 125 TFLOPS tensor, 32 GB HBM2 at 900 GB/s,
# NVLink 300 GB/s (both directions; Bekman's table: 150 GB/s unidirectional).
def test_v100():
    v = spec("V100-SXM2-32GB")
    assert v.peak_flops("fp16") == 125e12 and v.peak_flops("fp32") == 15.7e12
    assert v.memory_bandwidth_bytes_per_s == pytest.approx(900e9)
    assert v.scale_up_bytes_per_s == 300e9 / 2
    assert not v.has("bf16")


# NVIDIA A100 datasheet, 40GB SXM: 1,555 GB/s; 600 GB/s NVLink -> 300 each way (Bekman table: 300).
def test_a100_40gb():
    a = spec("A100-40GB")
    assert a.memory_gb == 40 and a.memory_bandwidth_tbps == pytest.approx(1.555)
    assert a.peak_flops("bf16") == spec("A100-80GB").peak_flops("bf16") == 312e12
    assert spec("A100-80GB").scale_up_bytes_per_s == 600e9 / 2


# NVIDIA H100 datasheet: PCIe tensor figures with sparsity BF16 1,513, FP8 3,026; NVL BF16 1,671,
# FP8 3,341, 94 GB at 3.9 TB/s; SXM NVLink 900 GB/s (Bekman table: 450 unidirectional).
def test_h100_variants():
    assert spec("H100-PCIe").peak_flops("bf16") == pytest.approx(1513e12 / 2)
    assert spec("H100-PCIe").peak_flops("fp8") == pytest.approx(3026e12 / 2)
    nvl = spec("H100-NVL")
    assert nvl.peak_flops("bf16") == pytest.approx(1671e12 / 2)
    assert nvl.peak_flops("fp8") == pytest.approx(3341e12 / 2)
    assert nvl.memory_gb == 94 and nvl.memory_bandwidth_tbps == 3.9
    assert spec("H100-SXM").scale_up_bytes_per_s == 900e9 / 2
    assert spec("H200-SXM").scale_up_bytes_per_s == 900e9 / 2


# NVIDIA Blackwell architecture brief, HGX B200: dense BF16 2.25, FP8 4.5, FP4 9 PFLOPS; NVLink 5
# 1.8 TB/s per GPU (both directions). GB200 NVL72 page, per superchip (2 GPUs) with sparsity:
# BF16 10, FP8 20, FP4 40 PFLOPS, 372 GB at 16 TB/s.
def test_blackwell():
    b = spec("B200")
    assert b.peak_flops("bf16") == 2250e12 and b.peak_flops("fp8") == 4500e12 and b.peak_flops("fp4") == 9000e12
    assert b.scale_up_bytes_per_s == 1800e9 / 2
    g = spec("GB200")
    assert g.peak_flops("bf16") == pytest.approx(10000e12 / 2 / 2)
    assert g.peak_flops("fp8") == pytest.approx(20000e12 / 2 / 2)
    assert g.peak_flops("fp4") == pytest.approx(40000e12 / 2 / 2)
    assert g.memory_gb == 372 / 2 and g.memory_bandwidth_tbps == 16 / 2


# AMD specifications (dense matrix figures): MI250X 383 bf16, 128 GB at 3.2768 TB/s; MI325X same
# compute as MI300X with 256 GB at 6 TB/s; MI355X 2.5 PFLOPS bf16, 5 PFLOPS fp8, 288 GB at 8 TB/s;
# MI300X Infinity Fabric 896 GB/s aggregate (both directions).
def test_amd():
    assert spec("MI250X").peak_flops("bf16") == 383e12
    assert spec("MI250X").memory_bandwidth_tbps == pytest.approx(3.2768)
    assert spec("MI325X").peak_flops("bf16") == spec("MI300X").peak_flops("bf16")
    assert spec("MI325X").memory_gb == 256 and spec("MI325X").memory_bandwidth_tbps == 6.0
    m = spec("MI355X")
    assert m.peak_flops("bf16") == 2500e12 and m.peak_flops("fp8") == 5000e12
    assert m.memory_gb == 288 and m.memory_bandwidth_tbps == 8.0
    assert spec("MI300X").scale_up_bytes_per_s == 896e9 / 2


# Intel: Gaudi 2 white paper bf16 432, fp8 865 TFLOPS, 96 GB at 2.46 TB/s; Bekman: 21 x 100 GbE
# for scale-up = 262.5 GB/s per card. Gaudi 3 white paper: bf16 and fp8 1,835, 128 GB at 3.67 TB/s.
def test_gaudi():
    g2 = spec("Gaudi2")
    assert g2.peak_flops("bf16") == 432e12 and g2.peak_flops("fp8") == 865e12
    assert g2.scale_up_bytes_per_s == pytest.approx(21 * 100e9 / 8)
    assert g2.scale_up_bytes_per_s == pytest.approx(262.5e9)
    g3 = spec("Gaudi3")
    assert g3.peak_flops("bf16") == g3.peak_flops("fp8") == 1835e12
    assert g3.memory_gb == 128 and g3.memory_bandwidth_tbps == pytest.approx(3.67)


# Google Cloud TPU documentation: v5e 197 bf16 / 394 int8, 16 GB at 819 GB/s, ICI 400 GB/s
# bidirectional; v5p 459 bf16, 95 GiB at 2,765 GB/s, ICI 1,200 GB/s bidirectional; v6e 918 bf16 /
# 1,836 int8, 32 GB at 1,638 GB/s, ICI 800 GB/s bidirectional.
def test_tpus():
    e = spec("TPU-v5e")
    assert e.peak_flops("bf16") == 197e12 and e.peak_flops("int8") == 394e12
    assert e.memory_bandwidth_tbps == pytest.approx(0.819) and e.scale_up_bytes_per_s == 400e9 / 2
    p = spec("TPU-v5p")
    assert p.peak_flops("bf16") == 459e12
    assert p.memory_bytes == pytest.approx(95 * 2**30, rel=1e-3)
    assert p.scale_up_bytes_per_s == 1200e9 / 2
    s = spec("TPU-v6e")
    assert s.peak_flops("bf16") == 918e12 and s.peak_flops("int8") == 1836e12
    assert s.scale_up_bytes_per_s == 800e9 / 2


# AWS Neuron documentation, Trainium2: 1,299 fp8, 667 bf16/fp16/tf32, 181 fp32 TFLOPS dense
# (2,563 with sparsity, not stored); 96 GiB at 2.9 TB/s.
def test_trainium2():
    t = spec("Trainium2")
    assert t.peak_flops("fp8") == 1299e12 and t.peak_flops("bf16") == 667e12 and t.peak_flops("fp32") == 181e12
    assert max(t.dense_tflops.values()) < 2563
    assert t.memory_bytes == pytest.approx(96 * 2**30, rel=1e-3)
    assert t.scale_up_bytes_per_s is None


def test_with_dtype_filters_and_checks():
    fp4 = {a.key for a in accelerators.with_dtype("fp4")}
    assert fp4 == {"B200", "GB200", "B300", "GB300", "MI355X", "Trainium3"}  # Trainium3: MXFP4
    assert {a.key for a in accelerators.with_dtype("fp6")} == {"B200", "GB200", "B300", "GB300", "MI355X"}
    with pytest.raises(ValueError, match="dtype='int4'"):
        accelerators.with_dtype("int4")
    assert accelerators.peak_flops("H100-SXM", "fp8") == 1979e12


# Bekman "The AI Battlefield", intra-node table (unidirectional NVLink): V100 125 TFLOPS fp16 / 150 GB/s,
# A100 312 / 300, H100 989 / 450, B200 2250 / 900; compute speedups 1, 2.5, 8, 18 and link 1, 2, 3, 6.
def test_bekman_compute_versus_nvlink_table():
    base = spec("V100-SXM2-32GB")
    for key, dtype, tflops, gbps, speed, link in [("V100-SXM2-32GB", "fp16", 125, 150, 1, 1), ("A100-80GB", "bf16", 312, 300, 2.5, 2),
                                                  ("H100-SXM", "bf16", 989.5, 450, 8, 3), ("B200", "bf16", 2250, 900, 18, 6)]:
        acc = spec(key)
        assert acc.peak_flops(dtype) == tflops * 1e12
        assert acc.scale_up_bytes_per_s == gbps * 1e9
        assert acc.peak_flops(dtype) / base.peak_flops("fp16") == pytest.approx(speed, abs=0.1)
        assert acc.scale_up_bytes_per_s / base.scale_up_bytes_per_s == link


def test_integer_rates_are_labelled_tops():
    # NVIDIA's H100 datasheet prints INT8 Tensor Core as 3,958 "TOPS" (with sparsity), FP8 as 3,958 "teraFLOPS":
    # integer math is counted in operations, not floating-point operations, and the pages say so.
    from mlcalc.calc import run
    assert accelerators.rate_unit("int8") == "TOPS" and accelerators.rate_unit("fp8") == "TFLOPS"
    out = run("accelerators.catalogue", {"dtype": "int8"})
    assert "int8 dense TOPS" in str(out) and "int8 dense TFLOPS" not in str(out)
    assert "fp8 dense TFLOPS" in str(run("accelerators.catalogue", {"dtype": "fp8"}))
