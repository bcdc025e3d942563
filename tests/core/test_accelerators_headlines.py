"""The catalogue catches up: sparse beside dense, fp6/fp4, new chips, per-dtype peaks at a clock,
scale-up counting conventions, memory bandwidth from the interface, PCIe and NVLink generations."""

import pytest

from mlcalc import accelerators as acc
from mlcalc.accelerators import (decode_headline, memory_bandwidth_from_bus, memory_recipe, nvlink_bytes_per_s,
                                 nvlink_link_bytes_per_s, pcie_bytes_per_s, peak_at_clock, recipe, scale_up_bandwidth,
                                 scale_up_links, sparsity_rows, spec)

T = 1e12
G = 1e9


# ------------------------------------------------------------------ sparse beside dense

# NVIDIA H100 datasheet, SXM column: BF16 Tensor Core 1,979 TFLOPS "with sparsity"; dense is half: 989.5.
def test_h100_headline_decodes_to_dense():
    h = spec("H100-SXM")
    assert h.sparse_flops("bf16") == 1979 * T
    assert h.peak_flops("bf16") == 989.5 * T
    assert decode_headline("H100-SXM", "bf16", 1979) == "sparse"
    assert decode_headline("H100-SXM", "bf16", 989.5) == "dense"
    assert decode_headline("H100-SXM", "bf16", 1500) == "neither"


# NVIDIA H100 datasheet: FP8 3,958 and TF32 989 TFLOPS with sparsity (SXM); PCIe 3,026 / 756; NVL 3,341 / 835.
@pytest.mark.parametrize("key,fp8,tf32", [("H100-SXM", 3958, 989), ("H100-PCIe", 3026, 756), ("H100-NVL", 3341, 835)])
def test_h100_family_sparse(key, fp8, tf32):
    a = spec(key)
    assert a.sparse_tflops["fp8"] == fp8 and a.sparse_tflops["tf32"] == tf32
    assert a.sparse_tflops["fp8"] == pytest.approx(2 * a.dense_tflops["fp8"], abs=1)


# NVIDIA A100 datasheet: TF32 156 | 312*, BF16 312 | 624*, INT8 624 | 1,248* TOPS (* with sparsity).
@pytest.mark.parametrize("key", ["A100-40GB", "A100-80GB", "A100-PCIe-40GB", "A100-PCIe-80GB"])
def test_a100_sparse(key):
    a = spec(key)
    assert a.sparse_tflops == {"tf32": 312, "bf16": 624, "fp16": 624, "int8": 1248}
    assert all(r.ratio == 2 for r in sparsity_rows(key) if r.ratio is not None)


# AMD Instinct MI300X data sheet: FP16/BF16 1,307.4 dense, 2,614.9 with structured sparsity; FP8 5,229.8 sparse.
def test_mi300x_sparse():
    m = spec("MI300X")
    assert m.sparse_tflops["bf16"] == 2614.9 and m.sparse_tflops["fp8"] == 5229.8
    assert m.peak_flops("bf16") == 1307.4 * T


# NVIDIA GB200 NVL72 page, per superchip (2 GPUs) with sparsity: FP4 40, FP8/FP6 20, FP16/BF16 10, TF32 5 PFLOPS.
def test_gb200_sparse_per_gpu():
    g = spec("GB200")
    assert g.sparse_tflops["fp4"] * 2 == 40_000 and g.sparse_tflops["fp8"] * 2 == 20_000
    assert g.sparse_tflops["fp6"] == g.sparse_tflops["fp8"]
    assert g.sparse_tflops["bf16"] * 2 == 10_000 and g.sparse_tflops["tf32"] * 2 == 5_000


def test_sparse_never_used_as_a_peak_and_never_below_dense():
    for a in acc.catalogue().values():
        for dtype, s in a.sparse_tflops.items():
            assert dtype in a.dense_tflops, (a.key, dtype)
            # at most 2x dense, up to the vendor's rounding (AMD MI355X: FP8 5 dense, 10.1 sparse = 2 x 5.03)
            assert a.dense_tflops[dtype] < s <= 2.02 * a.dense_tflops[dtype], (a.key, dtype)
            if a.sparse_tflops:
                assert a.sources.get("sparse_tflops", "").startswith("https://"), a.key
    with pytest.raises(ValueError, match="dtype"):
        spec("TPU-v5e").sparse_flops("bf16")  # Google prints no sparse figure


# ------------------------------------------------------------------ fp6 / fp4

# NVIDIA Blackwell architecture brief, HGX B200: FP4 9 PFLOPS dense (18 sparse), FP8/FP6 4.5 dense (9 sparse).
def test_b200_fp6_fp4():
    b = spec("B200")
    assert b.peak_flops("fp4") == 9000 * T and b.sparse_tflops["fp4"] == 18000
    assert b.peak_flops("fp6") == b.peak_flops("fp8") == 4500 * T


# NVIDIA HGX B300 (8 GPUs): FP4 144 PFLOPS sparse | 108 dense; FP8/FP6 72, FP16/BF16 36, TF32 18 (sparse); FP32 600 TF.
def test_b300():
    b = spec("B300")
    assert b.sparse_tflops["fp4"] * 8 == 144_000 and b.peak_flops("fp4") * 8 == 108_000 * T
    assert b.sparse_tflops["fp8"] * 8 == 72_000 and b.peak_flops("fp6") == b.peak_flops("fp8") == 4500 * T
    assert b.sparse_tflops["bf16"] * 8 == 36_000 and b.peak_flops("bf16") == 2250 * T
    assert b.sparse_tflops["tf32"] * 8 == 18_000 and b.peak_flops("fp32") * 8 == 600 * T
    # Blackwell Ultra raised dense NVFP4 only: its sparse figure is 4/3 of dense, not 2x.
    assert next(r for r in sparsity_rows("B300") if r.dtype == "fp4").ratio == pytest.approx(4 / 3)
    assert "int8" not in b.dense_tflops
    # NVIDIA DGX B300: 2.3 TB HBM3e for 8 GPUs (288 GB each), 8 TB/s per GPU; NVLink 5 1.8 TB/s per GPU.
    assert b.memory_gb * 8 == pytest.approx(2300, rel=0.005) and b.memory_bandwidth_tbps == 8.0
    assert scale_up_bandwidth("B300", direction="bidirectional") == 1800 * G


# AMD MI355X product page: MXFP6 and MXFP4 10.1 PFLOPS, FP8 5 PFLOPS (dense).
def test_mi355x_fp6_fp4():
    m = spec("MI355X")
    assert m.peak_flops("fp6") == m.peak_flops("fp4") == 10_100 * T
    assert m.peak_flops("fp8") == 5000 * T


# ------------------------------------------------------------------ new chips

# NVIDIA GH200 Grace Hopper Superchip datasheet: FP8 1,979 | 3,958* TFLOPS, BF16 990 | 1,979*, 96 GB HBM3 at
# 4 TB/s; GPU NVLink 900 GB/s (both directions).
def test_gh200():
    g = spec("GH200")
    assert g.memory_gb == 96 and g.memory_bandwidth_tbps == 4.0
    assert g.peak_flops("fp8") == 1979 * T and g.sparse_tflops["fp8"] == 3958
    assert g.peak_flops("bf16") == pytest.approx(990 * T, rel=0.001)
    assert scale_up_bandwidth("GH200", direction="bidirectional") == 900 * G


# NVIDIA A100 datasheet: 40GB PCIe 1,555 GB/s HBM2, 80GB PCIe 1,935 GB/s HBM2e; NVLink bridge for 2 GPUs 600 GB/s.
def test_a100_pcie():
    assert spec("A100-PCIe-40GB").memory_bandwidth_tbps == 1.555 and spec("A100-PCIe-40GB").memory_gb == 40
    assert spec("A100-PCIe-80GB").memory_bandwidth_tbps == 1.935 and spec("A100-PCIe-80GB").memory_gb == 80
    for key in ("A100-PCIe-40GB", "A100-PCIe-80GB"):
        assert spec(key).peak_flops("bf16") == 312 * T
        assert scale_up_bandwidth(key, direction="bidirectional") == 600 * G


# Cloud TPU v4 documentation: 275 TFLOPS per chip (bf16 or int8), HBM2 32 GiB at 1,200 GBps.
def test_tpu_v4():
    t = spec("TPU-v4")
    assert t.peak_flops("bf16") == t.peak_flops("int8") == 275 * T
    assert t.memory_bytes == pytest.approx(32 * 2**30, rel=1e-4)
    assert t.memory_bandwidth_bytes_per_s == 1200 * G
    assert t.scale_up_bytes_per_s is None


# ------------------------------------------------------------------ peak at a stated clock, every dtype

# NVIDIA GPU Performance Background guide (A100, 108 SMs at 1.41 GHz): 156 TF32, 312 FP16; A100 datasheet 19.5
# FP32, 624 INT8 TOPS.
def test_a100_every_dtype():
    for dtype, datasheet in [("fp32", 19.5), ("tf32", 156), ("bf16", 312), ("fp16", 312), ("int8", 624)]:
        assert peak_at_clock("A100-80GB", dtype) == pytest.approx(datasheet * T, rel=0.001), dtype


# H100 datasheet (dense = sparse / 2): TF32 494.5, BF16 989.5, FP8 1,979, INT8 1,979; FP32 67 at the 1,980 MHz
# maximum SM clock (nvidia-smi -q, mlcalc/data/measured/h100-2026-11-26/machine.txt), tensor at 1,830 MHz.
def test_h100_every_dtype():
    for dtype, datasheet in [("fp32", 67), ("tf32", 494.5), ("bf16", 989.5), ("fp8", 1979), ("int8", 1979)]:
        assert peak_at_clock("H100-SXM", dtype) == pytest.approx(datasheet * T, rel=0.002), dtype
    assert recipe("H100-SXM").per_dtype["fp32"].clock_mhz == 1980
    # at a throttled clock the fp8 peak scales linearly: 1,830 -> 1,500 MHz
    assert peak_at_clock("H100-SXM", "fp8", 1500) == pytest.approx(1979 * T * 1500 / 1830, rel=0.001)


# AMD MI300X data sheet (dense): FP32 vector 163.4, TF32 653.7, BF16 1,307.4, FP8 2,614.9, INT8 2,614.9 at 2,100 MHz;
# CDNA 3 white paper: 304 CUs, 256 FP32 vector FLOPs per CU per clock.
def test_mi300x_every_dtype():
    for dtype, datasheet in [("fp32", 163.4), ("tf32", 653.7), ("bf16", 1307.4), ("fp8", 2614.9), ("int8", 2614.9)]:
        assert peak_at_clock("MI300X", dtype) / T == pytest.approx(datasheet, abs=0.06), dtype


# AMD MI355X product page: FP32 vector 157.3, BF16 2.5, FP8 5, MXFP6/MXFP4 10.1 PFLOPS; AMD rounds to 2 digits.
def test_mi355x_every_dtype():
    assert peak_at_clock("MI355X", "fp32") / T == pytest.approx(157.3, abs=0.05)
    for dtype in ("bf16", "fp8", "fp6", "fp4"):
        assert peak_at_clock("MI355X", dtype) == pytest.approx(spec("MI355X").peak_flops(dtype), rel=0.01), dtype


# Gaudi 2 white paper: fp8 865 TFLOPS (twice bf16's 432); TPU v4 paper: 1,050 MHz, 8 MXUs of 128x128 -> 275.
def test_gaudi2_fp8_and_tpu_v4_clock():
    assert peak_at_clock("Gaudi2", "fp8") / T == pytest.approx(865, abs=0.1)
    assert peak_at_clock("TPU-v4", "bf16") / T == pytest.approx(275, rel=0.001)


def test_every_dtype_recipe_matches_its_datasheet():
    for key, r in acc.recipes().items():
        for dtype in r.per_dtype:
            assert peak_at_clock(key, dtype) == pytest.approx(spec(key).peak_flops(dtype), rel=0.01), (key, dtype)
    with pytest.raises(ValueError, match="dtype"):
        peak_at_clock("V100-SXM2-32GB", "bf16")  # Volta has no bf16


# ------------------------------------------------------------------ memory bandwidth from the interface

# NVIDIA Ampere white paper, Table 1: A100 5120-bit HBM2 at 1215 MHz DDR = 1,555 GB/s; V100 4096-bit at 877.5 MHz
# DDR = 900 GB/s.
def test_a100_v100_memory_from_bus():
    assert memory_bandwidth_from_bus(5120, 1215) / G == pytest.approx(1555, rel=0.001)
    assert memory_recipe("A100-40GB").bytes_per_s() == pytest.approx(spec("A100-40GB").memory_bandwidth_bytes_per_s, rel=0.001)
    assert memory_recipe("V100-SXM2-32GB").bytes_per_s() / G == pytest.approx(900, rel=0.002)


# H100 SXM: 5 HBM3 stacks x 1024 bits at 2,619 MHz DDR (nvidia-smi -q) = 3.35 TB/s (datasheet).
def test_h100_memory_from_bus():
    m = memory_recipe("H100-SXM")
    assert m.bus_width_bits == 5 * 1024
    assert m.gbps_per_pin == pytest.approx(5.238)
    assert m.bytes_per_s() / T == pytest.approx(3.35, rel=0.001)


# AMD specifications: MI250X 8192-bit at 1.6 GHz = 3.2768 TB/s exactly; MI300X 5.2 Gb/s -> 5.3 TB/s;
# MI325X 6 Gb/s -> 6 TB/s; MI355X 8 Gb/s -> 8 TB/s (AMD prints one or two significant digits).
def test_amd_memory_from_bus():
    assert memory_recipe("MI250X").bytes_per_s() == spec("MI250X").memory_bandwidth_bytes_per_s
    assert memory_recipe("MI300X").bytes_per_s() / T == pytest.approx(5.3, abs=0.05)
    assert memory_recipe("MI325X").bytes_per_s() / T == pytest.approx(6.0, rel=0.025)
    assert memory_recipe("MI355X").bytes_per_s() / T == pytest.approx(8.0, rel=0.025)


# H200: 6 x 1024 bits at 3,201 MHz DDR (nvidia-smi -q) gives 4.92 TB/s; NVIDIA prints 4.8: the printed
# figure sits 2.4% below clock x width (kept as printed, the gap shown, not hidden).
def test_h200_memory_gap_is_stated():
    m = memory_recipe("H200-SXM")
    assert m.bytes_per_s() / T == pytest.approx(4.917, abs=0.001)
    assert spec("H200-SXM").memory_bandwidth_tbps == 4.8


def test_memory_bad_input():
    with pytest.raises(ValueError, match="bus_width_bits=0"):
        memory_bandwidth_from_bus(0, 1000)
    with pytest.raises(ValueError, match="memory_clock_mhz"):
        memory_bandwidth_from_bus(1024, float("nan"))


# ------------------------------------------------------------------ scale-up counting conventions

# NVIDIA H100 datasheet: NVLink 900 GB/s (both directions); Hopper white paper: 18 links of 25 GB/s each way.
def test_h100_scale_up_conventions():
    assert scale_up_links("H100-SXM") == (18, 18, 25.0)
    assert scale_up_bandwidth("H100-SXM") == 450 * G
    assert scale_up_bandwidth("H100-SXM", direction="bidirectional") == 900 * G


# AMD MI300X data sheet: 8 Infinity Fabric links of 128 GB/s (both directions), 896 GB/s peak aggregate = 7 links
# to the other GPUs of an 8-GPU platform.
def test_mi300x_all_links_vs_intra_node():
    assert scale_up_bandwidth("MI300X", direction="bidirectional") == 896 * G
    assert scale_up_bandwidth("MI300X", links="all", direction="bidirectional") == 8 * 128 * G


# Intel Gaudi 3 white paper: 24 x 200 GbE, 1.2 TB/s both directions for all 24 ports; 21 for scale-up.
def test_gaudi3_ports():
    assert scale_up_bandwidth("Gaudi3", links="all", direction="bidirectional") == 1200 * G
    assert scale_up_bandwidth("Gaudi3") == 21 * 200 / 8 * G


def test_scale_up_links_agree_with_the_stored_figure():
    for a in acc.catalogue().values():
        counted = scale_up_links(a.key)
        if counted is not None:
            assert counted.scale_up <= counted.all
            assert counted.scale_up * counted.gbps_per_link_per_direction * G == pytest.approx(a.scale_up_bytes_per_s), a.key
    assert scale_up_bandwidth("Trainium2") is None and scale_up_bandwidth("TPU-v4", links="all") is None
    with pytest.raises(ValueError, match="direction='both'"):
        scale_up_bandwidth("H100-SXM", direction="both")


# ------------------------------------------------------------------ PCIe and NVLink generations

# PCI-SIG: PCIe 5 is 32 GT/s per lane with 128b/130b encoding: x16 = 63 GB/s each way (64 raw, 128 "bidirectional"
# in NVIDIA's H100 datasheet); PCIe 4 x16 31.5; PCIe 3 x16 15.75; PCIe 1 x16 4 GB/s (8b/10b); PCIe 6 x16 128 GB/s
# each way, 256 GB/s both directions.
def test_pcie():
    assert pcie_bytes_per_s("PCIe 5") / G == pytest.approx(63.0, abs=0.02)
    assert pcie_bytes_per_s("PCIe 5", encoded=False, direction="bidirectional") == 128 * G
    assert pcie_bytes_per_s("PCIe 4") / G == pytest.approx(31.5, abs=0.01)
    assert pcie_bytes_per_s("PCIe 3") / G == pytest.approx(15.75, abs=0.01)
    assert pcie_bytes_per_s("PCIe 1") == 4 * G and pcie_bytes_per_s("PCIe 2") == 8 * G
    assert pcie_bytes_per_s("PCIe 6", direction="bidirectional") == 256 * G
    assert pcie_bytes_per_s("PCIe 4", lanes=8) == pcie_bytes_per_s("PCIe 4") / 2
    with pytest.raises(ValueError, match="lanes=3"):
        pcie_bytes_per_s("PCIe 4", lanes=3)
    with pytest.raises(ValueError, match="generation='PCIe 7'"):
        pcie_bytes_per_s("PCIe 7")


# NVIDIA: NVLink 4 (H100) 18 links x 25 GB/s each way = 450 (900 both directions); NVLink 5 (B200) 18 x 50 = 900
# (1.8 TB/s); NVLink 3 (A100) 12 x 25 = 300 (600); NVLink 2 (V100) 6 x 25 = 150 (300); NVLink 1 (P100) 4 x 20 = 80
# (160).
def test_nvlink():
    for gen, per_dir in [("NVLink 1", 80), ("NVLink 2", 150), ("NVLink 3", 300), ("NVLink 4", 450), ("NVLink 5", 900)]:
        assert nvlink_bytes_per_s(gen) == per_dir * G, gen
        assert nvlink_bytes_per_s(gen, direction="bidirectional") == 2 * per_dir * G, gen
    gens = acc.nvlink_generations()
    for name, g in gens.items():  # lanes x lane rate reproduces NVIDIA's per-link figure
        assert nvlink_link_bytes_per_s(name) == g.gbytes_per_link_per_direction * G, name
    # the catalogue's NVLink GPUs agree with the generation table
    for key, gen in [("V100-SXM2-32GB", "NVLink 2"), ("A100-80GB", "NVLink 3"), ("H100-SXM", "NVLink 4"), ("B200", "NVLink 5")]:
        assert spec(key).scale_up_bytes_per_s == nvlink_bytes_per_s(gen), key
    assert nvlink_bytes_per_s("NVLink 4", links=4) == 100 * G
    with pytest.raises(ValueError, match="links=0"):
        nvlink_bytes_per_s("NVLink 4", links=0)
