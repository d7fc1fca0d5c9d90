"""The analyses' one field walker visits what libcst's visitor visits, in the same order."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from distlint.analysis.walk import (
    INERT,
    code_children,
    derives_from,
    kind_test,
    statement_nodes,
    visit_read_only,
)

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted(p for p in (ROOT / "fixtures").rglob("*.py"))

#: Every construct whose visiting order differs from its dataclass field order, and the rest.
CONSTRUCTS = """
import os, a.b as c
from . import x
from .m import (y as z, w)
@decorate(arg=1)
class C(Base, metaclass=Meta):
    attr: int = 3
    @property
    def f(self, a, /, b=default(), *args, c: int = 2, **kwargs) -> Ret:
        value = body() if test() else orelse()
        try:
            pass
        except (Error, Other) as error:
            handle(error)
        lam = lambda q=1, *r: q + r[0]
        items = [i for i in range(3) if i async for j in k]
        data = {k: v for k, v in pairs}
        sub = seq[1:2:3]
        text = f"{value!r:>{width}} {other}"
        match command:
            case [x, *rest] if guard(x):
                pass
            case {"k": v, **kw}:
                pass
            case Point(x=0) | None:
                pass
        with open(p) as fh, other():
            del fh
        global g
        return (yield from gen())
async def g():
    async with lock:
        await thing()
    async for item in aiter():
        print(item, sep="")
"""


def _libcst_order(module: cst.Module) -> list[cst.CSTNode]:
    seen: list[cst.CSTNode] = []

    class _Record(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, INERT):
                return False
            seen.append(node)
            return True

    module.visit(_Record())
    return seen


def _walk_order(module: cst.Module) -> list[cst.CSTNode]:
    seen: list[cst.CSTNode] = []
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        seen.append(node)
        stack.extend(reversed(code_children(node)))
    return seen


def _same(module: cst.Module) -> None:
    expected, walked = _libcst_order(module), _walk_order(module)
    for index, (want, got) in enumerate(zip(expected, walked)):
        assert want is got, (
            f"node {index}: libcst visits {type(want).__name__}, the walk {type(got).__name__}"
        )
    assert len(walked) == len(expected)


def test_every_construct_is_walked_in_libcst_order():
    _same(cst.parse_module(CONSTRUCTS))


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(ROOT)))
def test_fixture_is_walked_in_libcst_order(path):
    _same(cst.parse_module(path.read_bytes()))


def _outside_expressions(module: cst.Module) -> list[cst.CSTNode]:
    """What libcst's visitor sees that is neither inert nor an expression nor inside one."""
    seen: list[cst.CSTNode] = []

    class _Record(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, (INERT, cst.BaseExpression)):
                return False
            seen.append(node)
            return True

    module.visit(_Record())
    return seen[1:]  # not the module itself


@pytest.mark.parametrize(
    "path", [None, *FIXTURES], ids=lambda p: "constructs" if p is None else str(p.relative_to(ROOT))
)
def test_statement_nodes_are_every_node_outside_expressions(path):
    module = cst.parse_module(CONSTRUCTS if path is None else path.read_bytes())
    expected = _outside_expressions(module)
    found = list(statement_nodes(module))
    assert {id(n) for n in found} == {id(n) for n in expected} and len(found) == len(expected)
    if path is None:  # the constructs' assignments and definitions are among them
        assert any(isinstance(n, cst.AssignTarget) for n in found) and any(
            isinstance(n, cst.FunctionDef) for n in found
        )


@pytest.mark.parametrize(
    "classes",
    [
        (cst.BaseStatement,),
        (cst.For, cst.While),
        (cst.BaseExpression, cst.Param),
        (cst.Call, cst.SimpleStatementLine),
    ],
    ids=lambda c: "+".join(k.__name__ for k in c),
)
def test_kind_test_answers_as_isinstance(classes):
    test = kind_test(*classes)
    nodes = _libcst_order(cst.parse_module(CONSTRUCTS))
    for _ in range(2):  # the second round answers from the cache
        assert [test(n) for n in nodes] == [isinstance(n, classes) for n in nodes]
    assert any(test(n) for n in nodes) and not all(test(n) for n in nodes)


class _Hooks(cst.CSTVisitor):
    """Records its hooks' calls; skips the children of calls and of ``with`` statements."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, int]] = []

    def visit_Call(self, node: cst.Call) -> bool:
        self.calls.append(("visit_Call", id(node)))
        return False

    def leave_Call(self, node: cst.Call) -> None:
        self.calls.append(("leave_Call", id(node)))

    def visit_Name(self, node: cst.Name) -> None:
        self.calls.append(("visit_Name", id(node)))

    def visit_With(self, node: cst.With) -> bool:
        self.calls.append(("visit_With", id(node)))
        return False

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.calls.append(("visit_Attribute", id(node)))

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.calls.append(("leave_FunctionDef", id(node)))


@pytest.mark.parametrize(
    "path", [None, *FIXTURES], ids=lambda p: "constructs" if p is None else str(p.relative_to(ROOT))
)
def test_visit_read_only_calls_the_hooks_libcst_calls(path):
    module = cst.parse_module(CONSTRUCTS if path is None else path.read_bytes())
    by_libcst, read_only = _Hooks(), _Hooks()
    module.visit(by_libcst)
    visit_read_only(module, read_only)
    assert read_only.calls == by_libcst.calls
    if path is None:  # a skipped subtree's leave hook still runs, its children's hooks do not
        assert ("leave_Call", id(module.body[3].decorators[0].decorator)) in read_only.calls
        assert sum(kind == "visit_Name" for kind, _ in read_only.calls) > 10


def _node_classes() -> list[type]:
    found, stack = set(), [cst.CSTNode]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in found:
                found.add(sub)
                stack.append(sub)
    return sorted(found, key=lambda c: c.__qualname__)


def test_derives_from_answers_as_issubclass_for_every_node_class():
    classes = _node_classes()
    assert len(classes) > 200
    for bases in [INERT, (cst.CSTNode,), (cst.BaseExpression,), (cst.BaseStatement, cst.Param)]:
        for kind in classes:
            assert derives_from(kind, bases) == issubclass(kind, bases), (kind, bases)
