"""``distlint migrate``: move eligible per-test-spawn tests into continuous test classes.

For every class that spawns workers for each test (``MultiProcessTestCase``,
``DTensorTestBase``, ``FSDPTest``, ``DistributedTestBase``: :mod:`distlint.codemods.bases`),
the tests the shared PG analysis (:mod:`distlint.analysis.pg`) finds eligible move to a
new class ``<Class><Suffix>`` right after it, deriving from that base's continuous
counterpart (``distlint.runtime``'s, or torch's with ``runtime="torch"``): their store and PG
creation become the class's shared ``self.pg``, their trailing ``destroy_process_group()``
(and a ``try/finally`` that only existed for it) go, and the class carries the world
size, backend, timeout and ``opts()`` the tests used. :mod:`distlint.codemods.plan`
decides what moves where; :mod:`distlint.codemods.emit` builds the new module from the plan.

Safety: the result is re-parsed and ``compile()``d before it is returned; a second run
changes nothing; bad input is a one-line error, never an exception.
"""

from __future__ import annotations

import ast
import difflib
import io
import tokenize
from dataclasses import dataclass, field

from libcst.metadata import MetadataWrapper

from distlint.analysis.external_bases import ExternalBases
from distlint.analysis.model import ModuleAnalysis
from distlint.analysis.pg import analyze_module, per_test_words
from distlint.codemods.body_stand_ins import body_stand_ins
from distlint.codemods.emit import Emitter
from distlint.codemods.frozen import Freezer, Frozen
from distlint.codemods.options import MigrateOptions
from distlint.codemods.plan import Planner
from distlint.codemods.report import FileReport
from distlint.codemods.rewrite import (
    RewriteError,
)
from distlint.codemods.torch_runtime_holds import rng_state_holds
from distlint.codemods.twins import InLeftOutBody, Twins
from distlint.config import Config
from distlint.screens.plain_classes import (
    STAND_IN_MARK,
    StandIns,
    multiprocess_words,
    plain_class_stand_ins,
    stand_in_classes,
)
from distlint.source import PreScreen, decode_source, parse, verify_python
from distlint.syntax.ast_lines import prepare_spliced
from distlint.syntax.ast_names import AstNames, Unsupported, build_ast_names
from distlint.syntax.ast_nodes import Source


@dataclass
class MigrationResult:
    path: str
    original: bytes
    #: The migrated source; ``None`` when nothing changes (or on error).
    migrated: bytes | None = None
    report: FileReport = field(default_factory=lambda: FileReport(""))
    #: A one-line ``path: error: ...`` message when the file could not be migrated.
    error: str | None = None
    #: Other files the result depends on (modules bases come from): absolute path -> stat key,
    #: None where no file was (as ``FileResult.depends_on``; the cache checks them).
    depends_on: dict[str, list[int] | None] = field(default_factory=dict)
    #: distlint itself failed on the file (never cached: the next run tries again).
    internal_error: bool = False

    @property
    def changed(self) -> bool:
        return self.migrated is not None and self.migrated != self.original

    def diff(self) -> str:
        if not self.changed:
            return ""
        assert self.migrated is not None
        try:
            before = decode_source(self.original, self.path).splitlines(keepends=True)
            after = decode_source(self.migrated, self.path).splitlines(keepends=True)
        except ValueError:  # pragma: no cover - both were decoded before
            return ""
        return "".join(difflib.unified_diff(before, after, f"a/{self.path}", f"b/{self.path}"))


def _screen(source: bytes, config: Config) -> bool:
    """Whether the file may have a per-test-spawn class: the DL202 pre-screen's per-test words
    (``_spawn_processes``, ``DTensorTestBase``, ``FSDPTest``, ``per-test-bases``...), so a file
    whose classes all derive from such a base is reported, never skipped."""
    return any(word.encode() in source for word in per_test_words(config))


def _analyze(
    tree: ast.Module,
    text: str,
    config: Config,
    path: str,
    looked_at: dict[str, list[int] | None],
    names: AstNames,
) -> ModuleAnalysis:
    """The shared DL2xx analysis of ``tree`` (parsed from ``text``, its names ``names``); bases
    from other modules are looked up next to ``path`` (each file looked at is recorded in
    ``looked_at``)."""
    external = ExternalBases(path, looked_at=looked_at)
    return analyze_module(tree, text, config, external, names)


def _holds(source: bytes, options: MigrateOptions) -> dict[str, tuple[str, str]]:
    """The tests kept behind although they could move: ``--verify``'s, and for torch's
    continuous classes those that read state only the distlint runtime resets per test."""
    held = rng_state_holds(source) if options.runtime == "torch" else {}
    held.update(options.hold)
    return held


def migrate_source(
    source: bytes,
    path: str,
    config: Config | None = None,
    options: MigrateOptions | None = None,
) -> MigrationResult:
    """Migrate one file's bytes; never raises for bad input (see ``MigrationResult.error``)."""
    return _migrate(source, path, config or Config(), options or MigrateOptions(), True)


def _migrate(
    source: bytes, path: str, config: Config, options: MigrateOptions, leave_out: bool
) -> MigrationResult:
    """``leave_out``: give libcst the file with stand-ins for its plain classes
    (:func:`~distlint.screens.plain_classes.plain_class_stand_ins`) and for the per-test classes
    that cannot change (:mod:`distlint.codemods.frozen`, reported from the analysis), and put
    them back into the result; the same migration as from the whole file, at a fraction of
    libcst's cost where most classes of a file run no rank or move no test. A file where
    nothing can change is reported without libcst."""
    result = MigrationResult(path, source, report=FileReport(path))
    try:
        text = decode_source(source, path)
        if not _screen(source, config):
            # Nothing to migrate: only say whether the file is valid Python (the C parser is
            # fast; libcst parses only to word the error like ``distlint check`` does).
            if not PreScreen(source, path).parses():
                parse(source, path)
            return result
        tree = _ast_tree(source)
        if tree is None:  # libcst words the error; what it parses, the analysis cannot read
            parse(source, path)
            raise ValueError("the file does not parse with Python's own parser")
        utf8 = _is_utf8(source)  # stand-ins are written in UTF-8
        stand_ins = _stand_ins(text, tree, config) if leave_out and utf8 else None
        analysed_text = text if stand_ins is None else stand_ins.text
        tree = tree if stand_ins is None else stand_ins.tree
    except ValueError as exc:
        result.error = f"{path}: error: {exc}"
        return result
    except RecursionError:
        result.error = f"{path}: error: file too deeply nested to analyse"
        return result
    names: AstNames | None = None
    try:
        names = build_ast_names(tree)  # the analysis' and the plan's (bases): built once
        analysis = _analyze(tree, analysed_text, config, path, result.depends_on, names)
        runtime = options.runtime if options.reused_workers else None
        frozen = Frozen()
        if leave_out:
            source_of = Source(analysed_text)
            freezer = Freezer(analysis, tree, source_of, names, options.class_suffix, runtime)
            frozen = freezer.frozen()
        if frozen.everything:  # nothing can change: the report alone, without libcst
            result.report.classes = [entry for _, entry in sorted(frozen.entries, key=_first)]
            return result
        layers = [] if stand_ins is None else [stand_ins]
        twin_tree, module_text = tree, analysed_text
        if frozen.classes and utf8 and STAND_IN_MARK not in text:
            first = 0 if stand_ins is None else len(stand_ins.originals)
            frozen_ins = stand_in_classes(analysed_text, tree, frozen.classes, first)
            prepare_spliced(tree, frozen_ins.tree, frozen_ins.text)
            layers.insert(0, frozen_ins)  # its classes are put back first
            twin_tree, module_text = frozen_ins.tree, frozen_ins.text
        else:
            frozen = Frozen()  # every class goes to libcst
        # The text the facts' positions are read against: the bodies left out below are there.
        facts_text, opaque = module_text, frozenset[int]()
        if leave_out and utf8 and STAND_IN_MARK not in text:
            first = sum(len(layer.originals) for layer in layers)
            bodies = body_stand_ins(
                module_text, twin_tree, analysis, frozen.names, options.class_suffix, first
            )
            if bodies is not None:
                layers.insert(0, bodies.stand_ins)
                module_text, opaque = bodies.stand_ins.text, bodies.defs
        parsed = source if module_text is text else module_text.encode("utf-8")
        try:
            module = parse(parsed, path)
        except ValueError as exc:
            result.error = f"{path}: error: {exc}"
            return result
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        plan = Planner(
            wrapper,
            analysis,
            Twins(twin_tree, module, facts_text, opaque_bodies=opaque),
            config,
            options.class_suffix,
            _holds(source, options),
            parsed,
            runtime,
            names,
            frozen,
            tree,
        ).plan()
        plan.report.path = path
        result.report = plan.report
        if not plan.changes:
            return result
        elsewhere = [pair for layer in layers for pair in layer.left_out()]
        printed_from = module_text if utf8 and not module_text.startswith("\ufeff") else None
        emitter = Emitter(
            plan, wrapper, options, config.runners, twin_tree, elsewhere, printed_from
        )
        migrated = emitter.module()
        code: str | None = emitter.code(migrated)
        # What the edits made (stand-ins in it) is what to compile: the rest is the file's own.
        edited = emitter.imports.code.edited_code(migrated)
        for layer in layers:
            code = None if code is None else layer.restore(code)
        if code is None:  # a stand-in not there as written (copied, re-indented): parse it all
            return _migrate(source, path, config, options, False)
        new_bytes = code.encode(migrated.encoding)
    except InLeftOutBody:  # the plan asked about a body left out: parse it all
        return _migrate(source, path, config, options, False)
    except RecursionError:
        result.error = f"{path}: error: file too deeply nested to analyse"
        return result
    except Unsupported as exc:
        result.error = f"{path}: error: {exc}"
        return result
    except RewriteError as exc:  # pragma: no cover - the planner refuses what it cannot rewrite
        result.error = f"{path}: error: cannot migrate: {exc}"
        return result
    finally:
        if names is not None:
            names.release()  # no cyclic collector pass over the tree's names afterwards
    try:
        try:
            verify_python(new_bytes if edited is None else edited, path)
        except ValueError:
            verify_python(new_bytes, path)  # the error as the whole file says it (its lines)
    except ValueError as exc:
        result.error = f"{path}: error: not migrated, distlint produced invalid code ({exc}); please report this"
        return result
    result.migrated = new_bytes
    return result


def _ast_tree(source: bytes) -> ast.Module | None:
    """The file's stdlib ``ast`` tree (``None`` where it does not parse: libcst words the error)."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _is_utf8(source: bytes) -> bool:
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    except SyntaxError:
        return False
    return encoding == "utf-8"


def _stand_ins(text: str, tree: ast.Module, config: Config) -> StandIns | None:
    """The file's text with its plain classes replaced by stand-ins, when it has such classes."""
    return plain_class_stand_ins(text, tree, multiprocess_words(config))


def _first(pair: tuple[int, object]) -> int:
    return pair[0]
