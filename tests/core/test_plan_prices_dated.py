"""Every price the book uses carries the date it was listed: prices move (AWS cut on-demand P5 prices by
up to 45% in June 2025, 'Announcing up to 45% price reduction for Amazon EC2 NVIDIA GPU-accelerated
instances', AWS What's New, 5 June 2025)."""

import re

from mlcalc import compute, plan


def test_every_offer_and_price_has_a_source_and_a_date():
    offers = plan.offers()
    assert offers
    for name, offer in offers.items():
        assert re.fullmatch(r"20\d\d(-[01]\d(-[0-3]\d)?)?", offer.date or ""), name
        assert offer.source, name
    for chip, row in ((k, v) for k, v in plan.data()["prices"].items() if k != "fields"):
        assert re.fullmatch(r"20\d\d-[01]\d-[0-3]\d", row["date"]), chip


def test_the_talk_price_is_dated():
    # Cockcroft's talk (2024): an AWS p5.48xlarge, 8 x H100, at about $100 an hour -> $12.50 per GPU-hour;
    # the planner's dated snapshot (November 2025) has it at about half after AWS's June 2025 cut.
    assert compute.COCKCROFT_P5_PRICE_DATE == "2024"
    assert compute.COCKCROFT_P5_PRICE_PER_HOUR / compute.COCKCROFT_P5_GPUS == 12.5
    row = plan.data()["prices"]["H100-SXM"]
    now = row["instance_per_hour"]["on_demand"] / row["gpus_per_instance"]
    assert 0.4 < now / 12.5 < 0.6  # "about half"
