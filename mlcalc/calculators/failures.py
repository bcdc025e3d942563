"""Failure calculators: interruptions and hot spares at a GPU count; goodput with restarts decomposed."""

from __future__ import annotations

from typing import Any, Mapping

from mlcalc import _check, charts, failures, storage
from mlcalc.calc import Calc, Control, Table, View, register
from mlcalc.calculators._common import finite, fixed

# Categories of the record whose failures take a node out until it is repaired (hardware).
HARDWARE = ("GPU", "Host", "Network")


# --------------------------------------------------------------------------- interruptions and spares


def _interruptions_compute(v: Mapping[str, Any]) -> dict[str, Any]:
    n = _check.positive_int("GPUs", v["n_gpus"], failures.MAX_GPUS)
    days = _check.positive("days", v["days"], 36500)
    per_node = _check.positive_int("GPUs per node", v["per_node"], 1024)
    i = failures.interruptions(n, days * 24.0, per_node)
    hw_per_hour = sum(i.by_category.get(c, 0.0) for c in HARDWARE) / (days * 24.0)
    repair_h = finite("the repair time", _check.non_negative("repair (days)", v["repair"], 3650) * 24.0)
    spares = failures.spares_needed(hw_per_hour, repair_h, _check.in_range("confidence", v["confidence"], 0.5, 0.999))
    return {"i": i, "spares": spares, "away": hw_per_hour * repair_h, "nodes": -(-n // per_node)}


def _interruptions_view(r: Mapping[str, Any], v: Mapping[str, Any]) -> View:
    i = r["i"]
    text = (f"{fixed(i.unexpected)} unexpected interruptions in {float(v['days']):g} days ({fixed(i.per_day, 2)} a day, "
            f"one every {fixed(i.mtbf_s / 3600, 2)} h), {fixed(i.planned)} planned\n"
            f"hardware out for repair: {fixed(r['away'])} nodes on average -> {r['spares']:,} hot spare nodes "
            f"({r['spares'] / r['nodes']:.1%} of {r['nodes']:,}) keep the job whole {float(v['confidence']):.0%} "
            f"of the time")
    cats = sorted(i.by_category.items(), key=lambda kv: -kv[1])
    table = Table(("category (Llama 3's Table 5)", "expected", "share"),
                  tuple((k, n, f"{n / i.unexpected:.1%}") for k, n in cats))
    rows = [{"category": k, "n": n} for k, n in cats]
    chart = charts.bars(f"{i.unexpected:,.0f} unexpected interruptions, by cause", rows, name="category",
                        x=charts.q("n", "expected interruptions"),
                        tooltip=[charts.tip("category", kind="nominal"), charts.tip("n", "expected", ",.1f")],
                        rows_vary=True)
    return View(text=text, table=table, chart=chart)


INTERRUPTIONS = register(Calc(
    key="failures.interruptions",
    widget="InterruptionsWidget",
    title="Interruptions a job should expect at its size (Llama 3's rates, by cause), and the hot spares it needs.",
    controls=(
        Control("n_gpus", "GPUs", "int", 16384),
        Control("days", "Days", "number", 54.0, step=1.0),
        Control("per_node", "GPUs per node", "int", 8, help="host causes scale with the node count"),
        Control("repair", "Repair (days)", "number", 3.0, step=0.5,
                help="how long a node with failed hardware is away (weeks if it goes back to the vendor)"),
        Control("confidence", "Confidence", "number", 0.99, step=0.01,
                help="share of the time the spares cover every node away, 0.5 to 0.999"),
    ),
    compute=_interruptions_compute,
    view=_interruptions_view,
    notes="Rates per GPU-hour and per node-hour from Llama 3 405B's 54 days on 16,384 H100s (Table 5).",
))


# --------------------------------------------------------------------------- goodput


def _goodput_compute(v: Mapping[str, Any]) -> failures.ScaleGoodput:
    n = _check.positive_int("GPUs", v["n_gpus"], failures.MAX_GPUS)
    ckpt = storage.checkpoint_size(_check.positive("params (B)", v["n_params_billion"], 1e5) * 1e9).total_bytes
    bw = _check.positive("storage TB/s", v["tbps"], 1e4) * 1e12
    restart = failures.restart_time(ckpt, bw, 60.0 * _check.non_negative("detect (min)", v["detect"], 1e4),
                                    60.0 * _check.non_negative("replace (min)", v["replace"], 1e5),
                                    60.0 * _check.non_negative("reschedule (min)", v["reschedule"], 1e4),
                                    60.0 * _check.non_negative("warm-up (min)", v["warmup"], 1e4))
    per_node = _check.positive_int("GPUs per node", v["per_node"], 1024)
    write_s = finite("the checkpoint write", ckpt / bw)
    if v["mode"] == "synchronous":  # training waits for the write; the interval is Daly's optimum
        return failures.scale_goodput(n, write_s, restart, per_node, sdc_rollback_periods=v["sdc"],
                                      p_slow=v["p_slow"], slowdown=v["slowdown"])
    # asynchronous: the write runs in the background (its blocking copy to host memory is left out), so
    # checkpoints come as often as the writes can follow one another: one write time apart
    return failures.scale_goodput(n, 0.0, restart, per_node, interval_s=write_s, sdc_rollback_periods=v["sdc"],
                                  p_slow=v["p_slow"], slowdown=v["slowdown"])


_PARTS = (("checkpoints", "checkpoint_fraction"), ("work lost", "lost_work_fraction"),
          ("restarts (unexpected)", "restart_fraction"), ("restarts (planned)", "planned_fraction"),
          ("silent data corruption", "sdc_fraction"), ("stragglers", "straggler_fraction"))


def _goodput_view(g: failures.ScaleGoodput, v: Mapping[str, Any]) -> View:
    every = f"{g.interval_s / 60:,.1f} min" if g.interval_s >= 60 else f"{g.interval_s:,.1f} s"
    how = "Daly's optimum" if v["mode"] == "synchronous" else "one background write after another"
    text = (f"goodput {g.fraction:.1%}: a failure every {fixed(g.mtbf_s / 3600, 2)} h, a restart of "
            f"{fixed(g.restart_s / 60)} min, a checkpoint every {every} ({how})")
    parts = [(name, getattr(g, f)) for name, f in _PARTS]
    table = Table(("where the time goes", "share"), (("training", f"{g.fraction:.2%}"),)
                  + tuple((name, f"{x:.2%}") for name, x in parts))
    rows = [{"bar": "time", "part": "training", "share": g.fraction, "order": 0}]
    rows += [{"bar": "time", "part": name, "share": x, "order": k + 1} for k, (name, x) in enumerate(parts)]
    chart = charts.parts(rows, title=f"Goodput {g.fraction:.1%} at {int(v['n_gpus']):,} GPUs", value="share",
                         value_title="share of wall-clock time", share=True, colors=["#55a868"] + charts.PALETTE[:6],
                         fmt=".2%")
    return View(text=text, table=table, chart=chart)


GOODPUT = register(Calc(
    key="failures.goodput",
    widget="ScaleGoodputWidget",
    title="Goodput at scale: failure rate by GPU count, restart time by part, checkpoints, SDC and stragglers.",
    controls=(
        Control("n_gpus", "GPUs", "int", 16384),
        Control("per_node", "GPUs per node", "int", 8),
        Control("n_params_billion", "Params (B)", "number", 405.0, step=1.0,
                help="sizes the checkpoint: 14 bytes per parameter"),
        Control("tbps", "Storage TB/s", "number", 2.0, step=0.5, help="checkpoint write and read bandwidth, 1e12 B/s"),
        Control("mode", "Checkpoint", "toggle", "synchronous",
                options=(("synchronous", "synchronous"), ("asynchronous", "asynchronous"))),
        Control("detect", "Detect (min)", "number", failures.restart_defaults()["detect_s"] / 60, step=1.0),
        Control("replace", "Replace (min)", "number", failures.restart_defaults()["replace_s"] / 60, step=1.0,
                help="a hot spare in; without one, the repair time"),
        Control("reschedule", "Reschedule (min)", "number", failures.restart_defaults()["reschedule_s"] / 60, step=1.0),
        Control("warmup", "Warm-up (min)", "number", failures.restart_defaults()["warmup_s"] / 60, step=1.0),
        Control("sdc", "SDC rollback (periods)", "number", 1.0, step=1.0,
                help="extra checkpoint periods redone when silent data corruption is found late"),
        Control("p_slow", "Straggler share", "number", 0.0, step=1e-5,
                help="share of the time one GPU runs slow"),
        Control("slowdown", "Straggler slowdown", "slider", 0.2, min=0.0, max=0.9, step=0.05,
                help="how much slower a slow GPU runs"),
    ),
    compute=_goodput_compute,
    view=_goodput_view,
    notes="Restart parts other than the checkpoint read are assumptions (data/failures.json says why each).",
))
