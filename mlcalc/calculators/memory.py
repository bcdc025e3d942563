"""Memory calculators: how many GPUs, bytes per parameter, ZeRO, activations, serving, the whole fit."""

from __future__ import annotations

from typing import Any, Mapping, TypedDict

from mlcalc import _check, charts, memory
from mlcalc.accelerators import spec
from mlcalc.calc import Calc, Control, Table, View, choice, register
from mlcalc.calculators._common import accelerator_control, cite, cited, finite, fixed, sig

# Bekman's own split of its 18 bytes (weights 6, gradients 4, AdamW 8), the page's worked example.
BEKMAN = "bekman"


def _convention_control(default: str = BEKMAN, *, bekman_split: bool = True) -> Control:
    """A dropdown of the training bytes-per-parameter conventions (memory.CONVENTIONS), by title."""
    options = [(c.title, k) for k, c in memory.CONVENTIONS.items()]
    return choice("convention", "Bytes/param", options, default, width="100%",
                  help="training bytes per parameter: the field counts them differently (16 in the ZeRO paper, "
                       "18 with fp32 gradients, ...); serving counts 2 (bf16 weights)")

# --------------------------------------------------------------------------- how many GPUs


def _gpu_count_compute(v: Mapping[str, Any]) -> memory.GpuEstimate:
    acc = spec(v["accelerator"])
    params = _check.positive("params (billions)", v["n_params_billion"])
    convention = _check.choice("convention", v["convention"], memory.CONVENTIONS)
    per_param = None  # Bekman's 18 (as the page splits them) to train, 2 to serve
    if v["mode"] == "train" and convention != BEKMAN:
        per_param = memory.training_bytes_per_param(convention)
    r = memory.gpus_needed(finite("the parameter count", params * 1e9), acc.memory_bytes, mode=v["mode"],
                           bytes_per_param=per_param, headroom=v["headroom"])
    finite("the memory needed", r.total_bytes)
    return r


def _gpu_count_view(r: memory.GpuEstimate, v: Mapping[str, Any]) -> View:
    verb = "train" if v["mode"] == "train" else "serve"
    per_param = (r.total_bytes - r.parts_bytes["activations (headroom)"]) / (float(v["n_params_billion"]) * 1e9)
    text = (f"At least {r.n_gpus:,} x {v['accelerator']} to {verb} "
            f"({r.total_bytes / 1e9:,.0f} GB / {r.gpu_memory_bytes / 1e9:,.1f} GB = {r.exact:,.2f}); "
            f"one {v['accelerator']}: {spec(v['accelerator']).capacity_text()}")
    if v["mode"] == "train":
        conv = memory.CONVENTIONS[v["convention"]]
        text += f"\n{per_param:g} bytes/param: {conv.title} ({cited(conv.source)})"
    else:
        text += f"\n{per_param:g} bytes/param: bf16 weights (the bytes/param convention counts training only)"
    parts = [{"part": name, "gb": nbytes / 1e9, "order": i} for i, (name, nbytes) in enumerate(r.parts_bytes.items())]
    capacity = r.n_gpus * r.gpu_memory_bytes / 1e9
    chart = charts.parts(
        parts, title=f"{r.n_gpus:,} x {v['accelerator']} = {capacity:,.0f} GB for {r.total_bytes / 1e9:,.0f} GB needed",
        value="gb", value_title="GB (1e9 bytes)", capacity={"gb": capacity, "what": "memory of the accelerators"},
        fmt=",.0f", height=150)
    return View(text=text, chart=chart)


def gpu_count_inactive(values: Mapping[str, Any]) -> set[str]:
    """The bytes/param convention counts training only: serving is 2 bytes (bf16 weights)."""
    return {"convention"} if values["mode"] != "train" else set()


GPU_COUNT = register(Calc(
    key="memory.gpu_count",
    widget="GpuCountWidget",
    title="How many GPUs do you need? Model size, accelerator, training or serving.",
    controls=(
        Control("n_params_billion", "Params (B)", "number", 80.0, step=1.0, help="parameters, billions"),
        accelerator_control(),
        choice("mode", "Mode", [("Train", "train"), ("Serve", "inference")], "train", kind="toggle"),
        Control("headroom", "Headroom", "slider", memory.BEKMAN_HEADROOM, min=1.0, max=2.0, step=0.05,
                help="multiplier for activations and the rest (Bekman's 1.25)"),
        _convention_control(),
    ),
    compute=_gpu_count_compute,
    view=_gpu_count_view,
    inactive=gpu_count_inactive,
))


# --------------------------------------------------------------------------- shared pieces

CATEGORY_COLORS = {"parameters": "#4c72b0", "gradients": "#dd8452", "optimizer states": "#55a868",
                   "other": "#c7c7c7", "activations": "#c44e52", "logits (fp32, for the loss)": "#8172b3",
                   "overhead (stated)": "#937860"}
POW2_DP = tuple(2**k for k in range(13))  # data-parallel degrees a reader picks from: 1 ... 4096
POW2_TP = (1, 2, 4, 8, 16)
SEQ_LENS = tuple(2**k for k in range(7, 18))  # 128 ... 131,072 tokens


def _colors(domain: list[str]) -> dict[str, str]:
    """Each category's colour, by name (grey for one without its own)."""
    return {d: CATEGORY_COLORS.get(d, "#999999") for d in domain}


def _model_control(default: str) -> Control:
    return choice("model", "Model", list(memory.model_presets()), default)


def _dtype_control(key: str, label: str, default: str = "bf16") -> Control:
    return choice(key, label, list(memory.DTYPE_BYTES), default)


def _whole(name: str, value: Any) -> int:
    return _check.positive_int(name, value)


# --------------------------------------------------------------------------- bytes per parameter


def _bytes_per_param_compute(v: Mapping[str, Any]) -> dict[str, float]:
    n = finite("the parameter count", _check.positive("params (billions)", v["n_params_billion"]) * 1e9)
    return {label: n * b for label, b in memory.training_bytes_per_param(v["convention"]).items()}


def _bytes_per_param_view(result: dict[str, float], v: Mapping[str, Any]) -> View:
    conv = memory.CONVENTIONS[v["convention"]]
    lines = [f"total: {conv.total:g} bytes/param = {fixed(sum(result.values()) / 1e9)} GB (1e9 bytes) "
             f"for {float(v['n_params_billion']):g}B parameters",
             f"source: {cite(conv.source)}"]
    if conv.note:
        lines.append(f"note: {conv.note}")
    table = Table(("part", "bytes/param", "GB"), tuple((label, b, result[label] / 1e9)
                                                      for label, b, _ in conv.components))
    rows, totals = [], []
    for key, c in memory.CONVENTIONS.items():
        name = ("▶ " if key == v["convention"] else "") + key
        for j, (cat, b) in enumerate(c.by_category().items()):
            if b:
                rows.append({"convention": name, "category": cat, "bytes": b, "order": j})
        totals.append({"convention": name, "bytes": c.total, "label": f"{c.total:g}"})
    chart = charts.parts(
        rows, title=f"Bytes per parameter by convention (▶ {v['convention']}: {conv.total:g})", value="bytes",
        value_title="bytes per parameter", part="category", bar="convention", bars=[str(r["convention"]) for r in totals],
        colors=_colors(list(memory.CATEGORIES)), fmt=None, bar_tip=True, totals=totals, height=260)
    return View(text="\n".join(lines), table=table, chart=chart)


BYTES_PER_PARAM = register(Calc(
    key="memory.bytes_per_param",
    widget="BytesPerParamWidget",
    title="Training bytes per parameter: pick a convention and a model size, see where the bytes go.",
    controls=(
        Control("n_params_billion", "Params (B)", "number", 7.5, step=1.0, help="parameters, billions"),
        _convention_control("zero-mixed-adam"),
    ),
    compute=_bytes_per_param_compute,
    view=_bytes_per_param_view,
))

# --------------------------------------------------------------------------- ZeRO

ZERO_DP_GRID = tuple(2**k for k in range(11))  # the chart's data-parallel degrees: 1 ... 1024


def _zero_compute(v: Mapping[str, Any]) -> memory.ZeroMemory:
    n = finite("the parameter count", _check.positive("params (billions)", v["n_params_billion"]) * 1e9)
    return memory.zero_model_state_bytes(n, v["dp"], v["zero_stage"], v["convention"], bool(v["offload_opt"]),
                                         bool(v["offload_par"]))


def _zero_view(r: memory.ZeroMemory, v: Mapping[str, Any]) -> View:
    dev = spec(v["accelerator"]).memory_bytes
    verdict = "fits" if r.device_bytes <= dev else "does not fit"
    text = (f"per device: {sig(r.device_bytes / 1e9, 4)} GB (1e9 bytes): {verdict} in "
            f"{spec(v['accelerator']).capacity_text()}; activations not included" + (f"; {r.cpu_bytes / 1e9:,.2f} GB in host memory" if r.cpu_bytes else ""))
    table = Table(("model state", "on the device, GB", "on the CPU, GB"),
                  tuple((cat, r.device_parts[cat] / 1e9, r.cpu_parts[cat] / 1e9) for cat in r.device_parts))
    n = float(v["n_params_billion"]) * 1e9
    lines = []
    for stage in memory.ZERO_STAGES:
        opt = bool(v["offload_opt"]) and stage >= 1
        par = bool(v["offload_par"]) and stage == 3
        name = f"stage {stage}" + (" + offload" if opt or par else "")
        for dp in ZERO_DP_GRID:
            gb = memory.zero_model_state_bytes(n, dp, stage, v["convention"], opt, par).device_bytes / 1e9
            lines.append({"dp": dp, "gb": gb, "stage": name})
    top = 1.6 * dev / 1e9
    chart = charts.sweep(
        f"Model states per device against Nd; dashed: one {v['accelerator']} ({dev / 1e9:,.1f} GB)", lines,
        x=charts.q("dp", "data-parallel degree Nd (log scale)", log=2, fmt="d"),
        y=charts.q("gb", "GB per device (1e9 bytes)", domain=[0, top]), series="stage", dashes=False, points=True,
        clip=True, tooltip=[charts.tip("stage", kind="nominal"), charts.tip("dp"), charts.tip("gb", "GB", ",.2f")],
        height=200,
        extra=[charts.line([{"gb": dev / 1e9, "what": f"one {v['accelerator']}"}], along="y", field="gb",
                           dash=[6, 3], what="what"),
               charts.line([{"dp": int(v["dp"]), "what": "chosen Nd"}], along="x", field="dp", color="#888888",
                           dash=[2, 2], what="what")])
    return View(text=text, table=table, chart=chart)


ZERO = register(Calc(
    key="memory.zero",
    widget="ZeroWidget",
    title="ZeRO stages 0-3 (Rajbhandari et al. 2020): per-device model states against the data-parallel degree.",
    controls=(
        Control("n_params_billion", "Params (B)", "number", 7.5, step=1.0, help="parameters, billions"),
        choice("dp", "DP degree", POW2_DP, 64),
        accelerator_control("A100-80GB"),
        choice("zero_stage", "Stage", memory.ZERO_STAGES, 1, kind="toggle"),
        choice("convention", "Bytes/param", [(c.title, k) for k, c in memory.CONVENTIONS.items()], "zero-mixed-adam",
               width="100%"),
        Control("offload_opt", "Offload optimizer", "check", False, help="ZeRO-Offload: needs stage 1, 2 or 3"),
        Control("offload_par", "Offload params", "check", False, help="ZeRO-Infinity: needs stage 3"),
    ),
    compute=_zero_compute,
    view=_zero_view,
))

# --------------------------------------------------------------------------- activations



class _ActivationCase(TypedDict, total=False):
    """The keywords of memory.activation_parts_per_layer one case sets (the rest keep their defaults)."""

    sp: bool
    recompute: str
    flash_attention: bool


ACTIVATION_CASES: tuple[tuple[str, _ActivationCase], ...] = (
    ("no parallelism", {}),
    ("TP", {"sp": False}),
    ("TP + SP", {"sp": True}),
    ("TP + SP + selective", {"sp": True, "recompute": "selective"}),
    ("TP + SP + flash attn", {"sp": True, "flash_attention": True}),
    ("full recompute (TP + SP)", {"sp": True, "recompute": "full"}),
)
# The kinds of activation memory (by the start of memory.activation_parts_per_layer's labels): colour, short label.
ACTIVATION_KINDS = {"not split": ("#4c72b0", "not split by TP"), "split by": ("#55a868", "split by TP"),
                    "attention": ("#c44e52", "attention scores (s^2)"),
                    "softmax": ("#8172b3", "softmax statistics (flash)"),
                    "layer input": ("#937860", "layer input (full recompute)")}


def activation_cases(seq_len: int, micro_batch: int, hidden: int, n_heads: int, tp: int) -> dict[str, dict[str, float]]:
    """Per-layer activation parts for the cases of Korthikanti et al.'s Table 2 (plus flash attention)."""
    out = {}
    for label, kw in ACTIVATION_CASES:
        t = 1 if label == "no parallelism" else tp
        out[label] = dict(memory.activation_parts_per_layer(
            seq_len, micro_batch, hidden, n_heads, t, kw.get("sp", False), kw.get("recompute", "none"),
            kw.get("flash_attention", False)))
    return out


def _activation_compute(v: Mapping[str, Any]) -> float:
    m = memory.model_preset(v["model"])
    mb = _whole("micro-batch", v["micro_batch"])
    per_layer = memory.activation_bytes_per_layer(v["seq_len"], mb, m.hidden, m.n_heads, v["tp"], bool(v["sp"]),
                                                  v["recompute"], bool(v["flash"]))
    finite("the activation memory", per_layer * m.n_layers)
    return per_layer


def _activation_view(per_layer: float, v: Mapping[str, Any]) -> View:
    m = memory.model_preset(v["model"])
    n_layers = m.n_layers
    cases = activation_cases(v["seq_len"], int(v["micro_batch"]), m.hidden, m.n_heads, v["tp"])
    text = (f"per layer: {sig(per_layer / 2**30)} GiB; all {n_layers} layers: {sig(n_layers * per_layer / 2**30)} GiB "
            f"per device (first pipeline stage, any pipeline depth; GiB = 2**30 bytes)")
    rows: list[dict[str, Any]] = []  # the chart's rows
    totals: list[dict[str, Any]] = []
    for label, parts in cases.items():
        for j, (name, nbytes) in enumerate(parts.items()):
            kind = next(k for k in ACTIVATION_KINDS if name.startswith(k))
            rows.append({"case": label, "part": ACTIVATION_KINDS[kind][1], "mib": nbytes / 2**20, "order": j})
        total = sum(parts.values()) / 2**20
        totals.append({"case": label, "mib": total, "label": f"{total:,.0f}"})
    names = list(dict.fromkeys(row["part"] for row in rows))
    colors = {short: color for color, short in ACTIVATION_KINDS.values()}
    chart = charts.parts(
        rows, title=f"Activation memory per layer (Korthikanti et al. 2023), TP = {int(v['tp'])}", value="mib",
        value_title="MiB per layer (2**20 bytes)", bar="case", bars=[label for label, _ in ACTIVATION_CASES],
        colors={n: colors[n] for n in names}, tip_title="MiB", fmt=",.0f", bar_tip=True, totals=totals, height=250)
    return View(text=text, chart=chart)


ACTIVATIONS = register(Calc(
    key="memory.activations",
    widget="ActivationWidget",
    title="Activation memory per layer and for the model (Korthikanti et al. 2023).",
    controls=(
        _model_control("GPT-3 175B"),
        choice("seq_len", "Seq len", SEQ_LENS, 2048),
        Control("micro_batch", "Micro-batch", "int_slider", 1, min=1, max=32),
        choice("tp", "TP", POW2_TP, 8),
        Control("sp", "Sequence parallel", "check", True),
        Control("flash", "Flash attention", "check", False),
        choice("recompute", "Recompute", memory.RECOMPUTE, "none", kind="toggle"),
    ),
    compute=_activation_compute,
    view=_activation_view,
))

# --------------------------------------------------------------------------- serving


def _serving_compute(v: Mapping[str, Any]) -> memory.ServingEstimate:
    m = memory.model_preset(v["model"])
    dev = spec(v["accelerator"]).memory_bytes
    est = memory.serving_memory(m, _whole("batch", v["batch"]), v["context_len"], dev, v["weight_dtype"], v["kv_dtype"])
    finite("the serving memory", est.total_bytes)
    return est


def _kv_formula(m: memory.ModelConfig, kv_dtype: str) -> str:
    lay = memory.kv_layout(m, kv_dtype)
    b = memory.DTYPE_BYTES[kv_dtype]
    if lay.kind == "MLA":
        per = f"{m.n_layers} layers x ({m.kv_lora_rank} latent + {m.qk_rope_head_dim} rotary) x {b:g} B: MLA"
    else:
        per = f"2 x {m.n_layers} layers x {m.n_kv_heads} KV heads x {m.head_dim} x {b:g} B: {lay.kind}"
    if lay.local_layers:
        per += (f"; {lay.local_layers} of the layers keep only a {lay.window:,}-token window, "
                f"{lay.global_layers} the whole context")
    return per


def _serving_view(est: memory.ServingEstimate, v: Mapping[str, Any]) -> View:
    m = memory.model_preset(v["model"])
    ctx = int(v["context_len"])
    seqs = memory.max_sequences(m, spec(v["accelerator"]).memory_bytes, ctx, est.n_devices, v["weight_dtype"],
                                v["kv_dtype"])
    acc = v["accelerator"]
    text = (f"KV cache per token: {fixed(est.kv_bytes_per_token / 2**10)} KiB ({_kv_formula(m, v['kv_dtype'])})\n"
            f"one sequence of {ctx:,} tokens: {est.kv_cache_bytes / int(v['batch']) / 1e9:,.2f} GB (1e9 bytes) of cache\n"
            f"devices needed: {est.n_devices:,} x {acc} (using {memory.VLLM_MEMORY_UTILIZATION:.0%} of each)\n"
            f"on {est.n_devices:,} device(s): room for batch {seqs:,} at context {ctx:,}")
    usable = est.n_devices * est.usable_bytes_per_device / 1e9
    parts = [{"part": "weights", "gb": est.weights_bytes / 1e9, "order": 0},
             {"part": "KV cache", "gb": est.kv_cache_bytes / 1e9, "order": 1}]
    chart = charts.parts(
        parts, title=f"{est.n_devices:,} x {acc}: {usable:,.1f} GB usable for {est.total_bytes / 1e9:,.1f} GB",
        value="gb", value_title="GB (1e9 bytes)", capacity={"gb": usable, "what": f"usable memory of {est.n_devices:,} x {acc}"},
        fmt=",.1f", tip_title="GB", height=150)
    return View(text=text, chart=chart)


SERVING = register(Calc(
    key="memory.serving",
    widget="ServingWidget",
    title="Serving memory: weights by dtype plus the KV cache, devices needed, the largest batch.",
    controls=(
        _model_control("Llama-3 70B"),
        accelerator_control(),
        _dtype_control("weight_dtype", "Weights"),
        _dtype_control("kv_dtype", "KV cache"),
        Control("batch", "Batch", "int", 8, help="sequences served at once"),
        choice("context_len", "Context", SEQ_LENS, 8192),
    ),
    compute=_serving_compute,
    view=_serving_view,
))

# --------------------------------------------------------------------------- mixture of experts


def _moe_compute(v: Mapping[str, Any]) -> memory.MoeSummary:
    return memory.moe_summary(memory.model_preset(v["model"]), v["weight_dtype"])


def _moe_view(s: memory.MoeSummary, v: Mapping[str, Any]) -> View:
    text = (f"weights in memory: {fixed(s.weights_bytes / 1e9)} GB (1e9 bytes); a dense model with the active "
            f"parameters would need {s.dense_equivalent_bytes / 1e9:,.1f} GB\n"
            f"forward compute: {s.forward_flops_per_token / 1e9:,.1f} GFLOP per token "
            f"({s.active_params / s.total_params:.0%} of the parameters)")
    rows = [{"what": "in memory (total)", "billions": s.total_params / 1e9},
            {"what": "computed per token (active)", "billions": s.active_params / 1e9}]
    for row in rows:
        row["label"] = f"{row['billions']:,.1f}B"
    chart = charts.bars(f"Parameters of {v['model']}", rows, name="what", x=charts.q("billions", "parameters (billions)"),
                        color_by="what", legend=False, labels="end")
    return View(text=text, chart=chart)


MOE = register(Calc(
    key="memory.moe",
    widget="MoeWidget",
    title="Mixture of experts: memory follows the total parameters, compute the active ones.",
    controls=(_model_control("Mixtral 8x7B"), _dtype_control("weight_dtype", "Weights")),
    compute=_moe_compute,
    view=_moe_view,
))

# --------------------------------------------------------------------------- the whole training picture

MICRO_BATCHES = (1, 2, 4, 8, 16)


def _training_kwargs(v: Mapping[str, Any]) -> dict[str, Any]:
    return {"seq_len": v["seq_len"], "recompute": v["recompute"], "overhead_fraction": v["overhead"]}


def _training_compute(v: Mapping[str, Any]) -> memory.TrainingFit:
    m = memory.model_preset(v["model"])
    dev = spec(v["accelerator"]).memory_bytes
    pp = _whole("PP", v["pp"])
    return memory.training_memory(m, dev, v["micro_batch"], dp=v["dp"], tp=v["tp"], pp=pp, zero_stage=v["zero_stage"],
                                  **_training_kwargs(v))


def _training_view(fit: memory.TrainingFit, v: Mapping[str, Any]) -> View:
    m = memory.model_preset(v["model"])
    kw = _training_kwargs(v)
    best = memory.fewest_devices(m, fit.device_bytes, v["micro_batch"], zero_stage=v["zero_stage"], max_tp=8, **kw)
    grid = memory.training_fit_grid(m, fit.device_bytes, memory.ZERO_STAGES, MICRO_BATCHES, dp=fit.dp, tp=fit.tp,
                                    pp=fit.pp, **kw)
    verdict = "fits" if fit.fits else "does NOT fit"
    lines = [f"{fit.n_devices:,} devices (dp {fit.dp} x tp {fit.tp} x pp {fit.pp}): {fit.total_bytes / 1e9:,.1f} GB "
             f"per device, {verdict} in {spec(v['accelerator']).capacity_text()}; GB = 1e9 bytes"]
    if best is None:
        lines.append("no layout up to 16,384 devices fits")
    else:
        lines.append(f"fewest devices that fit with ZeRO-{v['zero_stage']}: {best.n_devices:,} "
                     f"(dp {best.dp} x tp {best.tp} x pp {best.pp}, {best.total_bytes / 1e9:,.1f} GB each)")
    names = [name for name, nbytes in fit.parts_bytes.items() if nbytes]
    parts = [{"part": name, "gb": fit.parts_bytes[name] / 1e9, "order": i} for i, name in enumerate(names)]
    bar = charts.parts_panel(parts, title=f"dp{fit.dp} tp{fit.tp} pp{fit.pp}, ZeRO-{fit.zero_stage}", value="gb",
                             value_title="GB per device", capacity={"gb": fit.device_bytes / 1e9, "what": "device memory"},
                             colors=_colors(names), fmt=",.1f", tip_title="GB")
    cells = []
    for z, row in zip(memory.ZERO_STAGES, grid):
        for mb, nbytes in zip(MICRO_BATCHES, row):
            ok = nbytes <= fit.device_bytes
            cells.append({"zero": f"ZeRO-{z}", "micro_batch": mb, "gb": nbytes / 1e9,
                          "ratio": min(nbytes / fit.device_bytes, 2.0),
                          "label": f"{nbytes / 1e9:,.0f}" + ("" if ok else " X")})
    heat = charts.heatmap(cells, title=f"GB per {v['accelerator']}; X: does not fit", x="micro_batch",
                          x_title="micro-batch size", y="zero", value="ratio", value_title="share of the device",
                          domain=[0, 2], tip=[("gb", "GB", ",.1f")])
    chart = charts.panels(f"{v['model']} on {v['accelerator']}", [bar, heat])
    return View(text="\n".join(lines), chart=chart)


TRAINING_FIT = register(Calc(
    key="memory.training_fit",
    widget="TrainingFitWidget",
    title="The whole training picture: model states + activations + overhead against one device.",
    controls=(
        _model_control("Llama-3 70B"),
        accelerator_control(),
        choice("seq_len", "Seq len", SEQ_LENS, 8192),
        choice("micro_batch", "Micro-batch", MICRO_BATCHES, 1),
        choice("dp", "DP", POW2_DP, 4),
        choice("tp", "TP", POW2_TP, 8),
        Control("pp", "PP", "int", 1, help="pipeline stages: must divide the layer count"),
        choice("zero_stage", "ZeRO", memory.ZERO_STAGES, 3, kind="toggle"),
        Control("overhead", "Overhead", "slider", 0.1, min=0.0, max=0.5, step=0.05,
                help="share of the device held back for the CUDA context, buffers, fragmentation (an assumption)"),
        choice("recompute", "Recompute", memory.RECOMPUTE, "selective", kind="toggle"),
    ),
    compute=_training_compute,
    view=_training_view,
))

# --------------------------------------------------------------------------- the CPU side


def _cpu_compute(v: Mapping[str, Any]) -> memory.CpuNeeds:
    m = memory.model_preset(v["model"])
    g = _whole("accelerators per node", v["accelerators"])
    w = _whole("workers per accelerator", v["workers"])
    ram = finite("the RAM per worker", _check.non_negative("GB per worker", v["ram_per_worker_gb"]) * 1e9)
    off = 0.0
    if v["offload"]:
        off = g * memory.zero_model_state_bytes(m.n_params(), g, 3, offload_optimizer=True,
                                                offload_params=True).cpu_bytes
    needs = memory.cpu_needs(g, w, m.n_params(), offloaded_bytes_per_node=off, ram_per_worker_bytes=ram)
    finite("the host RAM", needs.ram_bytes)
    return needs


def _cpu_view(needs: memory.CpuNeeds, v: Mapping[str, Any]) -> View:
    text = (f"dataloader workers: {needs.dataloader_workers:,}; processes with the main ones: {needs.processes:,}; "
            f"cores: at least {needs.cores:,}\n"
            f"host RAM at the peak: {fixed(needs.ram_bytes / 1e9)} GB (1e9 bytes; loading and offload do not overlap; "
            "workers come on top)")
    table = Table(("host RAM", "GB"), tuple((name, nbytes / 1e9) for name, nbytes in needs.ram_parts_bytes.items()))
    return View(text=text, table=table)


CPU = register(Calc(
    key="memory.cpu",
    widget="CpuWidget",
    title="Cores and host RAM for one training node: dataloader workers, loading, offload.",
    controls=(
        _model_control("Llama-3 8B"),
        Control("accelerators", "Accel./node", "int_slider", 8, min=1, max=16),
        Control("workers", "Workers/accel.", "int_slider", 2, min=1, max=8),
        Control("ram_per_worker_gb", "GB/worker", "number", 2.0, step=0.5, help="host RAM per dataloader worker, GB"),
        Control("offload", "ZeRO-3 offload (optimizer + params)", "check", False),
    ),
    compute=_cpu_compute,
    view=_cpu_view,
))
