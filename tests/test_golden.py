"""Golden fixtures: ``fixtures/<area>/**/test_<name>.py`` (and ``<name>_test.py``, the other
default ``include`` glob) against their expected files.

* ``test_<name>.findings``: the expected ``LINE:COL: CODE message`` lines, sorted by
  position (an empty file: no findings), linted with the config of the nearest
  ``pyproject.toml`` (an area may carry one).
* ``test_<name>.py.fixed`` (optional): the expected result of ``--fix``; a second
  ``--fix`` must change nothing, and no fixable finding may be left.

Besides the per-file checks, each area is run once end-to-end through the CLI
(``distlint check fixtures/<area>`` and ``--fix`` on a copy of it).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from distlint.config import ConfigResolver
from distlint.linter import fix_source, lint_source

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def _golden_files() -> list:
    found = {*FIXTURES.rglob("test_*.py"), *FIXTURES.rglob("*_test.py")}
    return sorted(p for p in found if p.with_suffix(".findings").exists())


def _areas() -> list:
    return sorted({p.relative_to(FIXTURES).parts[0] for p in _golden_files()})


def _expected_lines(fixture: Path) -> list:
    return [
        line for line in fixture.with_suffix(".findings").read_text().splitlines() if line.strip()
    ]


def _finding_lines(findings) -> list:
    return [f"{f.line}:{f.col}: {f.code} {f.message}" for f in findings]


def _id(path: Path) -> str:
    return str(path.relative_to(FIXTURES))


def test_there_are_golden_fixtures():
    assert _golden_files(), "no fixtures/**/test_*.py with a .findings file"
    assert any(p.name.endswith("_test.py") for p in _golden_files()), "no *_test.py fixture"


@pytest.mark.parametrize("fixture", _golden_files(), ids=_id)
def test_findings_match(fixture):
    config = ConfigResolver().for_file(fixture).config
    result = lint_source(fixture.read_bytes(), str(fixture), config)
    assert result.error is None, result.error
    assert _finding_lines(result.findings) == _expected_lines(fixture)


@pytest.mark.parametrize(
    "fixture", [p for p in _golden_files() if p.with_name(p.name + ".fixed").exists()], ids=_id
)
def test_fix_matches_and_is_idempotent(fixture):
    config = ConfigResolver().for_file(fixture).config
    expected = fixture.with_name(fixture.name + ".fixed").read_bytes()
    fixed = fix_source(fixture.read_bytes(), str(fixture), config)
    assert fixed.error is None, fixed.error
    assert fixed.fixed is not None, "the fixture has a .fixed file but nothing was fixed"
    assert fixed.fixed.decode() == expected.decode()
    assert [f for f in fixed.remaining if f.fixable] == [], "a fixable finding survived --fix"
    again = fix_source(fixed.fixed, str(fixture), config)
    assert again.fixed is None, "a second --fix changed the file again"


@pytest.mark.parametrize(
    "fixture", [p for p in _golden_files() if not p.with_name(p.name + ".fixed").exists()], ids=_id
)
def test_without_fixed_file_no_finding_is_fixable(fixture):
    config = ConfigResolver().for_file(fixture).config
    result = lint_source(fixture.read_bytes(), str(fixture), config)
    assert [f for f in result.findings if f.fixable] == [], (
        "fixable findings: add the expected .py.fixed file"
    )


@pytest.mark.parametrize("area", _areas())
def test_cli_end_to_end_on_area(area, run_cli, tmp_path):
    """``distlint check <area>``, ``--fix``, ``--fix`` again, on a copy (the cache makes the reruns cheap)."""
    golden = [p for p in _golden_files() if p.relative_to(FIXTURES).parts[0] == area]
    copy = tmp_path / "fixtures" / area
    shutil.copytree(FIXTURES / area, copy)
    relative = {str(Path("fixtures") / path.relative_to(FIXTURES)): path for path in golden}
    expected = sorted(
        f"{name}:{line}" for name, path in relative.items() for line in _expected_lines(path)
    )

    status, out, err = run_cli("check", f"fixtures/{area}", cwd=tmp_path)
    reported = [line for line in out.splitlines()[:-1] if line.split(":", 1)[0] in relative]
    assert sorted(reported) == expected
    assert status == (1 if out.splitlines()[:-1] else 0), err
    assert ": error: " not in err

    run_cli("check", "--fix", f"fixtures/{area}", cwd=tmp_path)
    for name, path in relative.items():
        fixed_file = path.with_name(path.name + ".fixed")
        after = (tmp_path / name).read_text()
        assert after == (fixed_file.read_text() if fixed_file.exists() else path.read_text()), name
    before = {p: p.read_bytes() for p in copy.rglob("*.py")}
    _, out, _ = run_cli("check", "--fix", f"fixtures/{area}", cwd=tmp_path)
    assert {p: p.read_bytes() for p in copy.rglob("*.py")} == before
    assert "Fixed " not in out
