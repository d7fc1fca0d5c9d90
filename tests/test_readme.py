"""README.md's rules table is generated from the rules themselves and kept in sync."""

from __future__ import annotations

import re
from pathlib import Path

from distlint.cli import rules_table_markdown
from distlint.rules import all_rules

README = Path(__file__).resolve().parent.parent / "README.md"
START, END = "<!-- rules-table:start -->", "<!-- rules-table:end -->"


def test_readme_rules_table_is_generated_from_the_rules():
    text = README.read_text()
    assert text.count(START) == 1 and text.count(END) == 1, "README.md needs exactly one pair of table markers"
    table = text.split(START, 1)[1].split(END, 1)[0]
    assert table == "\n" + rules_table_markdown(), (
        "README.md's rules table is stale: replace the lines between the markers with the output of "
        "`distlint rules --format markdown`")


def test_table_has_one_row_per_rule():
    rows = [line for line in rules_table_markdown().splitlines() if re.match(r"^\| DL\d{3} \|", line)]
    assert [row.split("|")[1].strip() for row in rows] == [rule.code for rule in all_rules()]
