"""Bad input: one clear ``path: error: ...`` line, the other files still checked, an exit
status that says so, and never a half-written file."""

from __future__ import annotations

import os
import stat

import pytest
from conftest import CLEAN_SOURCE, MISSPELLED_BASE_FIXED, MISSPELLED_BASE_SOURCE, write_tree


@pytest.fixture
def with_good_file(tmp_path):
    """A tree holding one file with a finding, next to the bad input under test."""
    write_tree(tmp_path, {"test_good.py": MISSPELLED_BASE_SOURCE})
    return tmp_path


def _assert_other_file_checked(out: str) -> None:
    assert out.startswith("test_good.py:1:56: DL302 "), out


def _error_lines(err: str) -> list:
    return [line for line in err.splitlines() if ": error: " in line]


def test_syntax_error(run_cli, with_good_file):
    (with_good_file / "test_broken.py").write_text("import os\n\ndef broken(:\n    pass\n")
    status, out, err = run_cli("check")
    assert status == 1
    assert _error_lines(err) == ["test_broken.py: error: syntax error at 3:12: invalid syntax"]
    _assert_other_file_checked(out)
    assert "1 file could not be checked" in out.splitlines()[-1]


def test_syntax_error_in_a_file_no_rule_would_parse_is_still_reported(run_cli, tmp_path):
    (tmp_path / "test_broken.py").write_text("x = (\n")
    status, _, err = run_cli("check", "--select", "DL302")
    assert status == 1
    assert err.startswith("test_broken.py: error: syntax error at 1:5: ")


def test_non_utf8_bytes(run_cli, with_good_file):
    (with_good_file / "test_latin1.py").write_bytes(b"NAME = 'caf\xe9'\n")
    status, out, err = run_cli("check")
    assert status == 1
    assert _error_lines(err) == ["test_latin1.py: error: not valid utf-8: byte 0xe9 at 1:12"]
    _assert_other_file_checked(out)


def test_declared_latin1_encoding_is_fine(run_cli, tmp_path):
    (tmp_path / "test_latin1.py").write_bytes(b"# -*- coding: latin-1 -*-\nNAME = 'caf\xe9'\n")
    assert run_cli("check") == (0, "All checks passed (1 file checked).\n", "")


def test_empty_file(run_cli, with_good_file):
    (with_good_file / "test_empty.py").write_bytes(b"")
    status, out, err = run_cli("check")
    assert status == 1  # the finding in test_good.py
    assert err == ""
    assert "test_empty.py" not in out
    assert run_cli("check", "test_empty.py") == (0, "All checks passed (1 file checked).\n", "")


def test_binary_file(run_cli, with_good_file):
    (with_good_file / "test_blob.py").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    status, out, err = run_cli("check")
    assert status == 1
    assert _error_lines(err) == ["test_blob.py: error: binary file (contains NUL bytes)"]
    _assert_other_file_checked(out)


def test_path_that_does_not_exist(run_cli, with_good_file):
    status, out, err = run_cli("check", "missing_dir/test_nope.py", "test_good.py")
    assert status == 2
    assert _error_lines(err) == ["missing_dir/test_nope.py: error: no such file or directory"]
    _assert_other_file_checked(out)


def test_symlink_loop_in_a_directory(run_cli, with_good_file):
    tree = with_good_file
    write_tree(tree, {"pkg/sub/test_clean.py": CLEAN_SOURCE})
    os.symlink("..", tree / "pkg/sub/up")  # pkg/sub/up -> pkg: a loop
    os.symlink("test_self.py", tree / "pkg/test_self.py")  # a link to itself
    status, out, err = run_cli("check")
    assert status == 1  # from test_good.py only: nothing was left unchecked
    assert err.splitlines() == [
        "pkg/sub/up: warning: symlink loop (points back to a directory above it), not followed",
        "pkg/test_self.py: warning: symlink loop, skipped",
    ]
    _assert_other_file_checked(out)
    assert out.splitlines()[-1] == "Found 1 error in 1 file (1 fixable with --fix)."


def test_explicit_path_that_is_a_symlink_loop(run_cli, tmp_path):
    os.symlink("test_self.py", tmp_path / "test_self.py")
    status, _, err = run_cli("check", "test_self.py")
    assert status == 2
    assert err.strip() == "test_self.py: error: symlink loop"


def test_read_only_file_under_fix(run_cli, with_good_file):
    target = with_good_file / "test_readonly.py"
    target.write_text(MISSPELLED_BASE_SOURCE)
    target.chmod(0o444)
    status, out, err = run_cli("check", "--fix", "--select", "DL302")
    assert status == 1
    assert _error_lines(err) == ["test_readonly.py: error: file is read-only, not modified"]
    assert target.read_text() == MISSPELLED_BASE_SOURCE
    assert stat.S_IMODE(target.stat().st_mode) == 0o444
    # The other file was fixed; the read-only one still has its finding.
    assert (with_good_file / "test_good.py").read_text() == MISSPELLED_BASE_FIXED
    assert out.splitlines()[0].startswith("test_readonly.py:1:56: DL302 ")
    assert _leftovers(with_good_file) == []


def test_crlf_line_endings_are_kept_by_fix(run_cli, tmp_path):
    target = tmp_path / "test_crlf.py"
    target.write_bytes(MISSPELLED_BASE_SOURCE.replace("\n", "\r\n").encode())
    status, out, _ = run_cli("check", "--select", "DL302")
    assert status == 1 and out.startswith("test_crlf.py:1:56: DL302 ")
    assert run_cli("check", "--fix", "--select", "DL302")[0] == 0
    assert target.read_bytes() == MISSPELLED_BASE_FIXED.replace("\n", "\r\n").encode()


def test_tabs(run_cli, tmp_path):
    tabbed = MISSPELLED_BASE_SOURCE.replace("    ", "\t")
    target = tmp_path / "test_tabs.py"
    target.write_text(tabbed)
    status, out, _ = run_cli("check", "--select", "DL302")
    assert status == 1 and out.startswith("test_tabs.py:1:56: DL302 ")
    assert run_cli("check", "--fix", "--select", "DL302")[0] == 0
    assert target.read_text() == MISSPELLED_BASE_FIXED.replace("    ", "\t")


def test_fix_keeps_the_file_mode(run_cli, tmp_path):
    target = tmp_path / "test_mode.py"
    target.write_text(MISSPELLED_BASE_SOURCE)
    target.chmod(0o750)
    assert run_cli("check", "--fix")[0] == 0
    assert stat.S_IMODE(target.stat().st_mode) == 0o750


def test_a_failing_replace_leaves_the_file_whole(run_cli, with_good_file, monkeypatch):
    def failing_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    status, _, err = run_cli("check", "--fix", "--no-cache")
    assert status == 1
    assert _error_lines(err) == ["test_good.py: error: not written: No space left on device"]
    assert (with_good_file / "test_good.py").read_text() == MISSPELLED_BASE_SOURCE
    assert _leftovers(with_good_file) == []


def test_unreadable_file(run_cli, with_good_file, monkeypatch):
    (with_good_file / "test_secret.py").write_text(CLEAN_SOURCE)
    real_open = open

    def guarded_open(path, *args, **kwargs):  # permission bits do not stop root: simulate
        if str(path).endswith("test_secret.py"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", guarded_open)
    status, out, err = run_cli("check", "--no-cache")
    assert status == 1
    assert _error_lines(err) == ["test_secret.py: error: cannot read: Permission denied"]
    _assert_other_file_checked(out)


def _leftovers(directory) -> list:
    return sorted(p.name for p in directory.rglob("*") if "distlint-tmp" in p.name)


def test_a_fix_that_adds_lines_keeps_crlf_and_tabs(run_cli, tmp_path):
    """DL101's fix appends a main block: the new lines use the file's newline and indent."""
    source = (
        "from torch.testing._internal.common_utils import TestCase, run_tests\r\n\r\n\r\n"
        "class TestA(TestCase):\r\n\tdef test_a(self):\r\n\t\tpass\r\n"
    )
    target = tmp_path / "test_crlf_tabs.py"
    target.write_bytes(source.encode())
    assert run_cli("check", "--fix", "--select", "DL101")[0] == 0
    fixed = target.read_bytes()
    assert fixed.startswith(source.encode())
    assert fixed.endswith(b'\r\nif __name__ == "__main__":\r\n\trun_tests()\r\n')
    assert b"\n" not in fixed.replace(b"\r\n", b"")
