"""Planning calculators: a whole training run, two plans side by side, rent vs HPC vs buy, serving."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Mapping, TypedDict

from mlcalc import _check, charts, live, memory, plan, serving
from mlcalc.accelerators import spec
from mlcalc.calc import Calc, Control, Table, View, choice, register
from mlcalc.calculators._common import fixed, money, sig

_MODELS = tuple(memory.model_presets())
_OFFERS = tuple(plan.offers())
_CHIPS = plan.chips()  # every chip the planner knows (the cost of owning needs only its power)
_OFFERED = plan.offered_chips()  # the chips some offer sells: the training planner offers only these
_ACADEMIC = plan.offers()["H100 HPC allocation (academic, subsidised)"]  # Caltech's cost-recovery rate


def _model(v: Mapping[str, Any]) -> memory.ModelConfig:
    return memory.model_preset(v["model"])


def _tokens(v: Mapping[str, Any], model: memory.ModelConfig) -> float:
    t = _check.non_negative("tokens (billions, 0 = Chinchilla)", v["tokens_b"], plan.MAX_TOKENS / 1e9)
    return plan.chinchilla_tokens(model.n_params()) if t == 0 else t * 1e9


def _offers(v: Mapping[str, Any]) -> list[str]:
    ways = {w for w, key in (("rent", "rent"), ("hpc", "hpc"), ("buy", "buy")) if v[key]}
    chips = set(_OFFERED) if v["chip"] == "all" else {v["chip"]}
    names = [n for n, o in plan.offers().items() if o.way in ways and o.chip in chips]
    if not names:
        have = sorted({o.way for o in plan.offers().values() if o.chip in chips})
        raise ValueError(f"offers: no offer is {' or '.join(sorted(ways)) or '(none ticked)'} for {v['chip']!r}: "
                         f"tick {' or '.join(have)} or choose another chip")
    return names


# --------------------------------------------------------------------------- plan a training run


def _train_compute(v: Mapping[str, Any]) -> tuple[plan.Search, memory.ModelConfig, float]:
    model = _model(v)
    tokens = _tokens(v, model)
    seq = int(v["seq_len"])
    batch = _check.positive("global batch (M tokens)", v["batch_m"], plan.MAX_BATCH_TOKENS / 2**20) * 2**20
    if batch < seq:
        raise ValueError(f"global batch (M tokens)={v['batch_m']!r} is not allowed: it must hold one sequence "
                         f"of {seq:,} tokens")
    budget = _check.positive("budget ($M)", v["budget_m"], 1e9) * 1e6
    deadline = _check.positive("deadline (days)", v["deadline_days"], 1e5)
    cap = _check.positive_int("at most (GPUs)", v["max_gpus"], plan.MAX_GPUS)
    fixed = _check.non_negative_int("GPUs (0 = search)", v["gpus"], plan.MAX_GPUS)
    res = plan.search(model, _offers(v), tokens, deadline, budget, seq, batch, cap,
                      counts=[fixed] if fixed else None)
    return res, model, tokens


def _plan_row(label: str, p: plan.Plan) -> tuple[Any, ...]:
    return (label, f"{p.n_gpus:,}", fixed(p.days), money(p.dollars), f"{p.mfu:.0%}", p.offer.name)


# headline columns first (what, how many, how long, how much), the offer's name last, wrapping in its own
# column: six short columns fit a 390 px screen; the layout is in each plan's sentence and its export
_PLAN_COLUMNS = ("plan", "GPUs", "days", "dollars", "MFU", "offer")


def _searched(res: plan.Search, v: Mapping[str, Any]) -> str:
    c = res.counts
    if int(v["gpus"]):
        return f"Fixed at {c[0]:,} GPUs: {res.counts_tried} chip{'s' if res.counts_tried > 1 else ''}, every layout of each."
    counts = f"{len(c)} counts from {c[0]:,} to {c[-1]:,} GPUs" if len(c) > 1 else f"1 count, {c[0]:,} GPUs"
    return (f"Searched {res.counts_tried} (chip, GPU count) pairs, every layout of each: {counts} (whole nodes, "
            f"4 per doubling, at most {plan.MAX_COUNTS} per chip).")


@lru_cache(maxsize=None)
def _checked_mfu(chip: str) -> tuple[tuple[float, str], ...]:
    """(MFU, run) of each published bf16 run on ``chip`` that the step-time engine is checked on
    (mlcalc.training_runs, an mlcalc.accuracy family), the MFU counted as the planner counts it: the published
    throughput x (6 N + attention) FLOP per token over the bf16 peak."""
    from mlcalc import training_runs  # records: imported when a plan is shown, not when the site starts

    out = []
    for c in training_runs.checks():
        e = training_runs.runs()[c.name]
        if e["chip"] != chip or e.get("dtype", "bf16") != "bf16":
            continue
        published_tokens_per_s = c.prediction.tokens_per_s / (1.0 + c.error)  # error = predicted / published - 1
        flops = plan.flops_per_token(training_runs.model_of(e), int(e["seq_len"]))
        out.append((published_tokens_per_s * flops / (int(e["gpus"]) * spec(chip).peak_flops("bf16")), c.name))
    return tuple(sorted(out))


def _mfu_range(p: plan.Plan) -> str:
    """Whether a plan's MFU lies inside what the engine was checked on for its chip, in one sentence."""
    runs = _checked_mfu(p.offer.chip)
    if not runs:
        return (f"No published run on {p.offer.chip} checks the step-time engine: its {p.mfu:.1%} MFU there is "
                "the H100-measured model carried over, unchecked.")
    (lo, _), (hi, top) = runs[0], runs[-1]
    where = (f"the {len(runs)} published bf16 runs on {p.offer.chip} that check the step-time engine "
             f"(mlcalc.accuracy) reached {lo:.0%} to {hi:.0%} MFU counted the same way")
    if p.mfu > hi:
        return (f"Outside the checked range: {where}; this plan's {p.mfu:.1%} is above the highest ({top}), "
                "so it rests on the engine alone.")
    return f"Inside the checked range: {where}."


def _term_note(offer: plan.Offer) -> str:
    """" (every hour of the 1-year term billed)" for a commitment, whatever the run's length; "" otherwise."""
    return f" (every hour of the {offer.term_years:g}-year term billed)" if offer.term_years > 0 else ""


def _train_view(r: tuple[plan.Search, memory.ModelConfig, float], v: Mapping[str, Any]) -> View:
    res, model, tokens = r
    lines = [f"{model.name}: {model.n_params() / 1e9:,.1f}B parameters, {tokens / 1e9:,.0f}B tokens "
             f"({tokens / model.n_params():,.1f} per parameter; Chinchilla: 20). " + _searched(res, v)]
    limits = f"the {float(v['deadline_days']):,g}-day deadline and the {money(float(v['budget_m']) * 1e6)} budget"
    rows: list[tuple[Any, ...]] = []
    if res.cheapest is not None and res.fastest is not None:  # a search that finds one finds both
        ch, fa = res.cheapest, res.fastest
        lines.append(f"Cheapest plan that meets {limits}: {ch.n_gpus:,} x {ch.offer.name}, {fixed(ch.days)} days, "
                     f"{money(ch.dollars)}. " + plan.explain(ch, model, tokens) + " " + _mfu_range(ch))
        if fa is not ch:
            lines.append(f"Fastest plan that meets both: {fa.n_gpus:,} x {fa.offer.name}, {fixed(fa.days)} days, "
                         f"{money(fa.dollars)}. " + plan.explain(fa, model, tokens) + " " + _mfu_range(fa))
        else:
            lines.append("It is also the fastest plan that meets both.")
        lines.append(plan.facility_line(ch, " of the cheapest plan"))
        spread = res.price_range
        if len(spread) > 1:
            lines.append(f"The same {ch.n_gpus:,} x {ch.offer.chip} under each price searched: "
                         + "; ".join(f"{money(p.dollars)} {p.offer.name}" + _term_note(p.offer) for p in spread) + ".")
        rows.append(_plan_row("cheapest", ch))
        if fa is not ch:
            rows.append(_plan_row("fastest", fa))
        rows.extend(_plan_row("", p) for p in res.plans if p is not ch and p is not fa)
        shown = [ch, fa] + [p for p in res.plans if p is not ch and p is not fa]
    else:
        lines.append(f"No plan meets {limits}:")
        lines.extend(f"- {p}" for p in res.problems)
        rows.extend(_plan_row("closest", p) for p in res.closest)
        shown = list(res.closest)
    if not v["hpc"]:
        lines.append(f"Academic HPC rates (subsidised, ${_ACADEMIC.price_per_gpu_hour:,.2f} per GPU-hour) are not "
                     "searched: tick "
                     "'Academic HPC' if you have such an allocation.")
    if shown and v["export"] != "summary":
        p = shown[0]
        query = "?" + live.query_from_values("plan.train", v)  # every input: the link outlives changed defaults
        lines.append("")
        lines.append(plan.plan_markdown(p, model, tokens, query) if v["export"] == "Markdown"
                     else plan.plan_json(p, model, tokens, query))
    table = Table(_PLAN_COLUMNS, tuple(rows)) if rows else None  # at most one row per offer
    chart = None
    if shown:
        pts = [{"offer": p.offer.name, "days": p.days, "dollars": p.dollars, "gpus": p.n_gpus,
                "feasible": "meets both" if p.feasible else "misses one"} for p in dict.fromkeys(shown)]
        chart = charts.scatter(
            "Each offer's cheapest plan that meets both limits: days against dollars" if res.cheapest
            else "Each offer's fastest plan: days against dollars", pts,
            x=charts.q("days", "days (wall clock, failures included)"),
            y=charts.q("dollars", "dollars for the run (USD)", log=True), color_by="offer", shape_by="feasible",
            size=90, tooltip=[charts.tip("offer", kind="nominal"), charts.tip("gpus"), charts.tip("days", fmt=",.1f"),
                              charts.tip("dollars", fmt="$,.0f")],
            extra=[charts.line([{"days": float(v["deadline_days"]), "what": "deadline"}], along="x", field="days",
                               dash=[4, 3], what="what")])
    return View(text="\n".join(lines), table=table, chart=chart)


TRAIN = register(Calc(
    key="plan.train",
    widget="TrainingPlanWidget",
    title="Plan a training run: model, tokens, deadline and budget to GPUs, layout, days and dollars.",
    controls=(
        choice("model", "Model", _MODELS, "Llama-3 70B"),
        Control("tokens_b", "Tokens (B)", "number", 0.0, step=100.0,
                help="training tokens, billions; 0 = Chinchilla's 20 per parameter (Hoffmann et al. 2022)"),
        choice("seq_len", "Sequence", (2048, 4096, 8192), 4096),
        Control("batch_m", "Batch (M tokens)", "number", 4.0, step=1.0, help="global batch, 2^20 tokens"),
        Control("deadline_days", "Deadline (days)", "number", 60.0, step=5.0),
        Control("budget_m", "Budget ($M)", "number", 5.0, step=0.5, help="millions of US dollars"),
        choice("chip", "Chips", ("all",) + _OFFERED, "all"),
        Control("rent", "Rent (cloud)", "check", True,
                help="on demand, 1- and 3-year commitments (billed every hour of the term), Capacity Blocks"),
        Control("hpc", "Academic HPC (subsidised)", "check", False,
                help=f"a cost-recovery rate (${_ACADEMIC.price_per_gpu_hour:,.2f} per GPU-hour, Caltech) that only "
                     "academic users get"),
        Control("buy", "Buy", "check", True),
        Control("max_gpus", "At most (GPUs)", "int", 16384, step=1024,
                help=f"any count up to {plan.MAX_GPUS:,}; the search tries whole nodes, 4 counts per doubling"),
        Control("gpus", "GPUs (0 = search)", "int", 0, step=8,
                help="a fixed count instead of the search, e.g. 160 for ClimateGPT's 20 nodes"),
        choice("export", "Show", ("summary", "Markdown", "JSON"), "summary", kind="toggle"),
    ),
    compute=_train_compute,
    view=_train_view,
    notes="Step time: achievable matmul rate x the step efficiency measured on an H100, pipeline bubble, "
          "exposed tensor/pipeline/data-parallel communication; failures at the Llama 3 rate; prices with their "
          "dates in plan.json (cloud list prices of 2025-11-30).",
))


# --------------------------------------------------------------------------- two plans side by side


def _compare_compute(v: Mapping[str, Any]) -> tuple[plan.Plan, plan.Plan, memory.ModelConfig, float]:
    model = _model(v)
    tokens = _tokens(v, model)
    out = []
    for side in ("a", "b"):
        n = _check.positive_int(f"GPUs {side.upper()}", v[f"gpus_{side}"], plan.MAX_GPUS)
        offer = plan.offers()[v[f"offer_{side}"]]
        p = plan.evaluate(model, offer, n, tokens, int(v["seq_len"]), 4 * 2**20)
        if p is None:
            need = plan.leanest_memory_bytes(model, offer.chip, n, int(v["seq_len"]))
            why = (f"the leanest layout needs {need / 1e9:,.0f} GB per GPU, over its "
                   f"{spec(offer.chip).memory_bytes / 1e9:,.0f} GB" if need < float("inf") else
                   "no tp x pp of the planner's divides it (try a multiple of 8)")
            raise ValueError(f"GPUs {side.upper()}={n!r} is not allowed: {model.name} fits no layout of "
                             f"{n:,} x {offer.chip}: {why}")
        out.append(p)
    return out[0], out[1], model, tokens


def _compare_cell(x: float, unit: str) -> str:
    return plan.format_value(x, unit)


def _compare_view(r: tuple[plan.Plan, plan.Plan, memory.ModelConfig, float], v: Mapping[str, Any]) -> View:
    a, b, model, tokens = r
    rows = [(k, _compare_cell(x, unit), _compare_cell(y, unit), unit) for k, x, y, unit in plan.compare(a, b)]
    cost = f"{b.dollars / a.dollars:,.2f}x the dollars" if a.dollars > 0 else f"{money(b.dollars)} (A costs $0)"
    text = (f"{model.name}, {tokens / 1e9:,.0f}B tokens. A: {a.n_gpus:,} x {a.offer.name}; "
            f"B: {b.n_gpus:,} x {b.offer.name}. B takes {b.days / a.days:,.2f}x the days and {cost} of A.\n"
            f"A: {plan.explain(a, model, tokens)} {_mfu_range(a)}\nB: {plan.explain(b, model, tokens)} {_mfu_range(b)}")
    return View(text=text, table=Table(("number", "plan A", "plan B", "unit"), tuple(rows)))


COMPARE = register(Calc(
    key="plan.compare",
    widget="PlanCompareWidget",
    title="Two plans side by side: the same run on two offers or GPU counts.",
    controls=(
        choice("model", "Model", _MODELS, "Llama-3 8B"),
        Control("tokens_b", "Tokens (B)", "number", 0.0, step=100.0,
                help="billions; 0 = Chinchilla (20 per parameter)"),
        choice("seq_len", "Sequence", (2048, 4096, 8192), 4096),
        choice("offer_a", "Plan A", _OFFERS, "H100 rent (AWS Capacity Block)", width="22em"),
        Control("gpus_a", "GPUs A", "int", 256, step=8, help=f"any count from 1 to {plan.MAX_GPUS:,}"),
        choice("offer_b", "Plan B", _OFFERS, "A100 rent (AWS Capacity Block)", width="22em"),
        Control("gpus_b", "GPUs B", "int", 512, step=8, help=f"any count from 1 to {plan.MAX_GPUS:,}"),
    ),
    compute=_compare_compute,
    view=_compare_view,
))


# --------------------------------------------------------------------------- rent vs HPC vs buy

_UTIL_GRID = tuple(round(0.05 * k, 2) for k in range(1, 21))  # 0.05 ... 1.00


class _TcoKeywords(TypedDict):
    """The keywords of plan.tco (and plan.break_even_utilization) the TCO calculator's controls set."""

    life_years: float
    pue: float
    electricity_per_kwh: float
    hosting_per_kw_month: float
    staff_per_year: float
    gpus_per_admin: float
    network_share: float


def _tco_kwargs(v: Mapping[str, Any]) -> _TcoKeywords:
    return {"life_years": v["life_years"], "pue": v["pue"], "electricity_per_kwh": v["kwh"],
            "hosting_per_kw_month": v["hosting"], "staff_per_year": v["staff"], "gpus_per_admin": v["gpus_per_admin"],
            "network_share": v["network_share"]}


def _commitments(chip: str) -> list[plan.Offer]:
    """The chip's committed cloud prices (1- and 3-year terms), from plan.json's prices table."""
    return [o for o in plan.offers().values() if o.chip == chip and o.term_years > 0]


def _tco_compute(v: Mapping[str, Any]) -> dict[str, Any]:
    c = plan.chip_info(v["chip"])
    kw = _tco_kwargs(v)
    purchase = _check.non_negative("purchase ($ per GPU)", v["purchase"], plan.MAX_PURCHASE_PER_GPU)
    rent = _check.positive("rent ($ per GPU-hour)", v["rent"], plan.MAX_PRICE_PER_GPU_HOUR)
    hpc = _check.non_negative("HPC ($ per GPU-hour)", v["hpc"], plan.MAX_PRICE_PER_GPU_HOUR)
    gp = _check.fraction("goodput", v["goodput"])
    u = _check.in_range("utilization", v["utilization"], 0.05, 1.0)
    own = plan.tco(purchase, c["board_power_w"], c["node_power_kw"], utilization=u, goodput=gp, **kw)
    curve = [(x, plan.tco(purchase, c["board_power_w"], c["node_power_kw"], utilization=x, goodput=gp,
                          **kw).per_useful_gpu_hour) for x in _UTIL_GRID]
    even = plan.break_even_utilization(purchase, rent, c["board_power_w"], c["node_power_kw"], **kw)
    # A commitment bills every hour of its term: like owning, its cost per useful hour falls with use.
    commits = [(o, [(x, o.price_per_gpu_hour / (x * gp)) for x in _UTIL_GRID]) for o in _commitments(v["chip"])]
    return {"own": own, "rent": rent / gp, "hpc": hpc / gp if v["academic"] else None, "curve": curve,
            "break_even": even, "commits": commits, "utilization": u, "goodput": gp}


def _tco_view(r: dict[str, Any], v: Mapping[str, Any]) -> View:
    own = r["own"]
    even = r["break_even"]
    u, gp = r["utilization"], r["goodput"]
    ways = [f"buy ${own.per_useful_gpu_hour:,.2f}", f"rent on demand ${r['rent']:,.2f}"]
    ways += [f"{o.name.split(' rent ')[1].split(' (')[0]} ${o.price_per_gpu_hour / (u * gp):,.2f}"
             for o, _ in r["commits"]]
    if r["hpc"] is not None:
        ways.append(f"academic HPC (subsidised) ${r['hpc']:,.2f}")
    lines = [f"Per useful GPU-hour at {u:.0%} utilization and {gp:.0%} goodput: " + ", ".join(ways) + ".",
             (f"Buying beats renting on demand above {even:.0%} utilization." if even <= 1 else
              f"Buying never beats renting on demand at these prices: it would need {even:.0%} utilization.")]
    if r["commits"]:
        lines.append("A 1- or 3-year commitment bills every hour of its term, used or not (cloud list prices of "
                     f"{r['commits'][0][0].date}), so its cost per useful hour falls with utilization, as owning's does.")
    rows = [(k, f"${x:,.3f}") for k, x in own.parts_per_gpu_hour.items()]
    rows.append(("per GPU-hour owned (sum)", f"${own.per_gpu_hour:,.3f}"))
    rows.append((f"per useful GPU-hour (/ {own.useful_share:.2f})", f"${own.per_useful_gpu_hour:,.3f}"))
    data = [{"utilization": x, "usd": y, "way": "buy"} for x, y in r["curve"]]
    data += [{"utilization": x, "usd": r["rent"], "way": "rent on demand"} for x, _ in r["curve"]]
    for o, curve in r["commits"]:
        label = "rent, " + o.name.split(" rent ")[1].split(" (")[0]
        data += [{"utilization": x, "usd": y, "way": label} for x, y in curve]
    if r["hpc"] is not None:
        data += [{"utilization": x, "usd": r["hpc"], "way": "academic HPC (subsidised)"} for x, _ in r["curve"]]
    extra = []
    if 0 < even <= 1:
        extra.append(charts.line([{"utilization": even, "what": "break-even with renting"}], along="x",
                                 field="utilization", dash=[4, 3], what="what", fmt=".0%"))
    chart = charts.sweep(
        "Cost of a useful GPU-hour: owning and commitments fall with utilization, renting on demand does not", data,
        x=charts.q("utilization", "utilization of owned or committed GPUs", fmt="%"),
        y=charts.q("usd", "USD per useful GPU-hour", log=True), series="way", dashes=False, legend_columns=1,
        tooltip=[charts.tip("way", kind="nominal"), charts.tip("utilization", fmt=".0%"), charts.tip("usd", fmt="$,.2f")],
        extra=extra)
    return View(text="\n".join(lines), table=Table(("part (per GPU-hour of the hardware's life)", "USD"), tuple(rows)),
                chart=chart)


def _d(name: str) -> float:
    return plan.default(name)


_ON_DEMAND = "H100 rent on demand (AWS p5)"

TCO = register(Calc(
    key="plan.tco",
    widget="RentHpcBuyWidget",
    title="Rent, HPC allocation or buy: cost of a useful GPU-hour over the hardware's life.",
    controls=(
        choice("chip", "Chip", _CHIPS, "H100-SXM"),
        Control("purchase", "Buy ($/GPU)", "number", plan.offers()["H100 buy (DGX H100)"].purchase_per_gpu, step=1000.0,
                help="the GPU's share of a node (DGX H100 ~$270,000 / 8, Epoch AI quoting SemiAnalysis)"),
        Control("rent", "Rent on demand ($/GPU-h)", "number", plan.offers()[_ON_DEMAND].price_per_gpu_hour, step=0.1,
                help=f"AWS p5.48xlarge on demand: $55.04 per instance-hour / 8 "
                     f"(list price of {plan.offers()[_ON_DEMAND].date})"),
        Control("academic", "Academic HPC (subsidised)", "check", False,
                help="show a cost-recovery rate only academic users get"),
        Control("hpc", "HPC ($/GPU-h)", "number",
                _ACADEMIC.price_per_gpu_hour, step=0.05,
                help=f"an academic cost-recovery rate (Caltech: ${_ACADEMIC.price_per_gpu_hour:,.2f}); "
                     "0 for a free allocation"),
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


_SERVE_ALL = "every chip, on demand"
_SERVE_OFFERS = tuple((f"{n} ${plan.offers()[n].price_per_gpu_hour:,.2f}/GPU-h, {plan.offers()[n].date}", n)
                      for n in serving.serving_offers(on_demand_only=False)) + (
    (f"{_SERVE_ALL}: the cheapest per output token", _SERVE_ALL),)


def _serve_compute(v: Mapping[str, Any]) -> dict[str, Any]:
    model = _model(v)
    engine = v["engine"]
    if v["offer"] == _SERVE_ALL:
        names = tuple(n for n in serving.serving_offers() if "on demand" in n)
    else:
        names = (v["offer"],)
    plans = serving.plan_serving_offers(
        model, names, v["rps"], int(v["prompt"]), int(v["output"]),
        _check.positive("TTFT target (ms)", v["ttft_ms"]) / 1e3, _check.positive("TPOT target (ms)", v["tpot_ms"]) / 1e3,
        engine=engine, weight_dtype=v["dtype"], kv_dtype=v["dtype"],
        input_cv=_check.non_negative("length spread (cv)", v["cv"]), output_cv=v["cv"], chunk_tokens=int(v["chunk"]))
    offer, s = plans[0]
    ctx = int(v["prompt"]) + max(1, int(v["output"]) // 2)
    curve = []
    if s.gpus:
        per_req = int(v["prompt"]) + int(v["output"])
        for b in _BATCH_GRID:
            if b * per_req > s.kv_tokens_fit:
                break
            d = serving.predict_decode(model, s.chip, b, ctx, engine, s.tp, s.ep, v["dtype"], v["dtype"], s.nodes)
            curve.append({"batch": b, "tokens_per_s_per_gpu": d.tokens_per_s / (s.tp * s.ep),
                          "tpot_ms": d.step_s * 1e3, "bound": d.bound})
    return {"serving": s, "offer": offer, "plans": plans, "curve": curve, "model": model}


def _serve_view(r: dict[str, Any], v: Mapping[str, Any]) -> View:
    s: serving.Serving = r["serving"]
    engine = dict((b, a) for a, b in _ENGINES)[s.engine].split(":")[0]
    o = plan.offers()[r["offer"]]
    price = f"{r['offer']} at ${o.price_per_gpu_hour:,.2f} per GPU-hour ({o.date})"
    rows = tuple((n, f"{p.gpus:,}" if p.gpus else "-",
                  (f"tp={p.tp}" + (f" x ep={p.ep}" if p.ep > 1 else "")) if p.gpus else "-",
                  f"{p.dollars_per_million_input:,.3f}" if p.gpus else "-",
                  f"{p.dollars_per_million_output:,.2f}" if p.gpus else "-",
                  "met" if p.feasible else ("not reached" if p.gpus else "impossible"), p.bound)
                 for n, p in r["plans"])
    table = Table(("offer", "GPUs", "layout", "$/M input", "$/M output", "targets", "bottleneck"), rows)
    if not s.feasible and s.gpus == 0:
        lines = [f"Impossible with {price} ({engine} engine):"] + [f"- {p}" for p in s.problems]
        return View(text="\n".join(lines), table=table if len(rows) > 1 else None)
    lay = f"tp={s.tp}" + (f" x ep={s.ep}" if s.ep > 1 else "") + (f" over {s.nodes} nodes" if s.nodes > 1 else "")
    reps = f"{s.replicas:,} replica{'s' if s.replicas != 1 else ''}"
    lines = [f"{s.gpus:,} x {s.chip} ({reps} of {lay}), {engine} engine, batch up to {s.batch:,}: "
             f"TTFT p99 {s.ttft_s * 1e3:,.0f} ms, TPOT p99 {fixed(s.tpot_s * 1e3)} ms (simulated), "
             f"bottleneck: {s.bound}.",
             f"${sig(s.dollars_per_million_input)} per million input tokens, ${sig(s.dollars_per_million_output)} "
             f"per million output tokens ({s.output_tokens_per_s:,.0f} output tokens/s in all), {price}.",
             f"KV cache room: {s.kv_tokens_fit:,} tokens per replica; each replica gets "
             f"{s.replica_requests_per_s:,.2f} requests/s."]
    if s.load is not None:
        lines.append(f"Simulation: {s.load.bounds}; {s.load.slo_attainment:.1%} of requests met both targets.")
    lines.extend(s.problems)
    lines.append(s.checked)
    if len(rows) == 1:
        table = Table(("batch", "tokens/s per GPU", "TPOT (ms)", "bound"),
                      tuple((c["batch"], f"{c['tokens_per_s_per_gpu']:,.0f}", f"{c['tpot_ms']:,.1f}", c["bound"])
                            for c in r["curve"]))
    chart = charts.sweep(
        "Batching moves decode along the roofline: more tokens per weight read", r["curve"],
        x=charts.q("batch", "batch (sequences per replica)", log=True),
        y=charts.q("tokens_per_s_per_gpu", "decode tokens/s per GPU", log=True), points=True,
        tooltip=[charts.tip("batch"), charts.tip("tokens_per_s_per_gpu", fmt=",.0f"), charts.tip("tpot_ms", fmt=",.1f"),
                 charts.tip("bound", kind="nominal")]) if r["curve"] else None
    return View(text="\n".join(lines), table=table, chart=chart)


SERVE = register(Calc(
    key="plan.serve",
    widget="ServingPlanWidget",
    title="Serve a model: request rate and latency targets to GPUs, parallelism, bottleneck and $ per million tokens.",
    controls=(
        choice("model", "Model", _MODELS, "Llama-3 70B"),
        choice("offer", "GPUs and price", _SERVE_OFFERS, "H100 rent on demand (AWS p5)", width="30em"),
        Control("rps", "Requests/s", "number", 10.0, step=1.0),
        Control("prompt", "Prompt tokens (mean)", "int", 1000, step=100),
        Control("output", "Output tokens (mean)", "int", 200, step=50),
        Control("cv", "Length spread (cv)", "number", 0.0, step=0.25,
                help="coefficient of variation of prompt and output lengths (0: all equal; lognormal)"),
        Control("ttft_ms", "TTFT p99 target (ms)", "number", 1000.0, step=100.0),
        Control("tpot_ms", "TPOT p99 target (ms)", "number", 50.0, step=5.0),
        choice("engine", "Engine", _ENGINES, "cuda-graph", width="26em"),
        choice("dtype", "Weights and KV", _DTYPES, "bf16"),
        Control("chunk", "Chunked prefill (tokens, 0 = off)", "int", 0, step=256,
                help=f"each iteration's token budget: 0 (off) or at least {serving.CHUNK_MIN}; the batch is at most "
                     "the budget (vLLM's rule)"),
    ),
    compute=_serve_compute,
    view=_serve_view,
))

__all__ = ["COMPARE", "SERVE", "TCO", "TRAIN"]
