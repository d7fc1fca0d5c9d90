"""One file's pipeline: pre-screen -> libcst parse -> one batched traversal -> findings.

``lint_source`` never raises for bad input: a file that cannot be decoded or parsed
gives a :class:`FileResult` with ``error`` set. ``fix_source`` applies the rules' fixes
until none is left (bounded), and only returns code that re-parses and compiles.

Cost control (see BENCHMARKS.md): a rule runs only when its ``may_report`` says it can
report in this file, so most files never reach libcst; metadata is resolved only for
the rules that run, and positions only for files with a report.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple, Type, TypeVar

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor
from libcst.metadata import MetadataWrapper

from distlint.config import Config
from distlint.findings import FileResult, Finding  # re-exported: rules and tests import them from here
from distlint.metadata import node_spans
from distlint.rules import all_rules
from distlint.rules.base import Fix, LintRule, Report

T = TypeVar("T")

_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
_SKIP_FILE = re.compile(r"^[ \t]*#[ \t]*distlint:[ \t]*skip-file\b", re.MULTILINE)
_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z0-9, ]+))?", re.IGNORECASE)
_DISTLINT_IGNORE = re.compile(r"#\s*distlint:\s*ignore\[(?P<codes>[A-Z0-9, ]+)\]")
_MODULE_HOOKS = frozenset({"visit_Module", "leave_Module"})
_NEWLINES = re.compile(r"\r\n?|\n")
MAX_FIX_PASSES = 8


class PreScreen:
    """Cheap facts about a file's source, computed before (and instead of) libcst."""

    def __init__(self, source: bytes, path: str) -> None:
        self.source = source
        self.path = path
        self._words: Optional[FrozenSet[bytes]] = None
        self._ast: Any = None
        #: Why ``ast`` could not parse the file (set by :attr:`ast_module`).
        self.syntax_error: Optional[str] = None

    @property
    def words(self) -> FrozenSet[bytes]:
        if self._words is None:
            self._words = frozenset(_WORD.findall(self.source))
        return self._words

    def has_any_word(self, words: Iterable[str]) -> bool:
        mine = self.words
        return any(word.encode() in mine for word in words)

    @property
    def ast_module(self) -> Optional[ast.Module]:
        """The stdlib ``ast`` tree, or ``None`` when ``ast`` cannot parse the file."""
        if self._ast is None:
            try:
                self._ast = ast.parse(self.source, self.path)
            except SyntaxError as exc:
                self._ast = False
                self.syntax_error = f"syntax error at {exc.lineno}:{exc.offset or 1}: {exc.msg}"
            except ValueError as exc:
                self._ast = False
                self.syntax_error = f"cannot parse: {exc}"
        return self._ast or None


class FileContext:
    """What rules of one file share: path, config, the wrapper, and memoised facts.

    Analyses used by several rules (and by the codemods) are computed once per file
    through :meth:`fact`.
    """

    def __init__(self, path: str, config: Config, wrapper: MetadataWrapper) -> None:
        self.path = path
        self.config = config
        self.wrapper = wrapper
        self._facts: Dict[Any, Any] = {}

    @property
    def module(self) -> cst.Module:
        return self.wrapper.module

    def fact(self, key: Any, compute: Callable[["FileContext"], T]) -> T:
        if key not in self._facts:
            self._facts[key] = compute(self)
        return self._facts[key]


def enabled_rules(config: Config, path: str, rules: Optional[Sequence[Type[LintRule]]] = None) -> List[Type[LintRule]]:
    rules = all_rules() if rules is None else rules
    codes = config.enabled_codes(((r.code, r.default_enabled) for r in rules), path)
    return [rule for rule in rules if rule.code in codes]


def _bad_byte(source: bytes, encoding: str, offset: int) -> ValueError:
    line = source.count(b"\n", 0, offset) + 1
    column = offset - (source.rfind(b"\n", 0, offset) + 1) + 1
    return ValueError(f"not valid {encoding}: byte 0x{source[offset]:02x} at {line}:{column}")


def decode_source(source: bytes, path: str) -> str:
    """Decode as Python does (PEP 263 cookie, BOM); raise ``ValueError`` with a clear reason."""
    if b"\x00" in source:
        raise ValueError("binary file (contains NUL bytes)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    except SyntaxError as exc:
        # detect_encoding also rejects a non-UTF-8 byte in the first two lines: name it.
        try:
            source.decode("utf-8")
        except UnicodeDecodeError as bad:
            raise _bad_byte(source, "utf-8", bad.start) from None
        raise ValueError(f"cannot decode: {exc}") from None
    try:
        return source.decode(encoding)
    except LookupError as exc:
        raise ValueError(f"cannot decode: {exc}") from None
    except UnicodeDecodeError as exc:
        raise _bad_byte(source, exc.encoding, exc.start) from None


def _parse(source: bytes, path: str) -> cst.Module:
    """libcst parse with a one-line error message."""
    decode_source(source, path)  # clear message for bad bytes before libcst's long one
    try:
        return cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        # Python's own parser says more precisely what is wrong, and where.
        try:
            ast.parse(source, path)
        except SyntaxError as precise:
            raise ValueError(f"syntax error at {precise.lineno}:{precise.offset or 1}: {precise.msg}") from None
        except (ValueError, RecursionError, MemoryError):
            pass
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else "syntax error"
        raise ValueError(f"syntax error at {exc.raw_line}:{exc.raw_column + 1}: {message}") from None


def _run_rules(module: cst.Module, path: str, config: Config,
               rules: Sequence[Type[LintRule]]) -> Tuple[MetadataWrapper, List[Report]]:
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    context = FileContext(path, config, wrapper)
    instances = [rule(context) for rule in rules]
    hooks = [instance.get_visitors() for instance in instances]
    if all(set(methods) <= _MODULE_HOOKS for methods in hooks):
        # Rules that only look at the module as a whole (their analysis walks what it
        # needs): the same calls as a batched traversal, without visiting every node.
        with ExitStack() as stack:
            for instance in instances:
                stack.enter_context(instance.resolve(wrapper))
            for name in ("visit_Module", "leave_Module"):
                for methods in hooks:
                    if name in methods:
                        methods[name](wrapper.module)
    else:
        wrapper.visit_batched(instances)
    reports = [report for instance in instances for report in instance.reports]
    return wrapper, reports


def _suppressed(line_text: str, code: str) -> bool:
    for pattern in (_NOQA, _DISTLINT_IGNORE):
        match = pattern.search(line_text)
        if match is None:
            continue
        codes = match.group("codes")
        if codes is None:  # bare "# noqa": everything on this line
            return True
        if any(code.startswith(c.strip()) for c in codes.split(",") if c.strip()):
            return True
    return False


def _locate(wrapper: MetadataWrapper, reports: List[Report], path: str, lines: Sequence[str]) -> List[Optional[Finding]]:
    """Findings for ``reports`` in the same order; ``None`` for a suppressed report."""
    if not reports:
        return []
    # Only the reported nodes' positions: PositionProvider would cost twice the parse.
    spans = node_spans(wrapper.module, [report.node for report in reports])
    located: List[Optional[Finding]] = []
    for report in reports:
        start_line, start_col, end_line, end_col = spans[report.node]
        line, col = start_line, start_col + 1
        if isinstance(report.node, cst.Module):  # whole-module reports point at line 1
            line, col = 1, 1
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        if _suppressed(text, report.rule.code):
            located.append(None)
            continue
        located.append(Finding(path, line, col, report.rule.code, report.rule.name, report.message,
                               report.fix is not None, end_line, end_col + 1))
    return located


def source_lines(text: str) -> List[str]:
    """Lines as libcst counts them (``\r\n``, ``\r``, ``\n``; not form feeds and the like)."""
    return _NEWLINES.split(text)


def screen_rules(source: bytes, path: str, rules: Sequence[Type[LintRule]], config: Config) -> List[Type[LintRule]]:
    """The rules that may report in this file according to the cheap pre-screen."""
    screen = PreScreen(source, path)
    return [rule for rule in rules if rule.may_report(screen, config)]


def lint_source(source: bytes, path: str, config: Config,
                rules: Optional[Sequence[Type[LintRule]]] = None, prescreen: bool = True) -> FileResult:
    """Lint one file's bytes with the enabled ``rules`` (default: all rules)."""
    active = enabled_rules(config, path, rules)
    try:
        text = decode_source(source, path)
        if _SKIP_FILE.search(text):
            return FileResult(path)
        screen = PreScreen(source, path)
        if prescreen:
            active = [rule for rule in active if rule.may_report(screen, config)]
        if not active:
            # A file no rule needs to parse still gets its syntax checked, with the stdlib
            # parser (10x libcst's speed; rules' pre-screens have usually parsed it already).
            if screen.ast_module is None:
                return FileResult(path, error=f"{path}: error: {screen.syntax_error}")
            return FileResult(path)
        module = _parse(source, path)
        wrapper, reports = _run_rules(module, path, config, active)
        located = _locate(wrapper, reports, path, source_lines(text))
        return FileResult(path, sorted((f for f in located if f is not None), key=Finding.sort_key))
    except ValueError as exc:
        return FileResult(path, error=f"{path}: error: {exc}")
    except RecursionError:
        return FileResult(path, error=f"{path}: error: file too deeply nested to analyse")


# -- fixes ---------------------------------------------------------------------------------

class _ApplyEdits(cst.CSTTransformer):
    def __init__(self, edits: Dict[int, Any]) -> None:
        super().__init__()
        self.edits = edits

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> Any:
        replacement = self.edits.get(id(original_node))
        return updated_node if replacement is None else replacement


def _non_overlapping(fixes: Sequence[Fix], module: cst.Module) -> List[Fix]:
    """Fixes whose edited nodes neither coincide nor nest; the rest wait for the next pass."""
    parent: Dict[int, int] = {}

    class _Parents(cst.CSTVisitor):
        def __init__(self) -> None:
            super().__init__()
            self.stack: List[int] = []

        def on_visit(self, node: cst.CSTNode) -> bool:
            if self.stack:
                parent[id(node)] = self.stack[-1]
            self.stack.append(id(node))
            return True

        def on_leave(self, original_node: cst.CSTNode) -> None:
            self.stack.pop()

    module.visit(_Parents())
    taken: set = set()
    chosen = []
    for fix in fixes:
        ids = [id(node) for node, _ in fix.edits]
        ancestry = set()
        for node_id in ids:
            cursor: Optional[int] = node_id
            while cursor is not None:
                ancestry.add(cursor)
                cursor = parent.get(cursor)
        if ancestry & taken or any(i in taken for i in ids):
            continue
        # Mark the edited nodes and everything above them as taken.
        taken |= ancestry
        chosen.append(fix)
    return chosen


def apply_fixes(module: cst.Module, fixes: Sequence[Fix]) -> cst.Module:
    """Apply non-overlapping ``fixes`` to ``module`` (nodes from that same module)."""
    edits: Dict[int, Any] = {}
    add, remove = [], []
    for fix in fixes:
        for node, replacement in fix.edits:
            edits[id(node)] = replacement
        add.extend(fix.add_imports)
        remove.extend(fix.remove_imports)
    if edits:
        module = module.visit(_ApplyEdits(edits))
    if add:
        context = CodemodContext()
        for spec in add:
            AddImportsVisitor.add_needed_import(context, spec.module, spec.obj, spec.asname)
        module = module.visit(AddImportsVisitor(context))
    if remove:
        context = CodemodContext()
        wrapper = MetadataWrapper(module)
        for spec in remove:
            RemoveImportsVisitor.remove_unused_import(context, spec.module, spec.obj, spec.asname)
        module = wrapper.visit(RemoveImportsVisitor(context))
    return module


@dataclass
class FixResult:
    path: str
    #: The fixed bytes (``None`` when nothing changed or the file could not be fixed).
    fixed: Optional[bytes]
    #: Findings left after fixing (those without a fix, or suppressed by a failure).
    remaining: List[Finding] = field(default_factory=list)
    #: How many reports were fixed.
    fixed_count: int = 0
    error: Optional[str] = None


def fix_source(source: bytes, path: str, config: Config,
               rules: Optional[Sequence[Type[LintRule]]] = None, first: Optional[FileResult] = None) -> FixResult:
    """Apply fixes until a fixed point (at most ``MAX_FIX_PASSES`` passes).

    The result is re-parsed by libcst and ``compile()``d; code that does not is never
    returned (the file is reported as not fixable instead). ``first`` is the lint result
    of ``source`` when the caller already has it (the engine does), to avoid linting twice.
    """
    if first is None:
        first = lint_source(source, path, config, rules)
    if first.error or not any(f.fixable for f in first.findings):
        return FixResult(path, None, first.findings, 0, first.error)
    active = enabled_rules(config, path, rules)
    current = source
    fixed_count = 0
    for _ in range(MAX_FIX_PASSES):
        screened = screen_rules(current, path, active, config)
        module = _parse(current, path)
        wrapper, reports = _run_rules(module, path, config, screened)
        text = decode_source(current, path)
        lines = source_lines(text)
        located = {id(r): f for r, f in zip(reports, _locate(wrapper, reports, path, lines))}
        fixes = [r.fix for r in reports if r.fix is not None and located[id(r)] is not None]
        if not fixes:
            break
        chosen = _non_overlapping(fixes, wrapper.module)
        new_module = apply_fixes(wrapper.module, chosen)
        new_bytes = new_module.bytes
        if new_bytes == current:
            break
        fixed_count += len(chosen)
        current = new_bytes
    try:
        verify_python(current, path)
    except ValueError as exc:
        return FixResult(path, None, first.findings, 0, f"{path}: error: fix not applied: {exc}")
    final = lint_source(current, path, config, rules)
    return FixResult(path, current if current != source else None, final.findings, fixed_count, final.error)


def verify_python(source: bytes, path: str) -> None:
    """Raise ``ValueError`` unless ``source`` parses with libcst and compiles."""
    _parse(source, path)
    try:
        compile(source, path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise ValueError(f"result does not compile: {exc.msg} (line {exc.lineno})") from None
