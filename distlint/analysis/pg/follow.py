"""One call of a walked function: its arguments bound, the helpers it calls followed, their events lifted.

:mod:`distlint.analysis.pg.scan` walks each function once per class of ``self``
(:class:`~distlint.analysis.pg.scan.Walker`); :func:`finish` turns that walk into the
:class:`~distlint.analysis.pg.events.Scan` of one call of it. Helpers are followed up to
:data:`MAX_HELPER_DEPTH` levels, never twice in one chain (cycle safe); argument expressions
are resolved through helper parameters (``opts`` -> the caller's ``self.opts()``), forwarded
``**kwargs``, and single assignments (``store = FileStore(...)``).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

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
from distlint.analysis.pg.events import (
    CreationEvent,
    Event,
    Function,
    Scan,
    Site,
    StoreStatement,
)
from distlint.syntax.ast_lines import Unit, is_one_line, units
from distlint.syntax.ast_names import AstNames

MAX_HELPER_DEPTH = 4


class Walks(Protocol):
    """Where the walks come from: one per (function, class of ``self``), made on first use."""

    names: AstNames

    def walker(self, func: Function, owner: ast.ClassDef | None) -> WalkedFunction: ...


@dataclass
class Binding:
    """Helper parameters -> the caller's (resolved) argument expressions."""

    params: dict[str, ast.expr | None]
    star_kwargs_name: str | None = None
    #: The caller's keywords no parameter takes (what a forwarded ``**kwargs`` holds).
    extra_kwargs: tuple[ast.keyword, ...] = ()


@dataclass
class HelperCall:
    """A call, in the walked function, of a same-file helper the scan follows."""

    call: ast.Call
    helper: Function
    #: A method (its first parameter is ``self``/``cls``), not a module-level function.
    is_method: bool
    label: str
    site: Site
    #: What the call counts as when the helper is not followed (a cycle, too deep): a known helper.
    fallback: CreationEvent | None = None


class WalkedFunction:
    """What one walk of a function recorded (:class:`~distlint.analysis.pg.scan.Walker` fills
    it): the events of its own body, and what :func:`finish` needs to bind each call of it."""

    def __init__(self, context: Walks, func: Function, owner: ast.ClassDef | None) -> None:
        self.context = context
        self.names = context.names
        self.func = func
        #: The class of ``self`` (None for a module-level function).
        self.owner = owner
        #: The units of the body; none for a body written on the ``def`` line.
        self.body: Sequence[Unit] = [] if is_one_line(func) else units(func)
        self.scan = Scan()
        self.raw_creations: list[tuple[CreationEvent, ast.Call]] = []
        self.helper_calls: list[HelperCall] = []
        self.creation_call_ids: set[int] = set()
        #: Names written (read or bound, but no attribute's, keyword's or parameter's own
        #: name), with the ids of the calls and lines around each.
        self.name_refs: list[tuple[str, tuple[int, ...]]] = []
        self.assignments: dict[str, list[ast.expr | None]] = {}
        self.mutated: set[str] = set()
        self.store_candidates: list[tuple[str, Unit, ast.Call]] = []
        self.file_name_refs: list[tuple[ast.Attribute, tuple[int, ...], Site]] = []
        self.returned_store_ids: set[int] = set()
        self.teardown_ids: set[int] = set()
        self.tail_ids: set[int] = set()


def resolve(
    walker: WalkedFunction,
    expression: ast.expr | None,
    binding: Binding | None,
    depth: int = 0,
) -> ast.expr | None:
    """An expression with helper parameters and single local assignments substituted."""
    if expression is None or _is_none(expression):
        return None
    if isinstance(expression, ast.Name):
        name = expression.id
        if binding is not None and name in binding.params:
            if name in walker.assignments:
                return expression  # a parameter the helper reassigns: its value here is unknown
            return binding.params[name]
        values = walker.assignments.get(name)
        if (
            values
            and len(values) == 1
            and values[0] is not None
            and name not in walker.mutated
            and depth < 5
        ):
            return resolve(walker, values[0], binding, depth + 1)
    return expression


def _is_none(expression: ast.expr) -> bool:
    return isinstance(expression, ast.Constant) and expression.value is None


def _effective_call(call: ast.Call, binding: Binding | None) -> ast.Call:
    """``call`` with a forwarded ``**kwargs`` replaced by the caller's extra keywords (a new
    ``ast.Call``, at ``call``'s position, sharing its other nodes)."""
    if binding is None or binding.star_kwargs_name is None:
        return call
    keywords: list[ast.keyword] = []
    forwarded = False
    for keyword in call.keywords:
        value = keyword.value
        if (
            keyword.arg is None
            and isinstance(value, ast.Name)
            and value.id == binding.star_kwargs_name
        ):
            keywords.extend(binding.extra_kwargs)
            forwarded = True
        else:
            keywords.append(keyword)
    if not forwarded:
        return call
    return ast.copy_location(ast.Call(func=call.func, args=call.args, keywords=keywords), call)


def _resolved_creation(
    walker: WalkedFunction, event: CreationEvent, call: ast.Call, binding: Binding | None
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
            rank=resolve(walker, facts.rank, binding),
            device_id=resolve(walker, facts.device_id, binding),
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


def is_subgroup(names: AstNames, target: ast.expr | None) -> bool:
    """``dist.new_group(...)`` and friends: destroying one leaves the PG alone."""
    return isinstance(target, ast.Call) and torch_dist_member(names, target) in SUBGROUP_FUNCTIONS


def _bind(walker: WalkedFunction, helper_call: HelperCall, binding: Binding | None) -> Binding:
    params = helper_call.helper.args
    positional = [*params.posonlyargs, *params.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(params.defaults))
    defaults += params.defaults
    bound: dict[str, ast.expr | None] = {}
    for param, default in zip(positional, defaults):
        bound[param.arg] = default
    if positional and helper_call.is_method and positional[0].arg in ("self", "cls"):
        del bound[positional[0].arg]
        positional = positional[1:]
    for param, kw_default in zip(params.kwonlyargs, params.kw_defaults):
        bound[param.arg] = kw_default
    call = helper_call.call
    position = 0
    for arg in call.args:
        if isinstance(arg, ast.Starred):
            continue
        value = resolve(walker, arg, binding)
        if position < len(positional):
            bound[positional[position].arg] = value
        position += 1
    extra: list[ast.keyword] = []
    for keyword in call.keywords:
        if keyword.arg is None:  # ``**kwargs``
            continue
        value = resolve(walker, keyword.value, binding)
        if keyword.arg in bound:
            bound[keyword.arg] = value
        elif value is None:
            extra.append(keyword)
        else:
            extra.append(ast.copy_location(ast.keyword(arg=keyword.arg, value=value), keyword))
    star_kwargs = params.kwarg.arg if params.kwarg is not None else None
    for name, value in list(bound.items()):
        if value is not None and _is_none(value):
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
    stores: dict[str, tuple[Unit, ast.Call]] = {
        name: (statement, call)
        for name, statement, call in walker.store_candidates
        if len(walker.assignments.get(name, [])) == 1
    }
    refs = {name: [ids for ref, ids in walker.name_refs if ref == name] for name in stores}
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


def _refresh_facts(event: CreationEvent, call: ast.Call) -> CallFacts:
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
