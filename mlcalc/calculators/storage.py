"""Storage calculators: dataloader bandwidth, checkpoints (size, write time, interval), capacity, start-up."""

from __future__ import annotations

from typing import Any, Mapping

from mlcalc import _check, charts, storage
from mlcalc.calc import Calc, Control, Presets, Table, View, choice, register
from mlcalc.calculators._common import decades, duration, finite, fixed, geomspace, si, sig
from mlcalc.storage import GB, TB, GiB, MiB
from mlcalc.units import SECONDS_PER_HOUR as HOUR
YEAR_S = 365.0 * 24 * HOUR

# Per-node (or per-device) figures a node's dataloader can compare itself with.
COMPARE_FILESYSTEMS = ("nfs-tcp", "nfs-nconnect", "nvme-p4500", "nvme-980pro-fio")
ENOUGH, NOT_ENOUGH = "enough for one node", "not enough"

# --------------------------------------------------------------------------- dataloader


def _workloads() -> dict[str, Mapping[str, Any]]:
    return {k: v for k, v in storage.data()["workloads"].items() if isinstance(v, Mapping) and "sample_mib" in v}


def _dataloader_compute(v: Mapping[str, Any]) -> storage.DataloaderBandwidth:
    sample = _check.positive("sample (MiB)", v["sample_mib"]) * MiB
    flops = _check.positive("FLOPs/sample (GiFLOP)", v["gflops"]) * GiB
    achieved = _check.positive("achieved TFLOP/s per accelerator", v["achieved_tflops"]) * 1e12
    per_node = _check.positive_int("accelerators per node", v["accelerators_per_node"])
    bw = storage.dataloader_bandwidth(sample, flops, achieved, per_node)
    finite("the bandwidth per node", bw.per_node_bytes_per_s)
    return bw


def _dataloader_view(bw: storage.DataloaderBandwidth, v: Mapping[str, Any]) -> View:
    need = bw.per_node_bytes_per_s / GB
    text = (f"{sig(bw.samples_per_s)} samples/s per accelerator, {sig(bw.flop_per_byte)} FLOP per input byte\n"
            f"per accelerator: {sig(bw.per_accelerator_bytes_per_s / GB)} GB/s; "
            f"per node of {int(v['accelerators_per_node']):,}: {sig(need)} GB/s (GB = 1e9 bytes, reads)")
    bars: list[dict[str, Any]] = []  # the chart's rows
    for key in COMPARE_FILESYSTEMS:
        fs = storage.filesystem(key)
        gbps = fs.bandwidth_bytes_per_s / GB
        bars.append({"filesystem": f"{fs.name.split(' (')[0].split(',')[0]} [{key}]", "gb_per_s": gbps,
                     "scope": fs.scope, "verdict": ENOUGH if gbps >= need else NOT_ENOUGH})
    values = [b["gb_per_s"] for b in bars] + [need]
    ticks = decades(min(values) / 3, max(values) * 3)
    domain = [ticks[0], ticks[-1]]  # whole decades, so the bars start at the axis
    x = charts.q("gb_per_s", "GB/s (1e9 bytes/s), log scale", log=True, domain=domain,
                 axis={"values": ticks, "format": "~g"})
    chart = charts.bars(
        f"One node needs {need:,.3g} GB/s (black line)", bars, name="filesystem", x=x, names_above=True,
        start=domain[0], color_by="verdict",
        colors={ENOUGH: "#55a868", NOT_ENOUGH: "#c44e52"},
        tooltip=[charts.tip("filesystem", kind="nominal"), charts.tip("scope", kind="nominal"),
                 charts.tip("gb_per_s", "GB/s", ",.3g")],
        extra=[charts.line([{"gb_per_s": need, "what": "one node's need"}], along="x", field="gb_per_s", width=2,
                           what="what", fmt=",.3g")])
    return View(text=text, chart=chart)


def _dataloader_controls() -> tuple[Control, ...]:
    w = _workloads()
    return (
        choice("workload", "Workload", [(p["name"], k) for k, p in w.items()] + [("custom", "custom")], "cosmoflow"),
        Control("sample_mib", "Sample (MiB)", "number", float(w["cosmoflow"]["sample_mib"]), step=0.1,
                help="bytes read per sample, MiB (2**20 bytes)"),
        Control("gflops", "FLOPs/sample (GiFLOP)", "number", float(w["cosmoflow"]["flops_per_sample_gif"]), step=1.0,
                help="training FLOPs per sample, GiFLOP (2**30 FLOP), as Ibrahim et al. 2021 give them"),
        Control("achieved_tflops", "Achieved TFLOP/s per accelerator", "number", 35.0, step=5.0,
                help="what one accelerator sustains, not its peak"),
        Control("accelerators_per_node", "Accelerators per node", "int", 8),
    )


def _workload_fills() -> dict[str, dict[str, float]]:
    """What each workload preset fills in (Ibrahim et al. 2021, Table II)."""
    return {k: {"sample_mib": float(p["sample_mib"]), "gflops": float(p["flops_per_sample_gif"])}
            for k, p in _workloads().items()}


DATALOADER = register(Calc(
    key="storage.dataloader",
    widget="DataloaderWidget",
    title="Input bandwidth a node needs (Ibrahim et al. 2021): sample size, FLOPs per sample, achieved FLOP/s.",
    controls=_dataloader_controls(),
    compute=_dataloader_compute,
    view=_dataloader_view,
    presets=(Presets("workload", _workload_fills(), custom="custom"),),
))


# --------------------------------------------------------------------------- language models


def _llm_compute(v: Mapping[str, Any]) -> tuple[storage.DataloaderBandwidth, float]:
    params = _check.positive("params (billions)", v["n_params_billion"]) * 1e9
    achieved = _check.positive("achieved TFLOP/s per GPU", v["achieved_tflops"]) * 1e12
    per_node = _check.positive_int("GPUs per node", v["accelerators_per_node"])
    n_gpus = _check.positive_int("GPUs in the job", v["n_gpus"])
    bw = storage.dataloader_bandwidth(v["token_bytes"], storage.llm_flops_per_token(params, v["factor"]), achieved,
                                      per_node)
    job = finite("the job's read bandwidth", bw.per_accelerator_bytes_per_s * n_gpus)
    finite("the bandwidth per node", bw.per_node_bytes_per_s)
    return bw, job


def _llm_view(r: tuple[storage.DataloaderBandwidth, float], v: Mapping[str, Any]) -> View:
    bw, job = r
    nfs = storage.filesystem("nfs-tcp").bandwidth_bytes_per_s
    text = (f"{sig(bw.samples_per_s)} tokens/s per GPU -> {si(bw.per_accelerator_bytes_per_s, 'B/s')} per GPU, "
            f"{si(bw.per_node_bytes_per_s, 'B/s')} per node, {si(job, 'B/s')} for the whole job (k, M, G = 1e3, 1e6, 1e9)\n"
            f"one NFS client (~{nfs / GB:g} GB/s) could feed {nfs / bw.per_node_bytes_per_s:,.0f} such nodes")
    return View(text=text)


LLM_DATALOADER = register(Calc(
    key="storage.llm_dataloader",
    widget="LlmDataloaderWidget",
    title="Input bandwidth of language-model training: tokens per second x bytes per token.",
    controls=(
        Control("n_params_billion", "Params (B)", "number", 7.0, step=1.0, help="parameters, billions"),
        Control("achieved_tflops", "Achieved TFLOP/s per GPU", "number", 400.0, step=10.0),
        choice("factor", "FLOPs/param/token", list(storage.FLOPS_PER_PARAM_PER_TOKEN.items()), 6.0),
        choice("token_bytes", "Bytes/token", list(storage.BYTES_PER_TOKEN.items()), 4.0),
        Control("accelerators_per_node", "GPUs per node", "int", 8),
        Control("n_gpus", "GPUs in the job", "int", 1024),
    ),
    compute=_llm_compute,
    view=_llm_view,
))

# --------------------------------------------------------------------------- checkpoint size and write


def _checkpoint_compute(v: Mapping[str, Any]) -> tuple[storage.CheckpointSize, storage.CheckpointWrite]:
    params = _check.positive("params (billions)", v["n_params_billion"]) * 1e9
    nodes = _check.positive_int("nodes writing", v["n_nodes"])
    fs = _check.positive("filesystem write GB/s", v["filesystem_gb_per_s"]) * GB
    node = _check.positive("per-node link Gbit/s", v["node_gbit_per_s"]) * 1e9 / 8
    size = storage.checkpoint_size(params, v["contents"])
    finite("the checkpoint size", size.total_bytes)
    write = storage.checkpoint_write_time(size.total_bytes, fs, nodes, finite("the nodes' bandwidth", node))
    return size, write


def _checkpoint_view(r: tuple[storage.CheckpointSize, storage.CheckpointWrite], v: Mapping[str, Any]) -> View:
    size, write = r
    table = Table(("saved", "GB (1e9 bytes)"), tuple((name, nbytes / GB) for name, nbytes in size.parts_bytes.items()))
    text = (f"checkpoint: {size.bytes_per_param:g} bytes/param = {sig(size.total_bytes / TB)} TB "
            f"= {sig(size.total_bytes / 2**40)} TiB\n"
            f"write: {duration(write.seconds)} at {fixed(write.effective_bytes_per_s / GB)} GB/s "
            f"(limited by the {write.bottleneck})")
    return View(text=text, table=table)


CHECKPOINT = register(Calc(
    key="storage.checkpoint",
    widget="CheckpointWidget",
    title="Checkpoint size from the parameter count and what is saved, and the time to write it.",
    controls=(
        Control("n_params_billion", "Params (B)", "number", 176.247, step=1.0, help="parameters, billions"),
        choice("contents", "Saved", list(storage.CHECKPOINT_CONTENTS), "full: bf16 + fp32 weights + Adam"),
        Control("n_nodes", "Nodes writing", "int", 48),
        Control("filesystem_gb_per_s", "Filesystem write GB/s", "number", 60.0, step=10.0,
                help="aggregate, GB/s (1e9 bytes/s)"),
        Control("node_gbit_per_s", "Per-node link Gbit/s", "number", 400.0, step=100.0,
                help="one direction, Gbit/s (1e9 bits/s)"),
    ),
    compute=_checkpoint_compute,
    view=_checkpoint_view,
))

# --------------------------------------------------------------------------- checkpoint interval

GOODPUT_POINTS = 120  # the goodput curve's fixed grid


def _interval_compute(v: Mapping[str, Any]) -> dict[str, Any]:
    n_gpus = _check.positive_int("GPUs", v["n_gpus"])
    device_mtbf = finite("the per-GPU MTBF in seconds",
                         _check.positive("per-GPU MTBF (years)", v["device_mtbf_years"]) * YEAR_S)
    delta = _check.positive("blocking per checkpoint (s)", v["checkpoint_s"])
    restart = finite("the restart time", _check.non_negative("restart (min)", v["restart_min"]) * 60)
    interval = finite("the interval", _check.positive("interval (h)", v["interval_h"]) * HOUR)
    mtbf = storage.system_mtbf_s(device_mtbf, n_gpus)
    young = storage.young_interval_s(delta, mtbf)
    daly = storage.daly_interval_s(delta, mtbf)
    lo, hi = young / 30.0, min(young * 30.0, 3.0 * mtbf)
    grid = geomspace(lo, max(hi, lo * 10), GOODPUT_POINTS)
    curve = list(zip(grid, storage.goodput_fractions(grid, delta, mtbf, restart)))
    return {"mtbf_s": mtbf, "young_s": young, "daly_s": daly, "interval_s": interval,
            "chosen": storage.goodput(interval, delta, mtbf, restart),
            "best": storage.goodput(daly, delta, mtbf, restart), "curve": curve}


def _interval_view(r: Mapping[str, Any], v: Mapping[str, Any]) -> View:
    c, b = r["chosen"], r["best"]
    text = (f"job MTBF: {sig(r['mtbf_s'] / HOUR)} h; Young: {sig(r['young_s'] / 60)} min, Daly: {sig(r['daly_s'] / 60)} min\n"
            f"every {r['interval_s'] / HOUR:.2f} h: goodput {c.fraction:.1%} (checkpoints {c.checkpoint_fraction:.1%}, "
            f"lost work {c.lost_work_fraction:.1%}, restarts {c.restart_fraction:.1%}); "
            f"at Daly's interval {b.fraction:.1%}")
    hours = [t / HOUR for t, _ in r["curve"]] + [r["interval_s"] / HOUR]
    x = charts.q("hours", "compute time between checkpoints (hours, log scale)", log=True,
                 axis={"values": decades(min(hours), max(hours)), "format": "~g"})
    y = charts.q("goodput", "goodput", fmt=".0%", zero=False)
    rules = [{"hours": r["young_s"] / HOUR, "what": f"Young: {r['young_s'] / HOUR:.2f} h"},
             {"hours": r["daly_s"] / HOUR, "what": f"Daly: {r['daly_s'] / HOUR:.2f} h"}]
    chart = charts.sweep(
        f"Goodput against the interval; chosen: {r['interval_s'] / HOUR:.2f} h -> {c.fraction:.1%}",
        ({"hours": t / HOUR, "goodput": g} for t, g in r["curve"]), x=x, y=y, color=charts.PALETTE[0],
        extra=[charts.line(rules, along="x", field="hours", color="#555555", what="what", dash_by="what"),
               charts.point({"hours": r["interval_s"] / HOUR, "goodput": c.fraction}, charts.q("hours"),
                            charts.q("goodput"), color=charts.PALETTE[3],
                            tooltip=[charts.tip("hours", fmt=".2f"), charts.tip("goodput", fmt=".1%")])])
    charts.live_axis(chart, "x", "values")  # the decades shown follow the curve: changed in place
    return View(text=text, chart=chart)


CHECKPOINT_INTERVAL = register(Calc(
    key="storage.checkpoint_interval",
    widget="CheckpointIntervalWidget",
    title="How often to checkpoint: failure rate from the GPU count, Young's and Daly's intervals, goodput.",
    controls=(
        Control("n_gpus", "GPUs", "int", 16384),
        Control("device_mtbf_years", "Per-GPU MTBF (years)", "number", 5.8, step=0.5,
                help="mean time between failures of one GPU with its share of the system"),
        Control("checkpoint_s", "Blocking per checkpoint (s)", "number", 60.0, step=10.0),
        Control("restart_min", "Restart (min)", "number", 10.0, step=1.0),
        Control("interval_h", "Interval (h)", "log_slider", 1.0, min=-2, max=2, step=0.05,
                help="compute time between checkpoints, hours"),
    ),
    compute=_interval_compute,
    view=_interval_view,
))

# --------------------------------------------------------------------------- capacity


def _capacity_compute(v: Mapping[str, Any]) -> storage.Capacity:
    dataset = _check.non_negative("datasets (TB)", v["dataset_tb"]) * TB
    ckpt = _check.non_negative("one checkpoint (TB)", v["checkpoint_tb"]) * TB
    other = _check.non_negative("code, logs, rest (TB)", v["other_tb"]) * TB
    kept = v["checkpoints_kept"]
    if isinstance(kept, float) and kept.is_integer() and abs(kept) < 2**53:
        kept = int(kept)
    if isinstance(kept, bool) or not isinstance(kept, int) or kept < 0:
        raise ValueError(f"checkpoints kept={kept!r} is not allowed: it must be a whole number of at least 0")
    cap = storage.storage_capacity(finite("the datasets", dataset), finite("one checkpoint", ckpt), kept,
                                   finite("the rest", other), _check.fraction("usable fraction", v["usable_fraction"]))
    finite("the capacity to buy", cap.to_buy_bytes)
    return cap


def _capacity_view(cap: storage.Capacity, v: Mapping[str, Any]) -> View:
    text = (f"store {fixed(cap.needed_bytes / TB)} TB -> buy {fixed(cap.to_buy_bytes / TB)} TB at "
            f"{cap.usable_fraction:.0%} usable (TB = 1e12 bytes)")
    rows = [{"bar": "store", "part": name, "tb": nbytes / TB, "order": i}
            for i, (name, nbytes) in enumerate(cap.parts_bytes.items())]
    rows.append({"bar": "buy", "part": f"to buy at {cap.usable_fraction:.0%} usable", "tb": cap.to_buy_bytes / TB,
                 "order": len(rows)})
    chart = charts.parts(rows, title=f"Store {cap.needed_bytes / TB:,.1f} TB, buy {cap.to_buy_bytes / TB:,.1f} TB",
                         value="tb", value_title="TB (1e12 bytes)", bar="bar", bars=["store", "buy"],
                         colors=charts.PALETTE[:3] + ["#999999"], tip_title="TB", fmt=",.1f", height=170)
    return View(text=text, chart=chart)


CAPACITY = register(Calc(
    key="storage.capacity",
    widget="CapacityWidget",
    title="Storage to buy: datasets + retained checkpoints + the rest, over the usable fraction.",
    controls=(
        Control("dataset_tb", "Datasets (TB)", "number", 30.0, step=1.0, help="TB = 1e12 bytes"),
        Control("checkpoint_tb", "One checkpoint (TB)", "number", 2.47, step=0.1, help="TB = 1e12 bytes"),
        Control("checkpoints_kept", "Checkpoints kept", "int", 20),
        Control("other_tb", "Code, logs, rest (TB)", "number", 5.0, step=1.0),
        Control("usable_fraction", "Usable fraction", "slider", storage.BEKMAN_USABLE_FRACTION, min=0.5, max=1.0,
                step=0.01,
                help="share of the bought capacity that can be filled reliably (Bekman's 0.8)"),
    ),
    compute=_capacity_compute,
    view=_capacity_view,
))

# --------------------------------------------------------------------------- start-up

STARTUP_POINTS = 60  # the chart's grid: 60 node counts from 1 to 4096 (or to twice the reader's count)


def _startup_compute(v: Mapping[str, Any]) -> storage.StartupTime:
    r = storage.import_startup_time(
        _check.positive_int("nodes", v["n_nodes"]), _check.positive_int("processes per node", v["processes_per_node"]),
        _check.positive_int("files per process", v["n_files"]),
        _check.positive("metadata ops per file", v["ops_per_file"]),
        _check.positive("metadata server (k ops/s)", v["metadata_kops"]) * 1e3,
        _check.positive("op latency (ms)", v["op_latency_ms"]) * 1e-3)
    finite("the start-up time", r.seconds)
    finite("the number of metadata operations", r.total_ops)
    return r


def _startup_view(r: storage.StartupTime, v: Mapping[str, Any]) -> View:
    text = (f"{r.total_ops:,.0f} metadata ops -> {duration(r.seconds)} (one process alone: {duration(r.latency_bound_s)}; "
            f"server-bound: {duration(r.server_bound_s)}); limited by the {r.bottleneck}")
    nodes = int(v["n_nodes"])
    server_per_node = r.server_bound_s / nodes  # the server term grows linearly with the node count
    lines: list[dict[str, Any]] = []  # the chart's rows
    for n in geomspace(1.0, max(4096.0, 2.0 * nodes), STARTUP_POINTS):
        server = server_per_node * n
        lines += [{"nodes": n, "seconds": max(r.latency_bound_s, server), "curve": "start-up time"},
                  {"nodes": n, "seconds": r.latency_bound_s, "curve": f"one process alone: {r.latency_bound_s:,.1f} s"},
                  {"nodes": n, "seconds": server, "curve": "metadata server bound"}]
    top = max(4096.0, 2.0 * nodes)
    seconds = [row["seconds"] for row in lines] + [r.seconds]
    x = charts.q("nodes", "nodes starting at once (log scale)", log=True, axis={"values": decades(1.0, top), "format": "~s"})
    y = charts.q("seconds", "seconds (log scale)", log=True,
                 axis={"values": decades(min(seconds), max(seconds)), "format": ",~g"})
    chart = charts.sweep(
        f"Start-up time: {nodes:,} nodes take {r.seconds:,.0f} s ({r.bottleneck})", lines, x=x, y=y, series="curve",
        height=280,
        extra=[charts.point({"nodes": float(nodes), "seconds": r.seconds}, charts.q("nodes"), charts.q("seconds"),
                            tooltip=[charts.tip("nodes", fmt=",.0f"), charts.tip("seconds", fmt=",.1f")])])
    charts.live_axis(chart, "x", "values")  # the decades follow the inputs: changed in place
    charts.live_axis(chart, "y", "values")
    return View(text=text, chart=chart)


STARTUP = register(Calc(
    key="storage.startup",
    widget="StartupWidget",
    title="Start-up time of N nodes importing M files from a shared filesystem.",
    controls=(
        Control("n_nodes", "Nodes", "int", 64),
        Control("processes_per_node", "Processes per node", "int", 8),
        Control("n_files", "Files per process", "int", 1500),
        Control("ops_per_file", "Metadata ops per file", "number", 10.0, step=1.0),
        Control("metadata_kops", "Metadata server (k ops/s)", "number", 12.0, step=1.0),
        Control("op_latency_ms", "Op latency (ms)", "number", 0.5, step=0.1),
    ),
    compute=_startup_compute,
    view=_startup_view,
))
