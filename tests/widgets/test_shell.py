"""The ipywidgets shells of the accelerator and network calculators show what run() computes."""

import html

import pytest

pytest.importorskip("ipywidgets")

from mlcalc import calc
from mlcalc import widgets
from mlcalc.widgets import CalcWidget

SHELLS = [getattr(widgets, name) for name in widgets.__all__
          if getattr(getattr(widgets, name), "calc", None) is not None
          and getattr(widgets, name).calc.key.startswith(("accelerators.", "network."))]


def test_every_calculator_has_a_shell_named_by_its_calc():
    # the classes are made from the registry: one per calculator, under the name its Calc gives
    made = {name: getattr(widgets, name) for name in widgets.__all__ if name not in ("CalcWidget", "widget_class")}
    assert {cls.calc.key for cls in made.values()} == set(calc.REGISTRY)
    assert all(issubclass(cls, CalcWidget) and cls.__name__ == name == cls.calc.widget for name, cls in made.items())
    assert len(SHELLS) == 16


@pytest.mark.parametrize("cls", SHELLS, ids=lambda c: c.__name__)
def test_shell_shows_what_run_computes(cls):
    w = cls()
    out = calc.run(cls.calc.key, w.values())
    assert out["ok"] and w.last_error == ""
    assert calc.view_plain(w.last_view) == out["text"] and w.last_view.chart == out["chart"]
    assert w.view_chart.outputs == (() if out["chart"] is None else (
        {"output_type": "display_data", "data": {"application/vnd.vegalite.v5+json": out["chart"]}, "metadata": {}},))


def test_offers_sliders_have_a_width_and_the_peak_clock_follows():
    w = widgets.OffersWidget()
    for i in (1, 2, 3):
        assert getattr(w, f"mfu_{i}").layout.min_width == "240px"  # three MFU sliders, none collapses to a bare handle
    p = widgets.PeakWidget(accelerator="Gaudi3")
    assert p.clock_mhz.value == 1750  # Intel's white paper: Gaudi 3's matrix engines at 1,750 MHz -> 1,835 TFLOPS
    assert p.last_result[1] / 1e12 == pytest.approx(1835, rel=0.001)


@pytest.mark.parametrize("cls", SHELLS, ids=lambda c: c.__name__)
def test_a_change_redraws(cls):
    w = cls()
    c = next(c for c in cls.calc.controls if c.kind in ("choice", "toggle") and len(c.options) > 1)
    other = next(v for v in c.values() if v != w.values()[c.key])
    getattr(w, c.key).value = other  # speed is measured by scripts/benchmark.py, not here
    assert w.last_error == "" or w.message.value


@pytest.mark.parametrize("cls", SHELLS[:3] + SHELLS[-2:], ids=lambda c: c.__name__)
def test_unrun_notebook_shows_a_readable_snapshot(cls):
    # JupyterLab draws text/html where the widget cannot be drawn (a notebook opened before it runs,
    # or untrusted): the calculator's title, text and table, not a dump of the chart's JSON rows
    w = cls()
    snap = w._repr_mimebundle_()["text/html"]
    assert cls.calc.title.split()[0] in snap and "run the cell to make it live" in snap
    assert '{"' not in snap  # no JSON rows
    if w.last_view.text:
        assert html.escape(w.last_view.text.splitlines()[0]) in snap


def test_snapshot_escapes_markup():
    from mlcalc.widgets._base import html_snapshot

    out = html_snapshot("<b>t</b>", calc.View(text="<script>x</script>"), error="<i>e</i>")
    assert "<script>" not in out and "&lt;script&gt;" in out and "&lt;b&gt;" in out and "&lt;i&gt;" in out
