"""What an ``assertRaises`` around a collective says: an argument check (every rank rejects the
call before communicating, so a PG shared by the class is as it was) or an expected failure.

Used by the PG scan (:mod:`distlint.analysis.pg.scan`) when it meets a collective inside an
``assertRaises`` block.
"""

from __future__ import annotations

import re

import libcst as cst

from distlint.analysis.names import dotted_name
from distlint.analysis.pg.creation import self_method_name

#: Exceptions an argument check raises (``self.assertRaises(ValueError)`` around a collective).
ARGUMENT_ERRORS = frozenset({"ValueError", "TypeError", "IndexError", "KeyError"})
#: Words of an expected message that say the failure is communication, not an argument check.
_COMMUNICATION = re.compile(
    r"time|abort|clos|connect|peer|hang|watchdog|crash|exit|signal|kill|terminat|reset|shut|"
    r"nccl|gloo|mpi|ucc|socket|broken|died|dead",
    re.IGNORECASE,
)


def argument_check_context(expression: cst.BaseExpression) -> bool:
    """``with self.assertRaisesRegex(RuntimeError, "invalid root rank"):`` (an argument error
    with the message it checks, none of which speaks of communication) or ``with
    self.assertRaises(ValueError):``: what c10d suites wrap around collectives called with bad
    arguments, which every rank rejects before communicating."""
    if not isinstance(expression, cst.Call):
        return False
    name = self_method_name(expression)
    args = [a for a in expression.args if a.keyword is None]
    if not args or not isinstance(args[0].value, (cst.Name, cst.Attribute)):
        return False
    error = (dotted_name(args[0].value) or "").rsplit(".", 1)[-1]
    if name == "assertRaises" and len(args) == 1:
        return error in ARGUMENT_ERRORS
    if name in ("assertRaisesRegex", "assertRaisesRegexp") and len(args) == 2:
        message = args[1].value
        text = message.evaluated_value if isinstance(message, cst.SimpleString) else None
        return (
            error in ARGUMENT_ERRORS | {"RuntimeError"}
            and isinstance(text, str)
            and bool(text.strip())
            and not _COMMUNICATION.search(text)
        )
    return False
