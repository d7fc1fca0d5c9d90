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
    if helper_call and creation.bound_name is not None:
        # ``x = self._helper()`` becomes ``x = self.pg``: only right where the helper does
        # nothing but create the PG and return it (not a device, not a tensor it reduced).
        helper = creation.helper_chain[0] if creation.helper_chain else creation.helper
        inner = creation.inner
        name = creation.chain[0] if creation.chain else "a helper"
        if inner is None or helper is None or not returns_only_the_pg(helper, inner):
            raise RewriteError(f"{name}() does more than create and return the PG")
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
    elif _is_call_line(statement, creation.node):
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


def _is_call_line(statement: cst.BaseStatement, call: cst.CSTNode) -> bool:
    """``call`` alone on its line (what an unbound PG creation looks like): not a line that
    goes on to use it (``self._create_pg().allreduce(t).wait()``, an assertion around it)."""
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and statement.body[0].value is call
    )


_FACTORY_LEFTOVER_CALLS = frozenset({"barrier", "monitored_barrier", "set_device"})


def is_factory(helper: cst.FunctionDef, inner: PGCreation) -> bool:
    """Whether ``helper`` only creates (and returns) a PG: store, creation, barrier, return."""
    returns = _factory_returns(helper, inner)
    return returns is not None and all(
        value is None
        or value is inner.node
        or _is_default_group(value)
        or _names(value, {inner.bound_name})
        for value, _ in returns
    )


def returns_only_the_pg(helper: cst.FunctionDef, inner: PGCreation) -> bool:
    """A helper of :func:`is_factory`'s shape whose every ``return`` gives the PG it creates
    (``pg = dist.distributed_c10d._get_default_group()`` then ``return pg`` included)."""
    returns = _factory_returns(helper, inner)
    return bool(returns) and all(
        value is not None
        and (value is inner.node or _is_default_group(value) or _names(value, aliases))
        for value, aliases in returns or ()
    )


def _factory_returns(
    helper: cst.FunctionDef, inner: PGCreation
) -> list[tuple[cst.BaseExpression | None, set[str | None]]] | None:
    """``helper``'s returned values, each with the names that hold its PG there (the creation's
    and those assigned the default group before it), when its body only creates the PG: store,
    creation, barrier-like calls, default-group assignments, returns; else ``None``."""
    body = helper.body.body if isinstance(helper.body, cst.IndentedBlock) else ()
    accounted = {id(inner.statement), *(id(s) for s in inner.store_statements)}
    holders: set[str | None] = {inner.bound_name}
    returns: list[tuple[cst.BaseExpression | None, set[str | None]]] = []
    for statement in body:
        if id(statement) in accounted or is_string_statement(statement):
            returned = _returned(statement) if statement is inner.statement else None
            if returned is not None:  # return ProcessGroupGloo(...): the creation is returned
                returns.append((returned, set(holders)))
            continue
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return None
        small = statement.body[0]
        if isinstance(small, cst.Return):
            returns.append((small.value, set(holders)))
        elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            written = dotted_name(small.value.func) or ""
            if written.rsplit(".", 1)[-1] not in _FACTORY_LEFTOVER_CALLS:
                return None
        elif isinstance(small, cst.Assign) and _is_default_group(small.value):
            holders.update(t.target.value for t in small.targets if isinstance(t.target, cst.Name))
        else:
            return None
    return returns


def _names(value: cst.BaseExpression, names: set[str | None]) -> bool:
    return isinstance(value, cst.Name) and value.value in names


def _returned(statement: cst.BaseStatement) -> cst.BaseExpression | None:
    """The value of ``return <value>`` alone on its line."""
    if (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Return)
    ):
        return statement.body[0].value
    return None


def _is_default_group(node: cst.BaseExpression | None) -> bool:
    if isinstance(node, cst.Call):
        node = node.func
    written = dotted_name(node) if node is not None else None
    return written is not None and (
        written.endswith("_get_default_group") or written.endswith("group.WORLD")
    )
