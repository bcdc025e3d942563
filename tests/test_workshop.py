"""The workshop kit: the answer key renders as tables, the quiz is well formed and its key is printed."""

from __future__ import annotations

import re

import pytest

from conftest import HTML
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
