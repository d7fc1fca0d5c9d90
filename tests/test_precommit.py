"""The pre-commit hooks, run by the real ``pre-commit`` on a throwaway git repo.

pre-commit installs distlint from a git repository into its own virtualenv (with
libcst from the package index). That repository is a one-commit copy of this
working tree (so uncommitted and untracked changes are what gets tested).
``try-repo`` builds its hook environment in a private temporary store; the fix hook
and the last check then run installed as users do (``repo`` + ``rev`` in
.pre-commit-config.yaml) with PRE_COMMIT_HOME in a temporary directory: both hooks
share the one environment pre-commit builds there (an environment build is most of
this test's time), which the test then inspects.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CLEAN_SOURCE, MISSPELLED_BASE_FIXED, MISSPELLED_BASE_SOURCE

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
#: What pip needs to build and install distlint.
PROJECT_FILES = ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml")
#: CI machines may have no git identity configured.
IDENTITY = {
    "GIT_AUTHOR_NAME": "distlint tests",
    "GIT_AUTHOR_EMAIL": "tests@distlint.invalid",
    "GIT_COMMITTER_NAME": "distlint tests",
    "GIT_COMMITTER_EMAIL": "tests@distlint.invalid",
}

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git(*args: str, cwd: Path) -> None:
    env = {**os.environ, **IDENTITY}
    subprocess.run(
        ["git", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", *args],
        cwd=cwd,
        env=env,
        check=True,
        capture_output=True,
    )


def _source_files() -> list:
    files = [ROOT / name for name in PROJECT_FILES]
    files += sorted(p for p in (ROOT / "distlint").rglob("*.py") if "__pycache__" not in p.parts)
    return files


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory) -> Path:
    """A git repository holding the current working tree's package, one commit."""
    repo = tmp_path_factory.mktemp("distlint-hook-repo")
    for path in _source_files():
        target = repo / path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    _git("init", "-q", cwd=repo)
    _git("add", "-A", cwd=repo)
    _git("commit", "-q", "-m", "distlint under test", cwd=repo)
    return repo


def _head(repo: Path) -> str:
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()


def _pre_commit(args, project: Path, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    env.pop("DISTLINT_CACHE_DIR", None)
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture
def project(tmp_path) -> Path:
    """A throwaway git repository with one failing test file, a clean one and a non-test file."""
    (tmp_path / "test_failing.py").write_text(MISSPELLED_BASE_SOURCE)
    (tmp_path / "test_clean.py").write_text(CLEAN_SOURCE)
    (tmp_path / "helper.py").write_text(
        MISSPELLED_BASE_SOURCE
    )  # not a test file: the hook skips it
    _git("init", "-q", cwd=tmp_path)
    _git("add", "-A", cwd=tmp_path)
    return tmp_path


def test_check_and_fix_hooks_with_real_pre_commit(project, hook_repo, tmp_path_factory):
    home = tmp_path_factory.mktemp("pre-commit-home")

    # try-repo, in a private temporary store of its own (not ``home``).
    checked = _pre_commit(
        ["try-repo", str(hook_repo), "distlint-check", "--all-files"], project, home
    )
    output = checked.stdout + checked.stderr
    assert checked.returncode == 1, output
    assert "distlint check" in output and "Failed" in output
    assert "test_failing.py:1:56: DL302 " in output
    assert "helper.py:" not in output  # not a test file: never linted
    assert (project / "test_failing.py").read_text() == MISSPELLED_BASE_SOURCE

    # Installed as users do, from .pre-commit-config.yaml: both hooks, one environment.
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {hook_repo}\n  rev: {_head(hook_repo)}\n  hooks:\n"
        "  - id: distlint-fix\n  - id: distlint-check\n"
    )
    _git("add", "-A", cwd=project)
    fixed = _pre_commit(["run", "distlint-fix", "--all-files"], project, home)
    assert fixed.returncode == 1, (
        fixed.stdout + fixed.stderr
    )  # pre-commit fails a hook that modified files
    assert "files were modified by this hook" in fixed.stdout
    assert (project / "test_failing.py").read_text() == MISSPELLED_BASE_FIXED
    assert (project / "helper.py").read_text() == MISSPELLED_BASE_SOURCE

    # The fixed tree passes.
    _git("add", "-A", cwd=project)
    again = _pre_commit(["run", "distlint-check", "--all-files"], project, home)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Passed" in again.stdout

    # The hook environment has distlint and libcst, and no torch.
    pythons = sorted(home.glob("repo*/py_env-*/bin/python"))
    assert len(pythons) == 1, "pre-commit's hook environment was not found"
    probe = (
        "import importlib.util as u; print(u.find_spec('distlint') is not None, u.find_spec('libcst') is not None,"
        " u.find_spec('torch') is not None)"
    )
    found = subprocess.run([str(pythons[0]), "-c", probe], capture_output=True, text=True)
    assert found.stdout.strip() == "True True False", found.stderr


def test_linting_install_does_not_require_torch():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not any("torch" in requirement for requirement in project["dependencies"])
    assert any(r.startswith("torch") for r in project["optional-dependencies"]["runtime"])
    hooks = (ROOT / ".pre-commit-hooks.yaml").read_text()
    assert "additional_dependencies" not in hooks


def test_hook_definitions_match_the_default_include():
    import fnmatch
    import re

    import yaml  # pre-commit's own dependency

    hooks = {
        hook["id"]: hook for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    }
    assert set(hooks) == {"distlint-check", "distlint-fix"}
    assert hooks["distlint-check"]["entry"] == "distlint check"
    assert hooks["distlint-fix"]["entry"] == "distlint check --fix"
    for hook in hooks.values():
        assert (
            hook["language"] == "python"
            and hook["types"] == ["python"]
            and hook["require_serial"] is False
        )
        pattern = re.compile(hook["files"])
        for path in (
            "test_a.py",
            "pkg/test_a.py",
            "a_test.py",
            "deep/dir/b_test.py",
            "helper.py",
            "testing.py",
            "pkg/conftest.py",
            "test_dir/helper.py",
            "latest.py",
        ):
            by_include = any(
                fnmatch.fnmatch(path.rsplit("/", 1)[-1], g) for g in ("test_*.py", "*_test.py")
            )
            assert bool(pattern.search(path)) == by_include, path


def test_own_hooks_run_the_versions_the_lint_extra_pins():
    """The repository's .pre-commit-config.yaml and .ci/run check with the same ruff and mypy."""
    import yaml
    from packaging.requirements import Requirement

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = {Requirement(r).name: r for r in extras["optional-dependencies"]["lint"]}
    assert set(pins) == {"ruff", "mypy"} and all("==" in pin for pin in pins.values()), pins
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    hooks = {hook["id"]: hook for repo in config["repos"] for hook in repo["hooks"]}
    for name in ("ruff-check", "ruff-format"):
        assert hooks[name]["additional_dependencies"] == [pins["ruff"]], name
    # mypy (and distlint) run from the environment README's install made: the pinned mypy.
    assert hooks["mypy"]["language"] == "system" and hooks["mypy"]["entry"] == "mypy"
    assert hooks["distlint-check"]["language"] == "system"
