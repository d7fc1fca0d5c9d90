"""Walk one test method (and the same-file helpers it calls) and record what it does to PGs.

The result is a list of *events* seen from the test: each carries the node in the test
body that leads to it (the call of a helper, or the call itself), the helper chain that
was followed, and the context it happens in (a loop, an ``assertRaises`` block, a branch
on the rank). ``distlint.analysis.pg.eligibility`` turns events into reasons; nothing here
decides eligibility.

Helpers are followed through ``self.<method>()`` calls resolving to a method of the class
or of a base class defined in the same file, and through calls of module-level functions
of the file, up to :data:`MAX_HELPER_DEPTH` levels, never twice in one chain (cycle safe).
Argument expressions are resolved through helper parameters (``opts`` -> the caller's
``self.opts()``), forwarded ``**kwargs``, and single assignments (``store = FileStore(...)``).

Cost: each function is walked once per class of ``self`` (:meth:`ScanContext.walker`);
a call of it only re-binds arguments (:meth:`_Walker.finish`). The walk is a plain
field traversal (:func:`_traverse`), not ``node.visit``, which rebuilds every node.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst

from distlint.analysis.pg.execution import ClassTable
from distlint.analysis.names import QualifiedNames, dotted_name, qualified_names
from distlint.analysis.pg.creation import (
    ABORT_FUNCTIONS, ABORT_METHODS, BACKEND_CONSTRUCTORS, COLLECTIVES, KNOWN_HELPERS, KNOWN_PG_DECORATORS,
    KNOWN_TEARDOWN_HELPERS, STORE_CONSTRUCTORS, SUBGROUP_FUNCTIONS, CallFacts, HelperSignature, callee_last_name,
    config_names, constructor_facts, decorator_call, device_mesh_facts, helper_facts, init_process_group_facts, is_pg_env_key,
    method_name, self_method_name, string_literal, torch_dist_member,
)
from distlint.analysis.walk import code_children
from distlint.config import Config
from distlint.skipcodes import PYTORCH_SKIPS

MAX_HELPER_DEPTH = 4
SKIP_EXIT_CODES = frozenset(skip.exit_code for skip in PYTORCH_SKIPS.values())
EXIT_FUNCTIONS = {"sys.exit": "sys.exit", "os._exit": "os._exit", "builtins.exit": "exit", "builtins.quit": "quit"}
KILL_FUNCTIONS = {"os.kill": "os.kill", "os.killpg": "os.killpg", "os.abort": "os.abort",
                  "signal.raise_signal": "signal.raise_signal"}
KILL_METHODS = frozenset({"kill", "terminate"})
RAISES_CONTEXTS = frozenset({"pytest.raises"})
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)


# -- events -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Site:
    """Where an event happens, seen from the function being analysed."""

    #: The node in the analysed function's body that leads to the event (helper call or the call itself).
    node: cst.CSTNode
    #: The node where the event itself is (inside the innermost helper); same as ``node`` when direct.
    inner: cst.CSTNode
    #: The innermost statement of the analysed function enclosing ``node`` (None for decorators).
    statement: Optional[cst.BaseStatement]
    #: Index of the analysed function's top-level body statement enclosing ``node`` (-1: decorator).
    top: int
    #: Helpers followed, outermost first, e.g. ("self._test_basics", "self._create_pg").
    chain: Tuple[str, ...] = ()
    helpers: Tuple[cst.FunctionDef, ...] = ()
    in_loop: bool = False
    in_raises: bool = False
    in_rank_branch: bool = False
    #: Whether the event is in the trailing teardown of its function (and, for helpers, of each caller).
    trailing: bool = False
    #: Source order key (sortable across helpers).
    order: Tuple[int, ...] = ()


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
    target: Optional[cst.BaseExpression] = None


@dataclass
class StoreStatement:
    statement: cst.BaseStatement
    name: str


@dataclass
class Scan:
    """Everything one function (with followed helpers) does, as events seen from it."""

    creations: List[CreationEvent] = field(default_factory=list)
    destroys: List[Event] = field(default_factory=list)
    aborts: List[Event] = field(default_factory=list)
    env: List[Event] = field(default_factory=list)  # what = the variable name
    exits: List[Event] = field(default_factory=list)  # non-skip sys.exit/os._exit
    kills: List[Event] = field(default_factory=list)  # os.kill, .kill(), ...
    raises: List[Event] = field(default_factory=list)  # init/collective expected to raise
    file_name_uses: List[Event] = field(default_factory=list)  # self.file_name beyond the store
    self_attributes: List[str] = field(default_factory=list)
    #: Store statements of this function's body used only to build PGs.
    stores: List[StoreStatement] = field(default_factory=list)
    #: Trailing teardown statements of this function's body.
    teardown: List[cst.BaseStatement] = field(default_factory=list)
    #: Trailing teardown statements inside followed helpers: (helper, statement).
    helper_teardown: List[Tuple[cst.FunctionDef, cst.BaseStatement]] = field(default_factory=list)


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
        self.walkers: Dict[Tuple[int, int], "_Walker"] = {}
        self.rank_tests: Dict[int, bool] = {}

    def walker(self, func: cst.FunctionDef, owner: Optional[cst.ClassDef]) -> "_Walker":
        key = (id(func), id(owner))
        walker = self.walkers.get(key)
        if walker is None:
            walker = self.walkers[key] = _Walker(self, func, owner)
            walker.walk()
        return walker


def scan_function(context: ScanContext, func: cst.FunctionDef, owner: Optional[cst.ClassDef]) -> Scan:
    """Scan a test (or any method of ``owner``) with its helpers."""
    return _scan(context, func, owner, binding=None, depth=0, visiting=frozenset({id(func)}))


@dataclass
class _Binding:
    """Helper parameters -> the caller's (resolved) argument expressions."""

    params: Dict[str, Optional[cst.BaseExpression]]
    star_kwargs_name: Optional[str] = None
    extra_kwargs: Tuple[cst.Arg, ...] = ()


@dataclass
class _HelperCall:
    call: cst.Call
    helper: cst.FunctionDef
    #: A method (its first parameter is ``self``/``cls``), not a module-level function.
    is_method: bool
    label: str
    site: Site
    #: What the call counts as when the helper is not followed (a cycle, too deep): a known helper.
    fallback: Optional[CreationEvent] = None


def _scan(context: ScanContext, func: cst.FunctionDef, owner: Optional[cst.ClassDef],
          binding: Optional[_Binding], depth: int, visiting: frozenset) -> Scan:
    return context.walker(func, owner).finish(binding, depth, visiting)


def _body(func: cst.FunctionDef) -> Sequence[cst.BaseStatement]:
    return func.body.body if isinstance(func.body, cst.IndentedBlock) else ()


class _Walker(cst.CSTVisitor):
    """Walks one function once; :meth:`finish` turns the walk into a :class:`Scan` for one call."""

    def __init__(self, context: ScanContext, func: cst.FunctionDef, owner: Optional[cst.ClassDef]) -> None:
        super().__init__()
        self.context = context
        self.names = context.names
        self.func = func
        self.owner = owner
        self.body = list(_body(func))
        self.top_index = {id(s): i for i, s in enumerate(self.body)}
        self.stack: List[cst.CSTNode] = []
        self.counter = 0
        self.scan = Scan()
        self.raw_creations: List[Tuple[CreationEvent, cst.Call]] = []
        self.helper_calls: List[_HelperCall] = []
        self.creation_call_ids: Set[int] = set()
        self.excluded_names: Set[int] = set()
        self.name_refs: List[Tuple[cst.Name, Tuple[int, ...]]] = []
        self.assignments: Dict[str, List[cst.BaseExpression]] = {}
        self.mutated: Set[str] = set()
        self.store_candidates: List[Tuple[str, cst.BaseStatement, cst.Call]] = []
        self.file_name_refs: List[Tuple[cst.Attribute, Tuple[int, ...], Site]] = []
        self.returned_store_ids: Set[int] = set()
        self.teardown_ids: Set[int] = set()
        self.tail_ids: Set[int] = set()

    def walk(self) -> None:
        _traverse(self.func.body, self)
        self.teardown_ids, self.tail_ids = self._teardown(self.scan)

    # -- context ---------------------------------------------------------------------------------
    def on_visit(self, node: cst.CSTNode) -> bool:
        self.stack.append(node)
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        super().on_leave(original_node)
        self.stack.pop()

    def _site(self, node: cst.CSTNode) -> Site:
        self.counter += 1
        statement: Optional[cst.BaseStatement] = None
        top = -1
        in_loop = in_raises = in_rank = False
        for index, ancestor in enumerate(self.stack):
            child = self.stack[index + 1] if index + 1 < len(self.stack) else node
            if isinstance(ancestor, cst.BaseStatement):
                statement = ancestor
                if id(ancestor) in self.top_index and top < 0:
                    top = self.top_index[id(ancestor)]
            if isinstance(ancestor, (cst.For, cst.While)) and child is ancestor.body:
                in_loop = True
            elif isinstance(ancestor, _COMPREHENSIONS) and child is not ancestor.for_in:
                in_loop = True  # [ProcessGroupNCCL(...) for i in range(2)]
            elif isinstance(ancestor, cst.CompFor) and child is not ancestor.iter:
                in_loop = True
            elif isinstance(ancestor, cst.If) and child is not ancestor.test and self._mentions_rank(ancestor.test):
                in_rank = True
            elif isinstance(ancestor, cst.With) and child is ancestor.body and any(
                    self._is_raises_context(item.item) for item in ancestor.items):
                in_raises = True
            elif isinstance(ancestor, cst.Call) and ancestor is not node and self._is_assert_raises_call(ancestor):
                in_raises = True
        trailing = False  # decided in finish(), once the teardown is known
        return Site(node, node, statement, top, (), (), in_loop, in_raises, in_rank, trailing, (self.counter,))

    def _mentions_rank(self, test: cst.BaseExpression) -> bool:
        cached = self.context.rank_tests.get(id(test))
        if cached is None:
            cached = self.context.rank_tests[id(test)] = self._find_rank(test)
        return cached

    def _find_rank(self, test: cst.BaseExpression) -> bool:
        found = []
        names = self.names

        class _Rank(cst.CSTVisitor):
            def visit_Name(self, node: cst.Name) -> None:
                if node.value == "rank":
                    found.append(node)

            def visit_Attribute(self, node: cst.Attribute) -> None:
                if node.attr.value == "rank":
                    found.append(node)

            def visit_Call(self, node: cst.Call) -> None:
                if torch_dist_member(names, node) in ("get_rank", "get_global_rank", "get_node_local_rank"):
                    found.append(node)

        test.visit(_Rank())
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

    def _call_ids(self) -> Tuple[int, ...]:
        return tuple(id(n) for n in self.stack if isinstance(n, (cst.Call, cst.SimpleStatementLine)))

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._assigned(target.target, node.value)
        self._environment_assignment([t.target for t in node.targets], node)
        store = self._store_call(node.value)
        statement = self._innermost_statement()
        if store is not None and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) \
                and statement is not None:
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
        self._environment_assignment([node.target], node)

    def visit_Del(self, node: cst.Del) -> None:
        self._environment_assignment([node.target], node)

    def visit_For(self, node: cst.For) -> None:
        self._assigned(node.target, None)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._assigned(node.asname.name, None)

    def _assigned(self, target: cst.BaseExpression, value: Optional[cst.BaseExpression]) -> None:
        if isinstance(target, cst.Name):
            self.assignments.setdefault(target.value, []).append(value)  # type: ignore[arg-type]
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._assigned(element.value, None)
        elif isinstance(target, (cst.Attribute, cst.Subscript)):
            root = target
            while isinstance(root, (cst.Attribute, cst.Subscript)):
                root = root.value
            if isinstance(root, cst.Name):
                self.mutated.add(root.value)

    def _innermost_statement(self) -> Optional[cst.BaseStatement]:
        for ancestor in reversed(self.stack):
            if isinstance(ancestor, cst.BaseStatement):
                return ancestor
        return None

    def _store_call(self, value: cst.BaseExpression) -> Optional[cst.Call]:
        if not isinstance(value, cst.Call):
            return None
        if torch_dist_member(self.names, value) in STORE_CONSTRUCTORS:
            return value
        name = self_method_name(value)
        if name is not None and "store" in name.lower():  # self._get_store() and friends
            return value
        return None

    # -- environment ------------------------------------------------------------------------------
    def _is_os_environ(self, node: cst.BaseExpression) -> bool:
        return "os.environ" in qualified_names(self.names, node)

    def _environment_assignment(self, targets: Sequence[cst.BaseExpression], node: cst.CSTNode) -> None:
        for target in targets:
            if isinstance(target, cst.Subscript) and self._is_os_environ(target.value) and target.slice:
                index = target.slice[0].slice
                key = string_literal(index.value) if isinstance(index, cst.Index) else None
                self._environment_event(key, target)

    def _environment_event(self, key: Optional[str], node: cst.CSTNode) -> None:
        if key is not None and is_pg_env_key(key):
            self.scan.env.append(Event(self._site(node), key))

    def _environment_call(self, call: cst.Call) -> bool:
        """os.environ.update/setdefault/pop, os.putenv/unsetenv, patch.dict(os.environ, ...), monkeypatch.setenv."""
        resolved = qualified_names(self.names, call)
        func = call.func
        keys: List[Optional[str]] = []
        if isinstance(func, cst.Attribute) and self._is_os_environ(func.value):
            if func.attr.value == "update":
                for arg in call.args:
                    if arg.keyword is not None:
                        keys.append(arg.keyword.value)
                    elif isinstance(arg.value, cst.Dict):
                        keys += _dict_keys(arg.value)
            elif func.attr.value in ("setdefault", "pop", "__setitem__", "__delitem__") and call.args:
                keys.append(string_literal(call.args[0].value))
        elif resolved & {"os.putenv", "os.unsetenv"} and call.args:
            keys.append(string_literal(call.args[0].value))
        elif resolved & {"unittest.mock.patch.dict", "mock.patch.dict"} and call.args:
            target = call.args[0].value
            if self._is_os_environ(target) or string_literal(target) == "os.environ":
                for arg in call.args[1:]:
                    if arg.keyword is not None and arg.keyword.value not in ("values", "clear"):
                        keys.append(arg.keyword.value)
                    elif isinstance(arg.value, cst.Dict):
                        keys += _dict_keys(arg.value)
        elif method_name(call) in ("setenv", "delenv") and isinstance(func, cst.Attribute) \
                and isinstance(func.value, cst.Name) and func.value.value == "monkeypatch" and call.args:
            keys.append(string_literal(call.args[0].value))
        else:
            return False
        for key in keys:
            self._environment_event(key, call)
        return True

    # -- calls ------------------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        names = self.names
        member = torch_dist_member(names, node)
        if member == "init_process_group":
            self._creation(node, "init_process_group", "INIT_PROCESS_GROUP", init_process_group_facts(node))
        elif member in BACKEND_CONSTRUCTORS:
            self._creation(node, member, "BACKEND_CONSTRUCTOR", constructor_facts(node, BACKEND_CONSTRUCTORS[member]))
        elif member == "init_device_mesh":
            self._creation(node, "init_device_mesh", "DEVICE_MESH", device_mesh_facts(node))
        elif member == "destroy_process_group":
            target = node.args[0].value if node.args else None
            self.scan.destroys.append(Event(self._site(node), "destroy_process_group()", target))
        elif member in ABORT_FUNCTIONS:
            target = node.args[0].value if node.args else None
            self.scan.aborts.append(Event(self._site(node), f"{member}()", target))
        elif member in COLLECTIVES:
            self._maybe_raises(node, f"{member}()")
        elif self._environment_call(node):
            pass
        else:
            self._other_call(node)
        if self._is_assert_raises_call(node):
            self._assert_raises_callable(node)

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
            self.helper_calls.append(_HelperCall(node, helper, is_method, label, self._site(node), fallback))
            return
        if self._known_helper(node, callee, self_method, record=True) is not None:
            return
        if callee in KNOWN_TEARDOWN_HELPERS and self_method is not None:
            self.scan.destroys.append(Event(self._site(node), f"self.{callee}()"))
        elif method in ABORT_METHODS:
            receiver = node.func.value if isinstance(node.func, cst.Attribute) else None
            written = dotted_name(receiver) if isinstance(receiver, (cst.Name, cst.Attribute)) else None
            self.scan.aborts.append(Event(self._site(node), f"{written or ''}.{method}()", receiver))
        elif method in KILL_METHODS:
            self.scan.kills.append(Event(self._site(node), f".{method}()"))
        elif method in COLLECTIVES:
            self._maybe_raises(node, f".{method}()")

    def _local_helper(self, node: cst.Call, self_method: Optional[str]) -> Optional[Tuple[cst.FunctionDef, bool, str]]:
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

    def _known_helper(self, node: cst.Call, callee: Optional[str], self_method: Optional[str],
                      record: bool) -> Optional[CreationEvent]:
        """A creation by a known helper (torch's, or a config ``pg-helpers`` entry)."""
        if callee in KNOWN_HELPERS and (self_method is not None or isinstance(node.func, cst.Name)
                                        or callee == "_dynamo_dist_per_rank_init"):
            return self._creation(node, callee, "KNOWN_HELPER", helper_facts(node, KNOWN_HELPERS[callee]),
                                  record=record)
        if callee is not None and callee in self.context.config_helpers:
            return self._creation(node, callee, "KNOWN_HELPER", helper_facts(node, HelperSignature()),
                                  from_config=True, record=record)
        return None

    def _creation(self, node: cst.Call, api: str, kind: str, facts: CallFacts, from_config: bool = False,
                  record: bool = True) -> CreationEvent:
        site = self._site(node)
        event = CreationEvent(replace(site, chain=(api,)), api, kind, facts, from_config)
        if record:
            self.raw_creations.append((event, node))
            self.creation_call_ids.add(id(node))
            self._maybe_raises(node, f"{api}()", site)
        return event

    def _maybe_raises(self, node: cst.Call, what: str, site: Optional[Site] = None) -> None:
        site = site or self._site(node)
        if site.in_raises:
            self.scan.raises.append(Event(site, what))

    def _assert_raises_callable(self, node: cst.Call) -> None:
        """``self.assertRaises(Error, dist.all_reduce, t)``: the callable form."""
        for arg in node.args[1:]:
            member = torch_dist_member(self.names, arg.value)
            attr = arg.value.attr.value if isinstance(arg.value, cst.Attribute) else None
            if member in COLLECTIVES or member == "init_process_group" or attr in COLLECTIVES:
                self.scan.raises.append(Event(self._site(node), f"{member or attr}()"))

    # -- results ----------------------------------------------------------------------------------
    def resolve(self, expression: Optional[cst.BaseExpression], binding: Optional[_Binding],
                depth: int = 0) -> Optional[cst.BaseExpression]:
        """An expression with helper parameters and single local assignments substituted."""
        if expression is None:
            return None
        if isinstance(expression, cst.Name):
            if expression.value == "None":
                return None
            if binding is not None and expression.value in binding.params:
                if expression.value in self.assignments:
                    return expression  # a parameter the helper reassigns: its value here is unknown
                return binding.params[expression.value]
            values = self.assignments.get(expression.value)
            if values and len(values) == 1 and values[0] is not None and expression.value not in self.mutated \
                    and depth < 5:
                return self.resolve(values[0], binding, depth + 1)
        return expression

    def _effective_call(self, call: cst.Call, binding: Optional[_Binding]) -> cst.Call:
        """``call`` with a forwarded ``**kwargs`` replaced by the caller's extra keywords."""
        if binding is None or binding.star_kwargs_name is None:
            return call
        args: List[cst.Arg] = []
        for arg in call.args:
            if arg.star == "**" and isinstance(arg.value, cst.Name) and arg.value.value == binding.star_kwargs_name:
                args.extend(binding.extra_kwargs)
            else:
                args.append(arg)
        return call.with_changes(args=args)

    def _resolved_creation(self, event: CreationEvent, call: cst.Call, binding: Optional[_Binding]) -> CreationEvent:
        """``event`` with its facts read through forwarded ``**kwargs`` and resolved in this scope."""
        facts = _refresh_facts(event, self._effective_call(call, binding))
        backend = self.resolve(facts.backend, binding)
        return replace(event, facts=CallFacts(
            backend=backend, backend_literal=facts.backend_literal or string_literal(backend),
            world_size=self.resolve(facts.world_size, binding), timeout=self.resolve(facts.timeout, binding),
            options=self.resolve(facts.options, binding), store=self.resolve(facts.store, binding)))

    def finish(self, binding: Optional[_Binding], depth: int, visiting: frozenset) -> Scan:
        """The walk's events for one call of this function (``binding``: its arguments), helpers lifted in."""
        walked = self.scan
        scan = Scan(destroys=list(walked.destroys), aborts=list(walked.aborts), env=list(walked.env),
                    exits=list(walked.exits), kills=list(walked.kills), raises=list(walked.raises),
                    self_attributes=list(walked.self_attributes), teardown=list(walked.teardown))
        creation_call_ids = set(self.creation_call_ids)
        scan.creations = [self._resolved_creation(event, call, binding) for event, call in self.raw_creations]

        # Followed helpers: scan them with their arguments bound, and lift their events here.
        for helper_call in self.helper_calls:
            helper = helper_call.helper
            if id(helper) in visiting or depth >= MAX_HELPER_DEPTH:
                fallback = helper_call.fallback  # a cycle or too deep: what the name alone says
                if fallback is not None:
                    scan.creations.append(self._resolved_creation(fallback, helper_call.call, binding))
                    creation_call_ids.add(id(helper_call.call))
                    if fallback.site.in_raises:
                        scan.raises.append(Event(fallback.site, f"{fallback.api}()"))
                continue
            inner = _scan(self.context, helper, self.owner if helper_call.is_method else None,
                          self._bind(helper_call, binding), depth + 1, visiting | {id(helper)})
            if inner.creations:
                creation_call_ids.add(id(helper_call.call))
            self._lift(scan, inner, helper_call)

        self._stores_and_file_name(scan, creation_call_ids)
        for events in (scan.destroys, scan.aborts):
            for index, event in enumerate(events):
                if not event.site.chain:
                    trailing = event.site.statement is not None and id(event.site.statement) in self.teardown_ids
                    events[index] = replace(event, site=replace(event.site, trailing=trailing),
                                            target=self.resolve(event.target, binding))
        # Destroying a subgroup (``g = dist.new_group(...)``; ``destroy_process_group(g)``) leaves the PG alone.
        scan.destroys = [e for e in scan.destroys if e.site.chain or not self._is_subgroup(e.target)]
        for events in (scan.creations, scan.destroys, scan.aborts, scan.env, scan.exits, scan.kills, scan.raises,
                       scan.file_name_uses):
            events.sort(key=lambda e: e.site.order)
        return scan

    def _is_subgroup(self, target: Optional[cst.BaseExpression]) -> bool:
        return isinstance(target, cst.Call) and torch_dist_member(self.names, target) in SUBGROUP_FUNCTIONS

    def _bind(self, helper_call: _HelperCall, binding: Optional[_Binding]) -> _Binding:
        params = helper_call.helper.params
        positional = list(params.posonly_params) + list(params.params)
        if positional and helper_call.is_method and positional[0].name.value in ("self", "cls"):
            positional = positional[1:]
        bound: Dict[str, Optional[cst.BaseExpression]] = {}
        for param in positional + list(params.kwonly_params):
            default = param.default
            bound[param.name.value] = None if default is None else default
        args = helper_call.call.args
        extra: List[cst.Arg] = []
        position = 0
        for arg in args:
            if arg.star:
                continue
            value = self.resolve(arg.value, binding)
            if arg.keyword is None:
                if position < len(positional):
                    bound[positional[position].name.value] = value
                position += 1
            elif arg.keyword.value in bound:
                bound[arg.keyword.value] = value
            else:
                extra.append(arg.with_changes(value=value) if value is not None else arg)
        star_kwargs = params.star_kwarg.name.value if isinstance(params.star_kwarg, cst.Param) else None
        for name, value in list(bound.items()):
            if isinstance(value, cst.Name) and value.value == "None":
                bound[name] = None
        return _Binding(bound, star_kwargs, tuple(extra))

    def _lift(self, scan: Scan, inner: Scan, helper_call: _HelperCall) -> None:
        """Re-express a helper's events as events of the call to it in this function."""
        site = helper_call.site
        call_trailing = site.statement is not None and id(site.statement) in self.tail_ids

        def lift(inner_site: Site) -> Site:
            return replace(site, inner=inner_site.inner, chain=(helper_call.label,) + inner_site.chain,
                           helpers=(helper_call.helper,) + inner_site.helpers,
                           in_loop=site.in_loop or inner_site.in_loop, in_raises=site.in_raises or inner_site.in_raises,
                           in_rank_branch=site.in_rank_branch or inner_site.in_rank_branch,
                           trailing=call_trailing and inner_site.trailing,
                           order=site.order + inner_site.order)

        for creation in inner.creations:
            scan.creations.append(replace(creation, site=lift(creation.site)))
        for target, source in ((scan.destroys, inner.destroys), (scan.aborts, inner.aborts), (scan.env, inner.env),
                               (scan.exits, inner.exits), (scan.kills, inner.kills), (scan.raises, inner.raises),
                               (scan.file_name_uses, inner.file_name_uses)):
            target.extend(replace(event, site=lift(event.site)) for event in source)
        if call_trailing:
            scan.helper_teardown.extend((helper_call.helper, s) for s in inner.teardown)
            scan.helper_teardown.extend(inner.helper_teardown)
        for attr in inner.self_attributes:
            if attr not in scan.self_attributes:
                scan.self_attributes.append(attr)

    def _teardown(self, scan: Scan) -> Tuple[Set[int], Set[int]]:
        """The trailing statements that only tear the PG down.

        Returns the ids of the simple statements doing the teardown (also inside a
        ``finally:`` or an ``if``), and the ids of the statements a helper call may sit in
        for the helper's own trailing teardown to count as the test's: those, plus the
        last statement before the teardown (or the last of a ``try:`` whose finally tears down).
        """
        indices: List[int] = []
        for index in range(len(self.body) - 1, -1, -1):
            if not self._is_teardown(self.body[index], allow_try=True):
                break
            indices.insert(0, index)
        scan.teardown = [self.body[i] for i in indices]
        teardown_ids: Set[int] = set()
        tail_ids: Set[int] = set()
        for statement in scan.teardown:
            teardown_ids |= _simple_statement_ids(statement)
            if isinstance(statement, cst.Try):
                tail_ids |= {id(s) for s in _suite(statement.body)[-1:]}
                teardown_ids -= _simple_statement_ids(statement.body)
                teardown_ids |= _simple_statement_ids(statement.finalbody)  # type: ignore[arg-type]
        first = indices[0] if indices else len(self.body)
        if first > 0:
            tail_ids.add(id(self.body[first - 1]))
        return teardown_ids, tail_ids | teardown_ids

    def _is_teardown(self, statement: cst.BaseStatement, allow_try: bool = False) -> bool:
        if isinstance(statement, cst.SimpleStatementLine):
            return all(isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)
                       and self._is_destroy_call(small.value) for small in statement.body)
        if isinstance(statement, cst.Try) and allow_try:
            # try: <test> finally: destroy_process_group() -- the finally only tears down
            return (not statement.handlers and statement.orelse is None and statement.finalbody is not None
                    and all(self._is_teardown(s) for s in _suite(statement.finalbody.body)))
        if isinstance(statement, cst.If) and statement.orelse is None:
            # if dist.is_initialized(): dist.destroy_process_group()
            return all(self._is_teardown(s) for s in _suite(statement.body))
        return False

    def _is_destroy_call(self, call: cst.Call) -> bool:
        if torch_dist_member(self.names, call) == "destroy_process_group":
            target = call.args[0].value if call.args else None
            return not self._is_subgroup(self.resolve(target, None))
        name = self_method_name(call)
        return name in KNOWN_TEARDOWN_HELPERS

    def _stores_and_file_name(self, scan: Scan, creation_ids: Set[int]) -> None:
        """Store statements used only for PG creations; ``self.file_name`` uses beyond them."""
        stores: Dict[str, Tuple[cst.BaseStatement, cst.Call]] = {
            name: (statement, call) for name, statement, call in self.store_candidates
            if len(self.assignments.get(name, [])) == 1}
        refs = {name: [ids for node, ids in self.name_refs if node.value == name] for name in stores}
        # A store is PG-only when every use is in a PG creation or in another PG-only store
        # (``PrefixStore("x", store)``): shrink the candidates until that holds for all.
        pg_only = {name for name in stores if refs[name]}
        changed = True
        while changed:
            changed = False
            statement_ids = {id(stores[name][0]) for name in pg_only}
            for name in sorted(pg_only):
                if not all(any(i in creation_ids or i in statement_ids for i in ids) for ids in refs[name]):
                    pg_only.discard(name)
                    changed = True
                    break
        store_ids = {id(stores[name][0]) for name in pg_only} | self.returned_store_ids
        for name, _, _ in self.store_candidates:
            if name in pg_only and all(s.name != name for s in scan.stores):
                scan.stores.append(StoreStatement(stores[name][0], name))
        shared_store_ids = {id(statement) for name, (statement, _) in stores.items() if name not in pg_only}
        for node, ids, site in self.file_name_refs:
            if any(i in creation_ids or i in store_ids for i in ids):
                continue
            what = "its store is used beyond the PG" if any(i in shared_store_ids for i in ids) else "self.file_name"
            scan.file_name_uses.append(Event(site, what))


_HANDLERS: Dict[type, str] = {}


def _traverse(node: cst.CSTNode, walker: "_Walker") -> None:
    """``node.visit(walker)`` for a read-only visitor, without libcst rebuilding every node on the way.

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


def _simple_statement_ids(node: cst.CSTNode) -> Set[int]:
    found: Set[int] = set()

    class _Lines(cst.CSTVisitor):
        def visit_SimpleStatementLine(self, line: cst.SimpleStatementLine) -> None:
            found.add(id(line))

    node.visit(_Lines())
    return found


def _suite(suite: cst.BaseSuite) -> Sequence[cst.BaseStatement]:
    return suite.body if isinstance(suite, cst.IndentedBlock) else ()


def _dict_keys(node: cst.Dict) -> List[Optional[str]]:
    return [string_literal(e.key) for e in node.elements if isinstance(e, cst.DictElement)]


def _refresh_facts(event: CreationEvent, call: cst.Call) -> CallFacts:
    """Re-read a creation's arguments from ``call`` (which may carry forwarded keywords)."""
    if event.kind == "INIT_PROCESS_GROUP":
        return init_process_group_facts(call)
    if event.kind == "BACKEND_CONSTRUCTOR":
        return constructor_facts(call, BACKEND_CONSTRUCTORS[event.api])
    if event.kind == "DEVICE_MESH":
        return device_mesh_facts(call)
    if event.kind == "KNOWN_HELPER":
        return helper_facts(call, KNOWN_HELPERS.get(event.api, HelperSignature()))
    return event.facts


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

    value.visit(_Skips())
    return bool(found)


# -- decorators -----------------------------------------------------------------------------------

def decorator_events(context: ScanContext, func: cst.FunctionDef) -> Tuple[List[CreationEvent], List[Event], List[Event]]:
    """PG-creating decorators, environment decorators and env-patching decorators of a test."""
    creations: List[CreationEvent] = []
    env_decorators: List[Event] = []
    env: List[Event] = []
    for index, decorator in enumerate(func.decorators):
        callee, call = decorator_call(decorator)
        name = callee_last_name(context.names, callee)
        site = Site(decorator, decorator, None, -1, (), (), order=(-1, index))
        if name in context.pg_decorators:
            backend = None
            if call is not None:
                for arg in call.args:
                    if arg.keyword is not None and arg.keyword.value == "backend":
                        backend = arg.value
            facts = CallFacts(backend=backend, backend_literal=string_literal(backend))
            creations.append(CreationEvent(replace(site, chain=(f"@{name}",)), f"@{name}", "DECORATOR", facts,
                                           from_config=name in context.config_decorators
                                           and name not in KNOWN_PG_DECORATORS))
        elif name in ("with_nccl_blocking_wait", "with_dist_debug_levels"):
            env_decorators.append(Event(site, f"@{name}"))
        elif call is not None:
            walker = _Walker(context, func, None)
            walker._environment_call(call)
            env.extend(replace(e, site=site) for e in walker.scan.env)
    return creations, env_decorators, env
