"""The divergence class records are the one description of each class: the docs table is theirs, every
class has a rule that gives it, and the order of severity is a total order."""

from __future__ import annotations

import re
from pathlib import Path

from pipeline.core import hunk_rules
from pipeline.core.divergence_classes import ADVICE, BY_NAME, CLASSES, OTHER, RECORDS, SEVERITY, TEXT_PRESERVING_CLASSES, by_severity

SUITE_DOC = Path(__file__).resolve().parent.parent / "docs" / "suite.md"
HEADER = "| class | keeps the text | meaning | what to do |\n|---|---|---|---|\n"


def docs_table() -> str:
    """The table of docs/suite.md, "Diagnosing a divergence", as the records give it."""

    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    return HEADER + "".join(
        f"| `{r.name}` | {'yes' if r.keeps_text else 'no'} | {cell(r.meaning)} | {cell(r.remedy)} |\n" for r in RECORDS
    )


def test_the_docs_table_is_the_records():
    text = SUITE_DOC.read_text(encoding="utf-8")
    section = text.split("## Diagnosing a divergence", 1)[1].split("\n## ", 1)[0]
    start = section.index(HEADER.splitlines()[0])
    end = section.find("\n\n", start)
    shown = section[start : len(section) if end < 0 else end + 1]
    expected = docs_table()
    assert shown == expected, f"docs/suite.md's table differs from pipeline/core/divergence_classes.py; it should read:\n{expected}"


def test_records_are_one_per_name_with_distinct_severities():
    assert len(BY_NAME) == len(RECORDS) == len(CLASSES)
    severities = [r.severity for r in RECORDS]
    assert len(set(severities)) == len(severities), "two classes share a severity: by_severity would order them by chance"
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", r.name) for r in RECORDS)
    assert all(r.advice and r.meaning and r.remedy for r in RECORDS)


def test_the_tables_other_modules_read_are_views_of_the_records():
    assert SEVERITY[0] == "special-token-id" and SEVERITY[-1] == "non-canonical-split"
    assert list(SEVERITY) == by_severity(reversed(CLASSES))
    assert TEXT_PRESERVING_CLASSES == {r.name for r in RECORDS if r.keeps_text}
    assert ADVICE == {r.name: r.advice for r in RECORDS}
    assert by_severity(["whitespace", "marker-text", "whitespace", "other"]) == ["marker-text", "other", "whitespace"]


def test_every_class_has_a_rule_and_every_rule_gives_known_classes():
    given = {cls for check in hunk_rules.RULES for cls in check.classes}
    assert given <= set(CLASSES), given - set(CLASSES)
    assert given | {OTHER} == set(CLASSES), f"no rule gives {set(CLASSES) - given - {OTHER}}"
    assert len(set(hunk_rules.RULES)) == len(hunk_rules.RULES)
