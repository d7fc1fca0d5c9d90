"""Walk one test method (and the same-file helpers it calls) and record what it does to PGs.

The result is a list of *events* (:mod:`distlint.analysis.pg.events`) seen from the test:
each carries the node in the test body that leads to it (the call of a helper, or the call
itself), the helper chain that was followed, and the context it happens in (a loop, an
``assertRaises`` block, a branch on the rank). ``distlint.analysis.pg.eligibility`` turns
events into reasons; nothing here decides eligibility.

Helpers are followed through ``self.<method>()`` calls resolving to a method of the class
or of a base class defined in the same file, and through calls of module-level functions
of the file (:mod:`distlint.analysis.pg.follow`).

Cost: each function is walked once per class of ``self`` (:meth:`ScanContext.walker`);
a call of it only re-binds arguments (:func:`~distlint.analysis.pg.follow.finish`). The
walk (:func:`~distlint.analysis.pg.scan_shapes.traverse`) goes over the stdlib ``ast`` tree in source order
(:func:`~distlint.syntax.ast_nodes.children`), each body read as its units
(:mod:`distlint.syntax.ast_lines`): a line of simple statements is an ancestor of them, as
libcst's ``SimpleStatementLine`` was.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Callable, cast

from distlint.analysis.pg.creation import (
    ABORT_FUNCTIONS,
    ABORT_METHODS,
    BACKEND_CONSTRUCTORS,
    COLLECTIVES,
    KNOWN_HELPERS,
    KNOWN_PG_DECORATORS,
    KNOWN_TEARDOWN_HELPERS,
    STORE_CONSTRUCTORS,
    CallFacts,
    HelperSignature,
    callee_last_name,
    config_names,
    constructor_facts,
    device_mesh_facts,
    helper_facts,
    init_process_group_facts,
    is_pg_env_key,
    method_name,
    self_method_name,
    torch_dist_member,
)
from distlint.analysis.pg.environment import environ_subscripts, environment_call_keys
from distlint.analysis.pg.events import CreationEvent, Event, Function, Scan, Site
from distlint.analysis.pg.execution import ClassTable
from distlint.analysis.pg.follow import HelperCall, WalkedFunction, finish, is_subgroup, resolve
from distlint.analysis.pg.raises import NESTED_FUNCTIONS, block_expects, run_under_raises
from distlint.analysis.pg.scan_shapes import (
    COMPREHENSION_TYPES,
    EXIT_FUNCTIONS,
    KILL_FUNCTIONS,
    KILL_METHODS,
    LOOP_TYPES,
    RAISES_CONTEXTS,
    STATEMENT_TYPES,
    Visited,
    argument_values,
    block_items,
    first_argument,
    in_loop_body,
    is_skip_exit,
    names_one_of,
    receiver_name,
    traverse,
    written_names,
)
from distlint.analysis.pg.teardown import only_tears_down, trailing_teardown
from distlint.config import Config
from distlint.syntax.ast_lines import Unit
from distlint.syntax.ast_names import AstNames
from distlint.syntax.ast_nodes import Source, dotted_name, walk

# -- the scanner --------------------------------------------------------------------------------


class ScanContext:
    """Module-wide facts the scanner needs (shared by every function of one module)."""

    def __init__(self, names: AstNames, table: ClassTable, config: Config, source: Source) -> None:
        self.names = names
        self.table = table
        self.config = config
        #: The module's text (a message checked by ``assertRaisesRegex`` must be one literal).
        self.source = source
        self.config_helpers = config_names(config.pg_helpers)
        self.config_decorators = config_names(config.pg_decorators)
        self.pg_decorators = KNOWN_PG_DECORATORS | self.config_decorators
        #: One walk per (function, class of ``self``): helpers called by many tests are walked once.
        self.walkers: dict[tuple[int, int], Walker] = {}
        self.rank_tests: dict[int, bool] = {}
        #: Module constants bound to a backend (``BACKEND = "gloo"``), filled by ``analyze_module``.
        self.constants: dict[str, str] = {}

    def release(self, names: bool = True) -> None:
        """Let go of the walks and the names (they refer to each other and to the tree), so that
        reference counting frees them with the tree: no pass of the cyclic collector over a
        large file's every node afterwards (~0.1 s on PyTorch's 295 KB ``test_c10d_nccl.py``).
        ``names=False``: the names are the caller's, who releases them."""
        for walker in self.walkers.values():
            walker.__dict__.clear()
        self.walkers.clear()
        if names:
            self.names.release()

    def walker(self, func: Function, owner: ast.ClassDef | None) -> Walker:
        key = (id(func), id(owner))
        walker = self.walkers.get(key)
        if walker is None:
            walker = self.walkers[key] = Walker(self, func, owner)
            walker.walk()
        return walker


def scan_function(context: ScanContext, func: Function, owner: ast.ClassDef | None) -> Scan:
    """Scan a test (or any method of ``owner``) with its helpers."""
    return finish(
        context.walker(func, owner), binding=None, depth=0, visiting=frozenset({id(func)})
    )


#: What the walk passes: ast nodes, and the lines (:class:`SimpleLine`) of indented blocks.


class Walker(WalkedFunction):
    """Walks one function once (:meth:`walk`), recording what
    :func:`~distlint.analysis.pg.follow.finish` needs to build the :class:`Scan` of each call."""

    context: ScanContext  # what WalkedFunction keeps as its Walks

    def __init__(self, context: ScanContext, func: Function, owner: ast.ClassDef | None) -> None:
        super().__init__(context, func, owner)
        self.top_index = {id(s): i for i, s in enumerate(self.body)}
        #: The ancestors of the node being visited, the node itself last (the lines of the
        #: indented blocks included, as libcst's ``on_visit``/``on_leave`` would keep them).
        self.stack: list[Visited] = []
        #: The ids of the calls and lines among :attr:`stack` (what a name read sits in).
        self.around: list[int] = []
        #: ``tuple(self.around)``, kept as it changes (every name read records it).
        self.around_ids: tuple[int, ...] = ()
        self.counter = 0
        #: Names that are no reference: the target of a store assignment (``store = ...``).
        self.excluded_names: set[int] = set()
        #: The functions defined in this one that run where it expects an error (by id: is
        #: that an argument check), found when an event inside a nested function first asks.
        self.nested_under_raises: dict[int, bool] | None = None

    def walk(self) -> None:
        for item in block_items(self.func, "body"):
            traverse(item, self, _HANDLERS)
        self.scan.teardown, self.teardown_ids, self.tail_ids = trailing_teardown(
            self.body, self._is_destroy_call
        )

    # -- context ---------------------------------------------------------------------------------
    def _site(self, node: ast.AST) -> Site:
        self.counter += 1
        statement: Unit | None = None
        top = -1
        in_loop = in_raises = in_rank = argument_check = False
        stack = self.stack
        last = len(stack) - 1
        for index, ancestor in enumerate(stack):
            child = stack[index + 1] if index < last else node
            if isinstance(ancestor, STATEMENT_TYPES):
                statement = cast(Unit, ancestor)  # a line or a compound statement
                if top < 0:
                    top = self.top_index.get(id(ancestor), -1)
            if isinstance(ancestor, LOOP_TYPES):
                if in_loop_body(ancestor, child):
                    in_loop = True
            elif isinstance(ancestor, COMPREHENSION_TYPES):
                # [ProcessGroupNCCL(...) for i in range(2)]: all but the first ``for``'s iterable
                if child is not ancestor.generators[0]:
                    in_loop = True
            elif isinstance(ancestor, ast.comprehension):
                if child is not ancestor.iter:
                    in_loop = True
            elif isinstance(ancestor, ast.If):
                if child is not ancestor.test and self._mentions_rank(ancestor.test):
                    in_rank = True
            elif isinstance(ancestor, (ast.With, ast.AsyncWith)):
                if not isinstance(child, ast.withitem):
                    expected = block_expects(ancestor, self._is_raises_context, self.context.source)
                    if expected is not None:
                        in_raises, argument_check = True, expected
            elif isinstance(ancestor, ast.Call):
                if ancestor is not node and self._is_assert_raises_call(ancestor):
                    in_raises, argument_check = True, False
            elif isinstance(ancestor, NESTED_FUNCTIONS):
                expected = self._runs_under_raises(ancestor)
                if expected is not None:  # a nested function the test runs expecting an error
                    in_raises, argument_check = True, expected
        trailing = False  # decided in finish(), once the teardown is known
        return Site(
            node,
            node,
            statement,
            top,
            (),
            (),
            in_loop,
            in_raises,
            in_rank,
            trailing,
            (self.counter,),
            argument_check,
        )

    def _runs_under_raises(self, nested: ast.AST) -> bool | None:
        """Whether ``nested`` runs where an argument check (True) or another error (False) is
        expected; None: where none is."""
        if self.nested_under_raises is None:
            source = self.context.source
            self.nested_under_raises = run_under_raises(self.func, self._is_raises_context, source)
        return self.nested_under_raises.get(id(nested))

    def _mentions_rank(self, test: ast.expr) -> bool:
        cached = self.context.rank_tests.get(id(test))
        if cached is None:
            cached = self.context.rank_tests[id(test)] = self._find_rank(test)
        return cached

    def _find_rank(self, test: ast.expr) -> bool:
        names = self.names
        for node in walk(test):
            if names_one_of(node, _RANK):
                return True
            if type(node) is ast.Call and torch_dist_member(names, node) in (
                "get_rank",
                "get_global_rank",
                "get_node_local_rank",
            ):
                return True
        return False

    def _is_raises_context(self, expression: ast.expr) -> bool:
        if isinstance(expression, ast.Call):
            if self._is_assert_raises_call(expression):
                return True
            return bool(self.names.names_of(expression) & RAISES_CONTEXTS)
        return False

    @staticmethod
    def _is_assert_raises_call(call: ast.Call) -> bool:
        name = self_method_name(call)
        return name is not None and name.startswith("assertRaises")

    # -- names and assignments --------------------------------------------------------------------
    def visit_Attribute(self, node: ast.Attribute) -> None:
        value = node.value
        if type(value) is ast.Name and value.id == "self":
            attr = node.attr
            if attr not in self.scan.self_attributes:
                self.scan.self_attributes.append(attr)
            if attr == "file_name":
                self.file_name_refs.append((node, self._call_ids(), self._site(node)))

    def visit_Name(self, node: ast.Name) -> None:
        if id(node) not in self.excluded_names:
            self.name_refs.append((node.id, self._call_ids()))

    def _bound_names(self, node: ast.AST) -> None:
        """Names libcst writes as ``Name`` nodes and ``ast`` as strings (a nested ``def``'s,
        an import's, ``global``'s, ``except ... as``'s, a pattern's): references too."""
        ids = self._call_ids()
        self.name_refs.extend((name, ids) for name in written_names(node))

    def _call_ids(self) -> tuple[int, ...]:
        return self.around_ids

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._assigned(target, node.value)
        self._environment_assignment(node.targets)
        store = self._store_call(node.value)
        statement = self._innermost_statement()
        target = node.targets[0]
        if (
            store is not None
            and len(node.targets) == 1
            and isinstance(target, ast.Name)
            and statement is not None
        ):
            self.excluded_names.add(id(target))
            self.store_candidates.append((target.id, statement, store))

    def visit_Return(self, node: ast.Return) -> None:
        # A store factory (``def _get_store(self): return FileStore(self.file_name, ...)``): its
        # callers decide whether the store only feeds a PG.
        if node.value is not None and self._store_call(node.value) is not None:
            self.returned_store_ids.add(id(node.value))

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self._assigned(node.target, node.value)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._assigned(node.target, None)
        self._environment_assignment([node.target])

    def visit_Delete(self, node: ast.Delete) -> None:
        self._environment_assignment(self._deleted(node))

    def _deleted(self, node: ast.Delete) -> list[ast.expr]:
        """What libcst's ``Del.target`` was when it was no tuple: ``del a, b`` and ``del a,``
        delete a tuple, which is no ``os.environ[KEY]``."""
        if len(node.targets) != 1:
            return []
        target = node.targets[0]
        if isinstance(target, ast.Subscript) and "," in self._after(target, node):
            return []
        return [target]

    def _after(self, inner: ast.expr, outer: ast.stmt) -> str:
        """The text of ``outer`` after ``inner`` (which ends on or before ``outer``'s end)."""
        first, last = inner.end_lineno or inner.lineno, outer.end_lineno or outer.lineno
        source = self.context.source
        lines = [source.line(n).encode("utf-8") for n in range(first, last + 1)]
        lines[-1] = lines[-1][: outer.end_col_offset]
        lines[0] = lines[0][inner.end_col_offset :]
        return b"\n".join(lines).decode("utf-8", "replace")

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self._assigned(node.target, None)

    def visit_withitem(self, node: ast.withitem) -> None:
        if node.optional_vars is not None:
            self._assigned(node.optional_vars, None)

    def _assigned(self, target: ast.expr, value: ast.expr | None) -> None:
        if isinstance(target, ast.Name):
            self.assignments.setdefault(target.id, []).append(value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._assigned(element.value if isinstance(element, ast.Starred) else element, None)
        elif isinstance(target, (ast.Attribute, ast.Subscript)):
            root: ast.expr = target
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if isinstance(root, ast.Name):
                self.mutated.add(root.id)

    def _innermost_statement(self) -> Unit | None:
        """The line, or compound statement (of a one-line block: ``if x: y``), around the node."""
        for ancestor in reversed(self.stack):
            if isinstance(ancestor, STATEMENT_TYPES):
                return cast(Unit, ancestor)  # a line or a compound statement
        return None

    def _store_call(self, value: ast.expr) -> ast.Call | None:
        if not isinstance(value, ast.Call):
            return None
        if torch_dist_member(self.names, value) in STORE_CONSTRUCTORS:
            return value
        name = self_method_name(value)
        if name is not None and "store" in name.lower():  # self._get_store() and friends
            return value
        return None

    # -- environment ------------------------------------------------------------------------------
    def _environment_assignment(self, targets: Sequence[ast.expr]) -> None:
        for key, target in environ_subscripts(self.names, targets):
            self._environment_event(key, target)

    def _environment_event(self, key: str | None, node: ast.AST) -> None:
        if key is not None and is_pg_env_key(key):
            self.scan.env.append(Event(self._site(node), key))

    def _environment_call(self, call: ast.Call) -> bool:
        keys = environment_call_keys(self.names, call)
        for key in keys or ():
            self._environment_event(key, call)
        return keys is not None

    # -- calls ------------------------------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> None:
        names = self.names
        member = torch_dist_member(names, node)
        if member == "init_process_group":
            self._creation(
                node, "init_process_group", "INIT_PROCESS_GROUP", init_process_group_facts(node)
            )
        elif member in BACKEND_CONSTRUCTORS:
            self._creation(
                node,
                member,
                "BACKEND_CONSTRUCTOR",
                constructor_facts(node, BACKEND_CONSTRUCTORS[member]),
            )
        elif member == "init_device_mesh":
            self._creation(node, "init_device_mesh", "DEVICE_MESH", device_mesh_facts(node))
        elif member == "destroy_process_group":
            target = first_argument(node)
            self.scan.destroys.append(Event(self._site(node), "destroy_process_group()", target))
        elif member in ABORT_FUNCTIONS:
            target = first_argument(node)
            self.scan.aborts.append(Event(self._site(node), f"{member}()", target))
        elif member in COLLECTIVES:
            self.scan.collectives.append(Event(self._site(node), f"{member}()"))
            self._maybe_raises(node, f"{member}()")
        elif self._environment_call(node):
            pass
        else:
            self._other_call(node)
        if self._is_assert_raises_call(node):
            self._assert_raises_callable(node)
        if node.args or node.keywords:
            self._teardown_passed_along(node)

    def _teardown_passed_along(self, node: ast.Call) -> None:
        """``self.addCleanup(dist.destroy_process_group)``: a destroy (or abort) the test hands
        to another call to run later, on a shared PG as early as a call of its own."""
        for value in argument_values(node):
            if type(value) is ast.Name:
                last = value.id
            elif type(value) is ast.Attribute:
                last = value.attr
            else:
                continue
            if last != "destroy_process_group" and last not in ABORT_FUNCTIONS:
                continue  # the cheap test first: most arguments are no teardown
            member = torch_dist_member(self.names, value)
            what = f"{dotted_name(node.func) or 'a call'}({dotted_name(value)})"
            if member == "destroy_process_group":
                self.scan.destroys.append(Event(self._site(node), what, None))
            elif member in ABORT_FUNCTIONS:
                self.scan.aborts.append(Event(self._site(node), what, None))

    def _other_call(self, node: ast.Call) -> None:
        resolved = self.names.names_of(node)
        exit_name = next((EXIT_FUNCTIONS[q] for q in resolved if q in EXIT_FUNCTIONS), None)
        if exit_name is not None:
            if not is_skip_exit(node):
                self.scan.exits.append(Event(self._site(node), f"{exit_name}()"))
            return
        kill_name = next((KILL_FUNCTIONS[q] for q in resolved if q in KILL_FUNCTIONS), None)
        if kill_name is not None:
            self.scan.kills.append(Event(self._site(node), f"{kill_name}()"))
            return
        method = method_name(node)
        self_method = self_method_name(node)
        callee = callee_last_name(self.names, node)
        local = self._local_helper(node, self_method)
        if local is not None:
            helper, is_method, label = local
            fallback = self._known_helper(node, callee, self_method, record=False)
            self.helper_calls.append(
                HelperCall(node, helper, is_method, label, self._site(node), fallback)
            )
            return
        if self._known_helper(node, callee, self_method, record=True) is not None:
            return
        if callee in KNOWN_TEARDOWN_HELPERS and self_method is not None:
            self.scan.destroys.append(Event(self._site(node), f"self.{callee}()"))
        elif method in ABORT_METHODS:
            receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
            written = receiver_name(receiver)
            self.scan.aborts.append(
                Event(self._site(node), f"{written or ''}.{method}()", receiver)
            )
        elif method in KILL_METHODS:
            self.scan.kills.append(Event(self._site(node), f".{method}()"))
        elif method in COLLECTIVES:
            self._maybe_raises(node, f".{method}()")

    def _local_helper(
        self, node: ast.Call, self_method: str | None
    ) -> tuple[Function, bool, str] | None:
        """A same-file helper the call runs: a method of ``self``'s class (or its same-file bases), or a module function."""
        if self_method is not None:
            if self.owner is None:
                return None
            found = self.context.table.method(self.names, self.owner, self_method)
            return (found[1], True, f"self.{self_method}") if found is not None else None
        func = node.func
        if isinstance(func, ast.Name):
            function = self.context.table.functions.get(func.id)
            if function is not None and not self.names.names_of(node) - {func.id}:
                return function, False, func.id
        return None

    def _known_helper(
        self, node: ast.Call, callee: str | None, self_method: str | None, record: bool
    ) -> CreationEvent | None:
        """A creation by a known helper (torch's, or a config ``pg-helpers`` entry)."""
        if callee in KNOWN_HELPERS and (
            self_method is not None
            or isinstance(node.func, ast.Name)
            or callee == "_dynamo_dist_per_rank_init"
        ):
            return self._creation(
                node,
                callee,
                "KNOWN_HELPER",
                helper_facts(node, KNOWN_HELPERS[callee]),
                record=record,
            )
        if callee is not None and callee in self.context.config_helpers:
            return self._creation(
                node,
                callee,
                "KNOWN_HELPER",
                helper_facts(node, HelperSignature()),
                from_config=True,
                record=record,
            )
        return None

    def _creation(
        self,
        node: ast.Call,
        api: str,
        kind: str,
        facts: CallFacts,
        from_config: bool = False,
        record: bool = True,
    ) -> CreationEvent:
        site = self._site(node)
        event = CreationEvent(replace(site, chain=(api,)), api, kind, facts, from_config)
        if record:
            self.raw_creations.append((event, node))
            self.creation_call_ids.add(id(node))
            self._maybe_raises(node, f"{api}()", site, collective=False)
        return event

    def _maybe_raises(
        self, node: ast.Call, what: str, site: Site | None = None, collective: bool = True
    ) -> None:
        """A PG creation or collective inside ``assertRaises``: the test expects it to fail,
        unless it is a collective whose context checks an argument error (it raises on every
        rank before any communication, and the shared PG stays as it was)."""
        site = site or self._site(node)
        if site.in_raises and not (collective and site.argument_check):
            self.scan.raises.append(Event(site, what))

    def _assert_raises_callable(self, node: ast.Call) -> None:
        """``self.assertRaises(Error, dist.all_reduce, t)``: the callable form."""
        for value in argument_values(node)[1:]:
            member = torch_dist_member(self.names, value)
            attr = value.attr if isinstance(value, ast.Attribute) else None
            if member in COLLECTIVES or member == "init_process_group" or attr in COLLECTIVES:
                self.scan.raises.append(Event(self._site(node), f"{member or attr}()"))

    # -- teardown -------------------------------------------------------------------------------
    def _is_destroy_call(self, call: ast.Call) -> bool:
        if torch_dist_member(self.names, call) == "destroy_process_group":
            target = first_argument(call)
            return not is_subgroup(self.names, resolve(self, target, None))
        name = self_method_name(call)
        if name not in KNOWN_TEARDOWN_HELPERS:
            return False
        # torch's ``destroy_pg()`` only tears down; a same-file one is taken at its word only
        # when its body does nothing else (one that gathers and asserts first is test work).
        local = self._local_helper(call, name)
        return local is None or only_tears_down(
            local[0], lambda inner: torch_dist_member(self.names, inner) == "destroy_process_group"
        )


# -- the walk -------------------------------------------------------------------------------------

#: What the walk calls for a node of each type, before its children.
_HANDLERS: dict[type, Callable[[Walker, Any], None]] = {
    ast.Attribute: Walker.visit_Attribute,
    ast.Name: Walker.visit_Name,
    ast.Assign: Walker.visit_Assign,
    ast.Return: Walker.visit_Return,
    ast.AnnAssign: Walker.visit_AnnAssign,
    ast.AugAssign: Walker.visit_AugAssign,
    ast.Delete: Walker.visit_Delete,
    ast.For: Walker.visit_For,
    ast.AsyncFor: Walker.visit_For,
    ast.withitem: Walker.visit_withitem,
    ast.Call: Walker.visit_Call,
    ast.FunctionDef: Walker._bound_names,
    ast.AsyncFunctionDef: Walker._bound_names,
    ast.ClassDef: Walker._bound_names,
    ast.Import: Walker._bound_names,
    ast.ImportFrom: Walker._bound_names,
    ast.Global: Walker._bound_names,
    ast.Nonlocal: Walker._bound_names,
    ast.ExceptHandler: Walker._bound_names,
}
for _pattern in ("MatchAs", "MatchStar", "MatchMapping", "MatchClass"):
    if hasattr(ast, _pattern):  # Python 3.10+
        _HANDLERS[getattr(ast, _pattern)] = Walker._bound_names

_RANK = frozenset({"rank"})
