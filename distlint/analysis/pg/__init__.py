"""The process-group analysis: per class, its execution model; per test, how it gets its PG
and whether it could run on a PG shared by the class.

One entry point for everyone: :func:`analyze_module`, on a module's stdlib ``ast`` tree and its
text (``distlint migrate`` calls it with its own); lint rules use :func:`module_analysis`, which
computes it once per file and shares it between DL201, DL202 and DL203. The result follows the
contract in ``distlint.analysis.model``. Never imports torch, nor libcst.

Pieces: ``execution`` (class models), ``creation`` (what one call does to a PG),
``scan``/``follow``/``events`` (walking a test and its helpers), ``eligibility`` (reasons).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from distlint.analysis.external_bases import ExternalBases
from distlint.analysis.keep_marks import keep_mark
from distlint.analysis.model import (
    ClassAnalysis,
    CreationKind,
    ExecutionModel,
    Ineligibility,
    ModuleAnalysis,
    PGCreation,
    Reason,
    TestAnalysis,
)
from distlint.analysis.pg.backend_names import module_constants, resolve_backend
from distlint.analysis.pg.class_eligibility import add_class_reasons
from distlint.analysis.pg.creation import (
    ABORT_FUNCTIONS,
    CallFacts,
    callee_last_name,
)
from distlint.analysis.pg.decorators import decorator_events
from distlint.analysis.pg.eligibility import TestEvidence, class_facts, ineligibilities
from distlint.analysis.pg.events import CreationEvent, Site, StoreStatement
from distlint.analysis.pg.execution import (
    BASE_RUN_PG,
    ClassTable,
    Function,
    base_value,
    class_functions,
    class_model,
    external_base_names,
    world_size_fact,
)
from distlint.analysis.pg.references import module_references
from distlint.analysis.pg.reuse import mark_reused_workers, own_process_need
from distlint.analysis.pg.scan import ScanContext, scan_function
from distlint.config import Config
from distlint.screens.pg_names import (  # noqa: F401 - part of this package's interface
    continuous_words,
    creation_words,
    lifecycle_words,
    per_test_words,
)
from distlint.syntax.ast_lines import SimpleLine, Unit, is_one_line, prepare, units
from distlint.syntax.ast_names import AstNames, build_ast_names
from distlint.syntax.ast_nodes import Source, children, dotted_name, walk

if TYPE_CHECKING:
    from distlint.source import FileContext

FACT_KEY = "distlint.analysis.pg.module_analysis"
_NO_STATEMENT = (CreationKind.DECORATOR, CreationKind.BASE_RUN, CreationKind.DEVICE_MESH)


def analyze_module(
    tree: ast.Module,
    text: str,
    config: Config,
    external: ExternalBases,
    names: AstNames | None = None,
) -> ModuleAnalysis:
    """Analyse every class of the module ``tree``, parsed from ``text`` (the facts' nodes are
    ``tree``'s); ``external`` reads the modules its bases from elsewhere come from
    (``ExternalBases(path of the file)``). Raises
    :class:`~distlint.syntax.ast_names.Unsupported` where the name resolution does
    (:func:`~distlint.syntax.ast_names.build_ast_names`). ``names``: ``tree``'s names, built
    by a caller that reads them afterwards (and releases them); by default built here."""
    prepare(tree, text)
    own_names = names is None
    names = build_ast_names(tree) if names is None else names
    source = Source(text)
    table = ClassTable.build(tree)
    context = ScanContext(names, table, config, source)
    context.constants = module_constants(tree, names)
    analysis = ModuleAnalysis([_analyze_class(context, cls) for cls in table.order])
    per_test = {c.name for c in analysis.classes if c.model is ExecutionModel.PER_TEST_SPAWN}
    analysis.references = module_references(tree, per_test, text)
    add_class_reasons(analysis, table, names, config, external, source)
    mark_reused_workers(analysis, source)
    context.release(names=own_names)
    return analysis


def module_analysis(context: FileContext) -> ModuleAnalysis:
    """The analysis of the file being linted, computed once and shared by the DL2xx rules."""
    return context.fact(FACT_KEY, _analyze_file)


def _analyze_file(context: FileContext) -> ModuleAnalysis:
    """The file's analysis, from the pre-screen's ``ast`` tree of the whole file and the text it
    was parsed from; without them (a context built by hand), from the module's own code, parsed
    here."""
    text, tree = context.text, context.tree
    if text is None or tree is None:
        text = text if text is not None else context.module.code
        try:
            tree = ast.parse(text)
        except SyntaxError as exc:  # what libcst parsed and this Python's ``ast`` cannot
            raise ValueError(f"syntax error at {exc.lineno}:{exc.offset or 1}: {exc.msg}") from None
    return analyze_module(
        tree, text, context.config, ExternalBases(context.path, looked_at=context.depends_on)
    )


# -- classes --------------------------------------------------------------------------------------


def _analyze_class(context: ScanContext, cls: ast.ClassDef) -> ClassAnalysis:
    names, table = context.names, context.table
    decided = class_model(table, names, cls, context.config)
    analysis = ClassAnalysis(
        name=cls.name,
        node=cls,
        model=decided.model,
        model_reason=decided.reason,
        bases=tuple(_base_name(context, base) for base in cls.bases),
        subclasses=table.subclasses(names, cls),
    )
    if decided.model is ExecutionModel.PER_TEST_SPAWN:
        analysis.per_test_base = decided.deciding_base or "MultiProcessTestCase"
    tests = [f for f in class_functions(cls) if f.name.startswith("test")]
    if decided.model is ExecutionModel.PER_TEST_SPAWN:
        _analyze_per_test(context, cls, analysis, tests, decided.deciding_base)
    elif decided.model is ExecutionModel.CONTINUOUS:
        _analyze_continuous(context, cls, analysis, tests)
    else:
        analysis.tests = [TestAnalysis(t.name, t) for t in tests]
    return analysis


def _base_name(context: ScanContext, base: ast.expr) -> str:
    local = context.table.local_base(context.names, base)
    if local is not None:
        return local.name
    found = external_base_names(context.names, base_value(base))
    return found[0] if found else ""


def _analyze_per_test(
    context: ScanContext,
    cls: ast.ClassDef,
    analysis: ClassAnalysis,
    tests: list[Function],
    deciding_base: str | None,
) -> None:
    names, table = context.names, context.table
    world_size = world_size_fact(table, names, cls)
    analysis.world_size = world_size.value
    analysis.world_size_node = world_size.node if world_size.owner is cls else None
    setup = table.method(names, cls, "setUp")
    if setup is not None:
        setup_scan = scan_function(context, setup[1], setup[0])
        for event in setup_scan.env:
            if (
                event.site.statement is not None
                and event.site.statement not in analysis.setup_environment
            ):
                analysis.setup_environment.append(event.site.statement)
    return_code_checks = _return_code_checks(context, cls)

    evidence: list[TestEvidence] = []
    for test in tests:
        scan = scan_function(context, test, cls)
        decorated, env_decorators, decorator_env = decorator_events(context, test)
        events: list[CreationEvent] = []
        if deciding_base in BASE_RUN_PG:
            site = Site(
                test,
                test,
                None,
                -1,
                (f"{deciding_base}._run", "init_process_group"),
                (),
                order=(-2,),
            )
            events.append(CreationEvent(site, "init_process_group", "BASE_RUN", CallFacts()))
        events += decorated + scan.creations
        events = _drop_mesh_on_existing_pg(events)
        creations = [_creation(context, cls, event, scan.stores) for event in events]
        result = TestAnalysis(
            test.name,
            test,
            creations,
            teardown=list(scan.teardown) if creations else [],
            self_attributes=tuple(scan.self_attributes),
            helper_teardown=list(scan.helper_teardown) if creations else [],
            needs_own_process=own_process_need(
                scan.exits, scan.kills, return_code_checks.get(test.name)
            ),
        )
        analysis.tests.append(result)
        evidence.append(
            TestEvidence(
                test.name,
                test,
                scan,
                creations,
                [e.from_config for e in events],
                [e.site.in_loop for e in events],
                env_decorators,
                decorator_env,
                return_code_checks.get(test.name),
            )
        )

    source = context.source
    facts = class_facts((c for t in analysis.tests for c in t.creations), world_size.value, source)
    analysis.backend, analysis.timeout, analysis.options = (
        facts.backend,
        facts.timeout,
        facts.options,
    )
    if analysis.world_size is None:
        analysis.world_size = facts.world_size
    for result, test_evidence in zip(analysis.tests, evidence):
        result.ineligible = _kept_by_mark(result.node, cls, source) + ineligibilities(
            test_evidence, facts, source
        )


def _kept_by_mark(test: Function, cls: ast.ClassDef, source: Source) -> list[Ineligibility]:
    """A ``# distlint: keep-per-test`` comment's reason, first: what ``--verify`` found by running
    (``cls``: the class whose body holds ``test``)."""
    why = keep_mark(test, cls, source)
    return [] if why is None else [Ineligibility(Reason.KEPT, test, why)]


def _drop_mesh_on_existing_pg(events: list[CreationEvent]) -> list[CreationEvent]:
    """``init_device_mesh`` creates the default PG only when none exists yet."""
    events = sorted(events, key=lambda e: e.site.order)
    kept: list[CreationEvent] = []
    for event in events:
        if event.kind == "DEVICE_MESH" and kept:
            continue
        kept.append(event)
    return kept


def _creation(
    context: ScanContext,
    owner: ast.ClassDef | None,
    event: CreationEvent,
    stores: list[StoreStatement],
) -> PGCreation:
    """The contract's view of one creation event (``owner``: the class of ``self``)."""
    site = event.site
    if event.kind == "BASE_RUN":
        kind = CreationKind.BASE_RUN
    elif len(site.chain) > 1:
        kind = (
            CreationKind.SELF_HELPER
            if site.chain[0].startswith("self.")
            else CreationKind.LOCAL_FUNCTION
        )
    else:
        kind = CreationKind[event.kind]
    # Decorators and base classes have no statement; init_device_mesh's statement stays as it
    # is on a shared PG (it builds the mesh on the existing default group).
    statement = site.statement if kind not in _NO_STATEMENT else None
    facts = event.facts
    return PGCreation(
        kind=kind,
        node=site.node,
        chain=site.chain,
        backend=facts.backend_literal
        or resolve_backend(facts.backend, context.names, context.constants),
        world_size=facts.world_size,
        rank=facts.rank,
        device_id=facts.device_id,
        timeout=facts.timeout,
        options=facts.options,
        bound_name=_bound_name(statement, site.node),
        statement=statement,
        store_statements=[
            s.statement for s in stores if statement is not None and _mentions(site.node, s.name)
        ],
        helper=site.helpers[-1] if site.helpers else None,
        helper_chain=site.helpers,
        inner=_inner_creation(context, owner, event) if site.helpers else None,
    )


def _inner_creation(
    context: ScanContext, owner: ast.ClassDef | None, event: CreationEvent
) -> PGCreation | None:
    """The creation as seen inside the first helper the test calls (its statements, its stores)."""
    site = event.site
    is_method = site.chain[0].startswith("self.")
    helper_owner = owner if is_method else None
    scan = scan_function(context, site.helpers[0], helper_owner)
    for inner_event in scan.creations:
        if inner_event.site.inner is site.inner:  # the same creation call, one level down
            return _creation(context, helper_owner, inner_event, scan.stores)
    return None


def _bound_name(statement: Unit | None, call: ast.AST) -> str | None:
    """``pg`` for ``pg = <call>`` (``self.pg`` for an attribute target)."""
    if not isinstance(statement, SimpleLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    target: ast.expr | None = None
    if isinstance(small, ast.Assign) and small.value is call:
        target = small.targets[0]
    elif isinstance(small, ast.AnnAssign) and small.value is call:
        target = small.target
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute):
        return dotted_name(target)
    return None


def _mentions(node: ast.AST, name: str) -> bool:
    """Whether ``node`` uses the variable ``name`` (an attribute's name is not a use: only the
    object it is read from). A keyword's or a lambda parameter's own name counts, as libcst's
    ``Name`` nodes of them did."""
    stack: list[ast.AST] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.Name):
            if current.id == name:
                return True
        elif isinstance(current, ast.Attribute):
            stack.append(current.value)
        else:
            if isinstance(current, (ast.keyword, ast.arg)) and current.arg == name:
                return True
            stack.extend(children(current))
    return False


def _return_code_checks(context: ScanContext, cls: ast.ClassDef) -> dict[str, str]:
    """Tests a setUp lists in ``skip_return_code_checks`` / ``special_return_code_checks``."""
    listed: dict[str, str] = {}
    lists = ("skip_return_code_checks", "special_return_code_checks")
    for entry in context.table.linearize(context.names, cls):
        if not isinstance(entry, ast.ClassDef):
            continue
        setup = next((f for f in class_functions(entry) if f.name == "setUp"), None)
        if setup is None:
            continue
        for line in _block_lines(setup):
            attributes = [
                node.attr
                for small in line.body
                for node in walk(small)
                if isinstance(node, ast.Attribute)
            ]
            which = next((a for a in attributes if a in lists), None)
            if which is not None:
                for attribute in attributes:
                    if attribute.startswith("test"):
                        listed.setdefault(attribute, which)
    return listed


#: The blocks of a statement, in source order (``try``: its handlers come before ``else``).
_BLOCK_FIELDS = ("body", "handlers", "orelse", "finalbody", "cases")


def _block_lines(node: ast.AST) -> list[SimpleLine]:
    """The lines of simple statements of the indented blocks below ``node`` at any depth, in
    source order (libcst's ``SimpleStatementLine``: not the one-line blocks, ``if x: y``)."""
    found: list[SimpleLine] = []
    for field in _BLOCK_FIELDS:
        if field in ("handlers", "cases"):
            for part in getattr(node, field, None) or ():
                found += _block_lines(part)
            continue
        one_line = is_one_line(node, field)
        for unit in units(node, field):
            if isinstance(unit, SimpleLine):
                if not one_line:
                    found.append(unit)
            else:
                found += _block_lines(unit)
    return found


# -- continuous classes (DL203) ------------------------------------------------------------------


def _analyze_continuous(
    context: ScanContext, cls: ast.ClassDef, analysis: ClassAnalysis, tests: list[Function]
) -> None:
    for test in tests:
        analysis.tests.append(TestAnalysis(test.name, test))
        scan = scan_function(context, test, cls)
        calls: list[tuple[tuple[int, ...], ast.AST, str]] = []
        for creation in scan.creations:
            if creation.kind == "INIT_PROCESS_GROUP":
                calls.append(
                    (
                        creation.site.order,
                        creation.site.node,
                        _what("init_process_group()", creation.site.chain[:-1]),
                    )
                )
        for event in scan.destroys:
            if event.target is None or is_shared_pg(context.names, event.target):
                calls.append(
                    (event.site.order, event.site.node, _what(event.what, event.site.chain))
                )
        for event in scan.aborts:
            if (event.target is None and event.what.rstrip("()") in ABORT_FUNCTIONS) or (
                event.target is not None and is_shared_pg(context.names, event.target)
            ):
                calls.append(
                    (event.site.order, event.site.node, _what(event.what, event.site.chain))
                )
        for _, node, what in sorted(calls, key=lambda c: c[0]):
            if isinstance(node, ast.Call):
                analysis.lifecycle_calls.append((test.name, node, what))


def _what(what: str, helpers: tuple[str, ...]) -> str:
    return f"{what} via {' -> '.join(helpers)}" if helpers else what


def is_shared_pg(names: AstNames, expression: ast.expr) -> bool:
    """Whether ``expression`` is the class's shared PG: ``self.pg``, the default group
    (``None``), ``group.WORLD``."""
    node: ast.expr = expression
    while True:
        if isinstance(node, ast.Constant):
            return node.value is None
        if isinstance(node, ast.Name):
            return False
        if isinstance(node, ast.Attribute):
            attr = node.attr
            if (
                attr in ("pg", "process_group")
                and isinstance(node.value, ast.Name)
                and node.value.id in ("self", "cls")
            ):
                return True
            if attr == "WORLD":
                return True
            node = node.value
            continue
        if isinstance(node, ast.Call):
            if callee_last_name(names, node) == "_get_default_group":
                return True
            node = node.func
            continue
        return False
