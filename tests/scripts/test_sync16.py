"""The sync16 call (issue 24): the four configurations the launch-queue rule predicts too fast, profiled again.

Before the call: its sweep repeats each configuration exactly as the record ran it, and the predictions and the
scoring rule it is held to are in the repository (``scripts/gpu/sync16_predictions.json``, written by
``scripts/gpu/predict_sync16.py``). The engine's default does not move here.
"""

from __future__ import annotations

import importlib.util
import json
import os

import pytest

from mlcalc import distruns, steptime

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GPU = os.path.join(ROOT, "scripts", "gpu")


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, os.path.join(GPU, f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def preds():
    with open(os.path.join(GPU, "sync16_predictions.json")) as f:
        return json.load(f)


def test_the_sweep_repeats_the_records_configurations(preds):
    td = _load("train_dist")
    swept = {c["id"]: c for c in td.sync16_cases()}
    assert set(swept) == set(preds["configs"])
    for cid, ref in preds["configs"].items():
        c = swept[cid]
        (old,) = [x for x in distruns.cases(ref["run"]) if x.id == ref["case"]]
        assert c["model"]["name"] == old.model.name and c["model"]["n_layers"] == old.model.n_layers
        assert (c["world"], c["dp"], c["tp"], c["pp"], c["micro_batch"], c["seq_len"], c["recompute"]) == (
            old.world, old.dp, old.tp, old.pp, old.micro_batch, old.seq_len, old.recompute)
        assert c.get("probe") is True  # every configuration profiled


def test_the_predictions_were_written_for_both_cards_and_rules(preds):
    assert preds["written_before_the_call"] is True
    ks = preds["host_factors"]
    assert ks[0] == 0.5 and ks[-1] == 3.0 and 1.0 in ks
    i = ks.index(1.0)
    for cid in preds["configs"]:
        for card in ("NVIDIA H100 80GB HBM3", "NVIDIA H200"):
            q, o = preds["grid"][f"{cid}|{card}|queue"], preds["grid"][f"{cid}|{card}|op-by-op"]
            assert q["host_s"] == o["host_s"] and q["device_s"] == o["device_s"]  # the rule moves only the step
            assert all(b >= a for a, b in zip(q["step_s"], q["step_s"][1:]))  # the queue: monotone in the host
            assert all(b >= a for a, b in zip(q["host_s"], q["host_s"][1:]))
    # the queue's misses the call is for: on the H200 each configuration's queue step at k = 1 is below the record's
    for cid, ref in preds["configs"].items():
        (old,) = [x for x in distruns.cases(ref["run"]) if x.id == ref["case"]]
        assert preds["grid"][f"{cid}|NVIDIA H200|queue"]["step_s"][i] < 0.85 * old.step_s


def test_the_engine_default_is_unchanged():
    assert steptime.HOST_RULE == "op-by-op"
