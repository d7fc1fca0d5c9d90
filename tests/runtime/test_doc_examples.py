"""The runtime examples of docs/runtime.md run, as a user runs them (README.md links to them)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch
from doc_pages import ROOT, blocks

from .support import read_junit, run_python, subprocess_env

PAGES = [ROOT / "docs" / "runtime.md"]


def runtime_example(page: Path) -> str:
    """The page's first Python block that defines a continuous class and calls run_tests()."""
    examples = [
        b.text
        for b in blocks(page)
        if b.lang == "python" and "(MultiProcContinuousTest)" in b.text and "run_tests()" in b.text
    ]
    assert examples, f"no runnable runtime example in {page.relative_to(ROOT)}"
    return examples[0]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_runtime_example_runs_and_passes(page, tmp_path):
    """``python test_example.py`` under gloo: every test passes, except one decorated with
    ``skip_if_lt_x_gpu(2)`` on a machine with fewer GPUs, which skips."""
    source = runtime_example(page)
    script = tmp_path / "test_example.py"
    script.write_text(source)
    report = tmp_path / "report.xml"
    result = run_python(
        [str(script), "--junit-xml", str(report)],
        subprocess_env(tmp_path),
        timeout=300,
        cwd=tmp_path,
    )
    assert report.exists(), result.stderr[-3000:]
    cases = read_junit(report)
    tests = {
        node.name: node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
    }
    assert sorted(name.split(".")[1] for name in cases) == sorted(tests)
    for name, case in cases.items():
        decorators = [ast.unparse(d) for d in tests[name.split(".")[1]].decorator_list]
        expected = (
            "skipped"
            if "skip_if_lt_x_gpu(2)" in decorators and torch.cuda.device_count() < 2
            else "passed"
        )
        assert case.outcome == expected, (
            f"{name}: {case.outcome} {case.message}\n{result.stderr[-3000:]}"
        )
    assert result.returncode == 0, result.stderr[-3000:]
