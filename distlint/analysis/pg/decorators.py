"""A test's decorators, as PG events: ``@with_comms``-style decorators that create its PG,
``with_nccl_blocking_wait``-style ones that change PG environment, and ``@patch.dict(os.environ,
...)``. Decorators run before the body the scan (:mod:`distlint.analysis.pg.scan`) walks, so
their events are ordered first."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from distlint.analysis.pg.creation import (
    ENV_DECORATORS,
    KNOWN_PG_DECORATORS,
    CallFacts,
    callee_last_name,
    decorator_call,
    is_pg_env_key,
    string_literal,
)
from distlint.analysis.pg.environment import environment_call_keys
from distlint.analysis.pg.events import CreationEvent, Event, Function, Site

if TYPE_CHECKING:
    from distlint.analysis.pg.scan import ScanContext


def decorator_events(
    context: ScanContext, func: Function
) -> tuple[list[CreationEvent], list[Event], list[Event]]:
    """PG-creating decorators, environment decorators and env-patching decorators of a test.

    Each event's site is the decorator's expression (``func.decorator_list[index]``), ordered
    ``(-1, index)``: before everything in the body."""
    creations: list[CreationEvent] = []
    env_decorators: list[Event] = []
    env: list[Event] = []
    for index, decorator in enumerate(func.decorator_list):
        callee, call = decorator_call(decorator)
        name = callee_last_name(context.names, callee)
        site = Site(decorator, decorator, None, -1, (), (), order=(-1, index))
        if name in context.pg_decorators:
            backend = None
            if call is not None:
                for keyword in call.keywords:
                    if keyword.arg == "backend":
                        backend = keyword.value
            facts = CallFacts(backend=backend, backend_literal=string_literal(backend))
            creations.append(
                CreationEvent(
                    replace(site, chain=(f"@{name}",)),
                    f"@{name}",
                    "DECORATOR",
                    facts,
                    from_config=name in context.config_decorators
                    and name not in KNOWN_PG_DECORATORS,
                )
            )
        elif name in ENV_DECORATORS:
            env_decorators.append(Event(site, f"@{name}"))
        elif call is not None:  # @patch.dict(os.environ, ...)
            keys = environment_call_keys(context.names, call) or ()
            env.extend(Event(site, key) for key in keys if key is not None and is_pg_env_key(key))
    return creations, env_decorators, env
