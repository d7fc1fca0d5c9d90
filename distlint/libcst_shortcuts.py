"""libcst's import visitors built without the search for matcher decorators they lack.

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

from collections.abc import Callable, Iterator
from contextlib import contextmanager

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
