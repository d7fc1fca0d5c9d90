"""Class-level eligibility: why NO test of a per-test class can move to a continuous class.

A continuous class (``MultiProcContinuousTest``) starts its workers and its PG once, runs
``setUp``/``tearDown`` on every rank (distlint's) or in the dispatcher (torch's), never in the
parent before each test's ranks start as a per-test class does, and builds the PG from
class-level facts (``backend_str()``, ``opts()``, ``timeout``). What a class does that this
cannot reproduce makes all its PG tests ineligible; the reasons are
:class:`~distlint.analysis.model.Reason` class members. DL201/DL202 report them and
``distlint migrate`` refuses the class with them, so ``check`` and ``migrate`` agree, also when
migrating again: a continuous class already in the file that cannot take the class's tests
(:mod:`~distlint.analysis.pg.existing_continuous`). (What only the rewrite cannot do, e.g. a
mixin name already taken, stays in the codemod.)

Same-file families: a class inherits its bases' reasons (``BASE_CLASS``: same setUp, same
members), and a base's tests inherited by an ineligible subclass stay too (``SUBCLASS``).
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterator

from distlint.analysis.external_bases import ExternalBases, ExternalTests
from distlint.analysis.model import (
    ClassAnalysis,
    ExecutionModel,
    Ineligibility,
    ModuleAnalysis,
    ModuleReference,
    Reason,
)
from distlint.analysis.pg.class_environment import (
    declared_assignment,
    setup_environment_writes,
)
from distlint.analysis.pg.creation import KNOWN_HELPERS, config_names
from distlint.analysis.pg.execution import (
    BASE_CHOOSES_BACKEND,
    BASE_PG_ATTRIBUTES,
    BASE_PG_MEMBERS,
    CONTINUOUS_BASES,
    MIGRATABLE_PER_TEST_BASES,
    NOT_TARGET_BASES,
    PER_TEST_BASES,
    THREADED_BASES,
    ClassTable,
    base_value,
    class_attribute,
    class_function,
    external_base_names,
)
from distlint.analysis.pg.existing_continuous import (
    DEFAULT_SUFFIX,
    continuous_base_names,
    existing_problem,
)
from distlint.analysis.pg.hooks import first_line, hook_problem, is_spawn, is_super_call
from distlint.config import Config
from distlint.syntax.ast_lines import SimpleLine, Unit, is_one_line, units
from distlint.syntax.ast_names import AstNames
from distlint.syntax.ast_nodes import Source, children, statements_below

MULTI_PROCESS_TEST_CASE = "MultiProcessTestCase"
#: Every per-test base distlint migrates (a class spawning in its own setUp derives from the last).
MIGRATED_BASES = MIGRATABLE_PER_TEST_BASES | {MULTI_PROCESS_TEST_CASE}
#: Per-test (or not-target) bases whose continuous counterparts distlint does not target.
OTHER_MULTIPROCESS_BASES = (
    (PER_TEST_BASES - MIGRATABLE_PER_TEST_BASES)
    | CONTINUOUS_BASES
    | THREADED_BASES
    | NOT_TARGET_BASES
)
HOOKS = ("setUp", "tearDown", "__init__")


def _passed_on(owner: str, reason: Ineligibility) -> str:
    """``Owner code: detail`` (one level, no nested parentheses) for BASE_CLASS / SUBCLASS details."""
    return (
        f"{owner} {reason.reason.code}: {reason.detail}"
        if reason.detail
        else f"{owner} {reason.reason.code}"
    )


def add_class_reasons(
    analysis: ModuleAnalysis,
    table: ClassTable,
    names: AstNames,
    config: Config,
    external: ExternalBases,
    source: Source,
) -> None:
    """Fill ``ClassAnalysis.ineligible`` of the per-test classes and copy it onto their PG tests
    (``external``: reads the modules bases from elsewhere come from; ``source``: the module's
    text, details quote it)."""
    per_test = {c.name: c for c in analysis.classes if c.model is ExecutionModel.PER_TEST_SPAWN}
    others = (
        OTHER_MULTIPROCESS_BASES
        | config_names(config.per_test_bases)
        | config_names(config.continuous_bases)
    )
    own: dict[str, list[Ineligibility]] = {}
    parents: dict[str, list[str]] = {}
    first_use: dict[str, ModuleReference] = {}
    for reference in analysis.references:
        first_use.setdefault(reference.name, reference)
    for name, cls in per_test.items():
        parents[name] = [
            local.name
            for base in cls.node.bases
            for local in [table.local_base(names, base)]
            if local is not None and local.name in per_test
        ]
        cls.external_bases = _external_bases(cls, table, names, external, source)
        own[name] = _own_reasons(cls, table, names, others, parents[name], source)
        if not any(i.reason is Reason.UNSUPPORTED_BASE for i in own[name]):
            own[name][:0] = _external_reasons(cls)
        own[name] += _override_reasons(cls, table, names, source)
        used = first_use.get(name)
        if used is not None:  # other code names the class: it stays (analysis.pg.references)
            detail = f"{used.name} is used {used.where}"
            own[name].append(Ineligibility(Reason.MODULE_REFERENCE, used.node, detail))
    models = {c.name: c.model for c in analysis.classes}
    continuous = continuous_base_names(config)
    for name, cls in per_test.items():
        if any(i.reason is Reason.UNSUPPORTED_BASE for i in own[name]):
            continue  # backend/options/timeout are about the MultiProcessTestCase rewrite it cannot get
        own[name] += _fact_reasons(cls, table, names, per_test, parents[name], source)
        if cls.pg_tests:  # migrating again: the continuous class a first run created
            problem = existing_problem(cls, name + DEFAULT_SUFFIX, table, names, models, continuous)
            if problem is not None:
                own[name].append(Ineligibility(Reason.EXISTING_CONTINUOUS, cls.node, problem))

    # Bases' reasons flow down (depth first over same-file bases; cycle safe).
    for name, cls in per_test.items():
        cls.ineligible = _collected(name, own, parents, per_test)
    # A base's test that an ineligible subclass inherits (and does not override) stays.
    for name, cls in per_test.items():
        if not cls.ineligible:
            continue
        for ancestor_name in _ancestors(name, parents):
            ancestor = per_test[ancestor_name]
            if ancestor.ineligible:
                continue
            for test in ancestor.pg_tests:
                if class_function(cls.node, test.name) is None and not _overridden_between(
                    test.name, name, ancestor_name, parents, per_test
                ):
                    entry = Ineligibility(
                        Reason.SUBCLASS,
                        test.node,
                        _passed_on(name, cls.ineligible[0]),
                        cls.ineligible[0].root,
                    )
                    if not any(i.reason is Reason.SUBCLASS for i in test.ineligible):
                        test.ineligible.append(entry)
    for cls in per_test.values():
        for test in cls.pg_tests:
            test.ineligible.extend(cls.ineligible)


def _ancestors(name: str, parents: dict[str, list[str]]) -> list[str]:
    out: list[str] = []
    pending = list(parents[name])
    while pending:
        current = pending.pop(0)
        if current not in out and current != name:
            out.append(current)
            pending.extend(parents[current])
    return out


def _overridden_between(
    test: str,
    name: str,
    ancestor: str,
    parents: dict[str, list[str]],
    per_test: dict[str, ClassAnalysis],
) -> bool:
    """Whether a class between ``name`` and ``ancestor`` redefines ``test``."""
    for middle in _ancestors(name, parents):
        if middle == ancestor:
            return False
        if class_function(per_test[middle].node, test) is not None:
            return True
    return False


# -- what the class itself does -----------------------------------------------------------------


def _own_reasons(
    cls: ClassAnalysis,
    table: ClassTable,
    names: AstNames,
    others: frozenset[str],
    parents: list[str],
    source: Source,
) -> list[Ineligibility]:
    reasons: list[Ineligibility] = []
    base_problem = _base_problem(cls, names, others, parents)
    if base_problem is not None:
        reasons.append(Ineligibility(Reason.UNSUPPORTED_BASE, cls.node, base_problem))
    undeclarable = _undeclarable_environment(cls, table, names)
    if undeclarable is not None:
        detail = f"`{first_line(undeclarable, source)}`"
        reasons.append(Ineligibility(Reason.CLASS_ENVIRONMENT, undeclarable, detail))
    for hook in HOOKS:
        function = class_function(cls.node, hook)
        problem = hook_problem(function, source) if function is not None else None
        if (
            function is not None
            and problem is not None
            and not (undeclarable is not None and hook == "setUp")
        ):
            reasons.append(Ineligibility(Reason.CLASS_SETUP, function, f"{hook} {problem}"))
            break
    return reasons


def _external_bases(
    cls: ClassAnalysis,
    table: ClassTable,
    names: AstNames,
    external: ExternalBases,
    source: Source,
) -> list[tuple[str, ExternalTests]]:
    """Each direct base from another module that is not a per-test base distlint migrates."""
    found: list[tuple[str, ExternalTests]] = []
    for base in cls.node.bases:  # keywords (``metaclass=``) are no bases
        if table.local_base(names, base) is not None:
            continue
        value = base_value(base)
        resolved = external_base_names(names, value) or ("",)
        if not MIGRATED_BASES & {q.rsplit(".", 1)[-1] for q in resolved}:
            found.append((source.segment(value), external.tests_of(resolved[0])))
    return found


def _external_reasons(cls: ClassAnalysis) -> list[Ineligibility]:
    """A base from elsewhere that brings tests (or whose tests cannot be seen): the per-test class
    keeps inheriting them, so a continuous class deriving from it would run them again."""
    for written, found in cls.external_bases:
        if found.unseen is not None:
            detail = found.unseen if written in found.unseen else f"{written}: {found.unseen}"
        elif found.tests:
            count = f"{len(found.tests)} test{'s' if len(found.tests) > 1 else ''}"
            detail = f"{written} defines {count}: {', '.join(found.tests[:3])}{', ...' if len(found.tests) > 3 else ''}"
        else:
            continue
        return [Ineligibility(Reason.EXTERNAL_BASE, cls.node, detail)]
    return []


def _undeclarable_environment(
    cls: ClassAnalysis, table: ClassTable, names: AstNames
) -> Unit | None:
    """The first environment write of the setUp chain a continuous class cannot declare (a PG
    variable written otherwise than as a literal, any variable written after the spawn), or
    None; then ``cls.environment`` is what the continuous class declares."""
    chain = [e for e in table.linearize(names, cls.node) if isinstance(e, ast.ClassDef)]
    setups = [f for f in (class_function(c, "setUp") for c in chain) if f is not None]
    environment, too_late = setup_environment_writes(
        setups, is_spawn, lambda statement: is_super_call(statement, "setUp")
    )
    if too_late is not None:
        return too_late
    for statement in cls.setup_environment:
        if declared_assignment(statement) is None:
            return statement
    cls.environment = environment
    return None


def _base_problem(
    cls: ClassAnalysis, names: AstNames, others: frozenset[str], parents: list[str]
) -> str | None:
    if len(parents) > 1:
        return "the class has several per-test bases"
    found: set[str] = set()
    for base in cls.node.bases:  # keywords (``metaclass=``) are no bases
        value = base_value(base)
        if isinstance(value, ast.Name) and value.id in parents:
            continue
        last = {q.rsplit(".", 1)[-1] for q in external_base_names(names, value)}
        if last & MIGRATED_BASES:
            found |= last & MIGRATED_BASES
        elif last & others:
            return f"derives from {sorted(last & others)[0]}"
    if len(found) > 1:
        return f"derives from both {' and '.join(sorted(found))}"
    if not parents and not found:
        return f"{cls.model_reason or 'per-test spawn'}, but not through a base distlint migrates"
    return None


def _override_reasons(
    cls: ClassAnalysis, table: ClassTable, names: AstNames, source: Source
) -> list[Ineligibility]:
    """The class (or a same-file base) redefines what its torch base builds the per-test PG with."""
    for member in BASE_PG_MEMBERS.get(cls.per_test_base, ()):
        found = table.method(names, cls.node, member)
        if found is not None:
            owner, function = found
            where = "" if owner is cls.node else f" (in {owner.name})"
            return [
                Ineligibility(
                    Reason.BASE_OVERRIDE, function, f"{member}{where}; {cls.per_test_base} uses it"
                )
            ]
    for attribute in BASE_PG_ATTRIBUTES.get(cls.per_test_base, ()):
        assigned = class_attribute(table, names, cls.node, attribute)
        if assigned is not None:
            owner, statement = assigned
            where = "" if owner is cls.node else f" (in {owner.name})"
            line = first_line(statement, source)
            return [
                Ineligibility(
                    Reason.BASE_OVERRIDE,
                    statement,
                    f"`{line}`{where}; {cls.per_test_base} builds its PG from it",
                )
            ]
    return []


def _fact_reasons(
    cls: ClassAnalysis,
    table: ClassTable,
    names: AstNames,
    per_test: dict[str, ClassAnalysis],
    parents: list[str],
    source: Source,
) -> list[Ineligibility]:
    """The class-level PG facts a continuous class must carry (only for a class with PG tests)."""
    if not cls.pg_tests or all(t.ineligible for t in cls.pg_tests):
        return []
    node = cls.node
    if parents and cls.backend is None and per_test[parents[0]].backend is not None:
        return []  # its tests join the base's continuous class, whose backend is known
    if cls.backend is None and cls.per_test_base not in BASE_CHOOSES_BACKEND:
        # Say what to change: the continuous class needs the backend as a string literal.
        return [Ineligibility(Reason.UNKNOWN_BACKEND, node, _unknown_backend_detail(cls))]
    reasons: list[Ineligibility] = []
    if cls.options is not None and not uses_class_opts(cls):
        reasons.append(
            Ineligibility(
                Reason.CLASS_OPTIONS,
                cls.options,
                f"`{source.segment(cls.options)}` is not self.opts(); build them in opts()",
            )
        )
    elif uses_class_opts(cls):
        problem = _opts_problem(cls, table, names, source)
        if problem is not None:
            reasons.append(Ineligibility(Reason.CLASS_OPTIONS, node, problem))
    timeout = source.segment(cls.timeout) if cls.timeout is not None else ""
    if cls.timeout is not None and "self" in bare_names(cls.timeout):
        reasons.append(Ineligibility(Reason.CLASS_TIMEOUT, cls.timeout, f"`{timeout}` reads self"))
    elif cls.timeout is not None and table.module_names is not None:
        # The class attribute is evaluated in the module: a name the test binds (``secs``, or
        # ``timedelta`` imported in the test) would raise NameError when the class is defined.
        local = sorted(bare_names(cls.timeout) - table.module_names - _BUILTINS)
        if local:
            reasons.append(
                Ineligibility(
                    Reason.CLASS_TIMEOUT,
                    cls.timeout,
                    f"`{timeout}` reads {', '.join(local)}, not bound in the module",
                )
            )
    return reasons


_BUILTINS = frozenset(dir(builtins))


def bare_names(expression: ast.AST | SimpleLine) -> set[str]:
    """The names ``expression`` (or a statement) reads: not an attribute's own name, nor a
    keyword's. Like libcst's ``Name`` nodes, also the names a statement binds as written
    (parameters, ``def``/``class``, imports, ``global``, ``except ... as``)."""
    found: set[str] = set()
    pending: list[ast.AST] = (
        list(expression.body) if isinstance(expression, SimpleLine) else [expression]
    )
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            pending.append(node.value)
        else:
            found.update(_bound_as_written(node))
            pending.extend(children(node))
    return found


def _bound_as_written(node: ast.AST) -> Iterator[str]:
    """The names a node spells that ``ast`` keeps as strings (libcst: ``Name`` nodes)."""
    if isinstance(node, ast.arg):
        yield node.arg
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield node.name
    elif isinstance(node, ast.alias):
        yield node.name.split(".", 1)[0]
        if node.asname is not None:
            yield node.asname
    elif isinstance(node, ast.ImportFrom) and node.module:
        yield node.module.split(".", 1)[0]
    elif isinstance(node, (ast.Global, ast.Nonlocal)):
        yield from node.names
    elif isinstance(node, ast.ExceptHandler) and node.name:
        yield node.name


def _unknown_backend_detail(cls: ClassAnalysis) -> str:
    """What to change so that the class's backend is known, naming how the tests get their PG
    (only asked of a class with PG tests)."""
    creation = cls.pg_tests[0].creations[0]
    how = creation.describe()
    how = how if how.startswith("via ") else f"with {how}"
    helper = creation.chain[-1].rsplit(".", 1)[-1] if creation.chain else ""
    signature = KNOWN_HELPERS.get(helper)
    if signature is not None and signature.device_arg != (None, None):
        # DistributedTestBase.create_pg(device): the device picks the backend.
        return (
            f"the tests create their PG {how}, whose device picks the backend and is not a literal "
            'such as "cpu" or "cuda"'
        )
    return (
        f'the tests create their PG {how}; none passes its backend as a string literal such as "nccl", '
        "a module constant bound to one, or Backend.X"
    )


def uses_class_opts(facts: ClassAnalysis) -> bool:
    """The class's PG options are ``self.opts()`` (which becomes the continuous class's opts())."""
    options = facts.options
    return (
        isinstance(options, ast.Call)
        and not options.args
        and not options.keywords
        and isinstance(options.func, ast.Attribute)
        and isinstance(options.func.value, ast.Name)
        and options.func.value.id == "self"
        and options.func.attr == "opts"
    )


def _opts_problem(
    cls: ClassAnalysis, table: ClassTable, names: AstNames, source: Source
) -> str | None:
    """opts() becomes a classmethod: only when it reads class attributes, not per-test state."""
    found = table.method(names, cls.node, "opts")
    if found is None:
        return None
    owner, function = found
    decorators = [source.segment(d) for d in function.decorator_list]
    if decorators in (["classmethod"], ["staticmethod"]):
        return None
    if decorators:
        return f"opts() of {owner.name} is decorated"
    params = function.args.args  # not the positional-only ones, as libcst's ``params.params``
    if not params or params[0].arg != "self":
        return f"opts() of {owner.name} does not take self first"
    family = [e for e in table.linearize(names, cls.node) if isinstance(e, ast.ClassDef)]
    family += [table.classes[n] for n in table.subclasses(names, cls.node) if n in table.classes]
    class_attributes: set[str] = set()
    instance_state: set[str] = set()
    for member in family:
        class_attributes |= _class_attributes(member)
        instance_state |= _self_assignments(member)
    for name in sorted(_self_reads(function.body)):
        if name in instance_state or name not in class_attributes:
            return (
                f"opts() of {owner.name} reads self.{name}, which is not a class attribute, "
                "so it cannot become a classmethod"
            )
    return None


def _class_attributes(cls: ast.ClassDef) -> set[str]:
    found: set[str] = set()
    for statement in units(cls) if not is_one_line(cls) else ():
        for small in statement.body if isinstance(statement, SimpleLine) else ():
            targets = list(small.targets) if isinstance(small, ast.Assign) else []
            if isinstance(small, ast.AnnAssign):
                targets.append(small.target)
            found |= {t.id for t in targets if isinstance(t, ast.Name)}
    return found


def _self_assignments(cls: ast.ClassDef) -> set[str]:
    """``x`` for every ``self.x = ...`` (also annotated and augmented) anywhere in the class."""
    found: set[str] = set()
    for node in statements_below(cls):  # assignments are statements: no expression is visited
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        else:
            continue
        for target in targets:
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
            ):
                found.add(target.attr)
    # Methods and properties are members too, never per-test state read as an attribute.
    return found


def _self_reads(body: list[ast.stmt]) -> set[str]:
    found: set[str] = set()
    for statement in body:
        for node in ast.walk(statement):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
            ):
                found.add(node.attr)
    return found


def _collected(
    name: str,
    own: dict[str, list[Ineligibility]],
    parents: dict[str, list[str]],
    per_test: dict[str, ClassAnalysis],
    seen: frozenset[str] = frozenset(),
) -> list[Ineligibility]:
    """The class's own reasons, else the first a same-file base has (its own or inherited)."""
    reasons = list(own[name])
    if not reasons:
        for parent in parents[name]:
            if parent in seen:
                continue
            inherited = _collected(parent, own, parents, per_test, seen | {name})
            if inherited:
                first = inherited[0]
                reasons.append(
                    Ineligibility(
                        Reason.BASE_CLASS,
                        per_test[name].node,
                        _passed_on(parent, first),
                        first.root,
                    )
                )
                break
    return reasons
