"""Which per-test classes can run on reused workers: ranks spawned once, a fresh PG per test.

A test that cannot share its class's PG (it destroys or aborts it, sets ``TORCH_NCCL_*`` or a
debug level before creating it, passes its own timeout, options, backend or world size, creates
several PGs, or expects a collective to fail) still runs *as written* on a rank of
``distlint.runtime.ReusedWorkersTest``: the rank gives it ``self.rank``, ``self.world_size`` and
a store file of its own in ``self.file_name``, as torch's per-test rank does, and destroys what
it left afterwards. What such a rank cannot give is a process of the test's own: a test that
exits, kills a process, or whose exit code the class checks (``skip_return_code_checks``) needs
one, and so do tests whose class does more around them than spawn (those reasons stay).

The target is a whole class and its same-file subclasses (a *family*): ``distlint migrate``
swaps the root's ``MultiProcessTestCase`` for ``ReusedWorkersTest`` and drops the ``setUp``
that spawned, so every test the family keeps (the ones that could not move to the shared PG)
keeps its class, its name and its body. A family qualifies when every test it keeps can run
so, and the class reasons are only about the class's shared PG (its backend, options or
timeout as facts of one PG; a continuous class already in the file).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from distlint.analysis.model import (
    ClassAnalysis,
    ExecutionModel,
    ModuleAnalysis,
    Reason,
    TestAnalysis,
)
from distlint.analysis.pg.class_eligibility import bare_names
from distlint.analysis.pg.events import Event
from distlint.analysis.pg.execution import Function, class_function
from distlint.analysis.pg.hooks import hook_problem, is_spawn, is_super_call
from distlint.syntax.ast_lines import (
    SimpleLine,
    Unit,
    else_units,
    is_one_line,
    is_string_line,
    units,
)
from distlint.syntax.ast_nodes import Source, walk

#: The per-test base whose class becomes a ReusedWorkersTest (the others build the PG themselves).
REUSABLE_BASE = "MultiProcessTestCase"

#: Why a test cannot share the class's PG, yet runs as written with a PG of its own.
FRESH_PG_TEST_REASONS = frozenset(
    {
        Reason.DESTROYS_PG_EARLY,
        Reason.TESTS_ABORT,
        Reason.MULTIPLE_PGS,
        Reason.PG_ENVIRONMENT,
        Reason.ENV_DECORATOR,
        Reason.CUSTOM_TIMEOUT,
        Reason.EXPECTS_FAILURE,  # but not by exiting: TestAnalysis.needs_own_process
        Reason.OTHER_WORLD_SIZE,  # the same ranks as per test; the test's PG is what it writes
        Reason.OTHER_RANK,
        Reason.BOUND_DEVICE,
        Reason.OTHER_BACKEND,
        Reason.CUSTOM_OPTIONS,
        Reason.USES_FILE_NAME,
        Reason.UNRESOLVED_PG,
    }
)
#: Class reasons that are about the one PG a continuous class would build for all tests.
FRESH_PG_CLASS_REASONS = frozenset(
    {
        Reason.UNKNOWN_BACKEND,
        Reason.CLASS_OPTIONS,
        Reason.CLASS_TIMEOUT,
        Reason.EXISTING_CONTINUOUS,
    }
)
_ALLOWED = FRESH_PG_TEST_REASONS | FRESH_PG_CLASS_REASONS
#: Members ReusedWorkersTest gives a meaning of its own (the runtime reads ``timeout`` as the
#: per-test deadline, runs ``setUpClass`` on every rank, ...): a family defining one stays.
RESERVED_MEMBERS = frozenset(
    {
        "pg",
        "rank",
        "timeout",
        "backend_str",
        "processes",
        "worker_env",
        "file_name",
        "run",
        "setUpClass",
        "tearDownClass",
    }
)


def own_process_need(
    exits: Iterable[Event], kills: Iterable[Event], return_code_check: str | None
) -> str:
    """Why a test needs a process of its own (empty: it does not): it exits, kills a process,
    or its class checks its exit code. (A thread it starts is looked for only in the families
    that could move: :func:`_thread_start`.)"""
    for event in [*exits, *kills]:
        return event.what
    if return_code_check:
        return f"listed in {return_code_check}"
    return ""


def _thread_start(test: Function, source: Source) -> str:
    """A thread the test starts: left running (say on a collective that never completes), its
    process's exit ends it, and on a reused rank nothing does. A test whose text names no
    starter (an ASCII text: ``ast`` writes names as they are) is not walked."""
    text = "".join(map(source.segment, [*test.decorator_list, test]))
    if text.isascii() and not any(starter in text for starter in _THREAD_STARTERS):
        return ""
    for node in walk(test):  # the first in source order
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = (
            func.attr
            if isinstance(func, ast.Attribute)
            else (func.id if isinstance(func, ast.Name) else "")
        )
        if name in _THREAD_STARTERS:
            return f"{name}(...)"
    return ""


def _thread_need(test: Function, source: Source) -> str:
    thread = _thread_start(test, source)
    return f"starts a thread ({thread})" if thread else ""


#: Calls that start a thread of the test's own.
_THREAD_STARTERS = frozenset({"Thread", "ThreadPoolExecutor", "start_new_thread"})


def mark_reused_workers(analysis: ModuleAnalysis, source: Source) -> None:
    """Set ``ClassAnalysis.reused_workers`` (and ``reused_workers_blocker``) on every per-test
    class (``source``: the module's text)."""
    per_test = {c.name: c for c in analysis.classes if c.model is ExecutionModel.PER_TEST_SPAWN}
    parents = {
        name: [base for base in cls.bases if base in per_test and base != name]
        for name, cls in per_test.items()
    }

    def root_of(name: str, seen: frozenset[str] = frozenset()) -> str:
        for parent in parents[name]:
            if parent not in seen:
                return root_of(parent, seen | {name})
        return name

    families: dict[str, list[ClassAnalysis]] = {}
    for name, cls in per_test.items():
        families.setdefault(root_of(name), []).append(cls)
    others = {c.name: c for c in analysis.classes if c.name not in per_test}
    for root, members in families.items():
        blocker = _family_blocker(per_test[root], members, source) or _unseen_tests(members, others)
        for cls in members:
            cls.reused_workers = blocker == ""
            cls.reused_workers_blocker = blocker


def _family_blocker(root: ClassAnalysis, members: list[ClassAnalysis], source: Source) -> str:
    if root.per_test_base != REUSABLE_BASE:
        return f"its per-test base is {root.per_test_base}, not {REUSABLE_BASE}"
    for cls in members:
        external = _external_blocker(cls)
        if external:
            return f"{cls.name}: {external}"
        for entry in cls.ineligible:
            if entry.root in (Reason.EXTERNAL_BASE, Reason.BASE_CLASS):
                continue  # read just above / the same-file base is a member of the family
            if entry.root in _SETUP_REASONS and _setup_runs_on_ranks(cls, source):
                continue
            if entry.root not in _ALLOWED:
                return f"{cls.name}: {entry.describe()}"
        for test in cls.tests:
            need = test.needs_own_process or _thread_need(test.node, source)
            if need:
                return f"{cls.name}.{test.name} needs a process of its own ({need})"
            for entry in test.ineligible:
                if any(entry is own for own in cls.ineligible) or entry.reason is Reason.SUBCLASS:
                    continue  # the class's own (read above), or a subclass's (a member too)
                if entry.root not in _ALLOWED:
                    return f"{cls.name}.{test.name}: {entry.describe()}"
    return ""


#: What a class's setUp does that no continuous class declares: fine on reused workers when it
#: only sets environment (the setUp then runs on each rank before its test, without spawning).
_SETUP_REASONS = frozenset({Reason.CLASS_SETUP, Reason.CLASS_ENVIRONMENT})


def _setup_runs_on_ranks(cls: ClassAnalysis, source: Source) -> bool:
    setup = class_function(cls.node, "setUp")
    teardown = class_function(cls.node, "tearDown")
    return (
        setup is not None
        and environment_only_setup(setup, source)
        and (teardown is None or hook_problem(teardown, source) is None)
    )


def environment_only_setup(function: Function, source: Source) -> bool:
    """A ``setUp`` that, besides ``super().setUp()`` and spawning (last), only writes
    ``os.environ`` (plainly or under an ``if``), reading nothing of ``self``: run on a rank before
    the test, it gives that rank the environment a per-test rank inherited from the parent.
    ``source``: the module's text."""
    if function.name != "setUp":
        return False
    body = list(units(function)) if not is_one_line(function) else []
    spawns = [i for i, statement in enumerate(body) if is_spawn(statement)]
    if spawns != [len(body) - 1]:
        return False  # what runs after the spawn ran in the parent while the ranks ran
    return all(
        is_string_line(statement) or is_super_call(statement, "setUp")
        for statement in body[:-1]
        if not _writes_environment_only(statement, source)
    )


def _writes_environment_only(statement: Unit, source: Source) -> bool:
    if "self" in bare_names(statement):
        return False
    if isinstance(statement, ast.If):
        blocks: list[tuple[ast.If, str]] = [(statement, "body")]
        last, orelse = statement, else_units(statement)
        while isinstance(orelse, ast.If):  # an elif
            blocks.append((orelse, "body"))
            last, orelse = orelse, else_units(orelse)
        if orelse is not None:  # the else: block of the chain's last if
            blocks.append((last, "orelse"))
        return all(
            not is_one_line(node, field)
            and all(_writes_environment_only(unit, source) for unit in units(node, field))
            for node, field in blocks
        )
    if not isinstance(statement, SimpleLine):
        return False
    for small in statement.body:
        if isinstance(small, ast.Pass):
            continue
        targets = list(small.targets) if isinstance(small, ast.Assign) else []
        if not targets or not all(_is_environ_item(target, source) for target in targets):
            return False
    return True


def _is_environ_item(node: ast.expr, source: Source) -> bool:
    return isinstance(node, ast.Subscript) and source.segment(node.value) == "os.environ"


def _external_blocker(cls: ClassAnalysis) -> str:
    """A base from another module stays a base of the class, tests and all: fine when distlint
    read it and it needs no process of its own per test (nothing exits, no harness hook)."""
    for written, found in cls.external_bases:
        if found.unseen is not None:
            return f"distlint cannot read {written}: {found.unseen}"
        if found.needs_process:
            return f"its base {found.needs_process}"
        reserved = sorted(set(found.members) & RESERVED_MEMBERS)
        if reserved:
            return f"its base {written} defines {', '.join(reserved)}, which ReusedWorkersTest uses itself"
    return ""


def _member_names(cls: ast.ClassDef) -> set[str]:
    names: set[str] = set()
    for statement in units(cls) if not is_one_line(cls) else ():
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(statement.name)
        elif isinstance(statement, SimpleLine):
            for small in statement.body:
                targets = list(small.targets) if isinstance(small, ast.Assign) else []
                if isinstance(small, (ast.AnnAssign, ast.AugAssign)):
                    targets.append(small.target)
                names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def _unseen_tests(members: list[ClassAnalysis], others: dict[str, ClassAnalysis]) -> str:
    """A member the runtime reserves, or tests inherited from a same-file class that is not
    per-test (a mixin of tests the analysis does not look at): the family stays."""
    for cls in members:
        reserved = sorted(_member_names(cls.node) & RESERVED_MEMBERS)
        if reserved:
            return f"{cls.name} defines {', '.join(reserved)}, which ReusedWorkersTest uses itself"
        pending, seen = list(cls.bases), set()
        while pending:
            name = pending.pop(0)
            helper = others.get(name)
            if helper is None or name in seen:
                continue
            seen.add(name)
            if helper.tests:
                return f"{cls.name} inherits tests from {name}, which distlint does not analyse"
            pending.extend(helper.bases)
    return ""


def runs_on_reused_workers(cls: ClassAnalysis, test: TestAnalysis) -> bool:
    """Whether ``test`` of ``cls``, which cannot share the class's PG, runs as written on the
    reused workers its class moves to (``distlint migrate`` with the distlint runtime)."""
    return cls.reused_workers and not test.eligible
