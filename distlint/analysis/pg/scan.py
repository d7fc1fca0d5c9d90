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
walk is a plain field traversal (:func:`_traverse`), not ``node.visit``, which rebuilds
every node.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import libcst as cst

from distlint.analysis.names import QualifiedNames, dotted_name, qualified_names
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
from distlint.analysis.pg.events import CreationEvent, Event, Scan, Site
from distlint.analysis.pg.execution import ClassTable
from distlint.analysis.pg.follow import HelperCall, WalkedFunction, finish, is_subgroup, resolve
from distlint.analysis.pg.raises import argument_check_context
from distlint.analysis.pg.teardown import only_tears_down, trailing_teardown
from distlint.analysis.walk import code_children, kind_test, visit_read_only
from distlint.config import Config
from distlint.skipcodes import PYTORCH_SKIPS

SKIP_EXIT_CODES = frozenset(skip.exit_code for skip in PYTORCH_SKIPS.values())
EXIT_FUNCTIONS = {
    "sys.exit": "sys.exit",
    "os._exit": "os._exit",
    "builtins.exit": "exit",
    "builtins.quit": "quit",
}
KILL_FUNCTIONS = {
    "os.kill": "os.kill",
    "os.killpg": "os.killpg",
    "os.abort": "os.abort",
    "signal.raise_signal": "signal.raise_signal",
}
KILL_METHODS = frozenset({"kill", "terminate"})
RAISES_CONTEXTS = frozenset({"pytest.raises"})
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)


# -- the scanner --------------------------------------------------------------------------------


class ScanContext:
    """Module-wide facts the scanner needs (shared by every function of one module)."""

    def __init__(self, names: QualifiedNames, table: ClassTable, config: Config) -> None:
        self.names = names
        self.table = table
        self.config = config
        self.config_helpers = config_names(config.pg_helpers)
        self.config_decorators = config_names(config.pg_decorators)
        self.pg_decorators = KNOWN_PG_DECORATORS | self.config_decorators
        #: One walk per (function, class of ``self``): helpers called by many tests are walked once.
        self.walkers: dict[tuple[int, int], Walker] = {}
        self.rank_tests: dict[int, bool] = {}
        #: Module constants bound to a backend (``BACKEND = "gloo"``), filled by ``analyze_module``.
        self.constants: dict[str, str] = {}

    def walker(self, func: cst.FunctionDef, owner: cst.ClassDef | None) -> Walker:
        key = (id(func), id(owner))
        walker = self.walkers.get(key)
        if walker is None:
            walker = self.walkers[key] = Walker(self, func, owner)
            walker.walk()
        return walker


def scan_function(context: ScanContext, func: cst.FunctionDef, owner: cst.ClassDef | None) -> Scan:
    """Scan a test (or any method of ``owner``) with its helpers."""
    return finish(
        context.walker(func, owner), binding=None, depth=0, visiting=frozenset({id(func)})
    )


class Walker(WalkedFunction):
    """Walks one function once (:meth:`walk`), recording what
    :func:`~distlint.analysis.pg.follow.finish` needs to build the :class:`Scan` of each call."""

    context: ScanContext  # what WalkedFunction keeps as its Walks

    def __init__(
        self, context: ScanContext, func: cst.FunctionDef, owner: cst.ClassDef | None
    ) -> None:
        super().__init__(context, func, owner)
        self.top_index = {id(s): i for i, s in enumerate(self.body)}
        #: The ancestors of the node being visited (what ``on_visit``/``on_leave`` would keep).
        self.stack: list[cst.CSTNode] = []
        self.counter = 0
        self.excluded_names: set[int] = set()

    def walk(self) -> None:
        _traverse(self.func.body, self)
        self.scan.teardown, self.teardown_ids, self.tail_ids = trailing_teardown(
            self.body, self._is_destroy_call
        )

    # -- context ---------------------------------------------------------------------------------
    def _site(self, node: cst.CSTNode) -> Site:
        self.counter += 1
        statement: cst.BaseStatement | None = None
        top = -1
        in_loop = in_raises = in_rank = argument_check = False
        for index, ancestor in enumerate(self.stack):
            child = self.stack[index + 1] if index + 1 < len(self.stack) else node
            if _is_statement(ancestor):
                statement = ancestor
                if id(ancestor) in self.top_index and top < 0:
                    top = self.top_index[id(ancestor)]
            if _is_loop(ancestor) and child is ancestor.body:
                in_loop = True
            elif _is_comprehension(ancestor) and child is not ancestor.for_in:
                in_loop = True  # [ProcessGroupNCCL(...) for i in range(2)]
            elif _is_comp_for(ancestor) and child is not ancestor.iter:
                in_loop = True
            elif (
                _is_if(ancestor)
                and child is not ancestor.test
                and self._mentions_rank(ancestor.test)
            ):
                in_rank = True
            elif (
                _is_with(ancestor)
                and child is ancestor.body
                and any(self._is_raises_context(item.item) for item in ancestor.items)
            ):
                in_raises = True
                argument_check = any(argument_check_context(item.item) for item in ancestor.items)
            elif (
                _is_call(ancestor)
                and ancestor is not node
                and self._is_assert_raises_call(ancestor)
            ):
                in_raises, argument_check = True, False
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

    def _mentions_rank(self, test: cst.BaseExpression) -> bool:
        cached = self.context.rank_tests.get(id(test))
        if cached is None:
            cached = self.context.rank_tests[id(test)] = self._find_rank(test)
        return cached

    def _find_rank(self, test: cst.BaseExpression) -> bool:
        found: list[cst.CSTNode] = []
        names = self.names

        class _Rank(cst.CSTVisitor):
            def visit_Name(self, node: cst.Name) -> None:
                if node.value == "rank":
                    found.append(node)

            def visit_Attribute(self, node: cst.Attribute) -> None:
                if node.attr.value == "rank":
                    found.append(node)

            def visit_Call(self, node: cst.Call) -> None:
                if torch_dist_member(names, node) in (
                    "get_rank",
                    "get_global_rank",
                    "get_node_local_rank",
                ):
                    found.append(node)

        visit_read_only(test, _Rank())
        return bool(found)

    def _is_raises_context(self, expression: cst.BaseExpression) -> bool:
        if isinstance(expression, cst.Call):
            if self._is_assert_raises_call(expression):
                return True
            return bool(qualified_names(self.names, expression) & RAISES_CONTEXTS)
        return False

    @staticmethod
    def _is_assert_raises_call(call: cst.Call) -> bool:
        name = self_method_name(call)
        return name is not None and name.startswith("assertRaises")

    # -- names and assignments --------------------------------------------------------------------
    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.excluded_names.add(id(node.attr))
        if isinstance(node.value, cst.Name) and node.value.value == "self":
            attr = node.attr.value
            if attr not in self.scan.self_attributes:
                self.scan.self_attributes.append(attr)
            if attr == "file_name":
                self.file_name_refs.append((node, self._call_ids(), self._site(node)))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.excluded_names.add(id(node.keyword))

    def visit_Param(self, node: cst.Param) -> None:
        self.excluded_names.add(id(node.name))

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) not in self.excluded_names:
            self.name_refs.append((node, self._call_ids()))

    def _call_ids(self) -> tuple[int, ...]:
        return tuple(id(n) for n in self.stack if _is_call_or_line(n))

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._assigned(target.target, node.value)
        self._environment_assignment([t.target for t in node.targets])
        store = self._store_call(node.value)
        statement = self._innermost_statement()
        if (
            store is not None
            and len(node.targets) == 1
            and isinstance(node.targets[0].target, cst.Name)
            and statement is not None
        ):
            self.excluded_names.add(id(node.targets[0].target))
            self.store_candidates.append((node.targets[0].target.value, statement, store))

    def visit_Return(self, node: cst.Return) -> None:
        # A store factory (``def _get_store(self): return FileStore(self.file_name, ...)``): its
        # callers decide whether the store only feeds a PG.
        if node.value is not None and self._store_call(node.value) is not None:
            self.returned_store_ids.add(id(node.value))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._assigned(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._assigned(node.target, None)
        self._environment_assignment([node.target])

    def visit_Del(self, node: cst.Del) -> None:
        self._environment_assignment([node.target])

    def visit_For(self, node: cst.For) -> None:
        self._assigned(node.target, None)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._assigned(node.asname.name, None)

    def _assigned(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if isinstance(target, cst.Name):
            self.assignments.setdefault(target.value, []).append(value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._assigned(element.value, None)
        elif isinstance(target, (cst.Attribute, cst.Subscript)):
            root: cst.BaseExpression = target
            while isinstance(root, (cst.Attribute, cst.Subscript)):
                root = root.value
            if isinstance(root, cst.Name):
                self.mutated.add(root.value)

    def _innermost_statement(self) -> cst.BaseStatement | None:
        for ancestor in reversed(self.stack):
            if isinstance(ancestor, cst.BaseStatement):
                return ancestor
        return None

    def _store_call(self, value: cst.BaseExpression) -> cst.Call | None:
        if not isinstance(value, cst.Call):
            return None
        if torch_dist_member(self.names, value) in STORE_CONSTRUCTORS:
            return value
        name = self_method_name(value)
        if name is not None and "store" in name.lower():  # self._get_store() and friends
            return value
        return None

    # -- environment ------------------------------------------------------------------------------
    def _environment_assignment(self, targets: Sequence[cst.BaseExpression]) -> None:
        for key, target in environ_subscripts(self.names, targets):
            self._environment_event(key, target)

    def _environment_event(self, key: str | None, node: cst.CSTNode) -> None:
        if key is not None and is_pg_env_key(key):
            self.scan.env.append(Event(self._site(node), key))

    def _environment_call(self, call: cst.Call) -> bool:
        keys = environment_call_keys(self.names, call)
        for key in keys or ():
            self._environment_event(key, call)
        return keys is not None

    # -- calls ------------------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
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
            target = node.args[0].value if node.args else None
            self.scan.destroys.append(Event(self._site(node), "destroy_process_group()", target))
        elif member in ABORT_FUNCTIONS:
            target = node.args[0].value if node.args else None
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
        if node.args:
            self._teardown_passed_along(node)

    def _teardown_passed_along(self, node: cst.Call) -> None:
        """``self.addCleanup(dist.destroy_process_group)``: a destroy (or abort) the test hands
        to another call to run later, on a shared PG as early as a call of its own."""
        for arg in node.args:
            value = arg.value
            if not isinstance(value, (cst.Name, cst.Attribute)):
                continue
            last = value.value if isinstance(value, cst.Name) else value.attr.value
            if last != "destroy_process_group" and last not in ABORT_FUNCTIONS:
                continue  # the cheap test first: most arguments are no teardown
            member = torch_dist_member(self.names, value)
            what = f"{dotted_name(node.func) or 'a call'}({dotted_name(value)})"
            if member == "destroy_process_group":
                self.scan.destroys.append(Event(self._site(node), what, None))
            elif member in ABORT_FUNCTIONS:
                self.scan.aborts.append(Event(self._site(node), what, None))

    def _other_call(self, node: cst.Call) -> None:
        resolved = qualified_names(self.names, node)
        exit_name = next((EXIT_FUNCTIONS[q] for q in resolved if q in EXIT_FUNCTIONS), None)
        if exit_name is not None:
            if not _is_skip_exit(node):
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
            receiver = node.func.value if isinstance(node.func, cst.Attribute) else None
            written = (
                dotted_name(receiver) if isinstance(receiver, (cst.Name, cst.Attribute)) else None
            )
            self.scan.aborts.append(
                Event(self._site(node), f"{written or ''}.{method}()", receiver)
            )
        elif method in KILL_METHODS:
            self.scan.kills.append(Event(self._site(node), f".{method}()"))
        elif method in COLLECTIVES:
            self._maybe_raises(node, f".{method}()")

    def _local_helper(
        self, node: cst.Call, self_method: str | None
    ) -> tuple[cst.FunctionDef, bool, str] | None:
        """A same-file helper the call runs: a method of ``self``'s class (or its same-file bases), or a module function."""
        if self_method is not None:
            if self.owner is None:
                return None
            found = self.context.table.method(self.names, self.owner, self_method)
            return (found[1], True, f"self.{self_method}") if found is not None else None
        if isinstance(node.func, cst.Name):
            function = self.context.table.functions.get(node.func.value)
            if function is not None and not qualified_names(self.names, node) - {node.func.value}:
                return function, False, node.func.value
        return None

    def _known_helper(
        self, node: cst.Call, callee: str | None, self_method: str | None, record: bool
    ) -> CreationEvent | None:
        """A creation by a known helper (torch's, or a config ``pg-helpers`` entry)."""
        if callee in KNOWN_HELPERS and (
            self_method is not None
            or isinstance(node.func, cst.Name)
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
        node: cst.Call,
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
        self, node: cst.Call, what: str, site: Site | None = None, collective: bool = True
    ) -> None:
        """A PG creation or collective inside ``assertRaises``: the test expects it to fail,
        unless it is a collective whose context checks an argument error (it raises on every
        rank before any communication, and the shared PG stays as it was)."""
        site = site or self._site(node)
        if site.in_raises and not (collective and site.argument_check):
            self.scan.raises.append(Event(site, what))

    def _assert_raises_callable(self, node: cst.Call) -> None:
        """``self.assertRaises(Error, dist.all_reduce, t)``: the callable form."""
        for arg in node.args[1:]:
            member = torch_dist_member(self.names, arg.value)
            attr = arg.value.attr.value if isinstance(arg.value, cst.Attribute) else None
            if member in COLLECTIVES or member == "init_process_group" or attr in COLLECTIVES:
                self.scan.raises.append(Event(self._site(node), f"{member or attr}()"))

    # -- teardown -------------------------------------------------------------------------------
    def _is_destroy_call(self, call: cst.Call) -> bool:
        if torch_dist_member(self.names, call) == "destroy_process_group":
            target = call.args[0].value if call.args else None
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


_HANDLERS: dict[type, str] = {}
# isinstance tests of the hot paths, cached per node type (libcst's classes are ABCs).
_is_statement = kind_test(cst.BaseStatement)
_is_loop = kind_test(cst.For, cst.While)
_is_call_or_line = kind_test(cst.Call, cst.SimpleStatementLine)
_is_comprehension = kind_test(*_COMPREHENSIONS)
_is_comp_for = kind_test(cst.CompFor)
_is_if = kind_test(cst.If)
_is_with = kind_test(cst.With)
_is_call = kind_test(cst.Call)


def _traverse(node: cst.CSTNode, walker: Walker) -> None:
    """What ``node.visit(walker)`` would do for a read-only visitor, without libcst rebuilding every node.

    Children are :func:`~distlint.analysis.walk.code_children`, in libcst's visiting order;
    ``visit_<Type>`` runs before the children, and the ancestor stack is kept as
    ``on_visit``/``on_leave`` would.
    """
    kind = type(node)
    stack = walker.stack
    stack.append(node)
    handler_name = _HANDLERS.get(kind)
    if handler_name is None:
        handler_name = _HANDLERS[kind] = "visit_" + kind.__name__
    handler = getattr(walker, handler_name, None)
    if handler is not None:
        handler(node)
    for child in code_children(node):
        _traverse(child, walker)
    stack.pop()


def _is_skip_exit(call: cst.Call) -> bool:
    """``sys.exit(TEST_SKIPS[...].exit_code)`` or a literal registered skip code: a skip, not a failure."""
    if not call.args:
        return False
    value = call.args[0].value
    if isinstance(value, cst.Integer):
        try:
            return int(value.evaluated_value) in SKIP_EXIT_CODES
        except ValueError:
            return False
    found = []

    class _Skips(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            if node.value in ("TEST_SKIPS", "exit_code"):
                found.append(node)

    visit_read_only(value, _Skips())
    return bool(found)
