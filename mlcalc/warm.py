"""Run every calculator once, so that what a first change would pay is paid before a reader changes anything.

The site's Python starts from a memory snapshot (scripts/make_snapshot.mjs, made at ``make book``): what
ran before the snapshot was taken is in it. :func:`warm` runs each registered calculator with its
defaults through the same bridge the page uses (:func:`mlcalc.live.run_widgets_json`): the modules a
calculator imports when first needed are imported, the data files it reads are read, and the caches of
pure results (the training planner's layouts of its default model) hold the default answers. A reader's
first change then costs what every later change costs. Pure: it changes no answer, only when it is computed.
"""

from __future__ import annotations

import json
import time

from mlcalc.calc import REGISTRY, get
from mlcalc.live import run_widgets_json, widget_state


def warm() -> dict[str, float]:
    """Run every registered calculator with its defaults (as the page sends them); seconds each, by key."""
    import mlcalc.calculators  # noqa: F401  (registers them all)

    took: dict[str, float] = {}
    for key in sorted(REGISTRY):
        t0 = time.perf_counter()
        state = json.dumps(widget_state(key, get(key).defaults()))
        run_widgets_json(key, state, "", state, "")
        took[key] = time.perf_counter() - t0
    return took


__all__ = ["warm"]
