"""libcst's import visitors built without the search for matcher decorators they lack, and
``AddImportsVisitor`` walking only the statements it reads.

Every instance of a ``MatcherDecoratableTransformer`` / ``MatcherDecoratableVisitor``
(``AddImportsVisitor``, ``RemoveImportsVisitor`` and the visitors they build) walks ``dir()`` of
itself three times, ~600 attributes each, looking for ``@visit``/``@leave``/``@call_if_inside``
functions: ~17 ms a visitor, several visitors per import edit, more than the edit itself.
:func:`matchers_gathered_once` answers "none" from a per-class look at the class's own
attributes (they are what the decorators mark) and lets libcst gather as before for any class
that has some.

It swaps libcst internals for the duration of a ``with`` block and restores them in ``finally``;
distlint rewrites on one thread, so nothing else runs meanwhile. Pinned with the libcst versions
in pyproject.toml, like the other internals distlint uses; tests/test_libcst_shortcuts.py checks
the results equal libcst's own and that the hooks are back afterwards.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import libcst as cst
    from libcst.codemod.visitors import AddImportsVisitor

#: The three functions of ``libcst.matchers._visitors`` that search a visitor for decorated
#: methods; each returns a dict that is empty for a class without decorators.
_GATHERERS = (
    "_gather_constructed_visit_funcs",
    "_gather_constructed_leave_funcs",
    "_gather_matchers",
)


@contextmanager
def matchers_gathered_once() -> Iterator[None]:
    """Matcher visitors built inside the block skip the search for decorators their class lacks."""
    from libcst.matchers import _visitors

    originals = {name: getattr(_visitors, name) for name in _GATHERERS}
    for name, original in originals.items():
        setattr(_visitors, name, _skipping_undecorated(original))
    try:
        yield
    finally:
        for name, original in originals.items():
            setattr(_visitors, name, original)


def _skipping_undecorated(gather: Callable[[object], dict]) -> Callable[[object], dict]:
    def gather_if_decorated(obj: object) -> dict:
        return gather(obj) if _decorated(type(obj)) else {}

    return gather_if_decorated


#: Per visitor class: whether it has decorated methods (classes are few and live as long).
_DECORATED: dict[type, bool] = {}


def _decorated(cls: type) -> bool:
    known = _DECORATED.get(cls)
    if known is None:
        known = _DECORATED[cls] = _has_decorator_marks(cls)
    return known


def _has_decorator_marks(cls: type) -> bool:
    """Whether any attribute of ``cls`` (or its bases) carries a matcher decorator's mark."""
    from libcst.matchers import _visitors

    marks = (
        _visitors.CONSTRUCTED_VISIT_MATCHER_ATTR,
        _visitors.CONSTRUCTED_LEAVE_MATCHER_ATTR,
        _visitors.VISIT_POSITIVE_MATCHER_ATTR,
        _visitors.VISIT_NEGATIVE_MATCHER_ATTR,
    )
    for klass in cls.__mro__:
        for value in vars(klass).values():
            function = getattr(value, "__func__", value)  # staticmethod/classmethod wrappers
            if any(hasattr(function, mark) for mark in marks):
                return True
    return False


@functools.cache
def statement_level_adder() -> type[AddImportsVisitor]:
    """``AddImportsVisitor`` that walks the module's statements, not what is inside them.

    All it reads or changes are the module's body (its ``visit_Module`` and ``leave_Module``) and
    the ``from`` imports of the top import block (``leave_ImportFrom``, handed the whole node);
    libcst also walks every name and dot of every import line below them, twice (once for the
    search of the top imports, ``_GatherTopImportsBeforeStatements``, which reads the module's
    body in its ``leave_Module`` alone): ~20 ms for a test file's import block, most of an
    import edit. A subtree not walked is returned as it is, so the result is libcst's own
    (tests/test_imports.py compares them).
    """
    import libcst as cst
    from libcst.codemod.visitors import AddImportsVisitor, _add_imports

    walked = (cst.Module, cst.SimpleStatementLine)

    class TopImportsOfTheBody(_add_imports._GatherTopImportsBeforeStatements):
        def on_visit(self, node: cst.CSTNode) -> bool:
            super().on_visit(node)
            return False  # leave_Module reads the body itself

    class StatementLevelAdder(AddImportsVisitor):
        def visit_Module(self, node: cst.Module) -> None:
            gatherer = _add_imports._GatherTopImportsBeforeStatements
            _add_imports._GatherTopImportsBeforeStatements = TopImportsOfTheBody  # type: ignore[misc]
            try:
                super().visit_Module(node)
            finally:
                _add_imports._GatherTopImportsBeforeStatements = gatherer  # type: ignore[misc]

        def on_visit(self, node: cst.CSTNode) -> bool:
            super().on_visit(node)
            return isinstance(node, walked)

    return StatementLevelAdder
