"""What an ``assertRaises`` around a collective says: an argument check (every rank rejects the
call before communicating, so a PG shared by the class is as it was) or an expected failure;
and which functions a test defines run inside one (:func:`run_under_raises`).

Used by the PG scan (:mod:`distlint.analysis.pg.scan`) when it meets a collective or a PG
creation inside an ``assertRaises`` block, or inside a function the test defines.
"""

from __future__ import annotations

import ast
import re
from typing import Callable

from distlint.analysis.pg.creation import self_method_name
from distlint.syntax.ast_nodes import Source, dotted_name, statements_below

#: Exceptions an argument check raises (``self.assertRaises(ValueError)`` around a collective).
ARGUMENT_ERRORS = frozenset({"ValueError", "TypeError", "IndexError", "KeyError"})
#: Words of an expected message that say the failure is communication, not an argument check.
_COMMUNICATION = re.compile(
    r"time|abort|clos|connect|peer|hang|watchdog|crash|exit|signal|kill|terminat|reset|shut|"
    r"nccl|gloo|mpi|ucc|socket|broken|died|dead",
    re.IGNORECASE,
)


def argument_check_context(expression: ast.expr, source: Source) -> bool:
    """``with self.assertRaisesRegex(RuntimeError, "invalid root rank"):`` (an argument error
    with the message it checks, none of which speaks of communication) or ``with
    self.assertRaises(ValueError):``: what c10d suites wrap around collectives called with bad
    arguments, which every rank rejects before communicating.

    ``source`` is the module's text: only a message written as one string literal counts
    (``"a" "b"`` is one ``ast.Constant`` too)."""
    if not isinstance(expression, ast.Call):
        return False
    name = self_method_name(expression)
    args = _unnamed_arguments(expression)
    if not args or not isinstance(args[0], (ast.Name, ast.Attribute)):
        return False
    error = (dotted_name(args[0]) or "").rsplit(".", 1)[-1]
    if name == "assertRaises" and len(args) == 1:
        return error in ARGUMENT_ERRORS
    if name in ("assertRaisesRegex", "assertRaisesRegexp") and len(args) == 2:
        text = _one_string_literal(args[1], source)
        return (
            error in ARGUMENT_ERRORS | {"RuntimeError"}
            and text is not None
            and bool(text.strip())
            and not _COMMUNICATION.search(text)
        )
    return False


def _unnamed_arguments(call: ast.Call) -> list[ast.expr]:
    """The values of the arguments passed without a keyword, ``*x`` and ``**x`` included (as
    ``x``), in order: a ``**x`` always follows every positional argument."""
    values = [a.value if isinstance(a, ast.Starred) else a for a in call.args]
    return values + [k.value for k in call.keywords if k.arg is None]


def _one_string_literal(node: ast.expr, source: Source) -> str | None:
    """The value of a ``str`` written as one literal; None for anything else (``"a" "b"``,
    f-strings, bytes)."""
    if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
        return None
    return node.value if _one_literal(source.segment(node)) else None


def _one_literal(written: str) -> bool:
    """Whether ``written`` (the text of a ``str`` constant) is one string literal, not several
    written side by side (what libcst kept apart): where its first literal ends, the text ends.
    (Scanned by hand: the ``tokenize`` module compiles regexes worth a cold ``check``'s budget.)"""
    start = 0
    while start < len(written) and written[start] not in "'\"":
        start += 1  # the prefix: r, u, f, ...
    if start == len(written):
        return False
    quote = written[start] * 3 if written.startswith(written[start] * 3, start) else written[start]
    at = start + len(quote)
    while at < len(written):
        if written[at] == "\\":
            at += 2  # an escaped character never closes the literal, in raw strings neither
        elif written.startswith(quote, at):
            return not written[at + len(quote) :].strip()
        else:
            at += 1
    return False


def block_expects(
    block: ast.With | ast.AsyncWith, is_raises_context: Callable[[ast.expr], bool], source: Source
) -> bool | None:
    """What the block of a ``with`` expects: None, no error; else whether the error is an
    argument check (:func:`argument_check_context`). ``is_raises_context(expression)``:
    whether a ``with`` item expects an error (``self.assertRaises(...)``, ``pytest.raises``)."""
    contexts = [item.context_expr for item in block.items]
    if not any(is_raises_context(context) for context in contexts):
        return None
    return any(argument_check_context(context, source) for context in contexts)


#: What a function defined inside a test is: a ``def``, or a lambda bound to a name.
NESTED_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def run_under_raises(
    func: ast.FunctionDef | ast.AsyncFunctionDef,
    is_raises_context: Callable[[ast.expr], bool],
    source: Source,
) -> dict[int, bool]:
    """The functions defined inside ``func`` (a ``def``, or a lambda bound to a name) whose
    name is read where the test expects an error, by id: in the block of a ``with`` whose
    context expects one, or among the arguments of a statement's call that does
    (``self.assertRaises(ValueError, init_twice)``). Each with whether every such place is an
    argument check (:func:`argument_check_context`; never the call form, as for a collective
    passed to it).

    What such a function does (create a PG, run a collective) runs where the test expects it
    to fail, though no ``assertRaises`` is written around it::

        def test_init_twice(self):
            def init():
                dist.init_process_group("gloo", ...)

            with self.assertRaises(ValueError):
                init()

    ``is_raises_context(expression)``: whether a ``with`` item or a call expects an error.
    The scan asks only when a PG call sits inside a nested function, which few tests have."""
    defined: dict[str, list[int]] = {}
    #: What runs where an error is expected, and whether that place is an argument check.
    expecting: list[tuple[ast.AST, bool]] = []
    for statement in statements_below(func):
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defined.setdefault(statement.name, []).append(id(statement))
            continue
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            check = block_expects(statement, is_raises_context, source)
            if check is not None:
                expecting += [(part, check) for part in statement.body]
            continue
        value = getattr(statement, "value", None)  # an expression, assignment or return
        if isinstance(value, ast.Lambda) and isinstance(statement, ast.Assign):
            targets = statement.targets
            if len(targets) == 1 and isinstance(targets[0], ast.Name):
                defined.setdefault(targets[0].id, []).append(id(value))
        elif isinstance(value, ast.Call) and is_raises_context(value):
            expecting += [(part, False) for part in [*value.args, *value.keywords]]
    found: dict[int, bool] = {}
    for part, check in expecting if defined else ():
        for node in ast.walk(part):
            if isinstance(node, ast.Name) and node.id in defined:
                for function in defined[node.id]:
                    found[function] = found.get(function, True) and check
    return found
