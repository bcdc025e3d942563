"""Calculators of the "Measured on real hardware" part: a collective at a measured bus bandwidth,
a GPT training step predicted against the measurement, and a reader's pasted results."""

from __future__ import annotations

from typing import Any, Mapping

from mlcalc import _check, charts
from mlcalc import measured as ms
from mlcalc import network as net
from mlcalc.accelerators import spec
from mlcalc import gpt_program as predict
from mlcalc.gpt_program import PRESETS, preset
from mlcalc.calc import Calc, Control, Table, View, choice, register
from mlcalc.calculators._common import duration, si, sig

H100_RUN2 = "h100-2026-11-26-run2"  # the second H100 run: matmuls at the training shapes, attention, training
LINK = "NVLink4-H100"  # the datasheet link the measured curves are set against (NVLink 4, also the H200's)
SIZES = tuple(2**k for k in range(10, 35))  # 1 KiB ... 16 GiB, the message sizes a reader picks from
MAX_PASTE_BYTES = 64 * 1024  # the most text the paste calculator reads (64 KiB, UTF-8)
MAX_CURVE_POINTS = 200  # the most message sizes a pasted curve's chart shows


def _busbw_chart(curve: ms.BusbwCurve, title: str, size: float | None = None, busbw: float | None = None) -> dict:
    """Bus bandwidth against message size (log 2 axis), the datasheet link one way, the chosen size."""
    link = net.link(LINK).bytes_per_s
    step = max(1, -(-len(curve.sizes_bytes) // MAX_CURVE_POINTS))  # thin a long sweep to at most 200 points
    points = [{"bytes": int(s), "size": si(s, "B", binary=True), "busbw": g}
              for s, g in list(zip(curve.sizes_bytes, curve.busbw_gbps))[::step]]
    extra = [charts.line([{"busbw": link / 1e9, "what": "NVLink 4, one direction (datasheet)"}], along="y",
                         field="busbw", color=charts.PALETTE[3], dash=[6, 3], what="what")]
    if size is not None and busbw is not None:
        extra.append(charts.point({"bytes": int(size), "busbw": busbw / 1e9}, charts.q("bytes"), charts.q("busbw"),
                                  size=90, tooltip=[charts.tip("busbw", "GB/s at this size", ",.1f")]))
    return charts.sweep(
        title, points, x=charts.q("bytes", "message size, bytes (nccl-tests convention, log scale)", log=2,
                                  axis={"labelExpr": _BINARY_LABEL}),
        y=charts.q("busbw", "busbw, GB/s (1e9 B/s)"), points=True,
        tooltip=[charts.tip("size", kind="nominal"), charts.tip("busbw", "GB/s", ",.1f")], extra=extra)


# Axis labels in binary units (1 KiB, 1 MiB, 1 GiB) for a log-2 byte axis.
_BINARY_LABEL = ("datum.value >= 1073741824 ? format(datum.value / 1073741824, '~g') + ' GiB' : "
                 "datum.value >= 1048576 ? format(datum.value / 1048576, '~g') + ' MiB' : "
                 "datum.value >= 1024 ? format(datum.value / 1024, '~g') + ' KiB' : datum.value + ' B'")

# --------------------------------------------------------------------------- a collective at the measured busbw


def _collective_compute(v: Mapping[str, Any]) -> tuple[ms.BusbwCurve, float, net.CollectiveTime, net.CollectiveTime]:
    size = _check.positive("bytes", v["message_bytes"])
    ranks = _check.positive_int("GPUs", v["n_ranks"])
    curve = ms.busbw_curve(v["op"])
    busbw = curve.busbw_bytes_per_s_at(size)
    link = net.link(LINK)
    at_measured = net.collective_time(size, ranks, busbw, v["op"])
    at_link = net.collective_time(size, ranks, link.bytes_per_s, v["op"])
    return curve, busbw, at_measured, at_link


def _collective_view(r: tuple[ms.BusbwCurve, float, net.CollectiveTime, net.CollectiveTime],
                     v: Mapping[str, Any]) -> View:
    curve, busbw, tm, tl = r
    link = net.link(LINK).bytes_per_s
    size, ranks = v["message_bytes"], int(v["n_ranks"])
    lines = [f"measured busbw at {si(size, 'B', binary=True)} ({size:,.0f} B): {sig(busbw / 1e9)} GB/s "
             f"= {sig(100 * busbw / link, 2)}% of NVLink 4's {link / 1e9:.0f} GB/s one way (measured on "
             f"{curve.n_ranks} GPUs, {curve.info.device_name})",
             f"{v['op']} on {ranks} GPUs: {duration(tm.time_s)} at the measured busbw, "
             f"{duration(tl.time_s)} at the datasheet link (bandwidth alone, no latency)"]
    if ranks != curve.n_ranks:
        lines.append(f"(the curve was measured on {curve.n_ranks} GPUs; with more, busbw usually differs: measure it)")
    chart = _busbw_chart(curve, f"{v['op']} on {curve.n_ranks} x {curve.info.device_name}: "
                                f"{busbw / 1e9:,.1f} GB/s at {si(size, 'B', binary=True)}", size, busbw)
    return View(text="\n".join(lines), chart=chart)


MEASURED_COLLECTIVE = register(Calc(
    key="measured.collective",
    widget="MeasuredCollectiveWidget",
    title="Time of a collective at the measured bus bandwidth (read off the curve at its size) and at the link's.",
    controls=(
        choice("op", "Collective", ["all_reduce", "all_gather", "reduce_scatter"], "all_reduce"),
        choice("message_bytes", "Bytes", [(si(s, "B", binary=True), s) for s in SIZES], 2**26,
               help="message size, nccl-tests convention (the whole buffer)"),
        Control("n_ranks", "GPUs", "int_slider", 2, min=2, max=8),
    ),
    compute=_collective_compute,
    view=_collective_view,
))

# --------------------------------------------------------------------------- predicted against measured


def _gib(x: float) -> str:
    return f"{x / 2**30:,.2f} GiB"


def _prediction_compute(v: Mapping[str, Any]) -> tuple[Any, Any, Any, ms.TrainCase | None]:
    cfg = preset(v["model"])
    b = _check.positive_int("batch", v["batch"])
    s = _check.positive_int("seq len", v["seq_len"])
    rc = bool(v["recompute"])
    shapes = [r for r in ms.run(H100_RUN2) if isinstance(r, ms.MatmulResult)] + [ms.matmul("H100-SXM", "bf16")]
    bw = ms.copy_bandwidth("H100-SXM", "d2d").memory_bytes_per_s
    attn = ms.attention_rate_near(b, cfg.n_heads, s, H100_RUN2 + "/")
    mem = predict.program_memory(cfg, b, s, rc)
    textbook = predict.textbook_memory(cfg, b, s, rc)
    t = predict.program_step_time(cfg, b, s, rc, lambda m, n, k: ms.matmul_rate_near(shapes, m, n, k), bw, attn)
    found = [c for c in ms.train_cases(H100_RUN2 + "/") if (c.model, c.batch, c.seq_len, c.recompute) == (v["model"], b, s, rc)]
    return mem, textbook, t, (found[0] if found else None)


def _prediction_view(r: tuple[Any, Any, Any, ms.TrainCase | None], v: Mapping[str, Any]) -> View:
    mem, textbook, t, case = r
    h100 = spec("H100-SXM").memory_bytes
    lines = [f"peak memory: program model {_gib(mem.total)} ({mem.note}); textbook {_gib(textbook.total)}; "
             f"the H100 has {_gib(h100)}" + ("  -> does not fit" if mem.total > h100 else ""),
             f"step time: {t.total * 1e3:,.1f} ms = " + " + ".join(f"{k} {x * 1e3:,.1f}" for k, x in t.parts.items())]
    if case is not None and case.peak_bytes and case.step_s:
        lines.append(f"measured on the H100: {_gib(case.peak_bytes)} (error {mem.total / case.peak_bytes - 1:+.1%}), "
                     f"{case.step_s * 1e3:,.1f} ms (error {t.total / case.step_s - 1:+.1%})")
    else:
        lines.append("not among the measured cases: this is a prediction only")
    table = Table(("peak memory, program model", "GiB (2**30 bytes)"),
                  tuple((k, x / 2**30) for k, x in mem.parts.items()))
    return View(text="\n".join(lines), table=table)


PREDICTION = register(Calc(
    key="measured.prediction",
    widget="PredictionWidget",
    title="Predicted peak memory and step time of a GPT training step on the H100, against the measurement if any.",
    controls=(
        choice("model", "Model", list(PRESETS), "gpt2-350M"),
        Control("batch", "Batch", "int_slider", 8, min=1, max=64),
        choice("seq_len", "Seq len", [256, 512, 1024, 2048, 4096, 8192], 1024),
        Control("recompute", "Activation checkpointing", "check", False),
    ),
    compute=_prediction_compute,
    view=_prediction_view,
))

# --------------------------------------------------------------------------- the reader's own results


def _example_nccl_text() -> str:
    """The book's measured all-reduce, written in nccl-tests' layout: the paste calculator's starting text."""
    c = ms.busbw_curve("all_reduce", results=ms.bundled_collectives())  # (not every run: import stays quick)
    head = [f"# all_reduce_perf: the book's {c.info.date_utc[:10]} run ({c.info.tool}) in nccl-tests' layout",
            "# Using devices"]
    head += [f"#  Rank {i:2d} Group  0 Pid {1000 + i:6d} on  node device {i:2d} [0x{i:02x}] {c.info.device_name}"
             for i in range(c.n_ranks)]
    head.append("#       size         count      type   redop    root     time   algbw   busbw #wrong")
    rows = [f"{s:12d} {s // 4:13d}     float     sum      -1 {t * 1e6:8.2f} {a:7.2f} {b:7.2f}      0"
            f" {t * 1e6:8.2f} {a:7.2f} {b:7.2f}      0"
            for s, t, a, b in zip(c.sizes_bytes, c.time_s, c.algbw_gbps, c.busbw_gbps)]
    return "\n".join(head + rows) + "\n"


def _pasted_compute(v: Mapping[str, Any]) -> ms.BusbwCurve | ms.MatmulResult:
    text = v["text"]
    if not isinstance(text, str):
        raise ValueError(f"text={text!r} is not allowed: paste text")
    size = len(text.encode("utf-8", errors="replace"))
    if size > MAX_PASTE_BYTES:
        raise ValueError(f"text of {size:,} bytes is not allowed: paste at most {MAX_PASTE_BYTES:,} bytes (64 KiB), "
                         "e.g. the data rows of nccl-tests or the end of a mamf-finder log")
    if not text.strip():
        raise ValueError("text='' is not allowed: paste the output of an nccl-tests program or a mamf-finder log")
    if v["kind"] == "nccl-tests":
        return ms.parse_nccl_tests(text, op=v["op"], label="pasted")
    return ms.parse_mamf_log(text, label="pasted")


def _pasted_view(r: ms.BusbwCurve | ms.MatmulResult, v: Mapping[str, Any]) -> View:
    if isinstance(r, ms.BusbwCurve):
        link = net.link(LINK).bytes_per_s
        text = (f"{r.op} on {r.n_ranks} ranks of {r.info.device_name}: {len(r.sizes_bytes)} sizes, "
                f"peak busbw {r.peak_busbw_bytes_per_s / 1e9:,.1f} GB/s ({r.peak_busbw_bytes_per_s / link:.0%} "
                f"of NVLink 4's {link / 1e9:.0f} GB/s one way, the H100's and H200's link)")
        return View(text=text, chart=_busbw_chart(r, f"{r.op} on {r.n_ranks} x {r.info.device_name} (pasted)"))
    line = f"{r.dtype} best {r.best_tflops:,.1f} TFLOPS at {'x'.join(map(str, r.best_shape))}"
    if r.info.accelerator:
        try:
            line += f" = {r.best_flops_per_s / spec(r.info.accelerator).peak_flops(r.dtype):.0%} of the dense peak"
        except ValueError:  # a dtype the datasheet does not list
            pass
    return View(text=line + f" ({r.info.device_name})")


PASTED_RESULT = register(Calc(
    key="measured.pasted",
    widget="PastedResultWidget",
    title="Paste nccl-tests output or a mamf-finder log (at most 64 KiB): see what mlcalc reads from it.",
    controls=(
        choice("kind", "Format", ["nccl-tests", "mamf-finder"], "nccl-tests", kind="toggle"),
        choice("op", "nccl op", list(ms.COLLECTIVES), "all_reduce"),
        Control("text", "Paste", "text", _example_nccl_text(), width="100%",
                help=f"at most {MAX_PASTE_BYTES // 1024} KiB; starts with the book's own all-reduce measurement"),
    ),
    compute=_pasted_compute,
    view=_pasted_view,
))
