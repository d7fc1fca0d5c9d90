"""Bodies of tests and helpers a migration never edits, left out of libcst's parse.

In the classes that change, most of the text is bodies that come out as they went in: tests
that stay (PyTorch's ``test_c10d_nccl.py``: 72 KB of the 149 KB libcst parses there), moved
tests whose PG comes from a decorator (``@with_comms``, which goes) or from the base class,
and the helpers they call. Where the analysis alone says the plan edits nothing in a body, the
body gets a stand-in of the same lines that says what the plan reads of it::

    @with_comms
    def test_x(self):
        self.rank; self.world_size; \"\"\"distlint: ... (7)
    <blank lines>
    \"\"\"

The def line and the decorators stay real: the plan reads the name, drops a PG decorator, moves
or copies the whole def. Of the body it reads only the members used through ``self``
(:func:`~distlint.codemods.members.member_uses`, for placement; the stand-in reads the same
names), whether it needs its class (``super(X, self)``, name-mangled attributes:
``needs_fixed_class``), and whether a test does anything (``has_work_left``: the stand-in
does, and so must the body). :meth:`~distlint.screens.plain_classes.StandIns.restore` puts the
body's own text back into the migrated module's code, as for the classes left out
(:mod:`distlint.screens.plain_classes`, :mod:`distlint.codemods.frozen`). Where that fails, the
caller parses the whole file: a stand-in the result does not hold exactly once, at the start of
a line (a body copied, re-indented), or a statement of a body left out that the plan asks about
(``twins.InLeftOutBody``).

A body is left out only when all of this holds (anything else keeps it):

* its def is a direct member of a top-level per-test class the plan reads (not frozen), and,
  from the analysis alone, the plan edits nothing in it:

  * a test that stays (it creates no PG, or has a reason of the analysis that holds for this
    run: :func:`~distlint.codemods.frozen.applicable_reasons`), or that would move with its PG
    from a decorator, the base class or ``init_device_mesh`` and no teardown to drop;
  * a helper of a class that keeps a test (so the class stays, and nothing of it is dropped:
    a dropped member's imports would go), other than a hook, ``opts`` and what the runtime
    reads (``world_size``, ``device_type``);
  * and no PG fact names it as where a PG is created or torn down (a helper the plan rewrites);
* no character of the body outside ASCII could be part of a name (``ast`` and libcst see the
  same names);
* the body does something besides strings and ``pass``; it calls no ``super(...)`` with
  arguments and no ``getattr``/``hasattr``/``setattr``/``delattr`` (what a stand-in could not
  say the same way);
* the body starts on a line of its own, indented with spaces, and spans at least
  :data:`MIN_LINES` lines.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass
from typing import Union

from distlint.analysis.model import CreationKind, ExecutionModel, ModuleAnalysis, TestAnalysis
from distlint.analysis.pg.references import HOOKS
from distlint.codemods.bases.spec import RUNTIME_READS
from distlint.codemods.frozen import applicable_reasons
from distlint.screens.plain_classes import STAND_IN_MARK, StandIns, joined_lines, split_lines

#: Shorter bodies are not worth a stand-in.
MIN_LINES = 3
#: Names through which code reaches its class's members (``members._SELF_NAMES``).
_SELF_NAMES = frozenset({"self", "cls"})
#: Calls a stand-in could not say the same way (``members._REFLECTION``).
_REFLECTION = frozenset({"getattr", "hasattr", "setattr", "delattr"})
#: Methods whose bodies the plan reads beyond their uses: hooks, ``opts``, what the runtime reads.
_READ_BODIES = HOOKS | frozenset(RUNTIME_READS) | {"opts"}
#: PG creations a moved test keeps no statement of (``creation_edits``: a decorator edit, or none).
_NO_BODY_EDIT = frozenset({CreationKind.DECORATOR, CreationKind.DEVICE_MESH, CreationKind.BASE_RUN})

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]


@dataclass(frozen=True)
class BodyStandIns:
    """The text with body stand-ins, and the defs whose bodies they are."""

    #: ``StandIns.statements``: each def without its decorators (what its body reads of the
    #: module's imports; the decorators are in libcst's tree, and may go).
    stand_ins: StandIns
    #: ``id()`` of the defs (in the analysed tree) whose bodies are stand-ins.
    defs: frozenset[int]


def body_stand_ins(
    text: str,
    tree: ast.Module,
    analysis: ModuleAnalysis,
    frozen: frozenset[str],
    suffix: str,
    first_number: int,
) -> BodyStandIns | None:
    """``text`` (the text of ``tree``, which ``analysis`` read) with the bodies the plan cannot
    edit replaced by stand-ins (see the module docstring), numbered from ``first_number``;
    ``frozen``: the classes left out already; ``suffix``: the run's ``--class-suffix``. None when
    no body is left out. The file's own text must not hold :data:`STAND_IN_MARK` (``text`` may:
    the classes left out before). The tree of the result is ``tree``: a stand-in's twin is its
    def (``Twins(opaque_bodies=...)``)."""
    lines, endings = split_lines(text)
    edited = _defs_the_facts_name(analysis)
    top_level = {id(statement) for statement in tree.body}
    chosen: list[tuple[Function, int, int, str]] = []
    for cls in analysis.classes:
        if (
            cls.model is not ExecutionModel.PER_TEST_SPAWN
            or cls.name in frozen
            or id(cls.node) not in top_level
        ):
            continue
        candidates = [t.node for t in cls.tests if _body_unedited(t, suffix)]
        if any(_left_in_place(test, suffix) for test in cls.tests):  # the class stays
            candidates += [s for s in _defs(cls.node.body) if _plain_helper(s.name)]
        members = {id(statement) for statement in cls.node.body}
        for node in candidates:
            if id(node) not in members or id(node) in edited:
                continue
            span = _body_span(node, lines)
            uses = _self_uses(node.body)
            if span is None or uses is None or not _does_something(node):
                continue
            first, last, indent = span
            reads = "".join(f"self.{name}; " for name in sorted(uses)) or "pass; "
            chosen.append((node, first, last, indent + reads))
    if not chosen:
        return None
    originals: dict[str, str] = {}
    for number, (_, first, last, head) in enumerate(chosen, first_number):
        replacement = [f'{head}"""{STAND_IN_MARK} ({number})', *[""] * (last - first - 1), '"""']
        originals[joined_lines(replacement, endings, first)] = joined_lines(
            lines[first : last + 1], endings, first
        )
        lines[first : last + 1] = replacement
    stand_ins = StandIns(
        "".join(line + ending for line, ending in zip(lines, endings)),
        originals,
        tuple(_undecorated(node) for node, *_ in chosen),
        tree,
    )
    return BodyStandIns(stand_ins, frozenset(id(node) for node, *_ in chosen))


def _left_in_place(test: TestAnalysis, suffix: str) -> bool:
    """What the plan's per-test decision says from the analysis alone: the test stays."""
    return not test.creates_pg or bool(applicable_reasons(test.ineligible, suffix))


def _body_unedited(test: TestAnalysis, suffix: str) -> bool:
    """Whether the plan leaves the test's body as it is, from the analysis alone: the test stays,
    or it moves with nothing in its body to rewrite."""
    if _left_in_place(test, suffix):
        return True
    return not test.teardown and all(c.kind in _NO_BODY_EDIT for c in test.creations)


def _defs(body: list[ast.stmt]) -> list[Function]:
    return [s for s in body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _plain_helper(name: str) -> bool:
    """A method the plan reads only the uses of (``members.classify_body``'s "method"): not a
    test, a hook (a reused class's setUp is edited), ``opts`` (it may become a classmethod) or
    a member the runtime reads (``world_size`` may become an attribute)."""
    return not name.startswith("test") and name not in _READ_BODIES


def _defs_the_facts_name(analysis: ModuleAnalysis) -> set[int]:
    """``id()`` of the helpers a PG fact of some test names (where its PG is created or torn
    down): the plan may edit their bodies."""
    found: set[int] = set()
    for cls in analysis.classes:
        for test in cls.tests:
            found.update(id(helper) for helper, _ in test.helper_teardown)
            pending = list(test.creations)
            while pending:
                creation = pending.pop()
                found.update(id(helper) for helper in creation.helper_chain)
                if creation.helper is not None:
                    found.add(id(creation.helper))
                if creation.inner is not None:
                    pending.append(creation.inner)
    return found


def _body_span(node: Function, lines: list[str]) -> tuple[int, int, str] | None:
    """The body's first and last line indexes and its indentation, when a stand-in can take its
    place (see the module docstring), else None."""
    body = node.body[0]
    first = body.lineno - 1
    last = (node.end_lineno or node.lineno) - 1
    if last - first + 1 < MIN_LINES:
        return None
    indent = lines[first][: body.col_offset]
    if not indent or indent.strip(" ") or first < node.lineno:
        return None  # a one-line body (``def f(self): x``), or tabs
    if not all(line.isascii() or _no_name_characters(line) for line in lines[first : last + 1]):
        return None
    return first, last, indent


def _no_name_characters(line: str) -> bool:
    """Whether no character of ``line`` outside ASCII can be part of a name (``ast`` normalises
    names, libcst does not; a dash or an arrow in a string or comment is no name)."""
    return not any(("a" + c).isidentifier() for c in line if not c.isascii())


def _does_something(node: Function) -> bool:
    """``has_work_left`` on the original: a statement besides strings and ``pass``."""
    return any(
        not isinstance(statement, ast.Pass)
        and not (
            isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, (str, bytes))
        )
        for statement in node.body
    )


def _undecorated(node: Function) -> Function:
    """``node`` without its decorators (a shallow copy: the body is the test's own)."""
    bare = copy.copy(node)
    bare.decorator_list = []
    return bare


def _self_uses(body: list[ast.stmt]) -> frozenset[str] | None:
    """The member names ``body`` uses as :class:`~distlint.codemods.members._Uses` reads them
    (``self.x``, ``cls.x``, ``super().x``, ``type(self).x``, ``self.__class__.x``); None when it
    calls ``super`` with arguments or a reflection function."""
    names: set[str] = set()
    for statement in body:
        for current in ast.walk(statement):
            kind = type(current)
            if kind is ast.Attribute:
                value = current.value  # type: ignore[attr-defined]
                value_kind = type(value)
                if (
                    (value_kind is ast.Name and value.id in _SELF_NAMES)
                    or (
                        value_kind is ast.Call
                        and type(value.func) is ast.Name
                        and value.func.id in ("super", "type")
                    )
                    or (
                        value_kind is ast.Attribute
                        and value.attr == "__class__"
                        and type(value.value) is ast.Name
                        and value.value.id in _SELF_NAMES
                    )
                ):
                    names.add(current.attr)  # type: ignore[attr-defined]
            elif kind is ast.Call and type(current.func) is ast.Name:  # type: ignore[attr-defined]
                called = current.func.id  # type: ignore[attr-defined]
                if called in _REFLECTION:
                    return None
                if called == "super" and (current.args or current.keywords):  # type: ignore[attr-defined]
                    return None
    return frozenset(names)
