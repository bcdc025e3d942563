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


def _random_layouts(rng, model, n):
    out = []
    while len(out) < n:
        tp = rng.choice((1, 2, 4, 8))
        pp = rng.choice((1, 2, 3, 4, 8))
        dp = rng.choice((1, 2, 4, 16))
        cp = rng.choice((1, 1, 2))
        ep = rng.choice((1, 2, 4)) if model.is_moe else 1
        schedule = rng.choice(("1f1b", "interleaved", "gpipe", "dualpipe"))
        if model.n_heads % tp or pp > model.n_layers or (dp * cp) % ep or (schedule == "dualpipe" and pp % 2):
            continue
        out.append(steptime.Layout(
            tp=tp, pp=pp, dp=dp, cp=cp, ep=ep, zero=rng.choice((0, 1, 2, 3)), sequence_parallel=rng.random() < 0.5,
            schedule=schedule, virtual_stages=rng.choice((1, 2)) if schedule == "interleaved" and pp > 1 else 1,
            recompute=rng.choice(("none", "selective", "full")), micro_batch=rng.choice((1, 2)),
            grad_accum=rng.choice((1, 3, 8, 32)), scatter_gather=rng.random() < 0.5,
            balanced_stages=rng.random() < 0.3))
    return out


def test_the_remembered_stages_and_collectives_give_the_answer_computed_afresh():
    # predict_step computes each pipeline stage's kernels once per shape (_stage_kernels_of) and each collective once
    # per (message, fabric) (_collective_of): with both caches emptied before every call, and with them full of other
    # layouts' entries, every field of the prediction is the same, and predict_step_time's fields are predict_step's.
    from mlcalc import memory

    rng = random.Random(5)
    cases = []
    for name in ("Llama-3 8B", "Mixtral 8x7B", "DeepSeek-V3", "Megatron GPT 1.7B"):
        model = memory.model_preset(name)
        for lay in _random_layouts(rng, model, 12):
            for engine, machine in (("megatron", "H100-SXM"), ("eager", "H200-SXM"), ("megatron", "B200")):
                cases.append((model, lay, engine, machine, rng.choice((1024, 4096))))
    fresh = []
    caches = (steptime._stage_kernels_of, steptime._collective_of, steptime._fit_held, memory._held_bytes)
    for model, lay, engine, machine, s in cases:
        for cache in caches:
            cache.cache_clear()
        fresh.append(repr(steptime.predict_step(model, lay, seq_len=s, machine=machine, engine=engine)))
    rng.shuffle(order := list(range(len(cases))))
    for i in order:  # the caches now hold every case's entries, met in another order
        model, lay, engine, machine, s = cases[i]
        p = steptime.predict_step(model, lay, seq_len=s, machine=machine, engine=engine)
        assert repr(p) == fresh[i], (model.name, lay, engine, machine)
        t = steptime.predict_step_time(model, lay, seq_len=s, machine=machine, engine=engine)
        assert (t.step_s, t.bubble_s, t.comm_exposed_s, dict(t.parts_s)) == (
            p.step_s, p.bubble_s, p.comm_exposed_s, dict(p.parts_s))
    assert steptime._stage_kernels_of.cache_info().maxsize == 1024
    assert steptime._collective_of.cache_info().maxsize == 4096


def test_a_layouts_quick_check_accepts_and_refuses_as_its_field_checks_do(monkeypatch):
    # Layout._plain accepts at once what every field check of __post_init__ accepts; anything else goes through the
    # field checks: with _plain always False, every layout is accepted or refused with the same message.
    rng = random.Random(3)
    odd = (0, -1, 2.0, 2.5, True, False, "2", None, steptime.MAX_GPUS, steptime.MAX_GPUS + 1, 10**9)
    fields = {"tp": (1, 2, 8), "pp": (1, 2, 4), "dp": (1, 3, 64), "cp": (1, 2), "ep": (1, 2), "zero": (0, 1, 2, 3),
              "sequence_parallel": (True, False), "schedule": ("1f1b", "interleaved", "gpipe", "dualpipe"),
              "virtual_stages": (1, 2), "recompute": ("none", "selective", "full"), "micro_batch": (1, 2),
              "grad_accum": (1, 8, steptime.MAX_MICRO_BATCHES), "scatter_gather": (True, False),
              "balanced_stages": (True, False), "deepspeed_pipeline": (True, False), "cp_allgather": (True, False),
              "distribute_checkpoints": (True, False)}
    cases = []
    for _ in range(3000):
        kw = {k: rng.choice(v) for k, v in fields.items()}
        if rng.random() < 0.5:
            kw[rng.choice(list(fields))] = rng.choice(odd + ("selective", "1f1b", 1.0, 0.0))
        cases.append(kw)

    def outcome(kw):
        try:
            return repr(steptime.Layout(**kw))
        except (ValueError, TypeError) as err:
            return f"{type(err).__name__}: {err}"

    quick = [outcome(kw) for kw in cases]
    monkeypatch.setattr(steptime.Layout, "_plain", lambda self: False)
    assert [outcome(kw) for kw in cases] == quick
    assert sum(q.startswith("Layout(") for q in quick) > 300 and sum(q.startswith("ValueError") for q in quick) > 300


def test_training_fit_remembered_on_one_device_answers_afresh_on_another():
    # steptime._fit_held remembers a layout's memory but the device's share: every device's answer (and each refusal)
    # is the one computed with nothing remembered
    from mlcalc import memory

    rng = random.Random(9)
    model = memory.model_preset("Llama-3 70B")
    cases = [(lay, rng.choice((2048, 4096)), engine, rng.random() < 0.5)
             for lay in _random_layouts(rng, model, 40) for engine in ("megatron", "eager")]

    def outcome(lay, s, engine, steady, dev):
        try:
            return repr(steptime.training_fit(model, lay, seq_len=s, device_bytes=dev, engine=engine, steady_state=steady))
        except ValueError as err:
            return f"ValueError: {err}"

    devices = (80e9, 141e9, 0.0, 192e9)
    fresh = []
    for case in cases:
        row = []
        for dev in devices:
            steptime._fit_held.cache_clear()
            memory._held_bytes.cache_clear()
            row.append(outcome(*case, dev))
        fresh.append(row)
    for case, want in zip(cases, fresh):
        assert [outcome(*case, dev) for dev in devices[::-1]] == want[::-1]


def test_a_layouts_remembered_hash_is_its_fields_hash_and_no_pickle_carries_it():
    import dataclasses
    import pickle

    for lay in _random_layouts(random.Random(2), __import__("mlcalc.memory").memory.model_preset("Llama-3 8B"), 20):
        assert hash(lay) == hash(tuple(getattr(lay, f.name) for f in dataclasses.fields(lay)))
        again = pickle.loads(pickle.dumps(lay))
        assert "_hash_known" not in again.__dict__ and again == lay and hash(again) == hash(lay)
        assert repr(lay).startswith("Layout(tp=") and "_hash_known" not in repr(lay)
