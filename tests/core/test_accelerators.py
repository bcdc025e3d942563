"""The accelerator catalogue: every number sourced, dense figures matching the datasheets."""

import pytest

from mlcalc import accelerators, catalogue, spec


def test_every_number_has_a_source_url():
    for acc in catalogue().values():
        for field in ("memory_gb", "memory_bandwidth_tbps", "dense_tflops"):
            assert acc.sources.get(field, "").startswith("https://"), (acc.key, field)


def test_frame_accelerators_present():
    assert {"A100-80GB", "H100-SXM", "H200-SXM", "MI300X"} <= set(catalogue())


# NVIDIA H100 Tensor Core GPU datasheet, SXM column: BF16 1,979 TFLOPS and FP8 3,958 TFLOPS
# "with sparsity"; dense is half. 80 GB HBM3 at 3.35 TB/s.
def test_h100_sxm_datasheet():
    h100 = spec("H100-SXM")
    assert h100.peak_flops("bf16") == pytest.approx(1979e12 / 2)
    assert h100.peak_flops("fp8") == pytest.approx(3958e12 / 2)
    assert h100.datasheet_memory_bytes == 80e9
    assert h100.memory_bandwidth_bytes_per_s == pytest.approx(3.35e12)


# Capacity in real bytes. Measured on this book's cards (torch total_memory, 2026-11-26): an "80GB" H100 SXM
# holds 85.0e9 bytes, a "141GB" H200 150.1e9; where no card was measured, HBM sold in GiB: 80 GiB = 85.9e9.
def test_capacity_is_measured_or_the_datasheet_gib():
    assert spec("H100-SXM").memory_bytes == 85.0e9 and spec("H100-SXM").memory_capacity_source.startswith("measured")
    assert spec("H200-SXM").memory_bytes == 150.1e9 and spec("H200-SXM").memory_capacity_source.startswith("measured")
    a100 = spec("A100-80GB")
    assert a100.memory_bytes == 80 * 2**30 and a100.memory_capacity_source.startswith("datasheet")
    for a in catalogue().values():
        assert a.memory_capacity_source.split(":")[0] in ("measured", "datasheet")
        # never below the decimal reading by more than the driver's share, never above the GiB reading
        assert 0.98 * a.datasheet_memory_bytes <= a.memory_bytes <= a.memory_gb * 2**30 * 1.0001


# NVIDIA A100 datasheet, 80GB SXM column: BF16 312 TFLOPS dense, 2,039 GB/s.
def test_a100_datasheet():
    a100 = spec("A100-80GB")
    assert a100.peak_flops("bf16") == 312e12
    assert a100.memory_bandwidth_bytes_per_s == pytest.approx(2.039e12)


# NVIDIA H200 product page: 141 GB HBM3e at 4.8 TB/s.
def test_h200_memory():
    assert spec("H200-SXM").memory_gb == 141
    assert spec("H200-SXM").memory_bandwidth_tbps == 4.8


# AMD Instinct MI300X datasheet: 192 GB HBM3, 5.3 TB/s, BF16 1,307.4 TFLOPS dense.
def test_mi300x_datasheet():
    mi = spec("MI300X")
    assert mi.memory_gb == 192
    assert mi.peak_flops("bf16") == pytest.approx(1307.4e12)


def test_unknown_accelerator_and_dtype_are_clear_errors():
    with pytest.raises(ValueError, match="accelerator='H900'.*H100-SXM"):
        spec("H900")
    with pytest.raises(ValueError, match="dtype='fp8'"):
        spec("A100-80GB").peak_flops("fp8")


def test_catalogue_is_read_only():
    with pytest.raises(TypeError):
        catalogue()["X"] = None  # type: ignore[index]
    assert isinstance(spec("H100-SXM"), accelerators.Accelerator)
