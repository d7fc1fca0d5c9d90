"""distlint.module_code.ModuleCode: exactly ``module.code``, each top-level node printed once."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from distlint.module_code import ModuleCode

ROOT = Path(__file__).resolve().parents[1]


def _module(path: Path) -> cst.Module | None:
    try:
        return cst.parse_module(path.read_bytes())
    except Exception:  # bad-input fixtures
        return None


FILES = [p for p in sorted((ROOT / "fixtures").rglob("*.py")) if _module(p) is not None]


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_code_of_every_fixture_and_of_it_edited(path: Path) -> None:
    module = _module(path)
    assert module is not None
    code = ModuleCode()
    assert code.of(module) == module.code
    if module.body:  # one statement replaced, the rest reused: still the module's code
        edited = module.with_changes(body=[cst.parse_statement("x = 1\n"), *module.body[1:]])
        assert code.of(edited) == edited.code


@pytest.mark.parametrize(
    "source",
    ["", "\n", "x = 1", "# header\n\nx = 1\n\n# footer\n", "if x:\r\n\tpass\r\n"],
    ids=["empty", "newline", "no-trailing-newline", "header-footer", "crlf-tabs"],
)
def test_the_code_of_unusual_modules(source: str) -> None:
    module = cst.parse_module(source)
    assert ModuleCode().of(module) == module.code == source


def test_each_statement_is_printed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    module = cst.parse_module("import os\n\n\ndef f():\n    return os.sep\n")
    without_import = module.with_changes(body=module.body[1:])
    expected = without_import.code
    printed: list[cst.CSTNode] = []
    real = cst.Module.code_for_node
    monkeypatch.setattr(
        cst.Module, "code_for_node", lambda self, node: printed.append(node) or real(self, node)
    )
    code = ModuleCode()
    code.of(module)
    assert code.of(without_import) == expected
    assert printed == list(module.body)
