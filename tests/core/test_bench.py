"""mlcalc.bench on the CPU: tiny sizes, gloo for the collectives (the GPU runs are recorded data)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from mlcalc.bench import bandwidth, collectives, matmul, train  # noqa: E402
from mlcalc.bench.__main__ import main  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def test_matmul_flop_counts_a_multiply_and_an_add():
    # A (m x k) @ (k x n) product does m*n*k multiply-adds = 2*m*n*k FLOP (the convention of
    # mamf-finder.py and of the NVIDIA cuBLAS performance docs).
    assert matmul.matmul_flop(8192, 8192, 8192) == 2 * 8192**3
    with pytest.raises(ValueError, match="m=0"):
        matmul.matmul_flop(0, 1, 1)


def test_matmul_sweep_on_cpu_finds_at_least_the_reference():
    out = matmul.run_matmul(dtypes=("fp32", "fp8"), shapes=[(32, 32, 32), (64, 32, 64)], reference=(64, 64, 64),
                            device="cpu", target_s_per_shape=0.002, confirm_top=2, idle_s=0, sustain_s=0.01,
                            progress=False)
    assert out["tool"] == "mlcalc.bench" and out["benchmark"] == "matmul"
    env = out["env"]
    for key in ("device_name", "driver", "torch", "date_utc"):
        assert key in env
    r = out["results"]["fp32"]
    assert len(r["sweep"]) == 3  # the reference shape joins the sweep
    assert r["best"]["tflops_burst"] >= r["reference"]["tflops_burst"]
    assert r["best_over_reference"] >= 1
    assert out["results"]["fp8"] == {"skipped": "fp8 matmul needs a CUDA device"}
    json.dumps(out)  # JSON-ready


def test_matmul_bad_input():
    with pytest.raises(ValueError, match="dtype='int3'"):
        matmul.run_matmul(dtypes=("int3",), device="cpu")
    with pytest.raises(ValueError, match="each shape is"):
        matmul.run_matmul(dtypes=("fp32",), shapes=[(1, 2)], device="cpu", progress=False)
    with pytest.raises(ValueError, match="device='tpu'"):
        matmul.run_matmul(dtypes=("fp32",), device="tpu")


def test_bandwidth_on_cpu_counts_read_and_write_for_d2d():
    out = bandwidth.run_bandwidth(sizes_bytes=[2**16, 2**18], device="cpu", target_s_per_size=0.002, progress=False)
    d2d = out["results"]["d2d"]
    for row in d2d["sweep"]:
        assert row["gbps_rw"] == pytest.approx(2 * row["gbps"])
    assert out["results"]["h2d"]["skipped"].startswith("host<->device")
    with pytest.raises(ValueError, match="kind='p2p'"):
        bandwidth.run_bandwidth(kinds=("p2p",), device="cpu")


def test_busbw_factors_follow_nccl_tests():
    # nccl-tests doc/PERFORMANCE.md: busbw = algbw * 2(n-1)/n for all-reduce,
    # algbw * (n-1)/n for all-gather and reduce-scatter.
    assert collectives.busbw_factor("all_reduce", 8) == pytest.approx(1.75)
    assert collectives.busbw_factor("all_gather", 8) == pytest.approx(0.875)
    assert collectives.busbw_factor("reduce_scatter", 2) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="op='alltoall'"):
        collectives.busbw_factor("alltoall", 2)


def test_collectives_need_a_process_group(monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    with pytest.raises(ValueError, match="torchrun"):
        collectives.run_collectives(progress=False)


def test_collectives_through_torchrun_with_gloo(tmp_path):
    out = tmp_path / "coll.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "-m", "mlcalc.bench",
           "collectives", "--backend", "gloo", "--sizes", "1024,8192", "--no-progress", "--out", str(out)]
    subprocess.run(cmd, check=True, env=env, cwd=tmp_path, capture_output=True, timeout=240)
    data = json.loads(out.read_text())
    assert data["env"]["world_size"] == 2 and data["params"]["backend"] == "gloo"
    for op in collectives.OPS:
        rows = data["results"][op]["sweep"]
        assert [r["bytes"] for r in rows] == [1024, 8192]
        for r in rows:
            assert r["correct"]
            assert r["busbw_gbps"] == pytest.approx(r["algbw_gbps"] * collectives.busbw_factor(op, 2))
            assert r["algbw_gbps"] == pytest.approx(r["bytes"] / r["time_s"] / 1e9)


def test_train_tiny_model_on_cpu(tmp_path):
    out = train.run_train(warmup=1, steps=2, progress=False)
    cases = out["results"]["cases"]
    assert [c["recompute"] for c in cases] == [False, True]
    from mlcalc.gpt_program import gpt2

    for c in cases:
        # The tiny model: 2 layers, h=32, vocab 128, 16 positions; the ModelConfig counts the same.
        assert c["n_params"] == gpt2(2, 2, 32, 128, positions=16).n_params()
        assert c["step_s"] > 0 and len(c["step_s_all"]) == 2
        assert "peak_bytes" not in c  # only CUDA has max_memory_allocated
    with pytest.raises(ValueError, match="batch=0"):
        train.run_train(cases=[{"model": "gpt2-124M", "batch": 0, "seq_len": 8, "recompute": False}],
                        device="cpu", progress=False)


def test_cli_writes_json(tmp_path):
    out = tmp_path / "mm.json"
    assert main(["matmul", "--device", "cpu", "--dtypes", "fp32", "--shapes", "16x16x16", "--target-s", "0.001",
                 "--confirm-top", "1", "--sustain-s", "0", "--no-progress", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["params"]["reference"] == [128, 128, 128]  # a CPU's default reference
    assert {(r["m"], r["n"], r["k"]) for r in data["results"]["fp32"]["sweep"]} == {(16, 16, 16), (128, 128, 128)}
    with pytest.raises(SystemExit):
        main(["matmul", "--dtypes"])
