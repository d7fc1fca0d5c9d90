"""The process-group analysis: per class, its execution model; per test, how it gets its PG
and whether it could run on a PG shared by the class.

One entry point for everyone: :func:`analyze_module` (``distlint migrate`` calls it with its
own ``MetadataWrapper``); lint rules use :func:`module_analysis`, which computes it once per
file and shares it between DL201, DL202 and DL203. The result follows the contract in
``distlint.analysis.model``. Never imports torch.

Pieces: ``execution`` (class models), ``creation`` (what one call does to a PG),
``scan``/``follow``/``events`` (walking a test and its helpers), ``eligibility`` (reasons).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

import libcst as cst
from libcst.metadata import MetadataWrapper

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
from distlint.analysis.names import QualifiedNames, qualified_name_map
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
    class_functions,
    class_model,
    external_base_names,
    world_size_fact,
)
from distlint.analysis.pg.references import module_references
from distlint.analysis.pg.reuse import mark_reused_workers, own_process_need
from distlint.analysis.pg.scan import ScanContext, scan_function
from distlint.analysis.walk import code_children, visit_read_only
from distlint.config import Config
from distlint.screens.pg_names import (  # noqa: F401 - part of this package's interface
    continuous_words,
    creation_words,
    lifecycle_words,
    per_test_words,
)

if TYPE_CHECKING:
    from distlint.source import FileContext

FACT_KEY = "distlint.analysis.pg.module_analysis"
_NO_STATEMENT = (CreationKind.DECORATOR, CreationKind.BASE_RUN, CreationKind.DEVICE_MESH)


def analyze_module(
    wrapper: MetadataWrapper,
    config: Config,
    external: ExternalBases,
    tree: ast.Module | None = None,
    text: str | None = None,
) -> ModuleAnalysis:
    """Analyse every class of the module (nodes are ``wrapper.module``'s); ``external`` reads
    the modules its bases from elsewhere come from (``ExternalBases(path of the file)``);
    ``tree``: the stdlib ``ast`` tree of a text with the same top-level statements, if the
    caller has one (the search for uses of the per-test classes then skips the statements that
    name none); ``text``: that tree's source (the search then skips, unwalked, the statements
    whose lines spell none)."""
    module = wrapper.module
    names = qualified_name_map(wrapper)
    table = ClassTable.build(module)
    context = ScanContext(names, table, config)
    context.constants = module_constants(module, names)
    analysis = ModuleAnalysis([_analyze_class(context, cls) for cls in table.order])
    per_test = {c.name for c in analysis.classes if c.model is ExecutionModel.PER_TEST_SPAWN}
    analysis.references = module_references(module, per_test, tree, text)
    add_class_reasons(analysis, table, names, config, external)
    mark_reused_workers(analysis)
    return analysis


def module_analysis(context: FileContext) -> ModuleAnalysis:
    """The analysis of the file being linted, computed once and shared by the DL2xx rules."""
    return context.fact(
        FACT_KEY,
        lambda ctx: analyze_module(
            ctx.wrapper,
            ctx.config,
            ExternalBases(ctx.path, looked_at=ctx.depends_on),
            ctx.tree,
            ctx.text,
        ),
    )


# -- classes --------------------------------------------------------------------------------------


def _analyze_class(context: ScanContext, cls: cst.ClassDef) -> ClassAnalysis:
    names, table = context.names, context.table
    decided = class_model(table, names, cls, context.config)
    analysis = ClassAnalysis(
        name=cls.name.value,
        node=cls,
        model=decided.model,
        model_reason=decided.reason,
        bases=tuple(_base_name(context, base) for base in cls.bases if base.keyword is None),
        subclasses=table.subclasses(names, cls),
    )
    if decided.model is ExecutionModel.PER_TEST_SPAWN:
        analysis.per_test_base = decided.deciding_base or "MultiProcessTestCase"
    tests = [f for f in class_functions(cls) if f.name.value.startswith("test")]
    if decided.model is ExecutionModel.PER_TEST_SPAWN:
        _analyze_per_test(context, cls, analysis, tests, decided.deciding_base)
    elif decided.model is ExecutionModel.CONTINUOUS:
        _analyze_continuous(context, cls, analysis, tests)
    else:
        analysis.tests = [TestAnalysis(t.name.value, t) for t in tests]
    return analysis


def _base_name(context: ScanContext, base: cst.Arg) -> str:
    local = context.table.local_base(context.names, base)
    if local is not None:
        return local.name.value
    found = external_base_names(context.names, base.value)
    return found[0] if found else ""


def _analyze_per_test(
    context: ScanContext,
    cls: cst.ClassDef,
    analysis: ClassAnalysis,
    tests: list[cst.FunctionDef],
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
                test.name,
                test.name,
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
            test.name.value,
            test,
            creations,
            teardown=list(scan.teardown) if creations else [],
            self_attributes=tuple(scan.self_attributes),
            helper_teardown=list(scan.helper_teardown) if creations else [],
            needs_own_process=own_process_need(
                scan.exits, scan.kills, return_code_checks.get(test.name.value)
            ),
        )
        analysis.tests.append(result)
        evidence.append(
            TestEvidence(
                test.name.value,
                test,
                scan,
                creations,
                [e.from_config for e in events],
                [e.site.in_loop for e in events],
                env_decorators,
                decorator_env,
                return_code_checks.get(test.name.value),
            )
        )

    facts = class_facts((c for t in analysis.tests for c in t.creations), world_size.value)
    analysis.backend, analysis.timeout, analysis.options = (
        facts.backend,
        facts.timeout,
        facts.options,
    )
    if analysis.world_size is None:
        analysis.world_size = facts.world_size
    for result, test_evidence in zip(analysis.tests, evidence):
        result.ineligible = _kept_by_mark(result.node) + ineligibilities(test_evidence, facts)


def _kept_by_mark(test: cst.FunctionDef) -> list[Ineligibility]:
    """A ``# distlint: keep-per-test`` comment's reason, first: what ``--verify`` found by running."""
    why = keep_mark(test)
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
    owner: cst.ClassDef | None,
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
    context: ScanContext, owner: cst.ClassDef | None, event: CreationEvent
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


def _bound_name(statement: cst.BaseStatement | None, call: cst.CSTNode) -> str | None:
    """``pg`` for ``pg = <call>`` (``self.pg`` for an attribute target)."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    target: cst.BaseExpression | None = None
    if isinstance(small, cst.Assign) and small.value is call:
        target = small.targets[0].target
    elif isinstance(small, cst.AnnAssign) and small.value is call:
        target = small.target
    if isinstance(target, cst.Name):
        return target.value
    if isinstance(target, cst.Attribute):
        return cst.helpers.get_full_name_for_node(target)
    return None


def _mentions(node: cst.CSTNode, name: str) -> bool:
    """Whether ``node`` uses the variable ``name`` (an attribute's name is not a use: only the
    object it is read from)."""
    stack: list[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Name):
            if current.value == name:
                return True
        elif isinstance(current, cst.Attribute):
            stack.append(current.value)
        else:
            stack.extend(code_children(current))
    return False


def _return_code_checks(context: ScanContext, cls: cst.ClassDef) -> dict[str, str]:
    """Tests a setUp lists in ``skip_return_code_checks`` / ``special_return_code_checks``."""
    listed: dict[str, str] = {}
    lists = ("skip_return_code_checks", "special_return_code_checks")
    for entry in context.table.linearize(context.names, cls):
        if not isinstance(entry, cst.ClassDef):
            continue
        setup = next((f for f in class_functions(entry) if f.name.value == "setUp"), None)
        if setup is None:
            continue

        class _Lines(cst.CSTVisitor):
            def visit_SimpleStatementLine(self, line: cst.SimpleStatementLine) -> bool:
                attributes: list[str] = []

                class _Attrs(cst.CSTVisitor):
                    def visit_Attribute(self, node: cst.Attribute) -> None:
                        attributes.append(node.attr.value)

                visit_read_only(line, _Attrs())
                which = next((a for a in attributes if a in lists), None)
                if which is not None:
                    for attribute in attributes:
                        if attribute.startswith("test"):
                            listed.setdefault(attribute, which)
                return False

        visit_read_only(setup, _Lines())
    return listed


# -- continuous classes (DL203) ------------------------------------------------------------------


def _analyze_continuous(
    context: ScanContext, cls: cst.ClassDef, analysis: ClassAnalysis, tests: list[cst.FunctionDef]
) -> None:
    for test in tests:
        analysis.tests.append(TestAnalysis(test.name.value, test))
        scan = scan_function(context, test, cls)
        calls: list[tuple[tuple[int, ...], cst.CSTNode, str]] = []
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
            if isinstance(node, cst.Call):
                analysis.lifecycle_calls.append((test.name.value, node, what))


def _what(what: str, helpers: tuple[str, ...]) -> str:
    return f"{what} via {' -> '.join(helpers)}" if helpers else what


def is_shared_pg(names: QualifiedNames, expression: cst.BaseExpression) -> bool:
    """Whether ``expression`` is the class's shared PG: ``self.pg``, the default group, ``group.WORLD``."""
    node: cst.CSTNode = expression
    while True:
        if isinstance(node, cst.Name):
            return node.value == "None"
        if isinstance(node, cst.Attribute):
            attr = node.attr.value
            if (
                attr in ("pg", "process_group")
                and isinstance(node.value, cst.Name)
                and node.value.value in ("self", "cls")
            ):
                return True
            if attr == "WORLD":
                return True
            node = node.value
            continue
        if isinstance(node, cst.Call):
            if callee_last_name(names, node) == "_get_default_group":
                return True
            node = node.func
            continue
        return False
