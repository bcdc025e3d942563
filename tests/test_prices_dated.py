"""Every price the book uses carries the date it was listed: prices move (AWS cut on-demand P5 prices by
up to 45% in June 2025, 'Announcing up to 45% price reduction for Amazon EC2 NVIDIA GPU-accelerated
instances', AWS What's New, 5 June 2025)."""

import re

from mlcalc import compute, plan


def test_every_offer_has_a_source_and_a_date():
    offers = {k: v for k, v in plan.data()["offers"].items() if k != "fields"}
    assert offers
    for name, offer in offers.items():
        assert re.fullmatch(r"20\d\d(-[01]\d)?", offer.get("date", "")), name
        assert offer.get("source"), name


def test_the_talk_price_is_dated_and_is_the_offer_the_planner_uses():
    # Cockcroft's talk (2024): an AWS p5.48xlarge, 8 x H100, at about $100 an hour -> $12.50 per GPU-hour.
    assert compute.COCKCROFT_P5_PRICE_DATE == "2024"
    offer = plan.data()["offers"]["H100 rent (on demand, Cockcroft 2024)"]
    assert offer["price_per_gpu_hour"] == compute.COCKCROFT_P5_PRICE_PER_HOUR / compute.COCKCROFT_P5_GPUS == 12.5
    assert "June 2025" in offer["notes"]
