"""What the PG scan records: events seen from the function being analysed.

:mod:`distlint.analysis.pg.scan` produces them (one :class:`Scan` per call of a function,
helpers lifted in); :mod:`distlint.analysis.pg.eligibility` turns them into reasons and
:mod:`distlint.analysis.pg` into the contract's :class:`~distlint.analysis.model.PGCreation`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Union

from distlint.analysis.pg.creation import CallFacts
from distlint.syntax.ast_lines import Unit

#: A ``def`` or ``async def`` (a test, a helper).
Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]


@dataclass(frozen=True)
class Site:
    """Where an event happens, seen from the function being analysed."""

    #: The node in the analysed function's body that leads to the event (helper call or the call itself).
    #: A decorator's expression (an entry of ``decorator_list``) for a decorator's event.
    node: ast.AST
    #: The node where the event itself is (inside the innermost helper); same as ``node`` when direct.
    inner: ast.AST
    #: The innermost statement of the analysed function enclosing ``node`` (None for decorators):
    #: the line (:class:`~distlint.syntax.ast_lines.SimpleLine`) it is on, or the compound
    #: statement whose one-line block (``if x: y``) it is in.
    statement: Unit | None
    #: Index of the unit of the analysed function's body (``units(func)``) enclosing ``node``
    #: (-1: a decorator, or a body written on the ``def`` line).
    top: int
    #: Helpers followed, outermost first, e.g. ("self._test_basics", "self._create_pg").
    chain: tuple[str, ...] = ()
    helpers: tuple[Function, ...] = ()
    in_loop: bool = False
    in_raises: bool = False
    in_rank_branch: bool = False
    #: Whether the event is in the trailing teardown of its function (and, for helpers, of each caller).
    trailing: bool = False
    #: Source order key (sortable across helpers).
    order: tuple[int, ...] = ()
    #: The innermost ``assertRaises`` around it checks an argument error (``scan.argument_check``):
    #: a collective there raises on every rank before any communication.
    argument_check: bool = False


@dataclass
class CreationEvent:
    site: Site
    #: "init_process_group", "ProcessGroupNCCL", "_create_process_group_gloo", "@with_comms", ...
    api: str
    #: model.CreationKind name of the leaf: INIT_PROCESS_GROUP, BACKEND_CONSTRUCTOR, KNOWN_HELPER, DECORATOR, DEVICE_MESH
    kind: str
    facts: CallFacts
    #: Created by a config pg-helper / pg-decorator (distlint cannot see what it does).
    from_config: bool = False


@dataclass
class Event:
    """Any other event: ``what`` describes it for messages."""

    site: Site
    what: str
    #: destroy/abort: the PG expression it acts on (resolved), when given.
    target: ast.expr | None = None


@dataclass
class StoreStatement:
    #: The line of the store's assignment (or the compound statement of its one-line block).
    statement: Unit
    name: str


@dataclass
class Scan:
    """Everything one function (with followed helpers) does, as events seen from it."""

    creations: list[CreationEvent] = field(default_factory=list)
    destroys: list[Event] = field(default_factory=list)
    aborts: list[Event] = field(default_factory=list)
    env: list[Event] = field(default_factory=list)  # what = the variable name
    exits: list[Event] = field(default_factory=list)  # non-skip sys.exit/os._exit
    kills: list[Event] = field(default_factory=list)  # os.kill, .kill(), ...
    raises: list[Event] = field(default_factory=list)  # init/collective expected to raise
    #: Collectives called (a helper's tell whether a call to it inside ``assertRaises`` expects
    #: the PG to fail).
    collectives: list[Event] = field(default_factory=list)
    file_name_uses: list[Event] = field(default_factory=list)  # self.file_name beyond the store
    self_attributes: list[str] = field(default_factory=list)
    #: Store statements of this function's body used only to build PGs.
    stores: list[StoreStatement] = field(default_factory=list)
    #: Trailing teardown units (lines, compound statements) of this function's body.
    teardown: list[Unit] = field(default_factory=list)
    #: Trailing teardown units inside followed helpers: (helper, unit).
    helper_teardown: list[tuple[Function, Unit]] = field(default_factory=list)
