"""Network calculators: units, generations, collectives, step communication, layouts, pipelines, topology.

Standard library only (runs in the reader's browser too). Each calculator is ``compute`` (mlcalc
functions only) and ``view`` (text, a small table, a Vega-Lite chart as a dict).
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from mlcalc import _check, charts, models
from mlcalc import network as net
from mlcalc import parallel as par
from mlcalc.accelerators import spec, training_dtype
from mlcalc.calc import Calc, Control, Table, View, choice, register
from mlcalc.calculators._common import accelerator_control, fixed, si, sig


def _int_in(name: str, value: Any, lo: int, hi: int) -> int:
    """A whole number in [lo, hi] (the bound keeps a drawing's size fixed), else ValueError naming it."""
    n = _check.positive_int(name, value)
    if not lo <= n <= hi:
        raise ValueError(f"{name}={value!r} is not allowed: it must be a whole number from {lo} to {hi}")
    return n


def gbs(bytes_per_s: float) -> str:
    """Bytes per second as GB/s (1e9 bytes): one decimal from 1 GB/s (none from 1,000), three significant digits below."""
    return f"{fixed(bytes_per_s / 1e9)} GB/s" if bytes_per_s >= 1e9 else f"{sig(bytes_per_s / 1e9)} GB/s"


# --------------------------------------------------------------------------- 1. units


def _units_compute(v: Mapping[str, Any]) -> net.UnitsResult:
    return net.bandwidth_units(v["value"], v["unit"], v["direction"], v["nics_per_node"], v["efficiency"])


def _gbps(gbit_per_s: float) -> str:
    """Gb/s in the units table: whole numbers from 100, three significant digits below (0.4, not 0)."""
    return f"{gbit_per_s:,.0f}" if gbit_per_s >= 100 else sig(gbit_per_s)


def _units_view(r: net.UnitsResult, v: Mapping[str, Any]) -> View:
    one = r.one_direction_bytes_per_s
    rows = (
        ("one link, one direction", sig(one / 1e9, 4), _gbps(net.bytes_per_s_to_gbps(one))),
        (f"node ({int(v['nics_per_node'])} x), one direction", f"{r.node_bytes_per_s / 1e9:,.1f}",
         _gbps(net.bytes_per_s_to_gbps(r.node_bytes_per_s))),
        (f"plan with {float(v['efficiency']):.0%} of it", f"{r.expected_node_bytes_per_s / 1e9:,.1f}",
         _gbps(net.bytes_per_s_to_gbps(r.expected_node_bytes_per_s))),
    )
    text = (f"{float(v['value']):g} {v['unit']} {v['direction']} = {sig(one / 1e9, 4)} GB/s per direction "
            f"(GB = 1e9 bytes, Gb = 1e9 bits)")
    return View(text=text, table=Table(("", "GB/s", "Gb/s"), rows))


UNITS = register(Calc(
    key="network.units",
    widget="BandwidthUnitsWidget",
    title="Gb/s or GB/s, one direction or both, NICs per node, and the 80% rule.",
    controls=(
        Control("value", "advertised", "number", 400.0, step=100.0, help="the figure on the datasheet"),
        choice("unit", "unit", list(net.UNITS), "Gb/s"),
        choice("direction", "direction", list(net.DIRECTIONS), "per direction", kind="toggle"),
        Control("nics_per_node", "NICs per node", "int", 8),
        Control("efficiency", "efficiency", "slider", net.BEKMAN_EFFICIENCY, min=0.0, max=1.0, step=0.05,
                help="fraction of the advertised figure to plan with (Bekman's 80%)"),
    ),
    compute=_units_compute,
    view=_units_view,
))

# --------------------------------------------------------------------------- 2. generations


def _generations_compute(v: Mapping[str, Any]) -> tuple[net.Speedup, ...]:
    return net.speedups(v["baseline"])


def _generations_view(result: tuple[net.Speedup, ...], v: Mapping[str, Any]) -> View:
    table = Table(("GPU", "compute x (dense fp16)", "NVLink x", "ratio"),
                  tuple((s.gpu, f"{s.compute:.2f}", f"{s.intra_node:.1f}", f"{s.compute / s.intra_node:.2f}")
                        for s in result))
    data = []
    for s in result:
        data.append({"gpu": s.gpu, "what": "compute (fp16 dense TFLOPS)", "x": s.compute, "label": f"{s.compute:.1f}x"})
        data.append({"gpu": s.gpu, "what": "NVLink (GB/s, one direction)", "x": s.intra_node,
                     "label": f"{s.intra_node:.1f}x"})
    log = bool(v["log_scale"])
    y = charts.q("x", f"speed-up over {v['baseline']}" + (" (log)" if log else ""), log=log)
    spec_ = charts.live_axis(charts.grouped("Compute outgrows the intra-node network", data, x="gpu", group="what",
                                            y=y), "y", "title")
    return View(table=table, chart=spec_)


GENERATIONS = register(Calc(
    key="network.generations",
    widget="GenerationsWidget",
    title="Speed-ups of compute and NVLink across GPU generations, over a chosen baseline.",
    controls=(
        choice("baseline", "baseline", [g.gpu for g in net.generations()], "V100"),
        Control("log_scale", "log scale", "check", False),
    ),
    compute=_generations_compute,
    view=_generations_view,
))

# --------------------------------------------------------------------------- 3. collectives

SWEEP_BYTES = tuple(10 ** (3 + i / 6) for i in range(49))  # 1 kB ... 100 GB, a fixed grid


def _collective_compute(v: Mapping[str, Any]) -> tuple[net.Fabric, net.CollectiveTime]:
    fab = net.fabric(v["system"], v["n_nodes"], v["efficiency"], v["gpus_per_node"], rates=v["rates"],
                     in_network=v["in_network"])
    measured = v["measured_busbw_gb_s"]
    if measured != 0:
        if isinstance(measured, bool) or not isinstance(measured, (int, float)) or not measured > 0:
            raise ValueError(f"measured_busbw_gb_s={measured!r} is not allowed: give a bus bandwidth > 0 GB/s, "
                             "or 0 to use the links")
        fab = net.with_busbw(fab, measured * 1e9)
    size = _check.positive("message (bytes)", v["message_bytes"])
    return fab, net.fabric_collective_time(size, fab, v["collective"], v["algorithm"])


def _collective_view(result: tuple[net.Fabric, net.CollectiveTime], v: Mapping[str, Any]) -> View:
    fab, t = result
    size, collective, algorithm = float(v["message_bytes"]), v["collective"], v["algorithm"]
    ring = net.collective_busbw_bytes_per_s(fab, collective, algorithm)
    if v["measured_busbw_gb_s"]:
        pace = "the measured bus bandwidth sets the pace"
    elif fab.ring_channels and algorithm == "ring" and ring < 0.995 * fab.busbw_bytes_per_s:
        # NCCL's ring kernel on one node (mlcalc.network.nccl_ring_busbw_bytes_per_s): the links are not the limit
        pace = (f"NCCL's {fab.ring_channels} ring channels set the pace, not the links: {gbs(ring)} for large "
                f"messages (each channel copies {gbs(fab.channel_copy_bytes_per_s)}; the link idles while a chunk's "
                "last step only receives)")
    else:
        pace = f"the {fab.bottleneck} link sets the pace"
    text = (f"{collective} of {si(size, 'B')} ({si(size, 'B', binary=True)}) on {fab.n_ranks:,} GPUs "
            f"({fab.n_nodes:,} x {fab.gpus_per_node}): "
            f"{si(t.time_s, 's')} (latency {si(t.latency_s, 's')}, bandwidth {si(t.bandwidth_s, 's')})\n"
            f"algbw {gbs(t.algbw_bytes_per_s)}, busbw {gbs(t.busbw_bytes_per_s)} (the links' ring busbw: "
            f"{gbs(fab.busbw_bytes_per_s)}); "
            f"{pace} (GB = 1e9 bytes, per direction)")
    sweep = list(zip(SWEEP_BYTES, net.fabric_collective_times(SWEEP_BYTES, fab, collective, algorithm)))
    x = charts.q("bytes", "message size, bytes (log)", log=True, fmt="~s")
    title = f"{collective} ({algorithm}) on {fab.n_ranks:,} GPUs"
    if v["plot"] == "time":
        data = []
        for s, c in sweep:
            data.append({"bytes": s, "part": "total", "s": c.time_s})
            data.append({"bytes": s, "part": "latency part", "s": c.latency_s})
            if c.bandwidth_s > 0:
                data.append({"bytes": s, "part": "bandwidth part", "s": c.bandwidth_s})
        y = charts.q("s", "time, seconds (log)", log=True, fmt="~s")
        here = {"bytes": size, "s": t.time_s}
        spec_ = charts.sweep(title + ": time against message size", data, x=x, y=y, series="part", height=240,
                             extra=[charts.point(here, x, y, size=70)])
    else:
        data = [{"bytes": s, "busbw": c.busbw_bytes_per_s / 1e9} for s, c in sweep]
        y = charts.q("busbw", "bus bandwidth, GB/s")
        here = {"bytes": size, "busbw": t.busbw_bytes_per_s / 1e9}
        spec_ = charts.sweep(
            title + ": bus bandwidth against message size", data, x=x, y=y, color=charts.PALETTE[2], height=240,
            extra=[charts.line([{"busbw": fab.busbw_bytes_per_s / 1e9, "what": "the links' bus bandwidth"}], along="y",
                               field="busbw", color="#8c8c8c", dash=[3, 3], what="what", fmt=",.1f"),
                   charts.point(here, x, y, size=70)])
    return View(text=text, chart=spec_)


COLLECTIVE = register(Calc(
    key="network.collective",
    widget="CollectiveWidget",
    title="Time and bus bandwidth of a collective: message size, GPUs, nodes and the links between them.",
    controls=(
        choice("system", "system", list(net.systems()), "DGX-H100"),
        choice("collective", "collective", list(net.COLLECTIVES), "all_reduce"),
        choice("algorithm", "algorithm", list(net.ALGORITHMS), "ring", kind="toggle"),
        Control("n_nodes", "nodes", "int_slider", 1, min=1, max=64),
        Control("gpus_per_node", "GPUs per node", "int_slider", 8, min=1, max=8),
        Control("message_bytes", "message (bytes)", "log_slider", 2.0**30, min=3, max=11, step=0.25,
                help="bytes per rank, as nccl-tests counts them"),
        Control("efficiency", "efficiency", "slider", 1.0, min=0.0, max=1.0, step=0.05,
                help="derates every link"),
        choice("rates", "link rates", [("achievable (NCCL)", "achievable"), ("line rate", "line")], "achievable",
               kind="toggle", help="what NCCL reaches on each link (its maintainers' figures), or the datasheet"),
        choice("in_network", "in-network reduction", [("none", "none"), ("NVLink SHARP", "nvls"),
                                                      ("InfiniBand SHARP", "ib_sharp")], "none"),
        Control("measured_busbw_gb_s", "measured busbw GB/s", "number", 0.0, step=10.0,
                help="a bus bandwidth you measured (nccl-tests); 0 = use the links"),
        choice("plot", "chart", [("time", "time"), ("bus bandwidth", "busbw")], "time", kind="toggle"),
    ),
    compute=_collective_compute,
    view=_collective_view,
))

# --------------------------------------------------------------------------- 4 + 7. step communication, layouts


def budget_rows(b: par.Budget) -> tuple[tuple[str, str, str, str], ...]:
    """The communication lines of a step budget, formatted: parallelism, link, bytes per GPU, time."""
    return tuple((ln.parallelism, ln.link, si(ln.wire_bytes, "B"), si(ln.time_s, "s")) for ln in b.lines)


# Narayanan et al.'s Table 1 models by their table names, then every other dense model preset (mlcalc.models);
# mixtures of experts are left out: the layout model has no expert parallelism.
MODEL_NAMES = (*par.NARAYANAN_TABLE1, *(name for name, m in models.presets().items()
                                        if not m.is_moe and not name.startswith("Megatron GPT")))


def workload(v: Mapping[str, Any]) -> par.Workload:
    """The reader's model (one ModelConfig) at the reader's sequence length."""
    name = _check.choice("model", v["model"], MODEL_NAMES)
    model = par.reference_model(name).model if name in par.NARAYANAN_TABLE1 else models.preset(name)
    return par.Workload(model, _check.positive_int("seq_len", v["seq_len"]))


def _budget(v: Mapping[str, Any], layout: par.GridLayout) -> par.Budget:
    s = net.system(v["system"])
    n_gpus = layout.tp * layout.pp * layout.dp
    if n_gpus % s.gpus_per_node:
        raise ValueError(f"n_gpus={n_gpus} is not allowed: it must fill whole {s.key} nodes of {s.gpus_per_node}")
    fab = net.fabric(v["system"], n_gpus // s.gpus_per_node)
    return par.layout_budget(workload(v), layout, fab, v["global_batch"], 1,
                             spec(v["accelerator"]).peak_flops(training_dtype(v["accelerator"])), v["mfu"],
                             v["dp_strategy"])


def _budget_view(b: par.Budget, v: Mapping[str, Any], first: str = "") -> View:
    ov = b.dp_overlap
    lines = [first] if first else []
    lines.append(f"step {si(b.step_s, 's')}: compute {si(b.compute_s, 's')} (green) + exposed communication "
                 f"{si(b.exposed_s, 's')} (blue)")
    lines.append(f"data-parallel traffic (orange) {'hides behind' if ov.hidden else 'overflows'} the backward pass "
                 f"(dotted): {si(ov.comm_s, 's')} against {si(ov.window_s, 's')}")
    table = Table(("parallelism", "link", "bytes/GPU/step", "time"), budget_rows(b))
    data = [{"what": "compute", "s": b.compute_s, "kind": "compute"}]
    data += [{"what": f"{ln.parallelism} ({ln.link})", "s": ln.time_s,
              "kind": "can hide" if ln.parallelism == "data" else "exposed"}
             for ln in b.lines]
    lay = b.layout
    # One bar per row (each its own name), so not stacked: stacked, Vega-Lite orders a stack by the colour scale's
    # fixed domain and writes that list into an expression, where the page's compiled template cannot place it
    # (book/_static/mlcalc-live.js, templateOf): this chart alone was then compiled by Vega-Lite on every change
    # (20-120 ms for the page's first ones on the loaded 2-core machine, 2026-11-27). Drawn the same (equal SVG).
    spec_ = charts.bars(
        f"tp={lay.tp} x pp={lay.pp} x dp={lay.dp}: step {b.step_s:,.2f} s, {b.exposed_s:,.2f} s exposed; "
        "dotted: the backward pass", data, name="what", x=charts.q("s", "seconds per step", stack=None),
        color_by="kind", legend=False,
        colors={"compute": charts.PALETTE[2], "exposed": charts.PALETTE[0], "can hide": charts.PALETTE[1]},
        tooltip=[charts.tip("what", kind="nominal"), charts.tip("s", fmt=",.3f")],
        extra=[charts.line([{"s": ov.window_s, "what": "the backward pass"}], along="x", field="s", color="#4d4d4d",
                           dash=[3, 3], what="what", fmt=",.3f")], rows_vary=True)
    return View(text="\n".join(lines), table=table, chart=spec_)


def budget_controls(accelerator: str = "A100-80GB") -> tuple[Control, ...]:
    return (
        choice("model", "model", list(MODEL_NAMES), "GPT-145.6B",
               help="Narayanan et al. 2021's Table 1 models first, then other dense models"),
        Control("seq_len", "sequence length", "int", par.NARAYANAN_SEQ_LEN, help="tokens per sequence"),
        choice("system", "system", list(net.systems()), "DGX-A100"),
        accelerator_control(accelerator, label="GPU"),
        Control("global_batch", "batch (sequences)", "int", 2304, help="global batch, sequences per step"),
        Control("mfu", "MFU", "slider", 0.47, min=0.05, max=1.0, step=0.01),
        choice("dp_strategy", "data parallel", list(par.DP_STRATEGIES), "ddp"),
    )


def _step_comm_compute(v: Mapping[str, Any]) -> par.Budget:
    tp = _check.choice("tp", v["tp"], [1, 2, 4, 8])
    return _budget(v, par.GridLayout(tp, _check.positive_int("pp", v["pp"]), _check.positive_int("dp", v["dp"]), 0.0, 0.0))


def _step_comm_view(b: par.Budget, v: Mapping[str, Any]) -> View:
    return _budget_view(b, v)


STEP_COMM = register(Calc(
    key="network.step_comm",
    widget="StepCommWidget",
    title="Communication against compute for one step of a tp x pp x dp layout you choose.",
    controls=(
        *budget_controls(),
        choice("tp", "tp", [1, 2, 4, 8], 8),
        Control("pp", "pp", "int", 8),
        Control("dp", "dp", "int", 24),
    ),
    compute=_step_comm_compute,
    view=_step_comm_view,
))


def _layout_compute(v: Mapping[str, Any]) -> par.Budget:
    s = net.system(v["system"])
    nodes = _check.positive_int("n_nodes", v["n_nodes"])
    layout = par.suggest_layout(workload(v), nodes * s.gpus_per_node, s.gpus_per_node,
                                spec(v["accelerator"]).memory_bytes, state_memory_fraction=v["state_memory_fraction"])
    return _budget(v, layout)


def _layout_view(b: par.Budget, v: Mapping[str, Any]) -> View:
    lay = b.layout
    first = (f"suggested: tensor {lay.tp} (inside a node) x pipeline {lay.pp} (across nodes) x data {lay.dp}; "
             f"model states {lay.state_bytes_per_gpu / 1e9:,.1f} GB per GPU "
             f"of a {lay.budget_bytes / 1e9:,.0f} GB budget")
    return _budget_view(b, v, first)


LAYOUT = register(Calc(
    key="network.layout",
    widget="LayoutWidget",
    title="Suggest tensor x pipeline x data parallel for a model on a cluster, and show its step budget.",
    controls=(
        *budget_controls(),
        Control("n_nodes", "nodes", "int", 192),
        Control("state_memory_fraction", "states / memory", "slider", 0.5, min=0.1, max=1.0, step=0.05,
                help="share of GPU memory the model states may take"),
    ),
    compute=_layout_compute,
    view=_layout_view,
))

# --------------------------------------------------------------------------- 5. pipeline schedules

MAX_P, MAX_M, MAX_V = 8, 24, 4  # at most 2 p m v = 1,536 boxes in the drawing
KIND_LABELS = {"gpipe": "GPipe", "1f1b": "1F1B", "interleaved": "interleaved 1F1B"}


def _pipeline_compute(v: Mapping[str, Any]) -> par.Timeline:
    p = _int_in("p", v["p"], 1, MAX_P)
    m = _int_in("m", v["m"], 1, MAX_M)
    chunks = _int_in("v", v["v"], 1, MAX_V) if v["kind"] == "interleaved" else 1
    return par.pipeline_schedule(v["kind"], p, m, chunks)


def _pipeline_view(t: par.Timeline, v: Mapping[str, Any]) -> View:
    p, m = int(v["p"]), int(v["m"])
    chunks = int(v["v"]) if v["kind"] == "interleaved" else 1
    text = (f"step {t.makespan:g} time units for {t.busy:g} of work per GPU: bubble {t.bubble_fraction:.1%} of the "
            f"work time (formula {par.bubble_fraction(p, m, chunks):.1%}), each GPU idle "
            f"{1 - t.busy / t.makespan:.1%} of the step; up to {t.peak_in_flight} micro-batches in flight "
            f"per GPU" + ("; later model chunks lighter" if chunks > 1 else ""))
    data = [{"gpu": f"GPU {s.device}", "start": s.start, "end": s.end,
             "phase": "forward" if s.phase == "F" else "backward", "chunk": s.chunk + 1, "micro": s.micro + 1}
            for s in t.slots]
    label = KIND_LABELS[v["kind"]] + (f", v={chunks}" if v["kind"] == "interleaved" else "")
    spec_ = charts.timeline(
        f"{label}: p={p}, m={m}; bubble {t.bubble_fraction:.1%} of compute", data, lane="gpu", start="start",
        end="end", phase="phase", colors={"forward": charts.PALETTE[0], "backward": charts.PALETTE[1]},
        span=t.makespan, x_title="time (one stage's forward pass = 1)", solid="datum.chunk == 1", numbers="micro",
        tooltip=[charts.tip("gpu", kind="nominal"), charts.tip("phase", kind="nominal"),
                          charts.tip("chunk", "model chunk"), charts.tip("micro", "micro-batch"), charts.tip("start"),
                          charts.tip("end")])
    return View(text=text, chart=spec_)


def pipeline_inactive(values: Mapping[str, Any]) -> set[str]:
    """v (model chunks) only means something for the interleaved schedule."""
    return set() if values.get("kind") == "interleaved" else {"v"}


PIPELINE = register(Calc(
    key="network.pipeline",
    widget="PipelineWidget",
    title="A pipeline schedule (GPipe, 1F1B, interleaved 1F1B) and its bubble as p, m and v change.",
    controls=(
        choice("kind", "schedule", [("GPipe", "gpipe"), ("1F1B", "1f1b"), ("Interleaved", "interleaved")], "1f1b",
               kind="toggle"),
        Control("p", "p (stages)", "int_slider", 4, min=1, max=MAX_P),
        Control("m", "m (micro-batches)", "int_slider", 8, min=1, max=MAX_M),
        Control("v", "v (chunks, interleaved)", "int_slider", 2, min=1, max=MAX_V),
    ),
    compute=_pipeline_compute,
    view=_pipeline_view,
    inactive=pipeline_inactive,
))

# --------------------------------------------------------------------------- 6. topology

RADIXES = (16, 32, 48, 64, 128, 256)
HB_DOMAINS = (8, 16, 32, 64, 72, 256)


def _topology_compute(v: Mapping[str, Any]) -> net.TopologyResult:
    return net.compare_topologies(v["n_gpus"], v["radix"], v["hb_domain"], v["cost_ratio"])


def _topology_view(r: net.TopologyResult, v: Mapping[str, Any]) -> View:
    designs = (("fat tree", r.fat_tree), ("Rail-only", r.rail_only))
    text = "\n".join(f"{name:9s}: {c.tiers} tier{'s' if c.tiers > 1 else ''}, {c.switches:,} switches, "
                     f"{c.transceivers:,} transceivers" for name, c in designs)
    text += f"\ncost reduction: {r.cost_reduction:.1%} (switch port = {float(v['cost_ratio']):g} transceivers)"
    data: list[dict[str, Any]] = []  # the chart's rows
    for name, c in designs:
        data.append({"what": "switches", "design": name, "count": c.switches, "label": f"{c.switches:,}"})
        data.append({"what": "transceivers", "design": name, "count": c.transceivers, "label": f"{c.transceivers:,}"})
    floor = 10.0 ** math.floor(math.log10(min(d["count"] for d in data)))  # bars start here on the log axis
    top = 2.5 * max(d["count"] for d in data)  # room above the tallest bar for its label
    spec_ = charts.grouped(
        f"{int(v['n_gpus']):,} GPUs, radix {v['radix']}, HB domain {v['hb_domain']}: "
        f"cost reduction {r.cost_reduction:.0%}", data,
        x="what", group="design", y=charts.q("count", "count (log)", log=True, domain=[floor, top]), from_foot=True)
    return View(text=text, chart=spec_)


TOPOLOGY = register(Calc(
    key="network.topology",
    widget="TopologyWidget",
    title="Switches and transceivers of a fat tree and a Rail-only network for N GPUs.",
    controls=(
        Control("n_gpus", "GPUs", "int", 32768),
        choice("radix", "radix", list(RADIXES), 64),
        choice("hb_domain", "HB domain", list(HB_DOMAINS), 256, help="GPUs in one NVLink (high-bandwidth) domain"),
        Control("cost_ratio", "port / transceiver cost", "slider", 2.0, min=0.0, max=5.0, step=0.25),
    ),
    compute=_topology_compute,
    view=_topology_view,
))


__all__ = ["COLLECTIVE", "GENERATIONS", "LAYOUT", "PIPELINE", "STEP_COMM", "TOPOLOGY", "UNITS",
           "budget_rows"]
