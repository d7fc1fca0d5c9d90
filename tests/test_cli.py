"""The ``distlint`` command line: commands, options, exit statuses."""

from __future__ import annotations

import subprocess
import sys
import types

import pytest
from conftest import CLEAN_SOURCE, MISSPELLED_BASE_FIXED, MISSPELLED_BASE_SOURCE, write_tree

from distlint import cli
from distlint.rules import all_rules


def test_clean_tree_exits_0_with_summary(run_cli, tmp_path):
    write_tree(tmp_path, {"test_plain.py": CLEAN_SOURCE, "pkg/test_other.py": CLEAN_SOURCE})
    status, out, err = run_cli("check")
    assert status == 0
    assert out == "All checks passed (2 files checked).\n"
    assert err == ""


def test_findings_are_sorted_lines_then_summary_and_exit_1(run_cli, tmp_path):
    write_tree(
        tmp_path,
        {
            "b/test_b.py": MISSPELLED_BASE_SOURCE,
            "a/test_a.py": MISSPELLED_BASE_SOURCE,
            "test_clean.py": CLEAN_SOURCE,
        },
    )
    status, out, _ = run_cli("check", "--select", "DL302")
    assert status == 1
    lines = out.splitlines()
    assert lines[0].startswith("a/test_a.py:1:56: DL302 ")
    assert lines[1].startswith("b/test_b.py:1:56: DL302 ")
    assert lines[-1] == "Found 2 errors in 2 files (2 fixable with --fix)."
    assert len(lines) == 3


def test_default_path_is_current_directory_and_paths_are_normalised(run_cli, tmp_path):
    write_tree(tmp_path, {"tests/test_x.py": MISSPELLED_BASE_SOURCE})
    _, default_out, _ = run_cli("check", "--select", "DL302")
    _, dot_out, _ = run_cli("check", "--select", "DL302", ".")
    _, sub_out, _ = run_cli("check", "--select", "DL302", "./tests/")
    assert default_out == dot_out == sub_out
    assert default_out.startswith("tests/test_x.py:1:56: DL302")


def test_select_and_ignore_take_codes_and_prefixes(run_cli, tmp_path):
    write_tree(tmp_path, {"test_x.py": MISSPELLED_BASE_SOURCE})
    assert run_cli("check", "--select", "DL3")[0] == 1
    assert run_cli("check", "--select", "DL1,DL2")[0] == 0
    assert run_cli("check", "--select", "dl302")[0] == 1  # case-insensitive on the command line
    assert run_cli("check", "--ignore", "DL30")[0] == 0
    assert run_cli("check", "--select", "DL3", "--ignore", "DL302")[0] == 0


def test_bad_select_code_is_a_usage_error(run_cli, tmp_path):
    status, out, err = run_cli("check", "--select", "E501")
    assert status == 2
    assert out == ""
    assert (
        err.strip()
        == "distlint: error: --select has 'E501', not a rule code or prefix such as 'DL1' or 'DL201'"
    )


def test_bad_option_is_exit_2(run_cli):
    with pytest.raises(SystemExit) as exc:
        run_cli("check", "--format", "xml")
    assert exc.value.code == 2


def test_fix_writes_then_check_is_clean_and_second_fix_changes_nothing(run_cli, tmp_path):
    target = tmp_path / "test_x.py"
    target.write_text(MISSPELLED_BASE_SOURCE)
    status, out, _ = run_cli("check", "--fix", "--select", "DL302")
    assert status == 0
    assert target.read_text() == MISSPELLED_BASE_FIXED
    assert out == "Fixed 1 error in 1 file.\n"
    assert run_cli("check", "--select", "DL302")[0] == 0
    status, out, _ = run_cli("check", "--fix", "--select", "DL302")
    assert (status, out) == (0, "Nothing to fix (1 file checked).\n")
    assert target.read_text() == MISSPELLED_BASE_FIXED


def test_diff_prints_unified_diff_and_writes_nothing(run_cli, tmp_path):
    target = tmp_path / "test_x.py"
    target.write_text(MISSPELLED_BASE_SOURCE)
    status, out, err = run_cli("check", "--diff", "--select", "DL302")
    assert status == 1
    assert target.read_text() == MISSPELLED_BASE_SOURCE
    assert out.startswith("--- a/test_x.py\n+++ b/test_x.py\n@@ ")
    assert "-from torch.testing._internal.common_distributed import MultiProcContinousTest\n" in out
    assert (
        "+from torch.testing._internal.common_distributed import MultiProcContinuousTest\n" in out
    )
    assert "+class TestCollectives(MultiProcContinuousTest):\n" in out
    assert "Would fix 1 error in 1 file (nothing written)." in err
    # Nothing to fix: empty diff, exit 0.
    target.write_text(CLEAN_SOURCE)
    assert run_cli("check", "--diff")[:2] == (0, "")


def test_fix_and_diff_are_exclusive(run_cli):
    with pytest.raises(SystemExit) as exc:
        run_cli("check", "--fix", "--diff")
    assert exc.value.code == 2


def test_statistics_counts_per_rule(run_cli, tmp_path):
    write_tree(tmp_path, {"test_a.py": MISSPELLED_BASE_SOURCE, "test_b.py": MISSPELLED_BASE_SOURCE})
    status, out, _ = run_cli("check", "--statistics", "--select", "DL302")
    assert status == 1
    assert out.splitlines() == [
        "2  DL302  misspelled-continuous-base  (fixable)",
        "Found 2 errors in 2 files (2 fixable with --fix).",
    ]


def test_jobs_must_be_positive(run_cli):
    with pytest.raises(SystemExit):
        run_cli("check", "--jobs", "0")


def test_rules_lists_every_rule_with_autofix_and_default(run_cli):
    status, out, _ = run_cli("rules")
    assert status == 0
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["CODE", "NAME", "AUTOFIX", "DEFAULT"]
    assert len(lines) == 1 + len(all_rules())
    row = next(line for line in lines if line.startswith("DL302"))
    assert row.split()[:4] == ["DL302", "misspelled-continuous-base", "yes", "on"]


def test_rules_code_prints_the_rule_documentation(run_cli):
    status, out, _ = run_cli("rules", "dl302")
    assert status == 0
    assert out.startswith("DL302 misspelled-continuous-base\n")
    for section in ("## What it does", "## Why is this bad?", "## Example", "## Use instead"):
        assert section in out


def test_rules_unknown_code_is_exit_2(run_cli):
    status, _, err = run_cli("rules", "DL999")
    assert status == 2
    assert "unknown rule 'DL999'" in err


def test_rules_markdown_is_the_table_then_every_rules_documentation(run_cli):
    """`distlint rules --format markdown` is docs/rules.md's generated part: README's table,
    then one section per rule whose docstring headings sit one level under the rule's."""
    status, out, _ = run_cli("rules", "--format", "markdown")
    assert status == 0
    assert out == cli.rules_reference_markdown()
    assert out.startswith(cli.rules_table_markdown() + "\n## DL101 no-main-block\n")
    assert any(
        line.startswith("| DL302 | `misspelled-continuous-base` | yes | on |")
        for line in out.splitlines()
    )
    assert [line for line in out.splitlines() if line.startswith("## ")] == [
        f"## {rule.code} {rule.name}" for rule in all_rules()
    ]
    assert out.count("### What it does\n") == len(all_rules())


def test_rules_code_markdown_is_that_rules_section(run_cli):
    status, out, _ = run_cli("rules", "DL201", "--format", "markdown")
    assert status == 0
    assert out.startswith(
        "## DL201 per-test-process-group\n\nAutofix: no. Default: off (enable with --select DL201).\n"
    )
    assert out in cli.rules_reference_markdown()
    assert "\n### Why is this bad?\n" in out and "\n## Why" not in out


def test_rule_sections_leave_comments_in_code_blocks_alone():
    doc = "Summary.\n\n## Example\n```python\n# a comment, not a heading\nx = 1\n```\n## Use instead\n"
    assert cli._demote_headings(doc) == (
        "Summary.\n\n### Example\n```python\n# a comment, not a heading\nx = 1\n```\n### Use instead"
    )


def test_migrate_is_wired_lazily_to_codemods_command(run_cli, monkeypatch):
    calls = []
    fake = types.ModuleType("distlint.codemods.cli")
    fake.configure_parser = lambda parser: parser.add_argument("--write", action="store_true")
    fake.run = lambda args, **kwargs: calls.append(args) or 7  # progress=... on a terminal
    monkeypatch.setitem(sys.modules, "distlint.codemods.cli", fake)
    status, _, _ = run_cli("migrate", "--write")
    assert status == 7
    assert calls and calls[0].write is True


def test_python_dash_m_works_and_check_never_imports_codemods_or_torch(tmp_path):
    (tmp_path / "test_x.py").write_text(MISSPELLED_BASE_SOURCE)
    code = (
        "import sys; from distlint.cli import main; status = main(['check', '--no-cache', '--select', 'DL302']);"
        "print(status, sorted(m for m in sys.modules if m.startswith(('torch', 'distlint.codemods.', "
        "'distlint.runtime'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.splitlines()[-1] == "1 []", done.stderr
    version = subprocess.run(
        [sys.executable, "-m", "distlint", "--version"], capture_output=True, text=True, timeout=60
    )
    assert version.returncode == 0 and version.stdout.startswith("distlint ")


def test_progress_shows_only_after_a_while_and_clears(monkeypatch):
    class Stream:
        text = ""

        def write(self, text):
            self.text += text

        def flush(self):
            pass

    stream = Stream()
    progress = cli._Progress(stream)
    progress(1, 10)
    assert stream.text == ""  # a short run shows nothing
    monkeypatch.setattr(cli, "PROGRESS_AFTER_S", 0.0)
    progress(10, 10)
    assert stream.text == "\rdistlint: checked 10/10 files"
    progress.clear()
    assert stream.text.endswith("\r\033[K")


def test_no_progress_when_stderr_is_not_a_terminal(run_cli, tmp_path, monkeypatch):
    monkeypatch.setattr(cli, "PROGRESS_AFTER_S", 0.0)
    write_tree(tmp_path, {f"test_{i}.py": CLEAN_SOURCE for i in range(3)})
    _, _, err = run_cli("check", "--no-cache")
    assert "checked" not in err


def test_arguments_from_a_file_as_lintrunner_passes_them(run_cli, tmp_path):
    write_tree(
        tmp_path, {"a/test_x.py": MISSPELLED_BASE_SOURCE, "b/test_y.py": MISSPELLED_BASE_SOURCE}
    )
    (tmp_path / "paths.txt").write_text("a/test_x.py\nb/test_y.py\n")
    status, out, _ = run_cli("check", "--select", "DL302", "@paths.txt")
    assert status == 1
    assert [line.split(":")[0] for line in out.splitlines()[:-1]] == ["a/test_x.py", "b/test_y.py"]
