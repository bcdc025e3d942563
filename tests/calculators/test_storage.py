"""The storage calculators' charts and tables carry the numbers of the pure functions."""

import pytest

from mlcalc import calc, storage
from mlcalc.calculators import storage as cs
from mlcalc.vl import chart_values

GB, TB = 1e9, 1e12


def _view(key, **values):
    return calc.get(key).evaluate(values)


def test_dataloader_chart_has_the_node_need_and_the_filesystems():
    r, view = _view("storage.dataloader", achieved_tflops=35.0)
    rows = chart_values(view.chart)
    need = [row["gb_per_s"] for row in rows if "what" in row]
    # Ibrahim et al. 2021 Table II (CosmoFlow: 16 MiB, 247 GiFLOP per sample) at 35 TFLOP/s per V100, 8 per node:
    # 17.7 GB/s per node (Bekman's 18.2 uses the paper's rounded 65 GB/s per PFLOP/s).
    assert need == [pytest.approx(17.71, abs=0.01)]
    bars = {row["filesystem"].split("[")[-1].rstrip("]"): row for row in rows if "filesystem" in row}
    assert set(bars) == set(cs.COMPARE_FILESYSTEMS)
    for key, row in bars.items():
        assert row["gb_per_s"] == pytest.approx(storage.filesystem(key).bandwidth_bytes_per_s / GB, rel=1e-5)
        assert row["verdict"] == (cs.ENOUGH if row["gb_per_s"] >= need[0] else cs.NOT_ENOUGH)
    # one NFS mount over TCP (3 GB/s, storage.json) is not enough for the CosmoFlow node
    assert bars["nfs-tcp"]["verdict"] == cs.NOT_ENOUGH


def test_dataloader_presets_fill_in_the_numbers():
    presets = cs.DATALOADER.presets[0].values
    # Ibrahim et al. 2021 Table II: ResNet-50 samples are 0.14 MiB and cost 31 GiFLOP
    assert presets["resnet50"] == {"sample_mib": 0.14, "gflops": 31.0}
    values = cs.DATALOADER.values({"workload": "resnet50", **presets["resnet50"]})
    assert cs.DATALOADER.follow("workload", values) == presets["resnet50"]
    assert cs.DATALOADER.follow("gflops", {**values, "gflops": 62.0}) == {"workload": "custom"}
    assert cs.DATALOADER.follow("gflops", values) == {} and cs.DATALOADER.follow("achieved_tflops", values) == {}
    # the same rule through run(), as the site's worker calls it
    out = calc.run("storage.dataloader", {**values, "gflops": 62.0}, changed="gflops")
    assert out["ok"] and out["set"] == {"workload": "custom"}
    assert "custom" in cs.DATALOADER.control("workload").values()


def test_checkpoint_table_is_bloom():
    (size, write), view = _view("storage.checkpoint")
    total = sum(row[1] for row in view.table.rows) * GB
    # BigScience tr11-176B README: a full BLOOM-176B checkpoint (14 bytes/param) is "2.3T" by du -h, 2.244 TiB
    assert total / 2**40 == pytest.approx(2.244, abs=0.001)
    assert total == pytest.approx(size.total_bytes)
    assert "2.24 TiB" in view.text


def test_interval_chart_marks_daly_and_young():
    # Daly 2006: delta = 5 min, R = 10 min, M = 24 h -> 117 min (Young's sqrt(2 delta M): 120 min)
    r, view = _view("storage.checkpoint_interval", n_gpus=1, device_mtbf_years=1 / 365, checkpoint_s=300.0,
                     restart_min=10.0, interval_h=2.0)
    rows = chart_values(view.chart)
    rules = {row["what"].split(":")[0]: row["hours"] for row in rows if "what" in row}
    assert rules["Daly"] * 60 == pytest.approx(116.7, abs=0.1)
    assert rules["Young"] * 60 == pytest.approx(120.0, abs=0.1)
    curve = [row for row in rows if "what" not in row][:-1]
    assert len(curve) == cs.GOODPUT_POINTS
    best = max(curve, key=lambda row: row["goodput"])
    # the first-order goodput is best at Young's interval (its minimum of the waste)
    assert best["hours"] == pytest.approx(rules["Young"], rel=0.05)
    for row in curve[::20]:
        g = storage.goodput(row["hours"] * 3600, 300.0, 86400.0, 600.0).fraction
        assert row["goodput"] == pytest.approx(g, abs=1e-5)
    (point,) = [row for row in rows if "what" not in row][-1:]
    assert point["hours"] == 2.0 and point["goodput"] == pytest.approx(r["chosen"].fraction, abs=1e-6)


def test_capacity_chart_is_the_bekman_rule():
    cap, view = _view("storage.capacity", dataset_tb=100.0, checkpoint_tb=0.0, checkpoints_kept=0, other_tb=0.0)
    buy = [row["tb"] for row in chart_values(view.chart) if row["bar"] == "buy"]
    # Bekman, "The AI Battlefield": "If you want a reliable 100TBs you need to rent 125TBs"
    assert buy == [125.0]
    store = sum(row["tb"] for row in chart_values(view.chart) if row["bar"] == "store")
    assert store == pytest.approx(100.0)


def test_startup_chart_follows_the_formula():
    # blister README (Python 2.7): 13,619 file operations for 479 modules; at 1 ms each, 13.6 s for one process
    r, view = _view("storage.startup", n_nodes=1, processes_per_node=1, n_files=479, ops_per_file=13619 / 479,
                    metadata_kops=1000.0, op_latency_ms=1.0)
    rows = chart_values(view.chart)
    assert rows[-1] == {"nodes": 1.0, "seconds": pytest.approx(13.619)}
    alone = [row["seconds"] for row in rows if row.get("curve", "").startswith("one process")]
    assert len(alone) == cs.STARTUP_POINTS and set(alone) == {13.619}
    for row in rows[:-1]:
        if row["curve"] == "start-up time":
            t = storage.import_startup_time(1, 1, 479, 13619 / 479, 1e6, 1e-3)
            expected = max(t.latency_bound_s, t.server_bound_s * row["nodes"])
            assert row["seconds"] == pytest.approx(expected, rel=1e-5)


def test_charts_do_not_grow_with_the_inputs():
    for key, values in (("storage.startup", {"n_nodes": 10**9}), ("storage.checkpoint_interval", {"n_gpus": 10**9}),
                        ("storage.capacity", {"checkpoints_kept": 10**9})):
        out = calc.run(key, values)
        assert out["ok"], out
        assert len(chart_values(out["chart"])) <= 200
