"""Whether a per-test-PG test could run on a PG shared by its class, and why not.

Input: the events ``distlint.analysis.pg.scan`` recorded for one test, its PG creations,
and the facts its class's tests share (backend, world size, timeout, options). Output:
:class:`~distlint.analysis.model.Ineligibility` entries, one per reason (details merged).
Also the per-class reason counts DL202 and ``distlint migrate``'s report print.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from distlint.analysis.model import ClassAnalysis, Ineligibility, PGCreation, Reason
from distlint.analysis.pg.creation import env_family
from distlint.analysis.pg.events import Event, Scan
from distlint.analysis.pg.execution import Function, integer_literal
from distlint.syntax.ast_lines import SimpleLine
from distlint.syntax.ast_nodes import Source

#: Tests about watchdogs and timeouts expect a PG to fail or hang (by name, as suites write them).
_TIMEOUT_TEST = re.compile(r"(^|_)(watchdog|timeout|timeouts|timed_out|hang|hangs)(_|$)")
#: Known helpers that are context managers around the test body (they set up more than the PG).
CONTEXT_MANAGER_HELPERS = frozenset({"_dynamo_dist_per_rank_init"})
#: World-size expressions that mean "the class's world size".
_CLASS_WORLD_SIZE = frozenset(
    {"self.world_size", "cls.world_size", "int(self.world_size)", "world_size"}
)
#: A rank as the test's own (a helper's ``rank`` parameter its callers did not bind, too).
_OWN_RANK = frozenset({"self.rank", "cls.rank", "int(self.rank)", "rank"})


def code(node: ast.AST | None, source: Source) -> str | None:
    """Source of ``node`` (``source``: the module's text) with whitespace removed (for comparing
    expressions); None for None."""
    if node is None:
        return None
    return "".join(source.segment(node).split())


def written(node: ast.AST, source: Source) -> str:
    """Source of ``node`` on one line, as written (for messages)."""
    return " ".join(source.segment(node).split())


def is_class_opts_call(node: ast.expr | None) -> bool:
    """``self.opts()`` / ``cls.opts()`` with no arguments: the class's options."""
    return is_class_method_call(node) and node.func.attr == "opts"  # type: ignore[union-attr]


def is_class_method_call(node: ast.expr | None) -> bool:
    """``self.<method>()`` / ``cls.<method>()`` with no arguments."""
    return (
        isinstance(node, ast.Call)
        and not node.args
        and not node.keywords
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in ("self", "cls")
    )


#: An options variant: ``self.opts(threads=8)`` -> ``(("threads", "8"),)`` (keywords sorted).
OptionsVariant = tuple[tuple[str, str], ...]


def options_variant(node: ast.expr | None, source: Source) -> OptionsVariant | None:
    """The keyword arguments of ``self.opts(k=<literal>, ...)`` / ``cls.opts(...)``, or None
    (``source``: the module's text, the values are taken from).

    Only literal keyword values are comparable: tests passing the same ones share a PG
    (a continuous class of their own whose ``opts()`` passes them)."""
    if not (
        isinstance(node, ast.Call)
        and (node.args or node.keywords)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in ("self", "cls")
        and node.func.attr == "opts"
    ):
        return None
    if node.args:  # a positional (or ``*``) argument
        return None
    pairs = []
    for keyword in node.keywords:
        if keyword.arg is None or not is_literal(keyword.value):  # ``**kwargs``
            return None
        # As written: it is emitted again.
        pairs.append((keyword.arg, source.segment(keyword.value)))
    return tuple(sorted(pairs))


def is_literal(node: ast.expr) -> bool:
    """A number, string, True/False/None (signed), or a tuple/list of those (``...`` is not)."""
    if isinstance(node, ast.Constant):
        return node.value is not Ellipsis
    if isinstance(node, ast.UnaryOp):
        return is_literal(node.operand)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(is_literal(e.value if isinstance(e, ast.Starred) else e) for e in node.elts)
    return False


@dataclass
class ClassFacts:
    """What the class's PG creations share; each becomes the continuous class's setting."""

    backend: str | None = None
    world_size: ast.expr | None = None
    timeout: ast.expr | None = None
    options: ast.expr | None = None


def _majority(
    values: Sequence[tuple[str | None, ast.expr | None]], prefer_none: bool
) -> ast.expr | None:
    """The most common expression (by code); ties go to "not passed" when ``prefer_none``, else the first."""
    if not values:
        return None
    counts = Counter(text for text, _ in values)
    best = max(counts.values())
    if prefer_none and counts.get(None) == best:
        return None
    for text, node in values:
        if counts[text] == best:
            return node
    return None


def class_facts(
    creations: Iterable[PGCreation], world_size: ast.expr | None, source: Source
) -> ClassFacts:
    """Shared backend / timeout / options of a class's PG creations, and its world size
    (``source``: the module's text, timeouts are compared by)."""
    creations = list(creations)
    # "Not given" (None: the default for the device) competes too: a test that asks for gloo
    # in a class whose other tests take the default needs a backend the class does not have.
    backends = Counter(c.backend for c in creations)
    backend = None
    if backends:
        best = max(backends.values())
        if backends.get(None) != best:
            backend = next(c.backend for c in creations if backends[c.backend] == best)
    timeout = _majority([(code(c.timeout, source), c.timeout) for c in creations], prefer_none=True)
    # Only options the class can provide become its options: ``self.opts()`` (or another
    # argument-less method of the class); options built inside a test stay the test's own.
    class_calls = [c.options for c in creations if is_class_method_call(c.options)]
    preferred = [o for o in class_calls if is_class_opts_call(o)]
    options = (preferred or class_calls or [None])[0]
    return ClassFacts(backend, world_size, timeout, options)


@dataclass
class TestEvidence:
    """Everything known about one test that bears on eligibility."""

    name: str
    node: Function
    scan: Scan
    creations: list[PGCreation]
    #: Per creation: made by a config pg-helper/pg-decorator (body unknown to distlint).
    from_config: list[bool]
    #: In a loop / inside assertRaises, per creation.
    in_loop: list[bool]
    env_decorators: list[Event] = field(default_factory=list)
    decorator_env: list[Event] = field(default_factory=list)
    #: Listed in the class's skip_return_code_checks / special_return_code_checks.
    return_code_check: str | None = None


class _Reasons:
    def __init__(self) -> None:
        self.found: dict[Reason, tuple[ast.AST | SimpleLine, list[str]]] = {}

    def add(self, reason: Reason, node: ast.AST | SimpleLine, detail: str = "") -> None:
        entry = self.found.setdefault(reason, (node, []))
        if detail and detail not in entry[1]:
            entry[1].append(detail)

    def result(self) -> list[Ineligibility]:
        order = list(Reason)
        return [
            Ineligibility(reason, node, ", ".join(details))
            for reason, (node, details) in sorted(
                self.found.items(), key=lambda kv: order.index(kv[0])
            )
        ]


def ineligibilities(
    evidence: TestEvidence, facts: ClassFacts, source: Source
) -> list[Ineligibility]:
    """Why ``evidence``'s test cannot move to a continuous class (empty: it can); ``source``:
    the module's text (expressions are compared, and quoted, as written)."""
    reasons = _Reasons()
    scan = evidence.scan
    creations = evidence.creations
    if not creations:
        return []

    if len(creations) > 1:
        reasons.add(Reason.MULTIPLE_PGS, creations[1].node, f"{len(creations)} PG creations")
    for creation, looped in zip(creations, evidence.in_loop):
        if looped:
            reasons.add(Reason.MULTIPLE_PGS, creation.node, "creates a PG in a loop")

    for event in scan.destroys:
        if not event.site.trailing:
            reasons.add(Reason.DESTROYS_PG_EARLY, event.site.node, _via(event))
    for event in scan.aborts:
        reasons.add(Reason.TESTS_ABORT, event.site.node, _via(event))

    for event in list(scan.env) + list(evidence.decorator_env):
        reasons.add(Reason.PG_ENVIRONMENT, event.site.node, event.what)
    for event in evidence.env_decorators:
        reasons.add(Reason.ENV_DECORATOR, event.site.node, event.what)

    for creation, from_config in zip(creations, evidence.from_config):
        if from_config:
            continue  # a config helper's arguments mean what the suite says: only UNRESOLVED_PG below
        timeout = creation.timeout
        if timeout is not None and code(timeout, source) != code(facts.timeout, source):
            reasons.add(Reason.CUSTOM_TIMEOUT, creation.node, f"timeout={written(timeout, source)}")
        world_size = creation.world_size
        if world_size is not None and not _same_world_size(world_size, facts.world_size, source):
            size = written(world_size, source)
            reasons.add(Reason.OTHER_WORLD_SIZE, creation.node, f"world_size={size}")
        if creation.rank is not None and not _own_rank(creation.rank, creation.world_size, source):
            rank = written(creation.rank, source)
            reasons.add(Reason.OTHER_RANK, creation.node, f"rank={rank}")
        if creation.device_id is not None:  # neither torch's continuous class nor ours binds one
            device = written(creation.device_id, source)
            reasons.add(Reason.BOUND_DEVICE, creation.node, f"device_id={device}")
        if creation.backend is not None and creation.backend != facts.backend:
            uses = repr(facts.backend) if facts.backend is not None else "the default"
            reasons.add(
                Reason.OTHER_BACKEND, creation.node, f"{creation.backend!r}, class uses {uses}"
            )
        options = creation.options
        if options is not None and not _same_options(options, facts.options, source):
            reasons.add(Reason.CUSTOM_OPTIONS, creation.node, written(options, source))

    for event in scan.raises:
        reasons.add(Reason.EXPECTS_FAILURE, event.site.node, f"assertRaises around {event.what}")
    for event in scan.exits:
        if event.site.in_rank_branch:
            reasons.add(Reason.KILLS_RANK, event.site.node, _via(event))
        else:
            reasons.add(Reason.EXPECTS_FAILURE, event.site.node, _via(event))
    for event in scan.kills:
        if event.site.in_rank_branch:
            reasons.add(Reason.KILLS_RANK, event.site.node, _via(event))
        else:
            reasons.add(Reason.EXPECTS_FAILURE, event.site.node, _via(event))
    if _TIMEOUT_TEST.search(evidence.name):
        reasons.add(Reason.EXPECTS_FAILURE, evidence.node, "watchdog/timeout test")
    if evidence.return_code_check:
        reasons.add(
            Reason.EXPECTS_FAILURE, evidence.node, f"listed in {evidence.return_code_check}"
        )

    for event in scan.file_name_uses:
        plain = event.what == "self.file_name" and not event.site.chain
        reasons.add(Reason.USES_FILE_NAME, event.site.node, "" if plain else _via(event))

    for creation, from_config in zip(creations, evidence.from_config):
        if from_config:
            reasons.add(Reason.UNRESOLVED_PG, creation.node, f"config helper {creation.chain[-1]}")
        elif creation.chain and creation.chain[-1] in CONTEXT_MANAGER_HELPERS:
            # The PG, and dynamo's config, are set up by a `with` around the whole body.
            reasons.add(
                Reason.UNRESOLVED_PG,
                creation.node,
                f"`with {creation.chain[-1]}(...)` around the test body",
            )
    return reasons.result()


def _via(event: Event) -> str:
    if event.site.chain:
        return f"{event.what} via {' -> '.join(event.site.chain)}"
    return event.what


def _same_world_size(
    world_size: ast.expr | None, class_world_size: ast.expr | None, source: Source
) -> bool:
    if world_size is None:
        return True
    text = code(world_size, source)
    if text in _CLASS_WORLD_SIZE:
        return True
    if class_world_size is not None and text == code(class_world_size, source):
        return True
    literal, class_literal = integer_literal(world_size), integer_literal(class_world_size)
    return literal is not None and literal == class_literal


def _own_rank(rank: ast.expr, world_size: ast.expr | None, source: Source) -> bool:
    """Whether a creation's ``rank=`` is the rank the test runs as, which a shared PG gives it
    (``rank=self.world_size - 1 - self.rank`` is not: the test sees another rank than it wrote)."""
    if code(rank, source) in _OWN_RANK:
        return True
    return integer_literal(rank) == 0 and integer_literal(world_size) == 1


def _same_options(options: ast.expr | None, class_options: ast.expr | None, source: Source) -> bool:
    if (
        options is None
        or is_class_opts_call(options)
        or code(options, source) == code(class_options, source)
    ):
        return True
    # ``self.opts(threads=8)`` in a class whose PG uses ``self.opts()``: a variant of the class's options.
    return options_variant(options, source) is not None and is_class_opts_call(class_options)


# -- summaries (DL202, the migrate report) ---------------------------------------------------------


def reason_phrase(reason: Reason, details: Iterable[str], count: int = 2) -> str:
    """DL202's phrase for ``count`` tests (the verb agrees with it); for environment, the
    variable families ("sets TORCH_NCCL_*/NCCL_*")."""
    if reason is Reason.PG_ENVIRONMENT:
        families: list[str] = []
        for detail in details:
            for key in detail.split(", "):
                family = env_family(key)
                if family and family not in families:
                    families.append(family)
        if families:
            return ("sets " if count == 1 else "set ") + "/".join(families)
    return reason.phrase(count)


def reason_counts(analysis: ClassAnalysis) -> list[tuple[int, str]]:
    """``[(count, phrase)]`` over the class's ineligible tests, most common first (a test counts once per reason)."""
    counts: Counter = Counter()
    details: dict[Reason, list[str]] = {}
    for test in analysis.pg_tests:
        for entry in test.ineligible:
            counts[entry.reason] += 1
            details.setdefault(entry.reason, []).append(entry.detail)
    ordered = sorted(counts, key=lambda r: (-counts[r], list(Reason).index(r)))
    return [(counts[r], reason_phrase(r, details[r], counts[r])) for r in ordered]


def describe_short(entry: Ineligibility) -> str:
    """``expects failure (assertRaises around .allreduce())``."""
    short = entry.reason.short
    return f"{short} ({entry.detail})" if entry.detail else short
