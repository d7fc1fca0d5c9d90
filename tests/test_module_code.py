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


def _remembered(source: str) -> tuple[cst.Module, dict[int, str]]:
    """The module of ``source`` and the code remembered from its text for its statements."""
    module = cst.parse_module(source)
    code = ModuleCode()
    code.remember_parsed(module, source, _twins(module, source).ast_of)
    remembered = {key: entry[3] for key, entry in code._texts.items()}
    return module, remembered


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_parsed_statements_code_is_its_lines_of_the_text(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    try:
        module, remembered = _remembered(source)
    except SyntaxError:  # libcst parses what ast does not
        return
    assert all(
        remembered[id(s)] == module.code_for_node(s) for s in module.body if id(s) in remembered
    )
    assert len(remembered) in (0, len(module.body))


@pytest.mark.parametrize(
    "source",
    [
        "import os\n\n# about f\ndef f():\n    return 1\n        # the body's\n    # the def's\n# f's too? no: the next's\nx = 1\n",
        "@(\n    decorator\n)\ndef f():\n    pass\n",
        "class A:\n    pass\n\n\n# footer\n",
        "x = 1; y = 2\r\nif x:\r\n    pass\r\n# trailing\r\n",
        '"""doc"""\n\n\nimport os  # why\n\n\n\nclass B(os.PathLike):\n    """s\n\n# not a comment\n"""\n',
    ],
    ids=["comments-between", "decorator-below-its-at", "footer", "crlf", "string-lines"],
)
def test_remembered_code_is_libcsts_for_every_shape(source: str) -> None:
    module, remembered = _remembered(source)
    assert [remembered[id(s)] for s in module.body if id(s) in remembered] == [
        module.code_for_node(s) for s in module.body if id(s) in remembered
    ]
    # A decorator written below its ``@`` does not say where its statement starts: nothing.
    assert len(remembered) == (0 if source.startswith("@(") else len(module.body))


def test_edited_code_is_what_the_edits_made_after_the_future_imports() -> None:
    source = (
        '"""doc."""\nfrom __future__ import annotations\n\nimport os\n\n\nclass A:\n    x = 1\n'
    )
    module, _ = _remembered(source)
    code = ModuleCode()
    code.remember_parsed(module, source, _twins(module, source).ast_of)
    assert code.edited_code(module) == "from __future__ import annotations\n"
    edited = module.with_changes(body=[*module.body[:3], cst.parse_statement("y = 2\n")])
    assert code.edited_code(edited) == "from __future__ import annotations\ny = 2\n"
    # A future import below another statement is the whole module's to judge.
    moved = module.with_changes(body=[module.body[0], module.body[2], module.body[1]])
    assert code.edited_code(moved) is None
    assert ModuleCode().edited_code(module) is None  # nothing remembered: compile it all


def _twins(module: cst.Module, source: str):
    import ast

    from distlint.codemods.twins import Twins
    from distlint.syntax.ast_lines import prepare

    tree = ast.parse(source)
    prepare(tree, source)
    return Twins(tree, module, source)
