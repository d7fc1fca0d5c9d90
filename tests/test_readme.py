"""README.md is the contract a newcomer follows; keep it true.

* Its rules table is generated from the rules themselves (the rest of the README, and the
  pages under docs/, are checked by tests/test_docs.py).
* Its install and test commands are exactly what ``.ci/run`` runs (in a fresh virtual
  environment), and the extras they install hold everything the tests import: the
  ``test`` extra must not lean on what a machine happens to have (torch's CPU wheel
  does not pull numpy, yet torch's test helpers import it).
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import re
import sys
from collections.abc import Iterable
from pathlib import Path

from doc_pages import between_markers

from distlint.cli import rules_table_markdown
from distlint.rules import all_rules

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
CONTRIBUTING = ROOT / "CONTRIBUTING.md"
CI_RUN = ROOT / ".ci" / "run"
PYPROJECT = ROOT / "pyproject.toml"
START, END = "<!-- rules-table:start -->", "<!-- rules-table:end -->"
#: The extras README's install command installs (and .ci/run with it).
TEST_EXTRAS = ("runtime", "test")
#: Files whose imports the suite executes: the tests themselves and the migrate fixtures the
#: equivalence test runs under gloo.
EXECUTED = [
    *sorted((ROOT / "tests").rglob("*.py")),
    *sorted((ROOT / "fixtures" / "migrate").glob("test_gloo_*.py")),
]
#: torch's own test helpers: their module-level imports are the suite's imports too.
TORCH_HELPERS = "torch.testing._internal"


def test_readme_rules_table_is_generated_from_the_rules():
    table = between_markers(README, START, END)
    assert table == "\n" + rules_table_markdown(), (
        "README.md's rules table is stale: replace the lines between the markers with the table that "
        "`distlint rules --format markdown` starts with (its lines up to the first blank line)"
    )


def test_table_has_one_row_per_rule():
    rows = [
        line for line in rules_table_markdown().splitlines() if re.match(r"^\| DL\d{3} \|", line)
    ]
    assert [row.split("|")[1].strip() for row in rows] == [rule.code for rule in all_rules()]


# -- the install and test commands ----------------------------------------------------------------


def readme_block(name: str, page: Path = README) -> list[str]:
    """The command lines of ``page``'s fenced block between ``<!-- NAME:start -->`` and ``:end``."""
    start = f"<!-- {name}:start -->"
    block = between_markers(page, start, f"<!-- {name}:end -->").strip()
    assert block.startswith("```bash\n") and block.endswith("\n```"), (
        f"{start} must hold one ```bash block"
    )
    return [
        line.strip()
        for line in block[len("```bash\n") : -len("\n```")].splitlines()
        if line.strip()
    ]


def script_commands(path: Path) -> list[str]:
    """A shell script's command lines: comments and blank lines left out."""
    lines = [line.strip() for line in path.read_text().splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def test_ci_runs_exactly_the_readme_install_and_test_commands():
    install, test = readme_block("ci-install"), readme_block("ci-test")
    # CONTRIBUTING.md's checks run between them: after the install, before the suite.
    checks = readme_block("ci-checks", CONTRIBUTING)
    assert install and checks and test
    expected = install + checks + test
    commands = script_commands(CI_RUN)
    # They end the script, in this order: nothing after them can change what CI reports.
    assert commands[-len(expected) :] == expected, (
        f".ci/run must end with README.md's install, CONTRIBUTING.md's checks and README.md's "
        f"test commands:\n{expected}\nnot:\n{commands}"
    )


def test_ci_installs_into_a_fresh_temporary_virtual_environment():
    """.ci/run makes its own environment in a temporary folder, removed on exit, before installing."""
    commands = script_commands(CI_RUN)
    first_install = commands.index(readme_block("ci-install")[0])
    setup = commands[:first_install]
    made = [
        i for i, line in enumerate(setup) if re.fullmatch(r'venv="\$\(mktemp -d [^)]*\)"', line)
    ]
    created = [
        i for i, line in enumerate(setup) if re.fullmatch(r'python3? -m venv "\$venv"', line)
    ]
    activated = [i for i, line in enumerate(setup) if line == '. "$venv/bin/activate"']
    removed = [i for i, line in enumerate(setup) if line == "trap 'rm -rf \"$venv\"' EXIT"]
    assert made and created and activated and removed, (
        f".ci/run's set-up is not a fresh temporary venv:\n{setup}"
    )
    assert made[0] < removed[0] < created[0] < activated[0]
    assert "set -euo pipefail" in commands[: made[0]], "a failing command must fail CI"


# -- the extras hold what the tests import --------------------------------------------------------


def _module_file(module: str) -> Path:
    """The source file of an installed module, found without importing it (or its package)."""
    top, *rest = module.split(".")
    spec = importlib.util.find_spec(top)
    if spec is None or not spec.submodule_search_locations:
        return Path()
    base = Path(list(spec.submodule_search_locations)[0]).joinpath(*rest)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return Path()


def imported_modules(path: Path, module_level_only: bool = False) -> set[str]:
    """Dotted names ``path`` imports (``from a import b`` also yields ``a.b``, which may be a module)."""
    tree = ast.parse(path.read_text(), str(path))
    nodes: Iterable[ast.AST] = tree.body if module_level_only else ast.walk(tree)
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def third_party_imports() -> dict[str, set[str]]:
    """Top-level third-party module -> the files importing it: the executed files, and torch's test
    helpers they reach (module-level imports, followed from helper to helper)."""
    # Fixtures import sibling modules (common_*.py, as PyTorch's tests import test_c10d_common.py).
    local = {
        p.stem
        for p in [*ROOT.joinpath("tests").rglob("*.py"), *ROOT.joinpath("fixtures").rglob("*.py")]
    }
    local |= {"distlint"}
    found: dict[str, set[str]] = {}
    todo: list[tuple[Path, bool]] = [(path, False) for path in EXECUTED]
    seen: set[Path] = set()
    while todo:
        path, module_level_only = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for module in imported_modules(path, module_level_only):
            top = module.split(".")[0]
            if top in sys.stdlib_module_names or top in local or top == "__main__":
                continue
            found.setdefault(top, set()).add(
                str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
            )
            helper = _module_file(module) if module.startswith(TORCH_HELPERS + ".") else Path()
            if helper.is_file():
                todo.append((helper, True))
    return found


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared_distributions() -> tuple[set[str], set[str]]:
    """(installed distributions the project's dependencies and TEST_EXTRAS pull in, transitively;
    requirement names pyproject.toml declares only for another Python, e.g. tomli for < 3.11)."""
    from packaging.requirements import Requirement

    project = tomllib.loads(PYPROJECT.read_text())["project"]
    everything = [Requirement(r) for r in project["dependencies"]]
    everything += [
        Requirement(r) for extra in project["optional-dependencies"].values() for r in extra
    ]
    todo = [Requirement(r) for r in project["dependencies"]]
    todo += [
        Requirement(r) for extra in TEST_EXTRAS for r in project["optional-dependencies"][extra]
    ]
    closure: set[str] = set()
    while todo:
        requirement = todo.pop()
        name = _normalize(requirement.name)
        if name in closure or (
            requirement.marker and not requirement.marker.evaluate({"extra": ""})
        ):
            continue
        try:
            requires = importlib.metadata.requires(requirement.name) or []
        except importlib.metadata.PackageNotFoundError:
            continue  # not installed here: the import check below reports what is missing
        closure.add(name)
        for text in requires:
            sub = Requirement(text)
            wanted = [""] + sorted(requirement.extras)
            if sub.marker is None or any(sub.marker.evaluate({"extra": extra}) for extra in wanted):
                todo.append(sub)
    for_this_python = {
        _normalize(r.name) for r in everything if not r.marker or r.marker.evaluate({"extra": ""})
    }
    return closure, {_normalize(r.name) for r in everything} - for_this_python


def test_every_module_the_tests_import_comes_from_a_declared_dependency():
    imports = third_party_imports()
    assert {"torch", "numpy", "pytest", "libcst"} <= set(imports), (
        f"import scan found too little: {sorted(imports)}"
    )
    closure, other_pythons_only = declared_distributions()
    providers = importlib.metadata.packages_distributions()
    problems = []
    for module, files in sorted(imports.items()):
        distributions = {_normalize(d) for d in providers.get(module, [])}
        if _normalize(module) in other_pythons_only:
            # A fallback import for another Python (tomli where tomllib is missing): its presence
            # here depends on what else the environment holds (CI's once had it, pulled in by
            # none of our dependencies), so it is neither required nor a problem.
            continue
        if not distributions:
            problems.append(
                f"{module} (imported by {', '.join(sorted(files))}) is not installed or declared"
            )
        elif not distributions & closure:
            problems.append(
                f"{module} (imported by {', '.join(sorted(files))}) comes from {sorted(distributions)}, "
                f"which pyproject.toml's dependencies and {'/'.join(TEST_EXTRAS)} extras do not pull in"
            )
    assert not problems, "add these to the `test` extra:\n" + "\n".join(problems)


# -- the pre-commit examples name the project's repository and release -----------------------------


def test_pre_commit_examples_name_pyprojects_repository_at_its_version():
    """A user copies ``repo:``/``rev:`` from the README (and docs/check.md): they are the repository
    pyproject.toml's metadata names and the tag of the version it declares."""
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    repository, tag = project["urls"]["Repository"], f"v{project['version']}"
    for page in (README, ROOT / "docs" / "check.md"):
        text = page.read_text()
        repos = re.findall(r"^\s*- repo: (\S+)$", text, re.M)
        revs = re.findall(r"^\s*rev: (\S+)$", text, re.M)
        assert repos and set(repos) == {repository}, f"{page.name}: repo: {repos}, not {repository}"
        assert set(revs) == {tag}, f"{page.name}: rev: {revs}, not {tag}"
