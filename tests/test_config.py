"""``[tool.distlint]`` in the nearest pyproject.toml, CLI overrides, discovery rules."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import CLEAN_SOURCE, MISSPELLED_BASE_SOURCE, write_tree

from distlint import config as config_module
from distlint.config import Config, ConfigError, ConfigResolver, Overrides
from distlint.discovery import discover


def _paths(found) -> list:
    return sorted(target.path for target in found.targets)


def test_each_file_uses_its_nearest_pyproject(run_cli, tmp_path):
    write_tree(
        tmp_path,
        {
            "pyproject.toml": "[tool.distlint]\nignore = ['DL302']\n",
            "quiet/test_x.py": MISSPELLED_BASE_SOURCE,
            "loud/pyproject.toml": "[project]\nname = 'loud'\n",  # nearest pyproject, no table: defaults
            "loud/test_x.py": MISSPELLED_BASE_SOURCE,
        },
    )
    status, out, _ = run_cli("check")
    assert status == 1
    assert [line.split(":")[0] for line in out.splitlines()[:-1]] == ["loud/test_x.py"]


def test_unknown_key_is_exit_2_naming_key_and_file(run_cli, tmp_path):
    write_tree(
        tmp_path,
        {"pyproject.toml": "[tool.distlint]\nselekt = ['DL1']\n", "test_x.py": CLEAN_SOURCE},
    )
    status, out, err = run_cli("check")
    assert status == 2
    assert out == ""
    assert err.startswith(
        f"{tmp_path / 'pyproject.toml'}: error: unknown key 'selekt' in [tool.distlint]"
    )
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "table,expected",
    [
        ("require-main = 'sometimes'", "'require-main' must be one of 'auto', 'always', 'never'"),
        ("select = 'DL1'", "'select' must be a list of strings"),
        ("ignore = ['E501']", "'ignore' has 'E501', not a rule code"),
        ("per-file-ignores = ['x']", "'per-file-ignores' must be a table of glob = [codes]"),
    ],
)
def test_bad_value_is_exit_2_naming_key_and_file(run_cli, tmp_path, table, expected):
    write_tree(
        tmp_path, {"pyproject.toml": f"[tool.distlint]\n{table}\n", "test_x.py": CLEAN_SOURCE}
    )
    status, _, err = run_cli("check")
    assert status == 2
    assert str(tmp_path / "pyproject.toml") in err and expected in err


def test_invalid_toml_is_exit_2(run_cli, tmp_path):
    write_tree(tmp_path, {"pyproject.toml": "[tool.distlint\n", "test_x.py": CLEAN_SOURCE})
    status, _, err = run_cli("check")
    assert status == 2
    assert "cannot read TOML" in err


def test_cli_select_overrides_file_select_and_ignore(run_cli, tmp_path):
    write_tree(
        tmp_path,
        {
            "pyproject.toml": "[tool.distlint]\nignore = ['DL302']\n",
            "test_x.py": MISSPELLED_BASE_SOURCE,
        },
    )
    assert run_cli("check")[0] == 0
    assert run_cli("check", "--select", "DL302")[0] == 1


def test_cli_ignore_adds_to_file_ignore():
    base = Config.from_table({"ignore": ["DL101"]})
    assert Overrides(ignore=("DL302",)).apply(base).ignore == ("DL101", "DL302")
    assert Overrides(select=("DL1",), ignore=("DL102",)).apply(base).ignore == ("DL102",)
    assert Overrides().apply(base) is base


def test_per_file_ignores(run_cli, tmp_path):
    write_tree(
        tmp_path,
        {
            "pyproject.toml": "[tool.distlint.per-file-ignores]\n'legacy/*' = ['DL3']\n",
            "legacy/test_old.py": MISSPELLED_BASE_SOURCE,
            "new/test_new.py": MISSPELLED_BASE_SOURCE,
        },
    )
    _, out, _ = run_cli("check", "--select", "DL302")
    assert [line.split(":")[0] for line in out.splitlines()[:-1]] == ["new/test_new.py"]


def test_default_include_and_skipped_directories(tmp_path, monkeypatch):
    write_tree(
        tmp_path,
        {
            "test_a.py": CLEAN_SOURCE,
            "b_test.py": CLEAN_SOURCE,
            "helper.py": CLEAN_SOURCE,
            "test_data.txt": "",
            "sub/test_c.py": CLEAN_SOURCE,
            ".git/test_git.py": CLEAN_SOURCE,
            ".venv/test_v.py": CLEAN_SOURCE,
            "venv/test_v.py": CLEAN_SOURCE,
            ".tox/test_t.py": CLEAN_SOURCE,
            ".nox/test_n.py": CLEAN_SOURCE,
            "build/test_b.py": CLEAN_SOURCE,
            "dist/test_d.py": CLEAN_SOURCE,
            "__pycache__/test_p.py": CLEAN_SOURCE,
            "node_modules/test_n.py": CLEAN_SOURCE,
            ".distlint_cache/test_c.py": CLEAN_SOURCE,
            "myenv/pyvenv.cfg": "home = /usr/bin\n",
            "myenv/lib/test_site.py": CLEAN_SOURCE,
        },
    )
    monkeypatch.chdir(tmp_path)
    found = discover(["."], ConfigResolver())
    assert _paths(found) == ["b_test.py", "sub/test_c.py", "test_a.py"]
    assert found.diagnostics == []


def test_include_and_exclude_from_config(tmp_path, monkeypatch):
    write_tree(
        tmp_path,
        {
            "pyproject.toml": "[tool.distlint]\ninclude = ['check_*.py']\nexclude = ['third_party', 'gen/*_x.py']\n",
            "check_a.py": CLEAN_SOURCE,
            "test_b.py": CLEAN_SOURCE,
            "third_party/check_c.py": CLEAN_SOURCE,
            "gen/check_x.py": CLEAN_SOURCE,
            "gen/check_y.py": CLEAN_SOURCE,
        },
    )
    monkeypatch.chdir(tmp_path)
    assert _paths(discover(["."], ConfigResolver())) == ["check_a.py", "gen/check_y.py"]
    # Explicit paths are checked even if they do not match include...
    assert _paths(discover(["test_b.py"], ConfigResolver())) == ["test_b.py"]
    # ...but exclude still applies (pre-commit passes every changed file explicitly).
    assert _paths(discover(["third_party/check_c.py", "gen/check_x.py"], ConfigResolver())) == []


def test_exclude_is_relative_to_the_config_directory(tmp_path, monkeypatch):
    write_tree(
        tmp_path,
        {
            "proj/pyproject.toml": "[tool.distlint]\nexclude = ['proj/*']\n",  # names the project dir itself: no match
            "proj/test_a.py": CLEAN_SOURCE,
        },
    )
    monkeypatch.chdir(tmp_path)
    assert _paths(discover(["proj"], ConfigResolver())) == ["proj/test_a.py"]


def test_explicit_directory_without_test_files_warns(run_cli, tmp_path):
    write_tree(tmp_path, {"src/helper.py": CLEAN_SOURCE})
    status, _, err = run_cli("check", "src")
    assert status == 0
    assert (
        err.strip()
        == "src: warning: no test files found (none matches include, or all are excluded)"
    )


def test_same_file_twice_is_checked_once(tmp_path, monkeypatch):
    write_tree(tmp_path, {"test_a.py": CLEAN_SOURCE})
    monkeypatch.chdir(tmp_path)
    assert _paths(discover(["test_a.py", ".", "./test_a.py"], ConfigResolver())) == ["test_a.py"]


def test_resolver_reads_each_pyproject_once(tmp_path, monkeypatch):
    write_tree(
        tmp_path,
        {
            "pyproject.toml": "[tool.distlint]\nrequire-main = 'always'\n",
            **{f"d{i}/e/test_{i}.py": CLEAN_SOURCE for i in range(5)},
        },
    )
    loads = []
    real = config_module._load_pyproject
    monkeypatch.setattr(
        config_module, "_load_pyproject", lambda path: loads.append(path) or real(path)
    )
    monkeypatch.chdir(tmp_path)
    found = discover(["."], ConfigResolver())
    assert len(found.targets) == 5
    assert {t.config.require_main for t in found.targets} == {"always"}
    assert {t.root for t in found.targets} == {Path(tmp_path)}
    assert loads == [tmp_path / "pyproject.toml"]


def test_no_pyproject_anywhere_gives_defaults(tmp_path):
    resolved = ConfigResolver().for_directory(Path("/"))
    assert resolved.root is None and resolved.config == Config()


def test_config_error_message_from_table():
    with pytest.raises(ConfigError, match=r"^x\.toml: error: unknown key 'nope'"):
        Config.from_table({"nope": 1}, source="x.toml")


def test_fingerprint_changes_with_settings_not_source():
    a = Config.from_table({"select": ["DL1"]}, source="a")
    assert a.fingerprint() == Config.from_table({"select": ["DL1"]}, source="b").fingerprint()
    assert a.fingerprint() != Config.from_table({"select": ["DL2"]}, source="a").fingerprint()


@pytest.mark.parametrize(
    "path,glob,expected",
    [
        ("a/b/test_x.py", "test_*.py", True),  # by file name
        ("a/b/test_x.py", "b/test_x.py", True),  # as a suffix
        ("a/b/test_x.py", "a/*.py", True),  # as a whole ("*" crosses "/", as fnmatch does)
        ("a/b/x.py", "test_*.py", False),
        ("../up/test_x.py", "up/test_x.py", True),
        ("./a//test_x.py", "a/test_x.py", True),  # pathlib's normalisation: the slow path
        ("a/./b/x.py", "a/b/x.py", True),
        ("ab/x.py", "b/x.py", False),  # a suffix is whole components
    ],
)
def test_path_matches(path, glob, expected):
    from distlint.config import path_matches

    assert path_matches(path, glob) is expected
    from distlint.config import globs_matcher

    assert globs_matcher((glob,))(path) is expected
    assert globs_matcher(("nothing-matches-this", glob))(path) is expected


def test_globs_matcher_agrees_with_path_matches():
    """The compiled matcher discovery uses is path_matches over many globs, for every shape of
    path (the fast regex case and the normalising fallback alike)."""
    import itertools
    import random

    from distlint.config import globs_matcher, path_matches

    rng = random.Random(12)
    names = ["a", "b", "test_x.py", "x_test.py", "x.py", ".", "..", "", "tests", "a.b", "[x]", "t?"]
    globs = [
        "test_*.py",
        "*_test.py",
        "a/*.py",
        "b/test_x.py",
        "tests",
        "a",
        "*/b/*",
        "t[?]",
        "[!a]*",
        "*.py",
        "a/b",
        "**/x.py",
        "tests/*",
        "?",
    ]
    paths = {"/".join(rng.choice(names) for _ in range(rng.randint(1, 4))) for _ in range(250)}
    paths |= {"/" + p for p in sorted(paths)[:40]}
    for size in (1, 2, 3):
        for chosen in itertools.islice(itertools.combinations(globs, size), 0, None, 7):
            matcher = globs_matcher(chosen)
            for path in sorted(paths):
                if not path:
                    continue
                expected = any(path_matches(path, glob) for glob in chosen)
                assert matcher(path) is expected, (path, chosen)
