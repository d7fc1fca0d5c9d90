"""The facts the process-group analysis produces: shared by DL2xx rules and ``distlint migrate``.

CONTRACT between the analysis (``distlint.analysis.pg``, ``analyze_module``), the rules
(``distlint/rules/dl2*``) and the codemod (``distlint/codemods``): fields may be added,
never renamed or removed without updating every user. Nodes are nodes of the module the
analysis was given (``MetadataWrapper.module``), so rules can report them and codemods
can replace them by identity.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

import libcst as cst


class ExecutionModel(enum.Enum):
    """How a test class runs its tests."""

    PER_TEST_SPAWN = "per-test spawn"  # setUp spawns/forks workers; every test creates its PG
    CONTINUOUS = "continuous"  # one worker pool and PG for the whole class
    THREADED = "threaded"  # MultiThreadedTestCase: not a target
    PLAIN = "plain"  # any other class: not a target


class Reason(enum.Enum):
    """Why a per-test-PG test cannot move to a continuous class (value: code, text)."""

    DESTROYS_PG_EARLY = ("destroys-pg-early", "destroys or aborts the PG before the end of the test")
    TESTS_ABORT = ("tests-abort", "tests PG abort/shutdown")
    MULTIPLE_PGS = ("multiple-pgs", "creates several process groups or worlds")
    PG_ENVIRONMENT = ("pg-environment", "sets PG-affecting environment (TORCH_NCCL_*, NCCL_*, TORCH_DISTRIBUTED_DEBUG)")
    ENV_DECORATOR = ("env-decorator", "uses with_nccl_blocking_wait / with_dist_debug_levels")
    CUSTOM_TIMEOUT = ("custom-timeout", "passes a timeout= different from the class's other PG creations")
    EXPECTS_FAILURE = ("expects-failure", "expects failure (assertRaises around init or collectives, watchdog/timeout, sys.exit/os._exit, skip_return_code_checks)")
    OTHER_WORLD_SIZE = ("other-world-size", "uses a world size other than the class's")
    OTHER_BACKEND = ("other-backend", "uses a backend other than the class's")
    CUSTOM_OPTIONS = ("custom-options", "passes PG options other than the default or the class's opts()")
    USES_FILE_NAME = ("uses-file-name", "uses self.file_name for something other than the store")
    KILLS_RANK = ("kills-rank", "branches on rank to kill a process")
    UNRESOLVED_PG = ("unresolved-pg", "creates its PG in a way distlint cannot follow")
    # Class-level reasons (``ClassAnalysis.ineligible``; every PG test of the class carries them too):
    # a continuous class cannot reproduce what the class does around its tests.
    UNSUPPORTED_BASE = ("unsupported-base", "runs per-test through a base other than MultiProcessTestCase; "
                                            "move it to that base's continuous counterpart by hand")
    CLASS_ENVIRONMENT = ("class-environment", "the class's setUp sets PG environment; a continuous class's "
                                              "workers start once, before any setUp runs")
    CLASS_SETUP = ("class-setup", "the class's setUp/tearDown do more than spawn the workers; a continuous "
                                  "class runs them in the dispatcher only")
    UNKNOWN_BACKEND = ("unknown-backend", "the class's backend is not a literal distlint can carry into "
                                          "backend_str()")
    CLASS_OPTIONS = ("class-options", "the class's PG options cannot become a classmethod opts()")
    CLASS_TIMEOUT = ("class-timeout", "the class's PG timeout cannot become a class attribute")
    BASE_CLASS = ("base-class", "its same-file base class cannot share a PG")
    SUBCLASS = ("subclass", "a same-file subclass that inherits it cannot share a PG")

    @property
    def code(self) -> str:
        return self.value[0]

    @property
    def text(self) -> str:
        return self.value[1]


class CreationKind(enum.Enum):
    INIT_PROCESS_GROUP = "init_process_group"  # dist.init_process_group(...) directly
    BACKEND_CONSTRUCTOR = "backend constructor"  # ProcessGroupNCCL(store, rank, size, opts)
    SELF_HELPER = "self helper"  # self._init_process() defined in this class / a base in this file
    KNOWN_HELPER = "known helper"  # _create_process_group_nccl etc. (bases defined elsewhere) + pg-helpers
    DECORATOR = "decorator"  # @with_comms + pg-decorators
    DEVICE_MESH = "init_device_mesh"  # creates the default PG when none exists
    LOCAL_FUNCTION = "module function"  # a module-level function of this file that does one of the above
    BASE_RUN = "base class"  # the base's worker creates it before every test (FSDPTest._run); node = test name


@dataclass
class PGCreation:
    """One place where a test (directly or through helpers) creates a process group."""

    kind: CreationKind
    #: Where DL201 reports: the call in the test body, or the decorator.
    node: cst.CSTNode
    #: Human-readable path, e.g. ("self._init_process", "init_process_group").
    chain: Tuple[str, ...]
    #: Literal backend ("nccl", "gloo", ...) when known; None when not a literal / default.
    backend: Optional[str] = None
    #: The world_size argument expression (None when implicit / not found).
    world_size: Optional[cst.BaseExpression] = None
    #: The timeout= expression, when passed.
    timeout: Optional[cst.BaseExpression] = None
    #: The options expression (pg_options= / 4th ctor arg / opts), when passed.
    options: Optional[cst.BaseExpression] = None
    #: The name the test bound the PG to (``pg = ...``), when it did.
    bound_name: Optional[str] = None
    #: The statement of the test body that creates the PG (to drop / rewrite when migrating).
    statement: Optional[cst.BaseStatement] = None
    #: Statements of the test body that only build the store for this PG (``store = FileStore(...)``).
    store_statements: List[cst.BaseStatement] = field(default_factory=list)
    #: The helper FunctionDef that performs the creation, when it is a same-file helper.
    helper: Optional[cst.FunctionDef] = None
    #: Every same-file helper followed from the test to the creation, outermost (called by the test) first.
    helper_chain: Tuple[cst.FunctionDef, ...] = ()
    #: SELF_HELPER only: the creation as seen inside ``helper`` (its ``statement``,
    #: ``bound_name`` and ``store_statements`` refer to the helper's body), so that
    #: ``distlint migrate`` can tell a PG factory (``pg = self._create_pg(store)``) from a
    #: helper that creates the PG and does the test's work. None when not followed.
    inner: Optional["PGCreation"] = None

    def describe(self) -> str:
        """'via self._init_process -> init_process_group' style text."""
        if len(self.chain) > 1:
            return "via " + " -> ".join(self.chain)
        return self.chain[0] if self.chain else self.kind.value


@dataclass
class Ineligibility:
    reason: Reason
    #: The node that shows the reason (for messages/positions); may be the test itself.
    node: cst.CSTNode
    #: Optional detail, e.g. "TORCH_NCCL_ASYNC_ERROR_HANDLING" or "timeout=timedelta(seconds=1)".
    detail: str = ""

    def describe(self) -> str:
        return f"{self.reason.text} ({self.detail})" if self.detail else self.reason.text


@dataclass
class TestAnalysis:
    name: str
    node: cst.FunctionDef
    creations: List[PGCreation] = field(default_factory=list)
    #: Trailing teardown statements to drop when migrating (``destroy_process_group()``; a
    #: ``try/finally`` whose finally only tears the PG down appears here as the Try node).
    teardown: List[cst.BaseStatement] = field(default_factory=list)
    ineligible: List[Ineligibility] = field(default_factory=list)
    #: ``self.<attr>`` names the test (and the helpers it calls) use: methods, properties, attributes.
    self_attributes: Tuple[str, ...] = ()
    #: Trailing teardown inside a helper the test calls last: (helper, statement), e.g. a helper ending
    #: in ``destroy_process_group()``. Fine for eligibility; the helper must drop it when migrated.
    helper_teardown: List[Tuple[cst.FunctionDef, cst.BaseStatement]] = field(default_factory=list)

    @property
    def creates_pg(self) -> bool:
        return bool(self.creations)

    @property
    def eligible(self) -> bool:
        return self.creates_pg and not self.ineligible


@dataclass
class ClassAnalysis:
    name: str
    node: cst.ClassDef
    model: ExecutionModel
    #: Why the model was chosen, e.g. "setUp calls self._spawn_processes()" or "derives from MultiProcessTestCase".
    model_reason: str = ""
    #: Qualified names (best effort) of the direct bases.
    bases: Tuple[str, ...] = ()
    #: Names of classes in the same file that derive (directly or not) from this one.
    subclasses: Tuple[str, ...] = ()
    #: Class-level facts shared by its tests' PG creations (None when unknown or inconsistent).
    backend: Optional[str] = None
    world_size: Optional[cst.BaseExpression] = None
    timeout: Optional[cst.BaseExpression] = None
    options: Optional[cst.BaseExpression] = None
    #: The class's world_size definition (class attribute Assign or @property FunctionDef), when in this class.
    world_size_node: Optional[cst.CSTNode] = None
    #: test_* methods in definition order (inherited tests are analysed on the class defining them).
    tests: List[TestAnalysis] = field(default_factory=list)
    #: Continuous classes only: PG lifecycle calls inside tests (DL203): (test name, call node, what).
    lifecycle_calls: List[Tuple[str, cst.Call, str]] = field(default_factory=list)
    #: Statements of the class's setUp (own or from a same-file base) that set PG environment
    #: (``os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "1"``): a continuous class must set them
    #: before its workers start.
    setup_environment: List[cst.BaseStatement] = field(default_factory=list)
    #: Per-test classes: why none of its tests can move to a continuous class (class-level
    #: ``Reason``s, own or from a same-file base). Every PG test of the class lists them too.
    ineligible: List[Ineligibility] = field(default_factory=list)

    @property
    def pg_tests(self) -> List[TestAnalysis]:
        return [t for t in self.tests if t.creates_pg]


@dataclass
class ModuleAnalysis:
    classes: List[ClassAnalysis] = field(default_factory=list)

    def by_name(self, name: str) -> Optional[ClassAnalysis]:
        return next((c for c in self.classes if c.name == name), None)
