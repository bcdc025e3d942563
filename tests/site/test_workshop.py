"""The workshop kit: the answer key renders as tables, the quiz is well formed and its key is printed."""

from __future__ import annotations

import re

import pytest

from tests.conftest import HTML
from mlcalc.calculators import exercises as ex


def test_quiz_questions_are_well_formed():
    assert len(ex.QUIZ) >= 6
    for q in ex.QUIZ:
        assert 0 <= q.answer < len(q.options) and len(set(q.options)) == len(q.options) >= 3, q.question
        assert q.why and q.chapter.startswith("notebooks/")


def test_quiz_numbers_come_from_the_catalogue():
    # the datasheet's sparse bf16 figure and the dense half, from mlcalc's catalogue (NVIDIA H100 datasheet)
    from mlcalc.accelerators import spec

    q = ex.QUIZ[0]
    h100 = spec("H100-SXM")
    assert f"{h100.sparse_tflops['bf16']:,.0f}" in q.question
    assert f"{h100.dense_tflops['bf16']:,.1f}" in q.options[q.answer]
    # 400 Gb/s is 50 GB/s: bits to bytes (IEEE 802.3 rates are in bits per second)
    assert ex.QUIZ[3].options[ex.QUIZ[3].answer] == "50"


def test_quiz_table_hides_the_key():
    plain = ex.quiz_table()
    assert plain.columns == ("#", "question", "options")
    key = ex.quiz_table(with_answers=True)
    assert len(key.rows) == len(ex.QUIZ) and all(row[1][0] in "ABCDE" for row in key.rows)


@pytest.mark.build
def test_instructor_notes_render_tables(strict_build):
    # the answer key and the quiz key are HTML tables on the site, not pipe text
    if strict_build.returncode != 0:
        pytest.fail("the strict build failed")
    page = (HTML / "book" / "workshop" / "instructor-notes.html").read_text(encoding="utf-8")
    assert page.count("<table") >= len(ex.SETS) + 1
    assert not re.search(r"\|\s*Q\d+\s*\|", page) and "|---|" not in page
    for q in ex.QUIZ:
        assert q.options[q.answer].split(":")[0] in page
    quiz = (HTML / "book" / "workshop" / "quiz.html").read_text(encoding="utf-8")
    assert quiz.count("<table") == 2 and "|---|" not in quiz
    assert ex.QUIZ[0].why not in quiz  # the key stays in the instructor notes
    sheet = (HTML / "book" / "workshop" / "question-sheet.html").read_text(encoding="utf-8")
    assert sheet.count("<tr") == sum(len(s.exercises) for s in ex.SETS) + 1


def room_figures() -> dict[str, str]:
    """The figures the setup page quotes, formatted from benchmarks/room.json (written by scripts/room.py)."""
    import json

    from tests.conftest import ROOT

    r = json.loads((ROOT / "benchmarks" / "room.json").read_text())
    return {"first": f"{r['first_chapter_bytes'] / 1e6:.1f}", "files": str(r["first_chapter_files"]),
            "next": f"{r['next_chapter_bytes'] / 1e6:.2f}", "laptops": str(r["laptops"]),
            "room": f"{r['room_bytes'] / 1e6:,.0f}", "m20": f"{r['minutes_at_mbps']['20']:g}",
            "m50": f"{r['minutes_at_mbps']['50']:g}"}


def test_setup_page_quotes_the_measured_room_download():
    # the per-laptop download stated on the setup page is the one scripts/room.py measured
    from tests.conftest import ROOT

    text = (ROOT / "book" / "workshop" / "setup.md").read_text()
    f = room_figures()
    for quoted in (f"**{f['first']} MB**", f"({f['files']} files", f"**{f['next']} MB**", f"**{f['laptops']} laptops**",
                   f"**{f['room']} MB**", f"**{f['m20']} minutes**", f"**{f['m50']}** at 50 Mb/s"):
        assert quoted in text, quoted


def test_room_minutes():
    # 509 MB for 30 laptops at 20 Mb/s: 509e6 x 8 / 20e6 s = 203.7 s (bits over a shared link)
    import importlib.util

    from tests.conftest import ROOT

    spec = importlib.util.spec_from_file_location("room", ROOT / "scripts" / "room.py")
    room = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(room)
    assert abs(room.room_minutes(509e6 / 30, 30, 20) - 203.6 / 60) < 0.01
    with pytest.raises(ValueError, match="laptops"):
        room.room_minutes(1e6, 0, 20)
