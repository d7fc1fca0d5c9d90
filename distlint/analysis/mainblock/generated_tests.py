"""Tests a module creates while it is imported instead of writing them as classes (DL101-DL103).

PyTorch's RPC suites define no test class at all: they import ``run_tests`` and fill the
module with ``globals().update(generate_tests(...))``. Other suites call
``instantiate_device_type_tests(...)``, assign ``globals()[name] = type(name, bases, attrs)``
or build classes in a module-level loop. Such a module has tests as surely as one that
writes ``class TestX(TestCase)``, and ``python test_x.py`` runs none of them without a
main block.

Two views, as for the main block itself: libcst nodes for the analysis
(:mod:`distlint.analysis.mainblock`), and the stdlib ``ast`` twin for the pre-screen, which
must accept every file the libcst view finds generation in (it may accept more).
"""

from __future__ import annotations

import libcst as cst

from distlint.analysis.names import dotted_name
from distlint.cst_utils import code_of
from distlint.screens.main_block import INSTANTIATE_TESTS, NAMESPACE_FUNCTIONS  # noqa: F401 - shared with the twin


def _namespace_call(node: cst.BaseExpression) -> str | None:
    """``globals`` for ``globals()`` (also ``vars()``, ``locals()``), else None."""
    if (
        isinstance(node, cst.Call)
        and not node.args
        and isinstance(node.func, cst.Name)
        and node.func.value in NAMESPACE_FUNCTIONS
    ):
        return node.func.value
    return None


def _is_this_module(node: cst.BaseExpression) -> bool:
    """``sys.modules[__name__]``."""
    if not (
        isinstance(node, cst.Subscript)
        and dotted_name(node.value) == "sys.modules"
        and len(node.slice) == 1
    ):
        return False
    index = node.slice[0].slice
    return (
        isinstance(index, cst.Index)
        and isinstance(index.value, cst.Name)
        and index.value.value == "__name__"
    )


def generating_call(call: cst.Call) -> str | None:
    """How ``call``, run at module level, adds tests to the module (for messages), else None.

    ``instantiate_*_tests(...)``, ``globals().update(...)`` and
    ``setattr(sys.modules[__name__], ...)``.
    """
    written = dotted_name(call.func)
    if written and INSTANTIATE_TESTS.match(written.rsplit(".", 1)[-1]):
        return f"{written}(...)"
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "update":
        namespace = _namespace_call(func.value)
        if namespace is not None:
            return f"{namespace}().update(...)"
    if written == "setattr" and call.args and _is_this_module(call.args[0].value):
        return "setattr(sys.modules[__name__], ...)"
    return None


def generating_assignment(node: cst.Assign) -> str | None:
    """``globals()[name] = ...`` (any namespace function), for messages; else None."""
    for target in node.targets:
        subscript = target.target
        if isinstance(subscript, cst.Subscript):
            namespace = _namespace_call(subscript.value)
            if namespace is not None:
                return f"{namespace}()[...] = ..."
    return None


def is_class_factory(call: cst.Call) -> bool:
    """``type(name, bases, namespace)``: a class made at run time."""
    return (
        isinstance(call.func, cst.Name)
        and call.func.value == "type"
        and len(call.args) == 3
        and all(arg.keyword is None and not arg.star for arg in call.args)
    )


def loop_label(loop: cst.CSTNode) -> str:
    """``for backend in ...`` / ``while ...``: how a class-making loop is named in messages."""
    if isinstance(loop, cst.For):
        target = code_of(loop.target)
        return f"for {target} in ..."
    return "while ..."
