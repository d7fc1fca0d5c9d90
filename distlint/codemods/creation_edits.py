"""The edits that make one PG creation in a moved test (or a helper it calls) use the
continuous class's shared PG: a removed call line, ``pg = self.pg``, a dropped decorator; or a
:class:`~distlint.codemods.rewrite.RewriteError` saying why it cannot. :mod:`distlint.codemods.plan`
calls it for each creation of each test it moves.

What the creation's statements are is read on the analysis's ``ast`` nodes; the edits are keyed
by their libcst twins (:class:`~distlint.codemods.twins.Twins`), which emit rewrites.
"""

from __future__ import annotations

import ast
from typing import Union

import libcst as cst

from distlint.analysis.model import CreationKind, PGCreation
from distlint.codemods.rewrite import REMOVE, FunctionEdits, RewriteError, bind_shared_pg
from distlint.codemods.twins import Twins
from distlint.cst_utils import first_line
from distlint.syntax.ast_lines import SimpleLine, Unit, is_string_line, units
from distlint.syntax.ast_nodes import dotted_name

FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]


def creation_edits(
    function: FunctionNode,
    creation: PGCreation,
    edits: dict[int, FunctionEdits],
    helpers: dict[int, cst.FunctionDef],
    twins: Twins,
) -> None:
    """Edits that make the PG ``creation`` in ``function`` come from the shared PG (keyed by the
    ``id()`` of ``function``'s libcst twin; ``helpers``: the libcst helpers rewritten too)."""
    function_edits = edits.setdefault(id(twins.libcst_def(function)), FunctionEdits.empty())
    kind = creation.kind
    if kind in (CreationKind.DEVICE_MESH, CreationKind.BASE_RUN):
        # init_device_mesh reuses the existing default PG; the base's own PG (FSDPTest._run)
        # is the continuous base's: nothing to change in the test.
        return
    if kind is CreationKind.DECORATOR:
        decorator = next(
            (
                d
                for d in function.decorator_list
                if d is creation.node or (isinstance(d, ast.Call) and d.func is creation.node)
            ),
            None,
        )
        if decorator is None:
            raise RewriteError("its PG decorator is not on the test")
        function_edits.decorators.add(id(twins.libcst_of(decorator)))
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
            helper_twin = twins.libcst_def(helper)
            helpers[id(helper_twin)] = helper_twin
            creation_edits(helper, inner, edits, helpers, twins)
            for store_statement in creation.store_statements:
                function_edits.statements[id(twins.libcst_of(store_statement))] = REMOVE
            return
    statement = creation.statement
    if statement is None:
        raise RewriteError("the analysis did not locate the statement that creates its PG")
    line = twins.libcst_statement(statement)
    if creation.bound_name:
        function_edits.statements[id(line)] = bind_shared_pg(line, creation.bound_name)
    elif _is_call_line(statement, creation.node):
        function_edits.statements[id(line)] = REMOVE
    else:  # e.g. ``with _dynamo_dist_per_rank_init(...):``: removing it would remove the test
        raise RewriteError(f"its PG is created by `{first_line(line)}`, which is not a plain call")
    for store in creation.store_statements:
        store_line = twins.libcst_of(store)
        if not isinstance(store, SimpleLine):
            raise RewriteError(
                f"its store is built by `{first_line(store_line)}`, which is not a plain assignment"
            )
        function_edits.statements[id(store_line)] = REMOVE


def _is_call_line(statement: Unit, call: ast.AST) -> bool:
    """``call`` alone on its line (what an unbound PG creation looks like): not a line that
    goes on to use it (``self._create_pg().allreduce(t).wait()``, an assertion around it)."""
    return (
        isinstance(statement, SimpleLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], ast.Expr)
        and statement.body[0].value is call
    )


_FACTORY_LEFTOVER_CALLS = frozenset({"barrier", "monitored_barrier", "set_device"})


def is_factory(helper: FunctionNode, inner: PGCreation) -> bool:
    """Whether ``helper`` only creates (and returns) a PG: store, creation, barrier, return."""
    returns = _factory_returns(helper, inner)
    return returns is not None and all(
        value is None
        or value is inner.node
        or _is_default_group(value)
        or _names(value, {inner.bound_name})
        for value, _ in returns
    )


def returns_only_the_pg(helper: FunctionNode, inner: PGCreation) -> bool:
    """A helper of :func:`is_factory`'s shape whose every ``return`` gives the PG it creates
    (``pg = dist.distributed_c10d._get_default_group()`` then ``return pg`` included)."""
    returns = _factory_returns(helper, inner)
    return bool(returns) and all(
        value is not None
        and (value is inner.node or _is_default_group(value) or _names(value, aliases))
        for value, aliases in returns or ()
    )


def _factory_returns(
    helper: FunctionNode, inner: PGCreation
) -> list[tuple[ast.expr | None, set[str | None]]] | None:
    """``helper``'s returned values, each with the names that hold its PG there (the creation's
    and those assigned the default group before it), when its body only creates the PG: store,
    creation, barrier-like calls, default-group assignments, returns; else ``None``."""
    body = units(helper)
    accounted = {id(inner.statement), *(id(s) for s in inner.store_statements)}
    holders: set[str | None] = {inner.bound_name}
    returns: list[tuple[ast.expr | None, set[str | None]]] = []
    for statement in body:
        if id(statement) in accounted or is_string_line(statement):
            returned = _returned(statement) if statement is inner.statement else None
            if returned is not None:  # return ProcessGroupGloo(...): the creation is returned
                returns.append((returned, set(holders)))
            continue
        if not isinstance(statement, SimpleLine) or len(statement.body) != 1:
            return None
        small = statement.body[0]
        if isinstance(small, ast.Return):
            returns.append((small.value, set(holders)))
        elif isinstance(small, ast.Expr) and isinstance(small.value, ast.Call):
            written = dotted_name(small.value.func) or ""
            if written.rsplit(".", 1)[-1] not in _FACTORY_LEFTOVER_CALLS:
                return None
        elif isinstance(small, ast.Assign) and _is_default_group(small.value):
            holders.update(t.id for t in small.targets if isinstance(t, ast.Name))
        else:
            return None
    return returns


def _names(value: ast.expr, names: set[str | None]) -> bool:
    return isinstance(value, ast.Name) and value.id in names


def _returned(statement: Unit) -> ast.expr | None:
    """The value of ``return <value>`` alone on its line."""
    if (
        isinstance(statement, SimpleLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], ast.Return)
    ):
        return statement.body[0].value
    return None


def _is_default_group(node: ast.expr | None) -> bool:
    if isinstance(node, ast.Call):
        node = node.func
    written = dotted_name(node) if node is not None else None
    return written is not None and (
        written.endswith("_get_default_group") or written.endswith("group.WORLD")
    )
