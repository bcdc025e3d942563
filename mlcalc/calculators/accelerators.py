"""Accelerator calculators: catalogue, compare, peak, training cost, FLOPs, offers, MFU, roofline, shapes.

Standard library only (runs in the reader's browser too). Each calculator is ``compute`` (mlcalc
functions only) and ``view`` (text, a small table, a Vega-Lite chart as a dict).
"""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple

from mlcalc import _check, accelerators, charts, compute, models
from mlcalc.accelerators import catalogue, spec
from mlcalc.calc import Calc, Control, Presets, Table, View, choice, register
from mlcalc.calculators._common import accelerator_control, money, sig

VENDOR_COLORS = {"NVIDIA": "#76b900", "AMD": "#ed1c24", "Intel": "#0071c5", "Google": "#fbbc04", "AWS": "#8c564b"}
CHINCHILLA_CITE = "Hoffmann et al. 2022"


def _fmt(x: float | None, digits: int = 0) -> str:
    return "n/a" if x is None else f"{x:,.{digits}f}"


def _price(p: float) -> str:
    """A price per GPU-hour with its currency sign: "$12.50"."""
    return f"${p:,.2f}"


def dtype_control(default: str = "bf16") -> Control:
    """The dtypes that at least one accelerator of the catalogue has a dense figure for (no dead option)."""
    present = {d for a in catalogue().values() for d in a.dense_tflops}
    return choice("dtype", "dtype", [d for d in accelerators.DTYPES if d in present], default)


def source_control(default: str = "advertised") -> Control:
    return choice("source", "FLOPS source", list(compute.flops_sources()), default, kind="toggle",
                  help="advertised (datasheet, dense) or a measured table")


# --------------------------------------------------------------------------- catalogue

def _catalogue_compute(v: Mapping[str, Any]) -> list[compute.CatalogueRow]:
    return compute.catalogue_rows(v["dtype"], v["source"], v["sort_by"])


def _catalogue_view(rows: list[compute.CatalogueRow], v: Mapping[str, Any]) -> View:
    dtype, source = v["dtype"], v["source"]
    table = Table(
        ("accelerator", "vendor", f"{dtype} dense {accelerators.rate_unit(dtype)} ({source})", "memory GB", "memory TB/s",
         "scale-up GB/s (one direction)", "ops:byte"),
        tuple((r.key, r.vendor, _fmt(r.tflops, 1), _fmt(r.memory_gb), _fmt(r.bandwidth_tbps, 2),
               _fmt(r.scale_up_gbps, 1), _fmt(r.ridge_flops_per_byte)) for r in rows),
    )
    # Chips with identical figures share one dot and one label ("GB200 / MI355X").
    points: dict[tuple[float, float], dict[str, Any]] = {}
    for r in rows:
        p = points.setdefault((r.bandwidth_tbps, r.tflops),
                              {"tbps": r.bandwidth_tbps, "tflops": r.tflops, "vendor": r.vendor, "names": []})
        p["names"].append(r.key)
    data = [{"tbps": p["tbps"], "tflops": p["tflops"], "vendor": p["vendor"], "label": " / ".join(p["names"])}
            for p in points.values()]
    vendors = [name for name in VENDOR_COLORS if any(r.vendor == name for r in rows)]
    x_dom = [min(d["tbps"] for d in data) / 1.25, max(d["tbps"] for d in data) * 1.6]
    y_dom = [min(d["tflops"] for d in data) / 1.3, max(d["tflops"] for d in data) * 1.3]
    spec_ = charts.labelled_scatter(
        f"Compute against memory bandwidth ({source})", data,
        x=charts.q("tbps", "memory bandwidth, TB/s (log)", log=True, domain=x_dom, nice=False),
        y=charts.q("tflops", f"dense {dtype} {accelerators.rate_unit(dtype)} (log)", log=True, domain=y_dom, nice=False),
        color_by="vendor", colors={n: VENDOR_COLORS[n] for n in vendors}, height=300,
        tooltip=[charts.tip("label", "accelerator", kind="nominal"), charts.tip("tflops", "dense peak", ",.1f"),
                 charts.tip("tbps", "TB/s", ",.2f")])
    charts.live_axis(spec_, "y", "title")  # the dtype's name: changed in place
    n = len(rows)
    text = f"{n} accelerators with a {dtype} figure ({source}), sorted by {compute.SORT_KEYS[v['sort_by']]}"
    return View(text=text, table=table, chart=spec_)


CATALOGUE = register(Calc(
    key="accelerators.catalogue",
    widget="CatalogueWidget",
    title="The accelerator catalogue: pick a dtype and a FLOPS source, sort, see compute against bandwidth.",
    controls=(
        dtype_control(),
        choice("sort_by", "sort by", [(label, key) for key, label in compute.SORT_KEYS.items()], "tflops"),
        source_control(),
    ),
    compute=_catalogue_compute,
    view=_catalogue_view,
))

# --------------------------------------------------------------------------- compare two chips


class CompareRow(NamedTuple):
    """One figure of two accelerators side by side."""

    label: str  # what the figure is, with its unit
    a: str  # chip A's figure, formatted ("n/a" if it has none)
    b: str  # chip B's figure, formatted
    ratio: str  # b / a as "1.23x" ("n/a" if either lacks it)
    ratio_value: float | None  # b / a as a number (None if either lacks it)


def compare_rows(key_a: str, key_b: str, source: str = "advertised") -> list[CompareRow]:
    """Side-by-side figures of two accelerators with the ratio b / a (n/a where either lacks one)."""
    a, b = spec(key_a), spec(key_b)
    _check.choice("source", source, compute.flops_sources())
    rows: list[CompareRow] = []

    def add(label: str, x: float | None, y: float | None, digits: int = 1) -> None:
        r = None if x is None or y is None or x == 0 else y / x
        rows.append(CompareRow(label, _fmt(x, digits), _fmt(y, digits), "n/a" if r is None else f"{r:.2f}x", r))

    for dtype in accelerators.DTYPES:
        fa = compute.achievable_flops(key_a, dtype, source) / 1e12 if compute.has_flops(key_a, dtype, source) else None
        fb = compute.achievable_flops(key_b, dtype, source) / 1e12 if compute.has_flops(key_b, dtype, source) else None
        if fa is not None or fb is not None:
            add(f"{dtype} dense {accelerators.rate_unit(dtype)} ({source})", fa, fb)
    add("memory GB", a.memory_gb, b.memory_gb, 0)
    add("memory TB/s", a.memory_bandwidth_tbps, b.memory_bandwidth_tbps, 2)
    la, lb = a.scale_up_bytes_per_s, b.scale_up_bytes_per_s
    add("scale-up GB/s, one direction", None if la is None else la / 1e9, None if lb is None else lb / 1e9)
    return rows


def _compare_compute(v: Mapping[str, Any]) -> list[CompareRow]:
    return compare_rows(v["a"], v["b"], v["source"])


def _compare_view(rows: list[CompareRow], v: Mapping[str, Any]) -> View:
    table = Table(("figure", v["a"], v["b"], "B / A"), tuple((r.label, r.a, r.b, r.ratio) for r in rows))
    data = [{"figure": r.label, "ratio": r.ratio_value, "order": i} for i, r in enumerate(rows)
            if r.ratio_value is not None]
    spec_ = charts.bars(
        f"{v['b']} / {v['a']}, figure by figure (1 = equal)", data, name="figure", sort=[str(d["figure"]) for d in data],
        x=charts.q("ratio", "B / A"),
        tooltip=[charts.tip("figure", kind="nominal"), charts.tip("ratio", fmt=".2f")],
        extra=[charts.line([{"ratio": 1.0}], along="x", field="ratio")], rows_vary=True)
    return View(table=table, chart=spec_ if data else None)


_KEYS = list(catalogue())

COMPARE = register(Calc(
    key="accelerators.compare",
    widget="CompareWidget",
    title="Two accelerators side by side, with the ratio of every figure.",
    controls=(
        choice("a", "chip A", _KEYS, "A100-80GB"),
        choice("b", "chip B", _KEYS, "H100-SXM"),
        source_control(),
    ),
    compute=_compare_compute,
    view=_compare_view,
))

# --------------------------------------------------------------------------- peak from first principles


def _peak_compute(v: Mapping[str, Any]) -> tuple[accelerators.PeakRecipe, float]:
    r = accelerators.recipe(v["accelerator"])
    return r, r.flops(clock_mhz=v["clock_mhz"])


def _peak_view(result: tuple[accelerators.PeakRecipe, float], v: Mapping[str, Any]) -> View:
    r, flops = result
    sheet = spec(r.key).peak_flops(r.dtype)
    text = (f"{float(v['clock_mhz']):,.0f} MHz x {r.units:,} {r.unit_name} x "
            f"{r.fma_per_unit_per_clock:,.0f} FMA/clock x 2 "
            f"= {flops / 1e12:,.1f} TFLOPS {r.dtype}\n"
            f"datasheet: {sheet / 1e12:,.1f} TFLOPS -> formula / datasheet = {flops / sheet:.3f}")
    return View(text=text)


PEAK = register(Calc(
    key="accelerators.peak",
    widget="PeakWidget",
    title="Clock x units x FMA per clock x 2: check a vendor's peak, or see what a lower clock costs.",
    controls=(
        choice("accelerator", "accelerator", list(accelerators.recipes()), "H100-SXM"),
        Control("clock_mhz", "clock MHz", "number", accelerators.recipe("H100-SXM").clock_mhz, step=10.0,
                help="compute clock, MHz"),
    ),
    compute=_peak_compute,
    view=_peak_view,
    # A chip brings its own clock; a clock typed by hand keeps the chip.
    presets=(Presets("accelerator", {k: {"clock_mhz": r.clock_mhz} for k, r in accelerators.recipes().items()}),),
))

# --------------------------------------------------------------------------- training cost

BUDGET_OPTIONS = [("tokens (B)", "tokens"), ("tokens per parameter", "ratio")]


CUSTOM_MODEL = "custom"  # the model choice when the reader types the parameters


def model_params_b(name: str) -> float:
    """Parameters a token meets in a model preset (the active ones of a mixture of experts), billions."""
    return round(models.preset(name).n_active_params() / 1e9, 2)


def model_presets() -> Presets:
    """A model preset (mlcalc.models) fills in its parameters; typing another number makes it custom."""
    return Presets("model", {name: {"n_params_billion": model_params_b(name)} for name in models.presets()},
                   custom=CUSTOM_MODEL)


def budget_controls() -> tuple[Control, ...]:
    """The run's size: a model (or its parameters), and tokens typed or as a budget per parameter (Chinchilla's 20)."""
    return (
        choice("model", "model", [("custom (type the parameters)", CUSTOM_MODEL), *models.presets()], CUSTOM_MODEL,
               help="a model of mlcalc.models fills in its parameters (active ones for a mixture of experts)"),
        Control("n_params_billion", "params (B)", "number", 7.0, step=1.0,
                help="parameters each token meets, billions (6 N D counts these)"),
        choice("budget", "tokens from", BUDGET_OPTIONS, "tokens", kind="toggle"),
        Control("n_tokens_billion", "tokens (B)", "number", 319.5, step=10.0, help="training tokens, billions"),
        Control("tokens_per_param", "tokens per param", "number", compute.CHINCHILLA_TOKENS_PER_PARAM, step=1.0,
                help=f"tokens per parameter; about 20 is compute-optimal ({CHINCHILLA_CITE})"),
    )


def run_tokens(v: Mapping[str, Any]) -> tuple[float, float]:
    """Parameters and training tokens of the reader's run (tokens typed, or params x tokens per param)."""
    n_params = _check.positive("params (B)", v["n_params_billion"]) * 1e9
    if v["budget"] == "ratio":
        ratio = _check.positive("tokens per param", v["tokens_per_param"])
        return n_params, compute.tokens_from_budget(n_params, ratio)
    return n_params, _check.positive("tokens (B)", v["n_tokens_billion"]) * 1e9


def tokens_line(n_params: float, n_tokens: float, v: Mapping[str, Any]) -> str:
    """One line saying the size of the run, and where its tokens come from."""
    ratio = n_tokens / n_params
    how = (f"{float(v['tokens_per_param']):g} tokens per parameter" if v["budget"] == "ratio"
           else f"{ratio:,.1f} tokens per parameter")
    name = f"{v['model']}: " if v.get("model", CUSTOM_MODEL) != CUSTOM_MODEL else ""
    return (f"model {name}{n_params / 1e9:,.3g} B parameters, {n_tokens / 1e9:,.4g} B tokens ({how}; "
            f"compute-optimal is about {compute.CHINCHILLA_TOKENS_PER_PARAM:g}, {CHINCHILLA_CITE})")


MFU_GRID = [round(0.1 + 0.01 * i, 2) for i in range(81)]  # 10% to 90%: a fixed sweep


def _training_cost_compute(v: Mapping[str, Any]) -> tuple[float, float, compute.RunCost]:
    n_params, n_tokens = run_tokens(v)
    total = compute.training_flops(n_params, n_tokens, bool(v["recompute"]))
    peak = compute.achievable_flops(v["accelerator"], v["dtype"], v["source"])
    return total, peak, compute.run_cost(total, v["n_gpus"], peak, v["mfu"], v["price_per_gpu_hour"])


def _training_cost_view(result: tuple[float, float, compute.RunCost], v: Mapping[str, Any]) -> View:
    total, peak, rc = result
    n_params, n_tokens = run_tokens(v)
    n, price, u = int(v["n_gpus"]), float(v["price_per_gpu_hour"]), float(v["mfu"])
    rule = "8ND, with recomputation" if v["recompute"] else "6ND"
    text = "\n".join([
        tokens_line(n_params, n_tokens, v),
        f"run: {total:.3g} FLOP ({rule})",
        f"each {v['accelerator']}: {peak / 1e12:,.1f} dense TFLOPS ({v['source']}) x MFU {u:.0%}"
        f" = {rc.achieved_flops_per_gpu / 1e12:,.1f} TFLOPS",
        f"on {n:,}: {sig(rc.days)} days, {rc.gpu_hours:,.0f} GPU-hours, "
        f"cost {money(rc.cost)} at {_price(price)}/GPU-hour",
    ])
    per_day = n * 24 * price  # money per day of the run: cost is days x this, the same curve on another scale
    curve = []
    for x in MFU_GRID:
        days = compute.training_time_s(total, n, peak, x) / compute.SECONDS_PER_DAY
        curve.append({"mfu": x * 100, "days": days, "cost": days * per_day})
    top = max([c["days"] for c in curve] + [rc.days]) * 1.05
    here = {"mfu": u * 100, "days": rc.days, "cost": rc.cost, "label": f"{u:.0%}: {rc.days:,.1f} days, {money(rc.cost)}"}
    # Two y axes for one curve (cost = days x GPUs x 24 h x price): independent scales with explicit,
    # proportional domains, so the invisible cost line lies exactly under the days line.
    spec_ = charts.sweep(
        f"{n:,} x {v['accelerator']}, {v['dtype']} {v['source']}: days and cost against MFU", curve,
        x=charts.q("mfu", "MFU, % of the chosen peak"), y=charts.q("days", "days", domain=[0, top], nice=False), color=charts.PALETTE[0], height=240,
        tooltip=[charts.tip("mfu", "MFU %"), charts.tip("days", fmt=",.2f"), charts.tip("cost", "cost ($)", "$,.0f")],
        twin=charts.q("cost", f"cost at {_price(price)}/GPU-hour", domain=[0, charts.clean(top * per_day) or 1],
                      nice=False, axis={"orient": "right", "format": "$.3~s"}),
        extra=[charts.point(here, charts.q("mfu"), charts.q("days", domain=[0, top], nice=False, axis=None),
                            color=charts.PALETTE[3], label="label")])
    charts.live_axis(spec_, "y", "title", layer=1)  # the price: changed in place
    return View(text=text, chart=spec_)


def budget_inactive(values: Mapping[str, Any]) -> set[str]:
    """The token input the reader is not using (tokens typed, or tokens per parameter)."""
    return {"tokens_per_param"} if values.get("budget") == "tokens" else {"n_tokens_billion"}


TRAINING_COST = register(Calc(
    key="accelerators.training_cost",
    widget="TrainingCostWidget",
    title="FLOPs of a run (6ND or 8ND), then days, GPU-hours and cost on G accelerators at an MFU and a price.",
    controls=(
        *budget_controls(),
        Control("recompute", "recompute (8ND)", "check", False),
        accelerator_control(),
        dtype_control(),
        Control("n_gpus", "GPUs", "int", 160, step=8),
        Control("mfu", "MFU", "slider", 0.4, min=0.05, max=1.0, step=0.01, help="fraction of the chosen peak"),
        Control("price_per_gpu_hour", "$/GPU-hour", "number", 12.5, step=0.5,
                help="price of one accelerator for one hour, $"),
        source_control(),
    ),
    compute=_training_cost_compute,
    view=_training_cost_view,
    inactive=budget_inactive,
    presets=(model_presets(),),
))

# --------------------------------------------------------------------------- FLOPs of one iteration


def _flops_compute(v: Mapping[str, Any]) -> compute.IterationFlops:
    for key in ("layers", "hidden", "vocab"):
        _check.positive_int(key, v[key])
    # Eq. 2 and 3 see a GPT layer: only the layers, the width and the vocabulary enter.
    model = models.preset(_GPT3_NAME).replace(name="GPT", n_layers=v["layers"], hidden=v["hidden"],
                                              vocab=v["vocab"])
    return compute.gpt_iteration_flops(model, v["batch"], v["seq_len"], bool(v["recompute"]))


def _flops_view(r: compute.IterationFlops, v: Mapping[str, Any]) -> View:
    rule = 8 if v["recompute"] else 6
    text = (f"parameters (eq. 2): {r.n_params / 1e9:,.1f} B\n"
            f"FLOP per iteration: {r.flops:.3e}  ({r.flops_per_token:.3e} per token)\n"
            f"per token / parameters = {r.ratio_to_n:.2f}  (the simple rule says {rule}; "
            f"attention is {r.attention_share:.1%} of the layer FLOPs)")
    return View(text=text)


def _flops_preset(name: str) -> dict[str, Any]:
    """What a preset fills in: its layers, hidden size and vocabulary, Megatron's sequence length, its batch."""
    c = models.preset(name)
    return {"layers": c.n_layers, "hidden": c.hidden, "vocab": c.vocab, "seq_len": compute.MEGATRON_SEQ_LEN,
            "batch": compute.MEGATRON_BATCH[name]}


_GPT3_NAME = "GPT-3 175B"
_GPT3 = models.preset(_GPT3_NAME)
CUSTOM = "custom"  # the preset choice when the reader's own numbers no longer match a preset

FLOPS = register(Calc(
    key="accelerators.flops",
    widget="FlopsWidget",
    title="FLOPs of one iteration of a GPT model (Narayanan et al. 2021, eq. 3), against the 6N / 8N rules.",
    controls=(
        choice("preset", "preset", [*compute.MEGATRON_BATCH, ("custom", CUSTOM)], _GPT3_NAME),
        Control("recompute", "full recomputation", "check", True),
        Control("layers", "layers", "int", _GPT3.n_layers),
        Control("hidden", "hidden", "int", _GPT3.hidden),
        Control("vocab", "vocab", "int", _GPT3.vocab),
        Control("seq_len", "seq len", "int", compute.MEGATRON_SEQ_LEN),
        Control("batch", "batch", "int", compute.MEGATRON_BATCH[_GPT3_NAME], help="global batch, sequences"),
    ),
    compute=_flops_compute,
    view=_flops_view,
    # A preset fills in its shape and batch; editing one of them by hand makes the preset "custom".
    presets=(Presets("preset", {name: _flops_preset(name) for name in compute.MEGATRON_BATCH}, custom=CUSTOM),),
))

# --------------------------------------------------------------------------- offers

N_OFFERS = 3  # the calculator compares a fixed number of offers
DEFAULT_OFFERS = (("H100-SXM", 64, 3.0, 0.4), ("A100-80GB", 192, 1.0, 0.4), ("MI300X", 64, 2.5, 0.3))


def offer_controls(i: int, accelerator: str, n_gpus: int, price: float, mfu: float) -> tuple[Control, ...]:
    return (
        accelerator_control(accelerator, key=f"accelerator_{i}", label=f"offer {i}"),
        Control(f"n_gpus_{i}", f"GPUs ({i})", "int", n_gpus, step=8),
        Control(f"price_{i}", f"$/GPU-hour ({i})", "number", price, step=0.25),
        Control(f"mfu_{i}", f"MFU ({i})", "slider", mfu, min=0.05, max=1.0, step=0.01),
    )


class OffersResult(NamedTuple):
    """The offers compared, and those left out because the chosen peak has no figure for their chip."""

    results: list[compute.OfferResult]  # the offers with a figure, in the reader's order
    missing: tuple[str, ...]  # "offer 2: A100-80GB" for each offer the source has no figure for


def _offers_compute(v: Mapping[str, Any]) -> OffersResult:
    n_params, n_tokens = run_tokens(v)
    total = compute.training_flops(n_params, n_tokens)
    offers = [compute.ClusterOffer(f"{v[f'n_gpus_{i}']} x {v[f'accelerator_{i}']}", v[f"accelerator_{i}"], v[f"n_gpus_{i}"],
                            v[f"price_{i}"], v[f"mfu_{i}"], dtype=accelerators.training_dtype(v[f"accelerator_{i}"]),
                            flops_source=v["source"]) for i in range(1, N_OFFERS + 1)]
    results, missing = [], []
    for i, offer in enumerate(offers, 1):
        # A measured table holds a few chips: an offer on another chip is left out and named, the others
        # are still compared (the datasheet source has every chip).
        if v["source"] != compute.ADVERTISED and (offer.accelerator, offer.dtype) not in compute.flops_keys(v["source"]):
            missing.append(f"offer {i}: {offer.accelerator}")
            continue
        results.extend(compute.compare_offers(total, [offer]))
    if not results:
        raise ValueError(f"source={v['source']!r} is not allowed for these offers: its table has no figure for "
                         f"{', '.join(o.accelerator for o in offers)}; choose an offer on "
                         f"{', '.join(sorted({k for k, _ in compute.flops_keys(v['source'])}))}")
    return OffersResult(results, tuple(missing))


def _offers_view(r: OffersResult, v: Mapping[str, Any]) -> View:
    results = r.results
    n_params, n_tokens = run_tokens(v)
    table = Table(
        ("offer", "GPUs", "TFLOPS each", "MFU", "price/GPU-hour", "days", "GPU-hours", "cost"),
        tuple((r.offer.name, f"{r.offer.n_gpus:,}", _fmt(r.peak_flops_per_gpu / 1e12, 1), f"{r.offer.mfu:.0%}",
               _price(r.offer.price_per_gpu_hour), sig(r.time_s / 86400), _fmt(r.gpu_hours), money(r.cost))
              for r in results),
    )
    data = [{"offer": f"{i + 1}: {r.offer.name}", "days": r.time_s / 86400, "cost": r.cost,
             "label": f"{r.time_s / 86400:,.1f} days, {money(r.cost)}"} for i, r in enumerate(results)]
    # Light bars keep dark text readable inside and outside them.
    spec_ = charts.bars(
        f"The same run on each offer: days (bars) and cost ({v['source']} peak)", data, name="offer",
        x=charts.q("days", "days", zero=True), bar_color="#a8bcdc", labels="start",
        tooltip=[charts.tip("offer", kind="nominal"), charts.tip("days", fmt=",.2f"),
                 charts.tip("cost", "cost ($)", "$,.0f")], rows_vary=True)
    text = tokens_line(n_params, n_tokens, v)
    if r.missing:
        text += f"\nleft out, no {v['source']} figure for their chip: {'; '.join(r.missing)}"
    return View(text=text, table=table, chart=spec_)


OFFERS = register(Calc(
    key="accelerators.offers",
    widget="OffersWidget",
    title="The same run on three offers: accelerator, count, price and MFU each.",
    controls=(
        *(c if c.key != "n_tokens_billion"
          else Control("n_tokens_billion", c.label, c.kind, 300.0, step=c.step, help=c.help)
          for c in budget_controls()),
        source_control(),
        *(c for i, o in enumerate(DEFAULT_OFFERS, 1) for c in offer_controls(i, *o)),
    ),
    compute=_offers_compute,
    view=_offers_view,
    inactive=budget_inactive,
    presets=(model_presets(),),
))

# --------------------------------------------------------------------------- MFU


def _mfu_compute(v: Mapping[str, Any]) -> tuple[float, float]:
    peak = compute.achievable_flops(v["accelerator"], v["dtype"], v["source"])
    if v["mode"] == "iteration":
        u = compute.mfu(_check.positive("TFLOP/iter", v["tflop_per_iteration"]) * 1e12, v["iteration_time_s"], peak,
                        v["n_gpus"])
    else:
        n_params = _check.positive("params (B)", v["n_params_billion"]) * 1e9
        u = compute.mfu_from_tokens(v["tokens_per_s"], compute.FLOPS_PER_PARAM_TOKEN * n_params, peak, v["n_gpus"])
    return u, peak


def _mfu_view(result: tuple[float, float], v: Mapping[str, Any]) -> View:
    u, peak = result
    if u > 1:  # a share of the peak cannot pass 100%: say so instead of printing it
        return View(text=f"achieved {u * peak / 1e12:,.1f} TFLOPS per GPU, more than the peak of {peak / 1e12:,.1f} "
                         f"({v['source']}): impossible, MFU cannot pass 100%. The FLOP count or the time is wrong, "
                         "or the peak is for another dtype.")
    lines = [f"achieved {u * peak / 1e12:,.1f} TFLOPS per GPU of {peak / 1e12:,.1f} ({v['source']}): MFU = {u:.1%}"]
    if v["recompute"]:  # the hardware also runs the forward pass again: 8N instead of 6N per token
        hfu = u * 8 / 6
        lines.append(f"with full recomputation the hardware does 8/6 as much: HFU = {hfu:.1%}" if hfu <= 1 else
                     "with full recomputation the hardware would do 8/6 as much: more than its peak, impossible")
    if u > 0:
        lines.append(f"a run planned at 100% of this peak takes {sig(1 / u)}x as long at this MFU")
    return View(text="\n".join(lines))


def mfu_inactive(values: Mapping[str, Any]) -> set[str]:
    """Per iteration: tokens/s and params do not count; from tokens/s: TFLOP and seconds per iteration do not."""
    return ({"tokens_per_s", "n_params_billion"} if values.get("mode") == "iteration"
            else {"tflop_per_iteration", "iteration_time_s"})


MFU = register(Calc(
    key="accelerators.mfu",
    widget="MfuWidget",
    title="MFU from FLOP per iteration and its time, or from tokens per second.",
    controls=(
        choice("mode", "MFU from", [("per iteration", "iteration"), ("tokens/s", "tokens")], "iteration",
               kind="toggle"),
        Control("tflop_per_iteration", "TFLOP/iter", "number", 624.0, step=1.0,
                help="model FLOP per iteration, TFLOP (1e12)"),
        Control("iteration_time_s", "s/iter", "number", 4.0, step=0.1, help="seconds per iteration"),
        Control("tokens_per_s", "tokens/s", "number", 3000.0, step=100.0, help="tokens per second, all GPUs"),
        Control("n_params_billion", "params (B)", "number", 7.0, step=1.0,
                help="parameters, billions (6N FLOP per token)"),
        accelerator_control("A100-80GB"),
        dtype_control(),
        Control("n_gpus", "GPUs", "int", 1),
        Control("recompute", "full recomputation (for HFU)", "check", False),
        source_control(),
    ),
    compute=_mfu_compute,
    view=_mfu_view,
    inactive=mfu_inactive,
))

# --------------------------------------------------------------------------- roofline


class RooflineResult(NamedTuple):
    """Where an operation sits on an accelerator's roofline."""

    point: compute.RooflinePoint  # the operation's intensity, attainable FLOP/s, bound
    label: str  # what the operation is ("8192x128x8192", "decode, batch 1")
    decode: compute.DecodeBound | None  # decode's tokens/s bound (None for a matmul)


def _roofline_compute(v: Mapping[str, Any]) -> RooflineResult:
    key, dtype = v["accelerator"], v["dtype"]
    peak = compute.achievable_flops(key, dtype, v["source"])
    bw = spec(key).memory_bandwidth_bytes_per_s
    if v["mode"] == "matmul":
        i = compute.matmul_intensity(v["m"], v["n"], v["k"], dtype)
        return RooflineResult(compute.roofline(i, peak, bw), f"{v['m']}x{v['n']}x{v['k']}", None)
    bpp = compute.DTYPE_BYTES[dtype]
    i = compute.decode_intensity(v["batch"], bpp)
    bound = compute.decode_bound(_check.positive("params (B)", v["n_params_billion"]) * 1e9, bw, peak, v["batch"], bpp)
    return RooflineResult(compute.roofline(i, peak, bw), f"decode, batch {v['batch']}", bound)


def _roofline_view(r: RooflineResult, v: Mapping[str, Any]) -> View:
    point, label = r.point, r.label
    peak = point.ridge_intensity * spec(v["accelerator"]).memory_bandwidth_bytes_per_s  # the chosen peak, FLOP/s
    bw = spec(v["accelerator"]).memory_bandwidth_bytes_per_s
    lines = [f"{label}: {point.intensity:,.1f} FLOP/B against a ridge of {point.ridge_intensity:,.0f}: "
             f"{point.bound}-bound, at most {point.attainable_flops / 1e12:,.0f} TFLOPS ({point.fraction_of_peak:.0%})"]
    if r.decode is not None:
        lines.append(f"decode upper bound: {r.decode.tokens_per_s:,.0f} tokens/s in all, "
                     f"{r.decode.tokens_per_s_per_sequence:,.1f} per sequence (weights only, no KV cache)")
    ridge = point.ridge_intensity
    lo = min(1.0, point.intensity / 3)
    hi = max(ridge * 30, point.intensity * 3)
    roof = [{"i": x, "tflops": min(peak, x * bw) / 1e12} for x in (lo, ridge, hi)]
    here: list[dict[str, Any]] = [{"i": point.intensity, "tflops": point.attainable_flops / 1e12, "bound": f"{point.bound}-bound",
             "label": f"{label}\n{point.fraction_of_peak:.0%} of peak"}]  # the dot's colour tells the bound
    ridge_label = f"ridge {ridge:,.0f} FLOP/B"
    x = charts.q("i", "arithmetic intensity, FLOP per byte (log)", log=True)
    y = charts.q("tflops", f"attainable {v['dtype']} {accelerators.rate_unit(v['dtype'])} (log)", log=True)
    spec_ = charts.sweep(
        f"{v['accelerator']}: {peak / 1e12:,.0f} TFLOPS ({v['source']}), {bw / 1e12:.2f} TB/s", roof, x=x, y=y,
        color="black", height=240,
        extra=[charts.marker_text([{"i": ridge, "label": ridge_label}], charts.q("i")),
               charts.point(here[0], charts.q("i"), charts.q("tflops"), label="label", below=True, by="bound",
                            colors={"memory-bound": charts.PALETTE[3], "compute-bound": charts.PALETTE[2]})])
    charts.live_axis(spec_, "y", "title")  # the dtype's name: changed in place
    return View(text="\n".join(lines), chart=spec_)


def roofline_inactive(values: Mapping[str, Any]) -> set[str]:
    """A matmul has no batch or model size; a decoding step has no M, N, K."""
    return {"batch", "n_params_billion"} if values.get("mode") == "matmul" else {"m", "n", "k"}


ROOFLINE = register(Calc(
    key="accelerators.roofline",
    widget="RooflineWidget",
    title="A matmul (M, N, K) or an LLM decoding step (batch) on an accelerator's roofline.",
    controls=(
        accelerator_control(),
        dtype_control(),
        choice("mode", "operation", [("matmul", "matmul"), ("LLM decode", "decode")], "matmul", kind="toggle"),
        Control("m", "M", "int", 8192),
        Control("n", "N", "int", 128),
        Control("k", "K", "int", 8192),
        Control("batch", "batch", "int", 1, help="sequences decoded together"),
        Control("n_params_billion", "params (B)", "number", 70.0, step=1.0, help="parameters, billions"),
        source_control(),
    ),
    compute=_roofline_compute,
    view=_roofline_view,
    inactive=roofline_inactive,
))

# --------------------------------------------------------------------------- shape efficiency

TILES = ("256x128", "128x256", "128x128", "64x128")
N_POINTS = 201  # the sweep over N has this many points, whatever the span


def _tile(value: str) -> tuple[int, int]:
    _check.choice("tile", value, TILES)
    tm, tn = value.split("x")
    return int(tm), int(tn)


class ShapeResult(NamedTuple):
    """Tile and wave quantization around one N."""

    ns: list[int]  # the N values swept (at most N_POINTS)
    here: compute.ShapeEfficiency  # at the reader's N
    n_sms: int  # SMs of the GPU
    curve: list[compute.ShapeEfficiency]  # one per N in ns


def _shape_compute(v: Mapping[str, Any]) -> ShapeResult:
    n_sms = spec(v["accelerator"]).sm_count or 0
    tm, tn = _tile(v["tile"])
    center = _check.positive_int("n", v["n_center"])
    span = _check.positive_int("± N", v["span"])
    here = compute.matmul_shape_efficiency(v["m"], center, v["k"], n_sms, tm, tn)
    lo = max(1, center - span)
    step = max(1, (center + span - lo) // (N_POINTS - 1))
    ns = [lo + i * step for i in range(N_POINTS) if lo + i * step <= center + span]
    curve = compute.matmul_shape_efficiencies(v["m"], ns, v["k"], n_sms, tm, tn)
    return ShapeResult(ns, here, n_sms, curve)


def _shape_view(r: ShapeResult, v: Mapping[str, Any]) -> View:
    here, center = r.here, int(v["n_center"])
    text = (f"N={center:,}: {here.tiles:,} tiles in {here.waves:,} waves of {here.wave_size}; "
            f"tile {here.tile_efficiency:.1%} x wave {here.wave_efficiency:.1%} = {here.efficiency:.1%}"
            + ("" if here.aligned else "; not a multiple of 8 elements: Tensor Cores run less efficiently still"))
    data = []
    for n, e in zip(r.ns, r.curve):
        data.append({"n": n, "pct": e.efficiency * 100, "series": "tile x wave"})
        data.append({"n": n, "pct": e.wave_efficiency * 100, "series": "wave only"})
    mark = {"n": center, "pct": here.efficiency * 100, "label": f"N={center}: {here.efficiency:.1%}"}
    spec_ = charts.sweep(
        f"M={v['m']}, K={v['k']}, {v['tile']} tiles, {r.n_sms} SMs ({v['accelerator']})", data,
        x=charts.q("n", "N"), y=charts.q("pct", "useful work, %", zero=False), series="series", width=1.5,
        height=240,
        extra=[charts.point(mark, charts.q("n"), charts.q("pct", zero=False), color=charts.PALETTE[3], size=70,
                            label="label", below=True)])
    return View(text=text, chart=spec_)


SHAPE_EFFICIENCY = register(Calc(
    key="accelerators.shape_efficiency",
    widget="ShapeEfficiencyWidget",
    title="Tile and wave quantization: efficiency of a GEMM against N on a GPU's SM count.",
    controls=(
        choice("accelerator", "GPU", [a.key for a in catalogue().values() if a.sm_count], "H100-SXM"),
        choice("tile", "tile", TILES, "256x128"),
        Control("m", "M", "int", 8192),
        Control("k", "K", "int", 8192),
        Control("n_center", "N around", "int", 8192),
        Control("span", "± N", "int_slider", 1024, min=64, max=8192, step=64),
    ),
    compute=_shape_compute,
    view=_shape_view,
))


__all__ = ["CATALOGUE", "COMPARE", "FLOPS", "MFU", "OFFERS", "PEAK", "ROOFLINE",
           "SHAPE_EFFICIENCY",
           "TRAINING_COST", "CompareRow", "RooflineResult", "ShapeResult", "compare_rows", "run_tokens"]
