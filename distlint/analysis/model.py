"""The facts the process-group analysis produces: shared by DL2xx rules and ``distlint migrate``.

CONTRACT between the analysis (``distlint.analysis.pg``, ``analyze_module``), the rules
(``distlint/rules/dl2*``) and the codemod (``distlint/codemods``): fields may be added,
never renamed or removed without updating every user. Nodes are nodes of the stdlib ``ast``
tree the analysis was given (statements as :data:`~distlint.syntax.ast_lines.Unit`: a line of
simple statements or a compound statement), so rules can report them and codemods can find
them by identity.
"""

from __future__ import annotations

import ast
import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from distlint.syntax.ast_lines import SimpleLine, Unit

if TYPE_CHECKING:
    from distlint.analysis.external_bases import ExternalTests


class ExecutionModel(enum.Enum):
    """How a test class runs its tests."""

    PER_TEST_SPAWN = "per-test spawn"  # setUp spawns/forks workers; every test creates its PG
    CONTINUOUS = "continuous"  # one worker pool and PG for the whole class
    REUSED_WORKERS = "reused workers"  # one worker pool; each test creates its own PG: done
    THREADED = "threaded"  # MultiThreadedTestCase: not a target
    PLAIN = "plain"  # any other class: not a target


class CodedEnum(enum.Enum):
    """An enum of reasons whose values start with ``(code, text)``: ``[code] text`` in messages."""

    @property
    def code(self) -> str:
        return self.value[0]

    @property
    def text(self) -> str:
        return self.value[1]


class ReasonText(NamedTuple):
    """Everything said about one :class:`Reason`, in one place (every field required)."""

    #: Stable identifier, shown in brackets (``[custom-options]``) and matched by users.
    code: str
    #: The full sentence (DL201's message, ``Ineligibility.describe``).
    text: str
    #: DL202 counts tests per reason, the count being the subject: "1 aborts the PG"
    #: (``one``), "3 abort the PG" (``many``).
    one: str
    many: str
    #: One-line form, "<short> (<detail>)" (DL201, the migrate report).
    short: str


class Reason(CodedEnum):
    """Why a per-test-PG test cannot move to a continuous class: the one table of its wordings."""

    DESTROYS_PG_EARLY = ReasonText(
        "destroys-pg-early",
        "destroys or aborts the PG before the end of the test",
        one="destroys the PG early",
        many="destroy the PG early",
        short="destroys the PG before the end",
    )
    TESTS_ABORT = ReasonText(
        "tests-abort",
        "tests PG abort/shutdown",
        one="aborts or shuts down the PG",
        many="abort or shut down the PG",
        short="aborts or shuts down the PG",
    )
    MULTIPLE_PGS = ReasonText(
        "multiple-pgs",
        "creates several process groups or worlds",
        one="creates several PGs",
        many="create several PGs",
        short="creates several PGs",
    )
    PG_ENVIRONMENT = ReasonText(
        "pg-environment",
        "sets PG-affecting environment (TORCH_NCCL_*, NCCL_*, TORCH_DISTRIBUTED_DEBUG)",
        one="sets PG environment",
        many="set PG environment",
        short="sets PG environment",
    )
    ENV_DECORATOR = ReasonText(
        "env-decorator",
        "uses with_nccl_blocking_wait / with_dist_debug_levels",
        one="uses with_nccl_blocking_wait/with_dist_debug_levels",
        many="use with_nccl_blocking_wait/with_dist_debug_levels",
        short="changes PG environment",
    )
    CUSTOM_TIMEOUT = ReasonText(
        "custom-timeout",
        "passes a timeout= different from the class's other PG creations",
        one="passes its own timeout",
        many="pass their own timeout",
        short="own timeout",
    )
    EXPECTS_FAILURE = ReasonText(
        "expects-failure",
        "expects failure (assertRaises around init or collectives, watchdog/timeout, sys.exit/os._exit, "
        "skip_return_code_checks)",
        one="expects failure",
        many="expect failure",
        short="expects failure",
    )
    OTHER_WORLD_SIZE = ReasonText(
        "other-world-size",
        "uses a world size other than the class's",
        one="uses another world size",
        many="use another world size",
        short="another world size",
    )
    OTHER_RANK = ReasonText(
        "other-rank",
        "creates its PG with a rank other than its own (rank= is not self.rank)",
        one="takes another rank",
        many="take another rank",
        short="another rank",
    )
    BOUND_DEVICE = ReasonText(
        "bound-device",
        "creates its PG bound to a device (device_id=), which the class's shared PG is not",
        one="binds its PG to a device",
        many="bind their PG to a device",
        short="binds its PG to a device",
    )
    OTHER_BACKEND = ReasonText(
        "other-backend",
        "uses a backend other than the class's",
        one="uses another backend",
        many="use another backend",
        short="another backend",
    )
    CUSTOM_OPTIONS = ReasonText(
        "custom-options",
        "passes PG options other than the default or the class's opts()",
        one="passes its own PG options",
        many="pass their own PG options",
        short="own PG options",
    )
    USES_FILE_NAME = ReasonText(
        "uses-file-name",
        "uses self.file_name for something other than the store",
        one="uses self.file_name beyond the store",
        many="use self.file_name beyond the store",
        short="uses self.file_name beyond the store",
    )
    KILLS_RANK = ReasonText(
        "kills-rank",
        "branches on rank to kill a process",
        one="kills a rank",
        many="kill a rank",
        short="kills a rank",
    )
    UNRESOLVED_PG = ReasonText(
        "unresolved-pg",
        "creates its PG in a way distlint cannot follow",
        one="creates the PG in a way distlint cannot follow",
        many="create the PG in a way distlint cannot follow",
        short="creates its PG where distlint cannot follow",
    )
    # Class-level reasons (``ClassAnalysis.ineligible``; every PG test of the class carries them too):
    # a continuous class cannot reproduce what the class does around its tests.
    UNSUPPORTED_BASE = ReasonText(
        "unsupported-base",
        "runs per-test through a base distlint does not migrate (it migrates MultiProcessTestCase, "
        "DTensorTestBase, FSDPTest, DistributedTestBase); move it to that base's continuous counterpart by hand",
        one="runs per-test through a base distlint does not migrate",
        many="run per-test through a base distlint does not migrate",
        short="unsupported per-test base",
    )
    BASE_OVERRIDE = ReasonText(
        "base-override",
        "the class overrides a member its per-test base builds or tears down the PG with; the continuous "
        "counterpart would build another PG",
        one="is in a class that overrides how its base builds the PG",
        many="are in a class that overrides how its base builds the PG",
        short="class overrides the base's PG setup",
    )
    CLASS_ENVIRONMENT = ReasonText(
        "class-environment",
        "the class's setUp sets environment a continuous class cannot declare (not a literal "
        '`os.environ["KEY"] = "value"` before the workers are spawned)',
        one="is in a class whose setUp sets environment it cannot declare",
        many="are in a class whose setUp sets environment it cannot declare",
        short="class setUp sets undeclarable environment",
    )
    CLASS_SETUP = ReasonText(
        "class-setup",
        "the class's setUp/tearDown do more than spawn the workers; they ran in the parent process "
        "before each test's ranks started, where no continuous class runs them (distlint's runs them "
        "on every rank, torch's in the dispatcher)",
        one="is in a class whose setUp/tearDown do more than spawn",
        many="are in a class whose setUp/tearDown do more than spawn",
        short="class setUp/tearDown do more than spawn",
    )
    EXTERNAL_BASE = ReasonText(
        "external-base",
        "a base of the class from another module defines tests, or distlint cannot read it; a continuous "
        "class deriving from it would run those tests a second time",
        one="is in a class whose base from another module has tests or cannot be read",
        many="are in a class whose base from another module has tests or cannot be read",
        short="a base from another module has tests or cannot be read",
    )
    UNKNOWN_BACKEND = ReasonText(
        "unknown-backend",
        "the class's backend is not a literal distlint can carry into backend_str()",
        one="is in a class whose backend is not a literal",
        many="are in a class whose backend is not a literal",
        short="class backend not a literal",
    )
    CLASS_OPTIONS = ReasonText(
        "class-options",
        "the class's PG options cannot become a classmethod opts()",
        one="is in a class whose PG options cannot become opts()",
        many="are in a class whose PG options cannot become opts()",
        short="class PG options cannot become opts()",
    )
    CLASS_TIMEOUT = ReasonText(
        "class-timeout",
        "the class's PG timeout cannot become a class attribute",
        one="is in a class whose PG timeout reads self or a test's own names",
        many="are in a class whose PG timeout reads self or a test's own names",
        short="class PG timeout reads self or a test's names",
    )
    EXISTING_CONTINUOUS = ReasonText(
        "existing-continuous",
        "a class already has the name of its continuous class and cannot take its tests",
        one="is in a class whose continuous class exists and cannot take more tests",
        many="are in a class whose continuous class exists and cannot take more tests",
        short="existing continuous class cannot take it",
    )
    MODULE_REFERENCE = ReasonText(
        "module-reference",
        "the class is referenced elsewhere in the module",
        one="is in a class other code of the module uses by name",
        many="are in a class other code of the module uses by name",
        short="class used elsewhere in the module",
    )
    BASE_CLASS = ReasonText(
        "base-class",
        "its same-file base class cannot share a PG",
        one="inherits a base class that cannot share a PG",
        many="inherit a base class that cannot share a PG",
        short="base class cannot share a PG",
    )
    SUBCLASS = ReasonText(
        "subclass",
        "a same-file subclass that inherits it cannot share a PG",
        one="is inherited by a subclass that cannot share a PG",
        many="are inherited by a subclass that cannot share a PG",
        short="inherited by a subclass that cannot share a PG",
    )
    #: Found by running (``distlint migrate --verify``), never by the static analysis: on shared
    #: ranks the test's outcome, or that of another test, differs from the per-test original's.
    DIVERGED = ReasonText(
        "diverged",
        "run on shared ranks, it or a test near it ends differently than per test",
        one="ends differently on shared ranks",
        many="end differently on shared ranks",
        short="diverged on shared ranks",
    )
    #: Found by running: the outcome changed between two runs of the same file, so no run can
    #: prove that moving it keeps it (it stays as it was written).
    FLAKY = ReasonText(
        "flaky",
        "its outcome changes between two runs of the same code",
        one="is flaky",
        many="are flaky",
        short="flaky",
    )

    #: A ``# distlint: keep-per-test`` comment on the test (``distlint migrate --verify --write``
    #: leaves one on each test it demoted or found flaky, so that later runs, and DL201, keep it
    #: where the runs put it): :mod:`distlint.analysis.keep_marks`.
    KEPT = ReasonText(
        "kept",
        "a `# distlint: keep-per-test` comment keeps it per test (`--verify --write` leaves one)",
        one="is kept per test by a comment",
        many="are kept per test by a comment",
        short="kept by a comment",
    )

    #: ``--runtime torch`` only, never by the analysis (DL201 counts the distlint runtime's
    #: moves): the test reads or seeds DTensor's RNG tracker, which torch's continuous classes
    #: keep across tests (:mod:`distlint.codemods.torch_runtime_holds`).
    RNG_STATE = ReasonText(
        "rng-state",
        "reads or seeds DTensor's RNG tracker",
        one="reads or seeds DTensor's RNG tracker",
        many="read or seed DTensor's RNG tracker",
        short="DTensor RNG tracker",
    )

    def phrase(self, count: int) -> str:
        """The count phrase for ``count`` tests (the verb agrees with it)."""
        return self.value.one if count == 1 else self.value.many

    @property
    def short(self) -> str:
        return self.value.short


#: Reasons only ``distlint migrate --verify`` gives, from running the tests; the analysis never does.
FOUND_BY_RUNNING = frozenset({Reason.DIVERGED, Reason.FLAKY})
#: Reasons no static analysis of a file gives (DL201 never reports them).
NOT_FROM_ANALYSIS = FOUND_BY_RUNNING | {Reason.RNG_STATE}


class CreationKind(enum.Enum):
    INIT_PROCESS_GROUP = "init_process_group"  # dist.init_process_group(...) directly
    BACKEND_CONSTRUCTOR = "backend constructor"  # ProcessGroupNCCL(store, rank, size, opts)
    SELF_HELPER = "self helper"  # self._init_process() defined in this class / a base in this file
    KNOWN_HELPER = (
        "known helper"  # _create_process_group_nccl etc. (bases defined elsewhere) + pg-helpers
    )
    DECORATOR = "decorator"  # @with_comms + pg-decorators
    DEVICE_MESH = "init_device_mesh"  # creates the default PG when none exists
    LOCAL_FUNCTION = (
        "module function"  # a module-level function of this file that does one of the above
    )
    #: The base's worker creates it before every test (FSDPTest._run); node = the test's FunctionDef.
    BASE_RUN = "base class"


@dataclass
class PGCreation:
    """One place where a test (directly or through helpers) creates a process group."""

    kind: CreationKind
    #: Where DL201 reports: the call in the test body, the decorator (an expression of the
    #: def's ``decorator_list``), or (``BASE_RUN``) the test's FunctionDef.
    node: ast.AST
    #: Human-readable path, e.g. ("self._init_process", "init_process_group").
    chain: tuple[str, ...]
    #: Literal backend ("nccl", "gloo", ...) when known; None when not a literal / default.
    backend: str | None = None
    #: The world_size argument expression (None when implicit / not found).
    world_size: ast.expr | None = None
    #: The rank argument expression (None when implicit / not found).
    rank: ast.expr | None = None
    #: ``init_process_group``'s ``device_id=`` (eager init, a bound device), when passed.
    device_id: ast.expr | None = None
    #: The timeout= expression, when passed.
    timeout: ast.expr | None = None
    #: The options expression (pg_options= / 4th ctor arg / opts), when passed.
    options: ast.expr | None = None
    #: The name the test bound the PG to (``pg = ...``), when it did.
    bound_name: str | None = None
    #: The statement of the test body that creates the PG (to drop / rewrite when migrating).
    statement: Unit | None = None
    #: Statements of the test body that only build the store for this PG (``store = FileStore(...)``).
    store_statements: list[Unit] = field(default_factory=list)
    #: The helper FunctionDef that performs the creation, when it is a same-file helper.
    helper: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    #: Every same-file helper followed from the test to the creation, outermost (called by the test) first.
    helper_chain: tuple[ast.FunctionDef | ast.AsyncFunctionDef, ...] = ()
    #: SELF_HELPER only: the creation as seen inside ``helper`` (its ``statement``,
    #: ``bound_name`` and ``store_statements`` refer to the helper's body), so that
    #: ``distlint migrate`` can tell a PG factory (``pg = self._create_pg(store)``) from a
    #: helper that creates the PG and does the test's work. None when not followed.
    inner: PGCreation | None = None

    def describe(self) -> str:
        """'via self._init_process -> init_process_group' style text."""
        if len(self.chain) > 1:
            return "via " + " -> ".join(self.chain)
        return self.chain[0] if self.chain else self.kind.value


@dataclass
class Ineligibility:
    reason: Reason
    #: The node that shows the reason (for messages/positions); may be the test or class itself,
    #: or a statement (a line of simple statements).
    node: ast.AST | SimpleLine
    #: Optional detail, e.g. "TORCH_NCCL_ASYNC_ERROR_HANDLING" or "timeout=timedelta(seconds=1)".
    detail: str = ""
    #: For a reason passed on from another class (``BASE_CLASS``, ``SUBCLASS``): that class's own.
    origin: Reason | None = None

    @property
    def root(self) -> Reason:
        """The reason this one comes from: its ``origin``, else itself."""
        return self.origin or self.reason

    def describe(self) -> str:
        return f"{self.reason.text} ({self.detail})" if self.detail else self.reason.text


@dataclass
class TestAnalysis:
    name: str
    node: ast.FunctionDef | ast.AsyncFunctionDef
    creations: list[PGCreation] = field(default_factory=list)
    #: Trailing teardown statements to drop when migrating (``destroy_process_group()``; a
    #: ``try/finally`` whose finally only tears the PG down appears here as the Try node).
    teardown: list[Unit] = field(default_factory=list)
    ineligible: list[Ineligibility] = field(default_factory=list)
    #: ``self.<attr>`` names the test (and the helpers it calls) use: methods, properties, attributes.
    self_attributes: tuple[str, ...] = ()
    #: Trailing teardown inside a helper the test calls last: (helper, statement), e.g. a helper ending
    #: in ``destroy_process_group()``. Fine for eligibility; the helper must drop it when migrated.
    helper_teardown: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, Unit]] = field(
        default_factory=list
    )
    #: Why the test needs a process of its own (it exits, kills a process, or its exit code is
    #: checked); empty when a reused rank can run it (:mod:`distlint.analysis.pg.reuse`).
    needs_own_process: str = ""

    @property
    def creates_pg(self) -> bool:
        return bool(self.creations)

    @property
    def eligible(self) -> bool:
        return self.creates_pg and not self.ineligible


@dataclass
class ClassAnalysis:
    name: str
    node: ast.ClassDef
    model: ExecutionModel
    #: Why the model was chosen, e.g. "setUp calls self._spawn_processes()" or "derives from MultiProcessTestCase".
    model_reason: str = ""
    #: Qualified names (best effort) of the direct bases.
    bases: tuple[str, ...] = ()
    #: Names of classes in the same file that derive (directly or not) from this one.
    subclasses: tuple[str, ...] = ()
    #: Class-level facts shared by its tests' PG creations (None when unknown or inconsistent).
    backend: str | None = None
    world_size: ast.expr | None = None
    timeout: ast.expr | None = None
    options: ast.expr | None = None
    #: The class's world_size definition (class attribute Assign or @property FunctionDef), when in this class.
    world_size_node: Unit | None = None
    #: test_* methods in definition order (inherited tests are analysed on the class defining them).
    tests: list[TestAnalysis] = field(default_factory=list)
    #: Continuous classes only: PG lifecycle calls inside tests (DL203): (test name, call node, what).
    lifecycle_calls: list[tuple[str, ast.Call, str]] = field(default_factory=list)
    #: Statements of the class's setUp (own or from a same-file base) that set PG environment
    #: (``os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "1"``): a continuous class must set them
    #: before its workers start.
    setup_environment: list[Unit] = field(default_factory=list)
    #: The environment the class's setUp chain sets before spawning, when every write is a literal
    #: ``os.environ["KEY"] = "value"`` there (a continuous class declares it: ``worker_env``).
    environment: dict[str, str] = field(default_factory=dict)
    #: Per-test classes: the torch base that makes them per-test (``DTensorTestBase``, ``FSDPTest``,
    #: ``DistributedTestBase``, ...), or ``MultiProcessTestCase`` for a class whose setUp spawns.
    per_test_base: str = ""
    #: Per-test classes: why none of its tests can move to a continuous class (class-level
    #: ``Reason``s, own or from a same-file base). Every PG test of the class lists them too.
    ineligible: list[Ineligibility] = field(default_factory=list)
    #: Per-test classes: each direct base from another module (not a base distlint migrates),
    #: as written, with what it brings (``ExternalTests``: its tests, its methods).
    external_bases: list[tuple[str, ExternalTests]] = field(default_factory=list)
    #: Per-test classes: the tests it keeps (those that cannot share a PG) run as written on
    #: reused workers with a fresh PG each (``ReusedWorkersTest``), with its same-file family
    #: (:mod:`distlint.analysis.pg.reuse`); else ``reused_workers_blocker`` says why not.
    reused_workers: bool = False
    reused_workers_blocker: str = ""

    @property
    def pg_tests(self) -> list[TestAnalysis]:
        return [t for t in self.tests if t.creates_pg]


@dataclass(frozen=True)
class ModuleReference:
    """One use of per-test class ``name`` by other code of the module
    (:mod:`distlint.analysis.pg.references`)."""

    name: str
    node: ast.Name
    #: "inside a class body", "in class Other", "at module level".
    where: str


@dataclass
class ModuleAnalysis:
    classes: list[ClassAnalysis] = field(default_factory=list)
    #: Where other code of the module names a per-test class (``Reason.MODULE_REFERENCE``).
    references: list[ModuleReference] = field(default_factory=list)

    def by_name(self, name: str) -> ClassAnalysis | None:
        return next((c for c in self.classes if c.name == name), None)
