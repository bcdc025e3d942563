"""Planning calculators: a whole training run, two plans side by side, rent vs HPC vs buy, serving."""

from __future__ import annotations

from typing import Any, Mapping

from mlcalc import _check, live, memory, plan, serving, vl
from mlcalc.accelerators import spec
from mlcalc.calc import Calc, Control, Table, View, choice, register
from mlcalc.calculators import _charts
from mlcalc.calculators._common import money

_MODELS = tuple(memory.model_presets())
_OFFERS = tuple(plan.offers())
_CHIPS = tuple(k for k in plan.data()["chips"] if k != "fields")
_MAX_GPUS = (256, 1024, 4096, 16384, 65536)


def _model(v: Mapping[str, Any]) -> memory.ModelConfig:
    return memory.model_preset(v["model"])


def _tokens(v: Mapping[str, Any], model: memory.ModelConfig) -> float:
    t = _check.non_negative("tokens (billions, 0 = Chinchilla)", v["tokens_b"])
    return plan.chinchilla_tokens(model.n_params()) if t == 0 else t * 1e9


def _offers(v: Mapping[str, Any]) -> list[str]:
    ways = {w for w, key in (("rent", "rent"), ("hpc", "hpc"), ("buy", "buy")) if v[key]}
    chips = set(_CHIPS) if v["chip"] == "all" else {v["chip"]}
    names = [n for n, o in plan.offers().items() if o.way in ways and o.chip in chips]
    if not names:
        raise ValueError(f"offers: no offer is rent/HPC/buy {sorted(ways) or '(none ticked)'} for {v['chip']!r}: "
                         "tick another way of paying or choose another chip")
    return names


# --------------------------------------------------------------------------- plan a training run


def _train_compute(v: Mapping[str, Any]) -> tuple[plan.Search, memory.ModelConfig, float]:
    model = _model(v)
    tokens = _tokens(v, model)
    seq = int(v["seq_len"])
    batch = _check.positive("global batch (M tokens)", v["batch_m"]) * 2**20
    if batch < seq:
        raise ValueError(f"global batch (M tokens)={v['batch_m']!r} is not allowed: it must hold one sequence "
                         f"of {seq:,} tokens")
    budget = _check.positive("budget ($M)", v["budget_m"]) * 1e6
    res = plan.search(model, _offers(v), tokens, v["deadline_days"], budget, seq, batch, int(v["max_gpus"]))
    return res, model, tokens


def _plan_row(p: plan.Plan) -> tuple[Any, ...]:
    lay = p.layout
    return (p.offer.name, f"{p.n_gpus:,}", f"{lay.tp}x{lay.pp}x{lay.dp}", lay.recompute,
            f"{lay.step_s:,.2f}", f"{p.mfu:.0%}", f"{p.days:,.1f}", money(p.dollars),
            f"{p.needs.switches:,}", f"{p.needs.checkpoint_bytes / 1e12:,.1f}", f"{p.needs.interval_s / 60:,.0f}",
            f"{p.needs.goodput:.1%}")


_PLAN_COLUMNS = ("offer", "GPUs", "tp x pp x dp", "recompute", "step (s)", "MFU", "days", "dollars",
                 "switches", "checkpoint (TB)", "ckpt every (min)", "goodput")


def _train_view(r: tuple[plan.Search, memory.ModelConfig, float], v: Mapping[str, Any]) -> View:
    res, model, tokens = r
    shown = res.plans or res.closest
    head = (f"{model.name}: {model.n_params() / 1e9:,.1f}B parameters, {tokens / 1e9:,.0f}B tokens "
            f"({tokens / model.n_params():,.1f} per parameter; Chinchilla: 20). Searched {res.counts_tried} "
            f"GPU counts (8 x 2^k up to {int(v['max_gpus']):,}).")
    lines = [head]
    if res.plans:
        best = res.plans[0]
        lines.append(f"Cheapest plan that meets the deadline and budget: {best.n_gpus:,} GPUs, {best.offer.name}: "
                     f"{best.days:,.1f} days, {money(best.dollars)}, MFU {best.mfu:.0%}.")
    else:
        lines.append("No plan meets every constraint:")
        lines.extend(f"- {p}" for p in res.problems)
    if shown and v["export"] != "summary":
        p = shown[0]
        query = "?" + live.query_from_values("plan.train", v)  # every input: the link outlives changed defaults
        lines.append("")
        lines.append(plan.plan_markdown(p, model, tokens, query) if v["export"] == "Markdown"
                     else plan.plan_json(p, model, tokens, query))
    table = Table(_PLAN_COLUMNS, tuple(_plan_row(p) for p in shown)) if shown else None
    chart = None
    if shown:
        pts = [{"offer": p.offer.name, "days": p.days, "dollars": p.dollars, "gpus": p.n_gpus,
                "feasible": "meets both" if p.feasible else "misses one"} for p in shown]
        chart = _charts.chart(
            title="Each offer at its fewest GPUs for the deadline: days against dollars",
            layer=[
                {"data": {"values": vl.rows(pts)}, "mark": {"type": "point", "filled": True, "size": 90},
                 "encoding": {"x": vl.field("days", title="days (wall clock, failures included)"),
                              "y": vl.field("dollars", title="dollars for the run (USD)", scale=vl.log_scale()),
                              # one column: two of long offer names pass a 520 px chart's edge
                              "color": vl.field("offer", "nominal", title="", legend={"columns": 1}),
                              # its own legend above the plot: beside the offers' legend it would pass the edge
                              "shape": vl.field("feasible", "nominal", title="", legend={"orient": "top"}),
                              "tooltip": [vl.field("offer", "nominal"), vl.field("gpus"),
                                          vl.field("days", format=",.1f"), vl.field("dollars", format="$,.0f")]}},
                {"data": {"values": vl.rows([{"days": float(v["deadline_days"]), "what": "deadline"}])},
                 "mark": {"type": "rule", "color": "black", "strokeDash": [4, 3]},
                 "encoding": {"x": vl.field("days"), "tooltip": [vl.field("what", "nominal")]}},
            ])
    return View(text="\n".join(lines), table=table, chart=chart)


TRAIN = register(Calc(
    key="plan.train",
    title="Plan a training run: model, tokens, deadline and budget to GPUs, layout, days and dollars.",
    controls=(
        choice("model", "Model", _MODELS, "Llama-3 70B"),
        Control("tokens_b", "Tokens (B)", "number", 0.0, step=100.0,
                help="training tokens, billions; 0 = Chinchilla's 20 per parameter (Hoffmann et al. 2022)"),
        choice("seq_len", "Sequence", (2048, 4096, 8192), 4096),
        Control("batch_m", "Batch (M tokens)", "number", 4.0, step=1.0, help="global batch, 2^20 tokens"),
        Control("deadline_days", "Deadline (days)", "number", 60.0, step=5.0),
        Control("budget_m", "Budget ($M)", "number", 5.0, step=0.5, help="millions of US dollars"),
        choice("chip", "Chips", ("all",) + _CHIPS, "all"),
        Control("rent", "Rent", "check", True),
        Control("hpc", "HPC allocation", "check", True),
        Control("buy", "Buy", "check", True),
        choice("max_gpus", "At most (GPUs)", _MAX_GPUS, 16384),
        choice("export", "Show", ("summary", "Markdown", "JSON"), "summary", kind="toggle"),
    ),
    compute=_train_compute,
    view=_train_view,
    notes="Step time: achievable matmul rate x the step efficiency measured on an H100, pipeline bubble, "
          "exposed tensor/pipeline/data-parallel communication; failures at the Llama 3 rate; prices in plan.json.",
))


# --------------------------------------------------------------------------- two plans side by side


def _compare_compute(v: Mapping[str, Any]) -> tuple[plan.Plan, plan.Plan, memory.ModelConfig, float]:
    model = _model(v)
    tokens = _tokens(v, model)
    out = []
    for side in ("a", "b"):
        n = int(v[f"gpus_{side}"])
        p = plan.evaluate(model, plan.offers()[v[f"offer_{side}"]], n, tokens, int(v["seq_len"]), 4 * 2**20)
        if p is None:
            raise ValueError(f"GPUs {side.upper()}={n!r} is not allowed: {model.name} fits no layout of "
                             f"{n:,} x {plan.offers()[v[f'offer_{side}']].chip}")
        out.append(p)
    return out[0], out[1], model, tokens


def _compare_view(r: tuple[plan.Plan, plan.Plan, memory.ModelConfig, float], v: Mapping[str, Any]) -> View:
    a, b, model, tokens = r
    rows = [(k, f"{x:,.4g}", f"{y:,.4g}", unit) for k, x, y, unit in plan.compare(a, b)]
    text = (f"{model.name}, {tokens / 1e9:,.0f}B tokens. A: {a.n_gpus:,} x {a.offer.name}; "
            f"B: {b.n_gpus:,} x {b.offer.name}. B takes {b.days / a.days:,.2f}x the days and "
            f"{b.dollars / a.dollars if a.dollars else float('nan'):,.2f}x the dollars of A.")
    return View(text=text, table=Table(("number", "plan A", "plan B", "unit"), tuple(rows)))


COMPARE = register(Calc(
    key="plan.compare",
    title="Two plans side by side: the same run on two offers or GPU counts.",
    controls=(
        choice("model", "Model", _MODELS, "Llama-3 8B"),
        Control("tokens_b", "Tokens (B)", "number", 0.0, step=100.0,
                help="billions; 0 = Chinchilla (20 per parameter)"),
        choice("seq_len", "Sequence", (2048, 4096, 8192), 4096),
        choice("offer_a", "Plan A", _OFFERS, "H100 rent (AWS Capacity Block)", width="22em"),
        choice("gpus_a", "GPUs A", plan.GPU_COUNTS[:12], 256),
        choice("offer_b", "Plan B", _OFFERS, "A100 rent (AWS Capacity Block)", width="22em"),
        choice("gpus_b", "GPUs B", plan.GPU_COUNTS[:12], 512),
    ),
    compute=_compare_compute,
    view=_compare_view,
))


# --------------------------------------------------------------------------- rent vs HPC vs buy

_UTIL_GRID = tuple(round(0.05 * k, 2) for k in range(1, 21))  # 0.05 ... 1.00


def _tco_kwargs(v: Mapping[str, Any]) -> dict[str, float]:
    return {"life_years": v["life_years"], "pue": v["pue"], "electricity_per_kwh": v["kwh"],
            "hosting_per_kw_month": v["hosting"], "staff_per_year": v["staff"], "gpus_per_admin": v["gpus_per_admin"],
            "network_share": v["network_share"]}


def _tco_compute(v: Mapping[str, Any]) -> dict[str, Any]:
    c = plan.chip_info(v["chip"])
    kw = _tco_kwargs(v)
    purchase = _check.non_negative("purchase ($ per GPU)", v["purchase"])
    rent = _check.positive("rent ($ per GPU-hour)", v["rent"])
    hpc = _check.non_negative("HPC ($ per GPU-hour)", v["hpc"])
    gp = _check.fraction("goodput", v["goodput"])
    own = plan.tco(purchase, c["board_power_w"], c["node_power_kw"], utilization=v["utilization"], goodput=gp, **kw)
    curve = [(u, plan.tco(purchase, c["board_power_w"], c["node_power_kw"], utilization=u, goodput=gp,
                          **kw).per_useful_gpu_hour) for u in _UTIL_GRID]
    even = plan.break_even_utilization(purchase, rent, c["board_power_w"], c["node_power_kw"], **kw)
    return {"own": own, "rent": rent / gp, "hpc": hpc / gp, "curve": curve, "break_even": even}


def _tco_view(r: dict[str, Any], v: Mapping[str, Any]) -> View:
    own = r["own"]
    even = r["break_even"]
    lines = [f"Per useful GPU-hour at {v['utilization']:.0%} utilization and {v['goodput']:.0%} goodput: "
             f"buy ${own.per_useful_gpu_hour:,.2f}, rent ${r['rent']:,.2f}, HPC ${r['hpc']:,.2f}.",
             (f"Buying beats renting above {even:.0%} utilization." if even <= 1 else
              f"Buying never beats renting at these prices: it would need {even:.0%} utilization.")]
    rows = [(k, f"${x:,.3f}") for k, x in own.parts_per_gpu_hour.items()]
    rows.append(("per GPU-hour owned (sum)", f"${own.per_gpu_hour:,.3f}"))
    rows.append((f"per useful GPU-hour (/ {own.useful_share:.2f})", f"${own.per_useful_gpu_hour:,.3f}"))
    data = [{"utilization": u, "usd": x, "way": "buy"} for u, x in r["curve"]]
    data += [{"utilization": u, "usd": r["rent"], "way": "rent"} for u, _ in r["curve"]]
    data += [{"utilization": u, "usd": r["hpc"], "way": "HPC allocation"} for u, _ in r["curve"]]
    layers = [{"data": {"values": vl.rows(data)}, "mark": {"type": "line", "point": False},
               "encoding": {"x": vl.field("utilization", title="utilization of owned GPUs", axis={"format": "%"}),
                            "y": vl.field("usd", title="USD per useful GPU-hour", scale=vl.log_scale()),
                            "color": vl.field("way", "nominal", title=""),
                            "tooltip": [vl.field("way", "nominal"), vl.field("utilization", format=".0%"),
                                        vl.field("usd", format="$,.2f")]}}]
    if 0 < even <= 1:
        layers.append({"data": {"values": vl.rows([{"utilization": even, "what": "break-even with renting"}])},
                       "mark": {"type": "rule", "color": "black", "strokeDash": [4, 3]},
                       "encoding": {"x": vl.field("utilization"), "tooltip": [vl.field("what", "nominal"),
                                                                             vl.field("utilization", format=".0%")]}})
    chart = _charts.chart(title="Cost of a useful GPU-hour: owning falls with utilization, renting does not",
                          layer=layers)
    return View(text="\n".join(lines), table=Table(("part (per GPU-hour of the hardware's life)", "USD"), tuple(rows)),
                chart=chart)


def _d(name: str) -> float:
    return plan.default(name)


TCO = register(Calc(
    key="plan.tco",
    title="Rent, HPC allocation or buy: cost of a useful GPU-hour over the hardware's life.",
    controls=(
        choice("chip", "Chip", _CHIPS, "H100-SXM"),
        Control("purchase", "Buy ($/GPU)", "number", plan.offers()["H100 buy (DGX H100)"].purchase_per_gpu, step=1000.0,
                help="the GPU's share of a node (DGX H100 ~$270,000 / 8, Epoch AI quoting SemiAnalysis)"),
        Control("rent", "Rent ($/GPU-h)", "number", plan.offers()["H100 rent (AWS Capacity Block)"].price_per_gpu_hour,
                step=0.1, help="AWS Capacity Block p5: $4.916 per H100-hour"),
        Control("hpc", "HPC ($/GPU-h)", "number",
                plan.offers()["H100 HPC allocation (cost recovery)"].price_per_gpu_hour,
                step=0.05, help="an academic cost-recovery rate (Caltech: $0.14); 0 for a free allocation"),
        Control("utilization", "Utilization", "slider", 0.8, min=0.05, max=1.0, step=0.05,
                help="share of the owned hardware's life spent on useful jobs"),
        Control("goodput", "Goodput", "slider", 0.95, min=0.5, max=1.0, step=0.01,
                help="share of job time that advances training (failures, checkpoints)"),
        Control("life_years", "Life (years)", "number", _d("life_years"), step=0.5),
        Control("pue", "PUE", "number", _d("pue"), step=0.05, help="Uptime Institute 2023 average: 1.58"),
        Control("kwh", "$/kWh", "number", _d("electricity_per_kwh"), step=0.01),
        Control("hosting", "Hosting ($/kW-month)", "number", _d("hosting_per_kw_month"), step=10.0),
        Control("staff", "Staff ($/year)", "number", _d("staff_per_year"), step=10000.0),
        Control("gpus_per_admin", "GPUs per admin", "number", _d("gpus_per_admin"), step=64.0),
        Control("network_share", "Network (share of price)", "number", _d("network_share"), step=0.01),
    ),
    compute=_tco_compute,
    view=_tco_view,
))


# --------------------------------------------------------------------------- serving

_ENGINES = (("production: CUDA graphs, paged GQA/MLA attention (vLLM, SGLang, TensorRT-LLM)", "cuda-graph"),
            ("plain Hugging Face: eager transformers generate (floor measured on H200)", "hf-eager"))
_DTYPES = (("bf16", "bf16"), ("fp8", "fp8"))
_BATCH_GRID = tuple(2**k for k in range(11))  # 1 ... 1024


def _serve_compute(v: Mapping[str, Any]) -> dict[str, Any]:
    model = _model(v)
    engine = v["engine"]
    s = serving.plan_serving(model, v["chip"], v["rps"], int(v["prompt"]), int(v["output"]),
                             _check.positive("TTFT target (ms)", v["ttft_ms"]) / 1e3,
                             _check.positive("TPOT target (ms)", v["tpot_ms"]) / 1e3,
                             v["price"], engine=engine, weight_dtype=v["dtype"], kv_dtype=v["dtype"],
                             input_cv=_check.non_negative("length spread (cv)", v["cv"]),
                             output_cv=v["cv"], chunk_tokens=int(v["chunk"]))
    ctx = int(v["prompt"]) + max(1, int(v["output"]) // 2)
    curve = []
    if s.feasible:
        per_req = int(v["prompt"]) + int(v["output"])
        for b in _BATCH_GRID:
            if b * per_req > s.kv_tokens_fit:
                break
            d = serving.predict_decode(model, v["chip"], b, ctx, engine, s.tp, s.ep, v["dtype"], v["dtype"], s.nodes)
            curve.append({"batch": b, "tokens_per_s_per_gpu": d.tokens_per_s / (s.tp * s.ep),
                          "tpot_ms": d.step_s * 1e3, "bound": d.bound})
    return {"serving": s, "curve": curve, "model": model}


def _serve_view(r: dict[str, Any], v: Mapping[str, Any]) -> View:
    s: serving.Serving = r["serving"]
    engine = dict((b, a) for a, b in _ENGINES)[s.engine].split(":")[0]
    if not s.feasible and s.gpus == 0:
        lines = [f"Impossible on {v['chip']} ({engine} engine):"] + [f"- {p}" for p in s.problems]
        return View(text="\n".join(lines))
    lay = f"tp={s.tp}" + (f" x ep={s.ep}" if s.ep > 1 else "") + (f" over {s.nodes} nodes" if s.nodes > 1 else "")
    reps = f"{s.replicas:,} replica{'s' if s.replicas != 1 else ''}"
    lines = [f"{s.gpus:,} x {s.chip} ({reps} of {lay}), {engine} engine, batch up to {s.batch:,}: "
             f"TTFT p99 {s.ttft_s * 1e3:,.0f} ms, TPOT p99 {s.tpot_s * 1e3:,.1f} ms (simulated), "
             f"bottleneck: {s.bound}.",
             f"${s.dollars_per_million_input:,.3f} per million input tokens, ${s.dollars_per_million_output:,.2f} "
             f"per million output tokens ({s.output_tokens_per_s:,.0f} output tokens/s in all).",
             f"KV cache room: {s.kv_tokens_fit:,} tokens per replica; each replica gets "
             f"{s.replica_requests_per_s:,.2f} requests/s."]
    if s.load is not None:
        lines.append(f"Simulation: {s.load.bounds}; {s.load.slo_attainment:.1%} of requests met both targets.")
    lines.extend(s.problems)
    lines.append(s.checked)
    rows = tuple((c["batch"], f"{c['tokens_per_s_per_gpu']:,.0f}", f"{c['tpot_ms']:,.1f}", c["bound"])
                 for c in r["curve"])
    chart = _charts.chart(
        r["curve"], mark={"type": "line", "point": True},
        encoding={"x": vl.field("batch", title="batch (sequences per replica)", scale=vl.log_scale()),
                  "y": vl.field("tokens_per_s_per_gpu", title="decode tokens/s per GPU", scale=vl.log_scale()),
                  "tooltip": [vl.field("batch"), vl.field("tokens_per_s_per_gpu", format=",.0f"),
                              vl.field("tpot_ms", format=",.1f"), vl.field("bound", "nominal")]},
        title="Batching moves decode along the roofline: more tokens per weight read") if r["curve"] else None
    return View(text="\n".join(lines), table=Table(("batch", "tokens/s per GPU", "TPOT (ms)", "bound"), rows),
                chart=chart)


SERVE = register(Calc(
    key="plan.serve",
    title="Serve a model: request rate and latency targets to GPUs, parallelism, bottleneck and $ per million tokens.",
    controls=(
        choice("model", "Model", _MODELS, "Llama-3 70B"),
        choice("chip", "Chip", _CHIPS, "H100-SXM"),
        Control("rps", "Requests/s", "number", 10.0, step=1.0),
        Control("prompt", "Prompt tokens (mean)", "int", 1000, step=100),
        Control("output", "Output tokens (mean)", "int", 200, step=50),
        Control("cv", "Length spread (cv)", "number", 0.0, step=0.25,
                help="coefficient of variation of prompt and output lengths (0: all equal; lognormal)"),
        Control("ttft_ms", "TTFT p99 target (ms)", "number", 1000.0, step=100.0),
        Control("tpot_ms", "TPOT p99 target (ms)", "number", 50.0, step=5.0),
        Control("price", "$/GPU-hour", "number", plan.offers()["H100 rent (AWS Capacity Block)"].price_per_gpu_hour,
                step=0.1),
        choice("engine", "Engine", _ENGINES, "cuda-graph", width="26em"),
        choice("dtype", "Weights and KV", _DTYPES, "bf16"),
        Control("chunk", "Chunked prefill (tokens, 0 = off)", "int", 0, step=256),
    ),
    compute=_serve_compute,
    view=_serve_view,
))

__all__ = ["COMPARE", "SERVE", "TCO", "TRAIN"]
