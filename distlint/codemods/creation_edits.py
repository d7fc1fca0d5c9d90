"""The edits that make one PG creation in a moved test (or a helper it calls) use the
continuous class's shared PG: a removed call line, ``pg = self.pg``, a dropped decorator; or a
:class:`~distlint.codemods.rewrite.RewriteError` saying why it cannot. :mod:`distlint.codemods.plan`
calls it for each creation of each test it moves."""

from __future__ import annotations

import libcst as cst

from distlint.analysis.model import CreationKind, PGCreation
from distlint.analysis.names import dotted_name
from distlint.analysis.pg.class_eligibility import first_line
from distlint.codemods.rewrite import REMOVE, FunctionEdits, RewriteError, bind_shared_pg
from distlint.cst_utils import is_string_statement


def creation_edits(
    function: cst.FunctionDef,
    creation: PGCreation,
    edits: dict[int, FunctionEdits],
    helpers: dict[int, cst.FunctionDef],
) -> None:
    """Edits that make the PG ``creation`` in ``function`` come from the shared PG."""
    function_edits = edits.setdefault(id(function), FunctionEdits.empty())
    kind = creation.kind
    if kind in (CreationKind.DEVICE_MESH, CreationKind.BASE_RUN):
        # init_device_mesh reuses the existing default PG; the base's own PG (FSDPTest._run)
        # is the continuous base's: nothing to change in the test.
        return
    if kind is CreationKind.DECORATOR:
        decorator = next(
            (
                d
                for d in function.decorators
                if d is creation.node
                or d.decorator is creation.node
                or (isinstance(d.decorator, cst.Call) and d.decorator.func is creation.node)
            ),
            None,
        )
        if decorator is None:
            raise RewriteError("its PG decorator is not on the test")
        function_edits.decorators.add(id(decorator))
        return
    if kind not in (
        CreationKind.INIT_PROCESS_GROUP,
        CreationKind.BACKEND_CONSTRUCTOR,
        CreationKind.KNOWN_HELPER,
        CreationKind.SELF_HELPER,
        CreationKind.LOCAL_FUNCTION,
    ):
        raise RewriteError(f"its PG comes from {creation.describe()}")
    helper_call = kind in (CreationKind.SELF_HELPER, CreationKind.LOCAL_FUNCTION)
    if helper_call and creation.bound_name is None:
        inner = creation.inner  # the creation as seen inside the helper the test calls
        helper = creation.helper_chain[0] if creation.helper_chain else creation.helper
        name = creation.chain[0] if creation.chain else "a helper"
        if inner is None or helper is None:
            raise RewriteError(f"distlint cannot tell whether {name}() only creates the PG")
        if not is_factory(helper, inner):
            if kind is CreationKind.LOCAL_FUNCTION:
                raise RewriteError(f"module function {name}() creates the PG and does test work")
            # The helper does the test's work: rewrite its PG creation there.
            helpers[id(helper)] = helper
            creation_edits(helper, inner, edits, helpers)
            for store_statement in creation.store_statements:
                function_edits.statements[id(store_statement)] = REMOVE
            return
    statement = creation.statement
    if statement is None:
        raise RewriteError("the analysis did not locate the statement that creates its PG")
    if creation.bound_name:
        function_edits.statements[id(statement)] = bind_shared_pg(statement, creation.bound_name)
    elif _is_call_line(statement):
        function_edits.statements[id(statement)] = REMOVE
    else:  # e.g. ``with _dynamo_dist_per_rank_init(...):``: removing it would remove the test
        raise RewriteError(
            f"its PG is created by `{first_line(statement)}`, which is not a plain call"
        )
    for store in creation.store_statements:
        if not isinstance(store, cst.SimpleStatementLine):
            raise RewriteError(
                f"its store is built by `{first_line(store)}`, which is not a plain assignment"
            )
        function_edits.statements[id(store)] = REMOVE


def _is_call_line(statement: cst.BaseStatement) -> bool:
    """``f(...)`` alone on its line (what an unbound PG creation looks like)."""
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, cst.Call)
    )


_FACTORY_LEFTOVER_CALLS = frozenset({"barrier", "monitored_barrier", "set_device"})


def is_factory(helper: cst.FunctionDef, inner: PGCreation) -> bool:
    """Whether ``helper`` only creates (and returns) a PG: store, creation, barrier, return."""
    body = helper.body.body if isinstance(helper.body, cst.IndentedBlock) else ()
    accounted = {id(inner.statement), *(id(s) for s in inner.store_statements)}
    for statement in body:
        if id(statement) in accounted or is_string_statement(statement):
            continue
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return False
        small = statement.body[0]
        if isinstance(small, cst.Return):
            if small.value is None or (
                isinstance(small.value, cst.Name) and small.value.value == inner.bound_name
            ):
                continue
            if _is_default_group(small.value):
                continue
            return False
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            written = dotted_name(small.value.func) or ""
            if written.rsplit(".", 1)[-1] in _FACTORY_LEFTOVER_CALLS:
                continue
            return False
        if isinstance(small, cst.Assign) and _is_default_group(small.value):
            continue
        return False
    return True


def _is_default_group(node: cst.BaseExpression | None) -> bool:
    if isinstance(node, cst.Call):
        node = node.func
    written = dotted_name(node) if node is not None else None
    return written is not None and (
        written.endswith("_get_default_group") or written.endswith("group.WORLD")
    )
