"""One call of a walked function: its arguments bound, the helpers it calls followed, their events lifted.

:mod:`distlint.analysis.pg.scan` walks each function once per class of ``self``
(:class:`~distlint.analysis.pg.scan.Walker`); :func:`finish` turns that walk into the
:class:`~distlint.analysis.pg.events.Scan` of one call of it. Helpers are followed up to
:data:`MAX_HELPER_DEPTH` levels, never twice in one chain (cycle safe); argument expressions
are resolved through helper parameters (``opts`` -> the caller's ``self.opts()``), forwarded
``**kwargs``, and single assignments (``store = FileStore(...)``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import libcst as cst

from distlint.analysis.names import QualifiedNames
from distlint.analysis.pg.creation import (
    BACKEND_CONSTRUCTORS,
    KNOWN_HELPERS,
    SUBGROUP_FUNCTIONS,
    CallFacts,
    HelperSignature,
    constructor_facts,
    device_mesh_facts,
    helper_facts,
    init_process_group_facts,
    string_literal,
    torch_dist_member,
)
from distlint.analysis.pg.events import CreationEvent, Event, Scan, Site, StoreStatement

MAX_HELPER_DEPTH = 4


class Walks(Protocol):
    """Where the walks come from: one per (function, class of ``self``), made on first use."""

    names: QualifiedNames

    def walker(self, func: cst.FunctionDef, owner: cst.ClassDef | None) -> WalkedFunction: ...


@dataclass
class Binding:
    """Helper parameters -> the caller's (resolved) argument expressions."""

    params: dict[str, cst.BaseExpression | None]
    star_kwargs_name: str | None = None
    extra_kwargs: tuple[cst.Arg, ...] = ()


@dataclass
class HelperCall:
    """A call, in the walked function, of a same-file helper the scan follows."""

    call: cst.Call
    helper: cst.FunctionDef
    #: A method (its first parameter is ``self``/``cls``), not a module-level function.
    is_method: bool
    label: str
    site: Site
    #: What the call counts as when the helper is not followed (a cycle, too deep): a known helper.
    fallback: CreationEvent | None = None


class WalkedFunction:
    """What one walk of a function recorded (:class:`~distlint.analysis.pg.scan.Walker` fills
    it): the events of its own body, and what :func:`finish` needs to bind each call of it."""

    def __init__(self, context: Walks, func: cst.FunctionDef, owner: cst.ClassDef | None) -> None:
        self.context = context
        self.names = context.names
        self.func = func
        #: The class of ``self`` (None for a module-level function).
        self.owner = owner
        body = func.body
        self.body: Sequence[cst.BaseStatement] = (
            list(body.body) if isinstance(body, cst.IndentedBlock) else []
        )
        self.scan = Scan()
        self.raw_creations: list[tuple[CreationEvent, cst.Call]] = []
        self.helper_calls: list[HelperCall] = []
        self.creation_call_ids: set[int] = set()
        #: Names read, with the ids of the calls and statement lines around each read.
        self.name_refs: list[tuple[cst.Name, tuple[int, ...]]] = []
        self.assignments: dict[str, list[cst.BaseExpression | None]] = {}
        self.mutated: set[str] = set()
        self.store_candidates: list[tuple[str, cst.BaseStatement, cst.Call]] = []
        self.file_name_refs: list[tuple[cst.Attribute, tuple[int, ...], Site]] = []
        self.returned_store_ids: set[int] = set()
        self.teardown_ids: set[int] = set()
        self.tail_ids: set[int] = set()


def resolve(
    walker: WalkedFunction,
    expression: cst.BaseExpression | None,
    binding: Binding | None,
    depth: int = 0,
) -> cst.BaseExpression | None:
    """An expression with helper parameters and single local assignments substituted."""
    if expression is None:
        return None
    if isinstance(expression, cst.Name):
        if expression.value == "None":
            return None
        if binding is not None and expression.value in binding.params:
            if expression.value in walker.assignments:
                return expression  # a parameter the helper reassigns: its value here is unknown
            return binding.params[expression.value]
        values = walker.assignments.get(expression.value)
        if (
            values
            and len(values) == 1
            and values[0] is not None
            and expression.value not in walker.mutated
            and depth < 5
        ):
            return resolve(walker, values[0], binding, depth + 1)
    return expression


def _effective_call(call: cst.Call, binding: Binding | None) -> cst.Call:
    """``call`` with a forwarded ``**kwargs`` replaced by the caller's extra keywords."""
    if binding is None or binding.star_kwargs_name is None:
        return call
    args: list[cst.Arg] = []
    for arg in call.args:
        if (
            arg.star == "**"
            and isinstance(arg.value, cst.Name)
            and arg.value.value == binding.star_kwargs_name
        ):
            args.extend(binding.extra_kwargs)
        else:
            args.append(arg)
    return call.with_changes(args=args)


def _resolved_creation(
    walker: WalkedFunction, event: CreationEvent, call: cst.Call, binding: Binding | None
) -> CreationEvent:
    """``event`` with its facts read through forwarded ``**kwargs`` and resolved in this scope."""
    facts = _refresh_facts(event, _effective_call(call, binding))
    backend = resolve(walker, facts.backend, binding)
    return replace(
        event,
        facts=CallFacts(
            backend=backend,
            backend_literal=facts.backend_literal or string_literal(backend),
            world_size=resolve(walker, facts.world_size, binding),
            timeout=resolve(walker, facts.timeout, binding),
            options=resolve(walker, facts.options, binding),
            store=resolve(walker, facts.store, binding),
        ),
    )


def finish(
    walker: WalkedFunction, binding: Binding | None, depth: int, visiting: frozenset
) -> Scan:
    """The walk's events for one call of this function (``binding``: its arguments), helpers lifted in."""
    walked = walker.scan
    scan = Scan(
        destroys=list(walked.destroys),
        aborts=list(walked.aborts),
        env=list(walked.env),
        exits=list(walked.exits),
        kills=list(walked.kills),
        raises=list(walked.raises),
        collectives=list(walked.collectives),
        self_attributes=list(walked.self_attributes),
        teardown=list(walked.teardown),
    )
    creation_call_ids = set(walker.creation_call_ids)
    scan.creations = [
        _resolved_creation(walker, event, call, binding) for event, call in walker.raw_creations
    ]

    # Followed helpers: scan them with their arguments bound, and lift their events here.
    for helper_call in walker.helper_calls:
        helper = helper_call.helper
        if id(helper) in visiting or depth >= MAX_HELPER_DEPTH:
            fallback = helper_call.fallback  # a cycle or too deep: what the name alone says
            if fallback is not None:
                scan.creations.append(
                    _resolved_creation(walker, fallback, helper_call.call, binding)
                )
                creation_call_ids.add(id(helper_call.call))
                if fallback.site.in_raises:
                    scan.raises.append(Event(fallback.site, f"{fallback.api}()"))
            continue
        callee = walker.context.walker(helper, walker.owner if helper_call.is_method else None)
        inner = finish(
            callee, _bind(walker, helper_call, binding), depth + 1, visiting | {id(helper)}
        )
        if inner.creations:
            creation_call_ids.add(id(helper_call.call))
        _lift(walker, scan, inner, helper_call)
        _expects_the_helper_to_fail(scan, inner, helper_call)

    _stores_and_file_name(walker, scan, creation_call_ids)
    for events in (scan.destroys, scan.aborts):
        for index, event in enumerate(events):
            if not event.site.chain:
                trailing = (
                    event.site.statement is not None
                    and id(event.site.statement) in walker.teardown_ids
                )
                events[index] = replace(
                    event,
                    site=replace(event.site, trailing=trailing),
                    target=resolve(walker, event.target, binding),
                )
    # Destroying a subgroup (``g = dist.new_group(...)``; ``destroy_process_group(g)``) leaves the PG alone.
    scan.destroys = [
        e for e in scan.destroys if e.site.chain or not is_subgroup(walker.names, e.target)
    ]
    for sorted_events in (
        scan.creations,
        scan.destroys,
        scan.aborts,
        scan.env,
        scan.exits,
        scan.kills,
        scan.raises,
        scan.file_name_uses,
    ):
        sorted_events.sort(key=lambda e: e.site.order)
    return scan


def is_subgroup(names: QualifiedNames, target: cst.BaseExpression | None) -> bool:
    """``dist.new_group(...)`` and friends: destroying one leaves the PG alone."""
    return isinstance(target, cst.Call) and torch_dist_member(names, target) in SUBGROUP_FUNCTIONS


def _bind(walker: WalkedFunction, helper_call: HelperCall, binding: Binding | None) -> Binding:
    params = helper_call.helper.params
    positional = list(params.posonly_params) + list(params.params)
    if positional and helper_call.is_method and positional[0].name.value in ("self", "cls"):
        positional = positional[1:]
    bound: dict[str, cst.BaseExpression | None] = {}
    for param in positional + list(params.kwonly_params):
        default = param.default
        bound[param.name.value] = None if default is None else default
    args = helper_call.call.args
    extra: list[cst.Arg] = []
    position = 0
    for arg in args:
        if arg.star:
            continue
        value = resolve(walker, arg.value, binding)
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
    return Binding(bound, star_kwargs, tuple(extra))


def _expects_the_helper_to_fail(scan: Scan, inner: Scan, helper_call: HelperCall) -> None:
    """``with self.assertRaises(...): self._bad_init()``: a helper that creates a PG, or runs a
    collective outside an argument check, called where the test expects an error, expects
    the PG to fail (the helper's own walk sees no ``assertRaises`` around its calls)."""
    site = helper_call.site
    if not site.in_raises:
        return
    if inner.creations:
        scan.raises.append(Event(site, f"{helper_call.label}() -> {inner.creations[0].api}()"))
    elif inner.collectives and not site.argument_check:
        scan.raises.append(Event(site, f"{helper_call.label}() -> {inner.collectives[0].what}"))


def _lift(walker: WalkedFunction, scan: Scan, inner: Scan, helper_call: HelperCall) -> None:
    """Re-express a helper's events as events of the call to it in this function."""
    site = helper_call.site
    call_trailing = site.statement is not None and id(site.statement) in walker.tail_ids

    def lift(inner_site: Site) -> Site:
        return replace(
            site,
            inner=inner_site.inner,
            chain=(helper_call.label,) + inner_site.chain,
            helpers=(helper_call.helper,) + inner_site.helpers,
            in_loop=site.in_loop or inner_site.in_loop,
            in_raises=site.in_raises or inner_site.in_raises,
            in_rank_branch=site.in_rank_branch or inner_site.in_rank_branch,
            trailing=call_trailing and inner_site.trailing,
            order=site.order + inner_site.order,
        )

    for creation in inner.creations:
        scan.creations.append(replace(creation, site=lift(creation.site)))
    for target, source in (
        (scan.destroys, inner.destroys),
        (scan.aborts, inner.aborts),
        (scan.env, inner.env),
        (scan.exits, inner.exits),
        (scan.kills, inner.kills),
        (scan.raises, inner.raises),
        (scan.collectives, inner.collectives),
        (scan.file_name_uses, inner.file_name_uses),
    ):
        target.extend(replace(event, site=lift(event.site)) for event in source)
    if call_trailing:
        scan.helper_teardown.extend((helper_call.helper, s) for s in inner.teardown)
        scan.helper_teardown.extend(inner.helper_teardown)
    for attr in inner.self_attributes:
        if attr not in scan.self_attributes:
            scan.self_attributes.append(attr)


def _stores_and_file_name(walker: WalkedFunction, scan: Scan, creation_ids: set[int]) -> None:
    """Store statements used only for PG creations; ``self.file_name`` uses beyond them."""
    stores: dict[str, tuple[cst.BaseStatement, cst.Call]] = {
        name: (statement, call)
        for name, statement, call in walker.store_candidates
        if len(walker.assignments.get(name, [])) == 1
    }
    refs = {name: [ids for node, ids in walker.name_refs if node.value == name] for name in stores}
    # A store is PG-only when every use is in a PG creation or in another PG-only store
    # (``PrefixStore("x", store)``): shrink the candidates until that holds for all.
    pg_only = {name for name in stores if refs[name]}
    changed = True
    while changed:
        changed = False
        statement_ids = {id(stores[name][0]) for name in pg_only}
        for name in sorted(pg_only):
            if not all(
                any(i in creation_ids or i in statement_ids for i in ids) for ids in refs[name]
            ):
                pg_only.discard(name)
                changed = True
                break
    store_ids = {id(stores[name][0]) for name in pg_only} | walker.returned_store_ids
    for name, _, _ in walker.store_candidates:
        if name in pg_only and all(s.name != name for s in scan.stores):
            scan.stores.append(StoreStatement(stores[name][0], name))
    shared_store_ids = {
        id(statement) for name, (statement, _) in stores.items() if name not in pg_only
    }
    for _node, ids, site in walker.file_name_refs:
        if any(i in creation_ids or i in store_ids for i in ids):
            continue
        what = (
            "its store is used beyond the PG"
            if any(i in shared_store_ids for i in ids)
            else "self.file_name"
        )
        scan.file_name_uses.append(Event(site, what))


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
