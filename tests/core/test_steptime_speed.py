"""The step-time engine's speed-ups change no answer: the pruned nearest-shape lookup picks the row the plain
one picks (mlcalc.steptime._nearest_pruned against _nearest, on the measured rows and on rows made to tie)."""

from __future__ import annotations

import random

from mlcalc import hfruns, steptime


def _measured_rows():
    import json

    data = json.loads(hfruns._folder("h200x2-2026-11-26-train-hf-run2").joinpath("rates.json").read_text())
    mm = [((float(r["m"]), float(r["n"]), float(r["k"])), float(r["tflops"]) * 1e12) for r in data["matmul"]]
    at = [((float(r["head_dim"]), float(r["seq_len"])), float(r["fwd_bwd_tflops"]) * 1e12)
          for r in data["attention"] if r["kv_heads"] == r["heads"]]
    return mm, at


def _same(rows, keys):
    groups = steptime._log_rows(rows)
    assert groups is not None
    for key in keys:
        assert steptime._nearest_pruned(rows, groups, key) == steptime._nearest(rows, key), key


def test_the_pruned_lookup_picks_the_plain_lookups_row_on_the_measured_shapes():
    rng = random.Random(21)
    mm, at = _measured_rows()
    keys = [tuple(rng.choice((1, 7, 64, 100, 256, 384, 1000, 4096, 5120, 8192, 28672, 10**6, 10**9))
                  for _ in range(3)) for _ in range(300)]
    keys += [tuple(int(2 ** rng.uniform(0, 24)) + 1 for _ in range(3)) for _ in range(700)]
    keys += [tuple(rng.uniform(0.5, 1e7) for _ in range(3)) for _ in range(300)]
    keys += [r[0] for r in mm[::7]]  # on the grid itself (distance 0)
    keys += [(362.0, 724.0, 1448.0), (2.0 ** 8.5, 2.0 ** 9.5, 2.0 ** 10.5)]  # about halfway between grid points
    _same(mm, keys)
    _same(at, [(float(rng.choice((64, 80, 96, 128, 192, 256))), float(int(2 ** rng.uniform(6, 18))))
               for _ in range(300)])


def test_the_pruned_lookup_keeps_the_first_of_rows_at_the_same_distance():
    # rows placed symmetrically around the keys in log space: exact and near ties, in every order
    rng = random.Random(5)
    for _ in range(200):
        base = [2.0 ** rng.randint(0, 12) for _ in range(3)]
        rows = []
        for j in range(12):
            shape = tuple(b * 2.0 ** rng.choice((-1, 0, 1)) for b in base)
            rows.append((shape, float(j)))
        rng.shuffle(rows)
        _same(rows, [tuple(base), tuple(b * 1.0000001 for b in base), tuple(int(b) for b in base)])


def test_the_lookup_answers_as_the_plain_lookup_and_odd_rows_take_the_plain_path():
    mm, _ = _measured_rows()
    look = steptime._nearest_lookup(mm)
    for key in ((4096, 8192, 8192), (1, 1, 1), (12345, 678, 91011), (3.5, 2e6, 77.0)):
        assert look(*key) == steptime._nearest(mm, key)
    assert steptime._log_rows([((1.0, 0.0), 1.0)]) is None  # a zero coordinate: _nearest decides (and refuses)
    assert steptime._log_rows([((1.0, 2.0), 1.0), ((1.0,), 2.0)]) is None  # rows of different lengths
    small = steptime._nearest_lookup([((1.0, 2.0), 5.0), ((4.0, 8.0), 6.0)])
    assert small(1.9, 4.1) == 5.0 and small(3, 9) == 6.0
