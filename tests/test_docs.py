"""The documentation pages (README.md, CONTRIBUTING.md, docs/*.md) stay true.

What can be generated is compared with its generator (docs/rules.md); what names the code
(command lines, options, paths, config keys, reason codes, environment variables, the runtime's
API and skip codes) is checked against the code; examples are parsed, matched against the
fixtures they quote, or run. README.md's rules table and its install and test commands are
checked by tests/test_readme.py; the runtime examples are run by
tests/runtime/test_doc_examples.py.
"""

from __future__ import annotations

import argparse
import ast
import glob
import re
import shlex
import sys
from pathlib import Path

import pytest
import yaml
from doc_pages import (
    PAGES,
    ROOT,
    anchors,
    between_markers,
    blocks,
    code_spans,
    links,
    prose,
    section,
    table_with_header,
    tables,
)

from distlint.cli import build_parser, rules_reference_markdown
from distlint.config import Config

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DOCS = ROOT / "docs"
RULES_PAGE, CHECK_PAGE, MIGRATE_PAGE, RUNTIME_PAGE = (
    DOCS / f"{name}.md" for name in ("rules", "check", "migrate", "runtime")
)
CONTRIBUTING = ROOT / "CONTRIBUTING.md"
README = ROOT / "README.md"
#: Top-level folders of the repository: a path in the docs starting with one must exist.
REPO_DIRS = ("distlint", "tests", "fixtures", "benchmarks", "scripts", "docs", ".ci")


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


# -- docs/rules.md is generated -------------------------------------------------------------------


def test_rules_page_is_generated_from_the_rules():
    generated = between_markers(RULES_PAGE, "<!-- rules:start -->", "<!-- rules:end -->")
    assert generated == "\n" + rules_reference_markdown(), (
        "docs/rules.md is stale: replace the lines between <!-- rules:start --> and <!-- rules:end --> "
        "with the output of `distlint rules --format markdown`"
    )


# -- command lines and options --------------------------------------------------------------------


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


PARSER = build_parser(with_migrate=True)
COMMANDS = _subparsers(PARSER)


#: ``distlint <sub-command> ...``; not ``distlint migrate: would migrate ...`` (output).
_COMMAND = re.compile(r"^distlint [a-z]+(?:\s|$)")


def command_lines(page: Path) -> list[tuple[str, str]]:
    """(where, command line) for every ``distlint ...`` line of the page's shell blocks (with
    its indented continuation lines) and every code span that starts with ``distlint ``."""
    found = [
        (f"{page_id(page)} `{span}`", span)
        for span in code_spans(prose(page))
        if _COMMAND.match(span)
    ]
    for block in blocks(page):
        if block.lang not in ("", "bash"):
            continue
        lines = block.text.splitlines()
        for i, line in enumerate(lines):
            if _COMMAND.match(line):
                continuation = [more.strip() for more in lines[i + 1 :] if more.startswith(" ")]
                found.append((f"{block.where()} {line}", " ".join([line, *continuation])))
    return found


def _options(parser: argparse.ArgumentParser) -> set:
    return set(parser._option_string_actions)


def check_command_line(line: str) -> None:
    """A usage synopsis (``[--fix | --diff]``): its sub-command and every option exist. A real
    command line: argparse accepts it (up to a shell redirection, pipe or comment)."""
    words = shlex.split(line, comments=True)
    assert words[0] == "distlint" and len(words) > 1 and words[1] in COMMANDS, (
        f"no such sub-command: {line}"
    )
    if "[" in line:
        unknown = set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", line)) - _options(
            COMMANDS[words[1]]
        )
        assert not unknown, f"`distlint {words[1]}` has no option {sorted(unknown)}: {line}"
        return
    cut = next(
        (i for i, word in enumerate(words) if word in (">", ">>", "|", "&&", ";")), len(words)
    )
    try:
        PARSER.parse_args(words[1:cut])
    except SystemExit:
        pytest.fail(f"distlint rejects this command line from the docs: {line}")


ALL_COMMAND_LINES = [
    pytest.param(line, id=where) for page in PAGES for where, line in command_lines(page)
]


@pytest.mark.parametrize("line", ALL_COMMAND_LINES)
def test_every_command_line_in_the_docs_is_accepted(line):
    check_command_line(line)


def test_the_docs_have_command_lines_of_every_sub_command():
    used = {shlex.split(param.values[0])[1] for param in ALL_COMMAND_LINES}
    assert used == set(COMMANDS), f"no example of {sorted(set(COMMANDS) - used)}"


@pytest.mark.parametrize(
    "page,command,header", [(CHECK_PAGE, "check", "option"), (MIGRATE_PAGE, "migrate", "mode")]
)
def test_every_option_in_an_options_table_exists(page, command, header):
    rows = table_with_header(prose(page), header)
    named = [span.split()[0] for row in rows for span in code_spans(row[0]) if span.startswith("-")]
    assert named, f"no options found in {page_id(page)}'s table"
    unknown = set(named) - _options(COMMANDS[command])
    assert not unknown, (
        f"{page_id(page)} documents options `distlint {command}` does not have: {sorted(unknown)}"
    )


def test_check_page_documents_every_option_of_check():
    documented = {
        span.split()[0]
        for row in table_with_header(prose(CHECK_PAGE), "option")
        for span in code_spans(row[0])
    }
    options = {o for o in _options(COMMANDS["check"]) if o not in ("-h", "--help")}
    assert options <= documented, (
        f"docs/check.md's options table misses {sorted(options - documented)}"
    )


# -- paths, links, code blocks --------------------------------------------------------------------

_REPO_PATH = re.compile(
    r"(?<![\w./$-])((?:{})/[\w./*-]*)".format("|".join(re.escape(d) for d in REPO_DIRS))
)


def repo_paths(page: Path) -> list[str]:
    return [match.rstrip(".,") for match in _REPO_PATH.findall(page.read_text())]


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_repository_path_in_the_docs_exists(page):
    missing = [
        path
        for path in repo_paths(page)
        if not (glob.glob(str(ROOT / path)) if "*" in path else (ROOT / path).exists())
    ]
    assert not missing, f"{page_id(page)} names paths that do not exist: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_link_in_the_docs_leads_somewhere(page):
    broken = []
    for target in links(page):
        if re.match(r"^[a-z]+://", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(target)
        elif anchor and (linked.suffix != ".md" or anchor not in anchors(linked)):
            broken.append(target)
    assert not broken, f"{page_id(page)} has broken links: {broken}"


def test_the_module_map_mentions_every_module():
    """CONTRIBUTING.md's architecture names every module of distlint/ (a folder of one module per
    rule or output format counts as named with the folder)."""
    mentioned = set(repo_paths(CONTRIBUTING))
    uniform = ("distlint/rules/", "distlint/output/")
    modules = [
        str(p.relative_to(ROOT))
        for p in sorted((ROOT / "distlint").rglob("*.py"))
        if p.name != "__init__.py"
    ]
    missing = [
        m
        for m in modules
        if m not in mentioned
        and not (m.startswith(uniform) and m.rsplit("/", 1)[0] + "/" in mentioned)
    ]
    assert not missing, f"CONTRIBUTING.md's architecture section does not mention: {missing}"


ALL_BLOCKS = [pytest.param(block, id=block.where()) for page in PAGES for block in blocks(page)]


@pytest.mark.parametrize("block", [b for b in ALL_BLOCKS if b.values[0].lang == "python"])
def test_python_examples_parse(block):
    try:
        ast.parse(block.text)
    except SyntaxError as exc:
        pytest.fail(f"{block.where()}: the Python example does not parse: {exc}")


@pytest.mark.parametrize("block", [b for b in ALL_BLOCKS if b.values[0].lang == "toml"])
def test_toml_examples_parse_and_their_distlint_tables_are_valid_config(block):
    data = tomllib.loads(block.text)
    table = data.get("tool", {}).get("distlint")
    if table is not None:
        Config.from_table(table, source=block.where())  # raises ConfigError naming the key


def test_the_pre_commit_example_uses_the_hooks_the_repository_defines():
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    examples = [yaml.safe_load(block.text) for block in blocks(CHECK_PAGE) if block.lang == "yaml"]
    used = {
        hook["id"] for example in examples for repo in example["repos"] for hook in repo["hooks"]
    }
    assert used and used <= {hook["id"] for hook in hooks}
    for hook in hooks:  # the page quotes the `files` pattern the hooks use
        assert f"files: {hook['files']}" in CHECK_PAGE.read_text()


# -- examples quoted from the fixtures ------------------------------------------------------------

EXCERPTS = [b for b in ALL_BLOCKS if b.values[0].excerpt_of]


@pytest.mark.parametrize("block", EXCERPTS)
def test_excerpts_quote_their_file(block):
    """An excerpt is its file's lines, in order; a line that is only ``...`` stands for lines left
    out, and the lines between two such marks are consecutive in the file."""
    file_lines = (ROOT / block.excerpt_of).read_text().splitlines()
    chunks: list[list[str]] = [[]]
    for line in block.text.splitlines():
        if line.strip() == "...":
            chunks.append([])
        else:
            chunks[-1].append(line)
    position = 0
    for chunk in filter(None, chunks):
        starts = [
            i
            for i in range(position, len(file_lines) - len(chunk) + 1)
            if file_lines[i : i + len(chunk)] == chunk
        ]
        assert starts, (
            f"{block.where()}: these lines are not in {block.excerpt_of} (in this order):\n"
            + "\n".join(chunk)
        )
        position = starts[0] + len(chunk)


def test_there_are_excerpts_on_the_pages_that_quote():
    # README.md's workflow shows what distlint printed on PyTorch's own files, not on fixtures.
    assert {Path(b.values[0].page).name for b in EXCERPTS} >= {"migrate.md"}


_FINDING = re.compile(r"^(?P<path>fixtures/\S+?\.py):(?P<place>\d+:\d+: DL\d{3} .+)$")


def test_example_findings_are_what_distlint_reports_on_the_fixtures():
    """Every ``path:line:col: CODE message`` line the docs show for a fixture is in that
    fixture's golden ``.findings`` file."""
    shown = [
        (block, match)
        for page in PAGES
        for block in blocks(page)
        for line in block.text.splitlines()
        for match in [_FINDING.match(line)]
        if match
    ]
    assert {block.page.name for block, _ in shown} >= {"README.md", "rules.md", "check.md"}
    for block, match in shown:
        golden = (ROOT / match["path"]).with_suffix(".findings").read_text().splitlines()
        assert match["place"] in golden, (
            f"{block.where()}: not what distlint reports: {match.group(0)}"
        )


# -- tables and names against the code ------------------------------------------------------------


def test_migrate_page_lists_exactly_the_reason_codes():
    from distlint.analysis.model import Reason
    from distlint.codemods.report import Why

    text = section(prose(MIGRATE_PAGE), "## What it leaves in place, and why")
    documented = {
        code for table in tables(text) for row in table[1:] for code in code_spans(row[0])
    }
    existing = {reason.code for reason in Reason} | {why.code for why in Why}
    assert documented == existing, (
        f"docs/migrate.md: undocumented codes {sorted(existing - documented)}, "
        f"codes that do not exist {sorted(documented - existing)}"
    )


def test_check_page_lists_exactly_the_config_keys():
    documented = {code_spans(row[0])[0] for row in table_with_header(prose(CHECK_PAGE), "key")}
    keys = {name.replace("_", "-") for name in Config.__dataclass_fields__ if name != "source"}
    assert documented == keys


def test_check_page_lists_exactly_the_output_formats():
    from distlint.output import FORMATS

    text = section(prose(CHECK_PAGE), "## Output formats")
    assert set(re.findall(r"^- `(\w+)`:", text, re.MULTILINE)) == set(FORMATS)


def _env_vars_in(paths) -> set:
    return {
        node.value
        for path in paths
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and re.fullmatch(r"DISTLINT_[A-Z_]+", node.value)
    }


def test_every_environment_variable_is_documented_and_exists():
    documented = {
        name for page in PAGES for name in re.findall(r"\bDISTLINT_[A-Z_]+\b", page.read_text())
    }
    read_by_distlint = _env_vars_in((ROOT / "distlint").rglob("*.py"))
    assert read_by_distlint <= documented, f"undocumented: {sorted(read_by_distlint - documented)}"
    known = read_by_distlint | _env_vars_in((ROOT / "tests").rglob("*.py"))
    assert documented <= known, f"documented but read nowhere: {sorted(documented - known)}"


def test_runtime_page_lists_exactly_the_public_api():
    import distlint.runtime

    rows = table_with_header(prose(RUNTIME_PAGE), "name")
    documented = {re.match(r"\w+", span)[0] for row in rows for span in code_spans(row[0])}
    assert documented == set(distlint.runtime.__all__)


def test_runtime_page_skip_table_is_the_registry():
    from distlint.skipcodes import PYTORCH_SKIPS

    rows = table_with_header(prose(RUNTIME_PAGE), "code")
    codes = set()
    for code_cell, name_cell in rows:
        cell_codes = set()
        for part in code_cell.split(","):
            low, _, high = part.strip().partition("..")
            cell_codes.update(range(int(low), int(high or low) + 1))
        if len(cell_codes) == 1:
            (code,) = cell_codes
            assert code_spans(name_cell) == [
                n for n, skip in PYTORCH_SKIPS.items() if skip.exit_code == code
            ]
        codes |= cell_codes
    assert codes == {skip.exit_code for skip in PYTORCH_SKIPS.values()}


# -- facts several pages state --------------------------------------------------------------------
#
# A fact stated on more than one page is checked against the code that decides it, so the pages
# cannot drift apart: the default rule set, the world sizes on CPU, the import cost of
# distlint.runtime (stated once, in BENCHMARKS.md) and the reasons' texts.

BENCHMARKS = ROOT / "BENCHMARKS.md"
_NUMBERS = {
    word: value
    for value, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve".split()
    )
}


def default_rule_codes() -> set[str]:
    from distlint.screens import RULE_SCREENS

    return {entry.code for entry in RULE_SCREENS if entry.default_enabled}


def expand_codes(text: str) -> set[str]:
    """``DL101-DL105, DL202`` -> the codes of the rule table it names (ranges inclusive)."""
    from distlint.screens import RULE_SCREENS

    codes = [entry.code for entry in RULE_SCREENS]
    named: set[str] = set()
    for low, high in re.findall(r"\b(DL\d{3})(?:\s*[-–]\s*(DL\d{3}))?\b", text):
        named |= {code for code in codes if low <= code <= (high or low)}
    return named


#: "its nine default rules (DL101-DL105, ...)", "the nine rules on by default (...)".
_DEFAULT_RULES_CLAIM = re.compile(
    r"\b(\w+)\s+(?:default\s+rules|rules\s+on\s+by\s+default)\b(?:\s+\(([^)]*)\))?", re.IGNORECASE
)


def test_readme_rules_table_marks_exactly_the_default_rules():
    rows = table_with_header(prose(README), "Code")
    assert {row[0] for row in rows if row[3] == "on"} == default_rule_codes()


def test_every_count_of_the_default_rules_is_the_rule_tables():
    defaults = default_rule_codes()
    claims = []
    for page in PAGES:
        for match in _DEFAULT_RULES_CLAIM.finditer(page.read_text()):
            count = _NUMBERS.get(match[1].lower(), int(match[1]) if match[1].isdigit() else None)
            if count is None:  # "the default rules": no count to check
                continue
            claims.append(page.name)
            assert count == len(defaults), (
                f"{page_id(page)} says {match[0]!r}; the rule table has {len(defaults)} default rules"
            )
            if match[2]:
                assert expand_codes(match[2]) == defaults, (
                    f"{page_id(page)} lists {match[0]!r}; the default rules are {sorted(defaults)}"
                )
    assert {"BENCHMARKS.md", "check.md"} <= set(claims)


def _module_constants(path: Path, name: str) -> list:
    """The constant values ``name`` is assigned anywhere in the module (no import)."""
    return [
        node.value.value
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
        and isinstance(node.value, ast.Constant)
    ]


def torch_cpu_num_devices() -> int:
    """torch's ``NUM_DEVICES`` without an accelerator: the one constant common_dtensor assigns
    (the others are computed from the device count). Read from the source: importing torch's
    test helpers costs seconds."""
    import importlib.util

    spec = importlib.util.find_spec("torch")  # finds the package without importing it
    assert spec is not None and spec.origin, "torch is not installed"
    common_dtensor = (
        Path(spec.origin).parent / "testing/_internal/distributed/_tensor/common_dtensor.py"
    )
    (value,) = _module_constants(common_dtensor, "NUM_DEVICES")
    return value


def test_the_dtensor_world_size_on_cpu_is_torchs_num_devices_on_every_page():
    """distlint's DTensor class (and `--runtime torch`'s rewrite) take torch's NUM_DEVICES; every
    page that says what that is on CPU says the same."""
    dtensor_class = ast.parse((ROOT / "distlint/runtime/torch_dtensor.py").read_text())
    assert any(
        isinstance(node, ast.Assign)
        and [getattr(t, "id", None) for t in node.targets] == ["world_size"]
        and getattr(node.value, "id", None) == "NUM_DEVICES"
        for node in ast.walk(dtensor_class)
    ), (
        "DTensorContinuousTest no longer sets world_size = NUM_DEVICES: update this test and the docs"
    )
    expected = torch_cpu_num_devices()
    stated = {
        page.name: re.findall(r"NUM_DEVICES`?[^.;]{0,30}?\b(\d+) on CPU", page.read_text())
        for page in PAGES
    }
    assert stated["migrate.md"] and stated["runtime.md"], stated
    wrong = {name: sizes for name, sizes in stated.items() if set(sizes) - {str(expected)}}
    assert not wrong, f"torch's NUM_DEVICES is {expected} on CPU; these pages say {wrong}"


def test_the_gloo_default_world_size_is_the_runtimes():
    (size,) = _module_constants(ROOT / "distlint/runtime/resolve.py", "DEFAULT_GLOO_WORLD_SIZE")
    rows = {row[0]: row for row in table_with_header(prose(RUNTIME_PAGE), "`backend_str()`")}
    assert rows['`"gloo"`'][2] == str(size)
    assert f"or {size} with gloo" in rows["`None`"][2]


_BENCHMARK_IMPORT_ANCHOR = "BENCHMARKS.md#case-3-import-distlintruntime"
_SECONDS = re.compile(r"\b\d+(?:\.\d+)?\s?(?:s|ms)\b")


def _paragraphs(page: Path) -> list[str]:
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", prose(page))]


def test_the_import_cost_of_the_runtime_is_stated_once_in_benchmarks():
    """Other pages link to the figure instead of repeating it (it changes when it is re-measured)."""
    linking = []
    for page in PAGES:
        if page == BENCHMARKS:
            continue
        for paragraph in _paragraphs(page):
            if "import distlint.runtime" in paragraph and re.search(r"\bcosts?\b", paragraph):
                assert not _SECONDS.search(paragraph), (
                    f"{page_id(page)} states the import cost of distlint.runtime; link to "
                    f"{_BENCHMARK_IMPORT_ANCHOR} instead: {paragraph[:200]}"
                )
                assert _BENCHMARK_IMPORT_ANCHOR in paragraph, (
                    f"{page_id(page)} speaks of the import cost without linking to its figure"
                )
                linking.append(page.name)
    assert "runtime.md" in linking
    summary = next(
        row
        for row in table_with_header(prose(BENCHMARKS), "benchmark")
        if "#case-3-import-distlintruntime" in row[0]
    )
    case_3 = section(prose(BENCHMARKS), "### Case 3: `import distlint.runtime`")
    stated = re.findall(r"\*\*(\d+\.\d+) s\*\*", case_3)
    assert stated and re.findall(r"\*\*(\d+\.\d+) s\*\*", summary[1]) == stated


def _reason_texts() -> dict[str, str]:
    from distlint.analysis.model import Reason
    from distlint.codemods.report import Why

    return {
        **{why.code: why.text for why in Why},
        **{reason.code: reason.text for reason in Reason},
    }


#: What ``distlint migrate --verify`` writes, in place of the code's text, for a test it demoted or
#: found flaky: what the runs showed.
_VERIFY_TEXTS = {
    "diverged": (
        r"(ends differently on shared ranks|passes alone but ends differently after the tests "
        r"before it on shared ranks|changes the outcome of \S+ run after it on shared ranks|fails on "
        r"shared ranks, and the class then skips the tests after it, \S+ among them|every "
        r"test of \S+ ends differently on shared ranks, the first alone too|(its class \S+ )?"
        r"hangs on shared ranks) \("
    ),
    "flaky": r"\w+, then \w+ in two runs of the (original|migrated file): not moved",
}


def test_reasons_quoted_in_the_docs_are_the_codes_texts():
    """``[code] text`` on a page (a report line) gives the text distlint prints for that code."""
    texts = _reason_texts()
    quoted = [
        (page, code, rest)
        for page in PAGES
        for code, rest in re.findall(r"\[([a-z][a-z-]+)\] ([^\n]+)", page.read_text())
        if code in texts
    ]
    assert quoted
    for page, code, rest in quoted:
        if re.match(_VERIFY_TEXTS.get(code, r"(?!)"), rest):
            continue  # --verify says what the runs showed (distlint/codemods/verify.py)
        assert rest.startswith(texts[code]), (
            f"{page_id(page)} quotes [{code}] as {rest!r}; distlint says {texts[code]!r}"
        )


def test_migrate_page_gives_each_class_reasons_why_as_distlint_does():
    """A class-level reason's text ends with why a continuous class cannot do what the class does
    (after ``; ``); docs/migrate.md's row for the code gives the same why."""
    from distlint.analysis.model import Reason

    rows = {
        code: row[1].replace("`", "")
        for table in tables(section(prose(MIGRATE_PAGE), "## What it leaves in place, and why"))
        for row in table[1:]
        for code in code_spans(row[0])
    }
    explained = [reason for reason in Reason if "; " in reason.text]
    assert Reason.CLASS_SETUP in explained
    for reason in explained:
        why = reason.text.split("; ", 1)[1].replace("`", "")
        assert why in rows[reason.code], (
            f"docs/migrate.md's `{reason.code}` row does not say what distlint says: {why!r}"
        )


#: Words about how the project is worked on, not about the project. "helper" is a technical
#: term here (a PG helper, `pg-helpers`); only its use for a person is refused.
_WORK_LOG_WORDS = re.compile(r"\b(?:issues?|sessions?|helper\s+sessions?)\b|\bhelpers'", re.I)


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_no_page_speaks_of_issues_or_sessions(page):
    text = re.sub(r"https?://\S+", "", page.read_text())
    found = sorted({match[0] for match in _WORK_LOG_WORDS.finditer(text)})
    assert not found, f"{page_id(page)} speaks of {found}: say what the project does instead"


# -- the benchmark commands -----------------------------------------------------------------------

_BENCHMARK_COMMAND = re.compile(r"python (benchmarks/[\w/]+\.py)([^\n`|;&#]*)")


def _script_options(script: Path) -> set[str]:
    """The option strings the script's argparse defines (read from its source, not run)."""
    return {
        arg.value
        for node in ast.walk(ast.parse(script.read_text()))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "add_argument"
        for arg in node.args
        if isinstance(arg, ast.Constant) and str(arg.value).startswith("-")
    } | {"-h", "--help"}


def test_every_benchmark_command_names_a_script_and_its_options():
    commands = [
        (page, *match) for page in PAGES for match in _BENCHMARK_COMMAND.findall(page.read_text())
    ]
    assert {page.name for page, _, _ in commands} >= {"BENCHMARKS.md"}
    for page, script, arguments in commands:
        path = ROOT / script
        assert path.is_file(), f"{page_id(page)}: no such benchmark: {script}"
        options = set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", arguments))
        unknown = options - _script_options(path)
        assert not unknown, f"{page_id(page)}: {script} has no option {sorted(unknown)}"
