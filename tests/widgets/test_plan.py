"""The planning widgets: thin shells over mlcalc.calculators.plan."""

from mlcalc import plan
from mlcalc.widgets import PlanCompareWidget, RentHpcBuyWidget, ServingPlanWidget, TrainingPlanWidget


def test_training_plan_widget_recomputes_on_change():
    w = TrainingPlanWidget()
    assert w.last_error == "" and "Cheapest plan" in w.last_view.text
    w._controls["deadline_days"].value = 0.5
    assert "deadline:" in w.last_view.text


def test_widgets_show_the_pure_numbers():
    w = RentHpcBuyWidget()
    c = plan.chip_info("H100-SXM")
    rent = plan.offers()["H100 rent on demand (AWS p5)"].price_per_gpu_hour  # $55.04 / 8 (2025-11-30)
    even = plan.break_even_utilization(33750, rent, c["board_power_w"], c["node_power_kw"])
    assert f"above {even:.0%} utilization" in w.last_view.text
    assert ServingPlanWidget().last_view.table.rows
    assert PlanCompareWidget().last_view.table.rows[0][0] == "gpus"
