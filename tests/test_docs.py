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
    assert {Path(b.values[0].page).name for b in EXCERPTS} >= {"README.md", "migrate.md"}


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
