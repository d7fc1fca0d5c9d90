"""The attribute that marks distlint's continuous test class, read without importing it.

``resolve`` and ``decorators`` must recognise a continuous class, and
``continuous`` imports both of them: asking for the marker instead of for
``issubclass(cls, MultiProcContinuousTest)`` keeps the import graph acyclic.
"""

from __future__ import annotations

#: Set to True in the body of distlint.runtime's MultiProcContinuousTest (and nowhere else).
CONTINUOUS_ATTR = "_distlint_continuous"


#: Set to True in the body of distlint.runtime's ReusedWorkersTest: its ranks hold no shared PG,
#: each test creates its own (read by ``resolve`` without importing the class).
FRESH_PG_ATTR = "_distlint_fresh_pg"


def is_fresh_pg(cls: type) -> bool:
    """True for distlint's ReusedWorkersTest and every subclass of it."""
    return getattr(cls, FRESH_PG_ATTR, False) is True


def is_continuous(cls: type) -> bool:
    """True for distlint's MultiProcContinuousTest and every subclass of it."""
    return getattr(cls, CONTINUOUS_ATTR, False) is True


def is_continuous_base(klass: type) -> bool:
    """True only for the class whose own body sets the marker: the runtime's base class itself."""
    return vars(klass).get(CONTINUOUS_ATTR, False) is True
