"""What ``distlint migrate`` did to each class, and why each test left behind stayed.

The text format (one block per file, stable, diff-friendly)::

    fixtures/migrate/test_gloo_helper_pg.py: 2 tests moved, 2 left
      ProcessGroupGlooTest -> ProcessGroupGlooTestContinuous (shared: ProcessGroupGlooTestMixin)
        moved  test_allreduce_basics
        left   test_multi_device_constructor  [custom-options] passes PG options other than ...
      ProcessGroupGlooLazyInitTest -> ProcessGroupGlooLazyInitTestContinuous
        inherits the tests moved from ProcessGroupGlooTest

Reason codes in brackets are the analysis' ``model.Reason`` codes (why a test cannot
share a PG) or the codemod's own :class:`Why` codes (why it was not moved although it could).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from distlint.analysis.model import CodedEnum, Reason


class Why(CodedEnum):
    """Why the codemod left a test in place (beyond the analysis' eligibility reasons)."""

    NO_PG = ("no-pg", "creates no process group, nothing to share")
    NOT_ANALYSED = ("not-analysed", "not a test_* method the PG analysis looks at")
    CLASS_BODY = ("class-body", "the class body has code distlint cannot place")
    #: Mechanical: a factory call that reads the class's tests cannot be given to the continuous
    #: class (``create_local_tensor_test_class(X, base_class=...)``, a twin's name taken...).
    FACTORY_CALL = (
        "factory-call",
        "a module-level factory call reads the class's tests and cannot follow them",
    )
    NAME_TAKEN = ("name-taken", "the name of the class distlint would create is taken")
    #: Mechanical: the moved tests call self.opts() but their PG uses default options, so the
    #: continuous class's opts() would change the PG they test (analysis classes: Reason.CLASS_OPTIONS).
    OPTS_WITH_DEFAULT_OPTIONS = (
        "opts-with-default-options",
        "the moved tests call self.opts(), but their PG uses default options",
    )
    RESERVED_MEMBER = (
        "reserved-member",
        "the class defines a member MultiProcContinuousTest uses itself",
    )
    BASE_CLASS = ("base-class", "its base class cannot be migrated")
    SUBCLASS = ("subclass", "a subclass that inherits it cannot be migrated")
    OVERRIDDEN = ("overridden", "a subclass overrides it")
    SHARED_HELPER = (
        "shared-helper",
        "its PG is created in a helper that tests which stay also call",
    )
    REWRITE = ("rewrite", "distlint cannot rewrite its PG creation")
    #: Mechanical: a test with its own options value (``self.opts(threads=8)``) moves to a continuous
    #: class of its own, which distlint only builds for a class without a same-file per-test base.
    OPTIONS_VARIANT = (
        "options-variant",
        (
            "its own options value needs a continuous class of its own, which "
            "distlint builds only for a class with no same-file per-test base"
        ),
    )
    BASE_MISMATCH = (
        "base-mismatch",
        "its PG differs from the one of the continuous class it would inherit",
    )


@dataclass(frozen=True)
class LeftBehind:
    test: str
    code: str
    text: str

    def line(self, verb: str = "left") -> str:
        return f"{verb:<6} {self.test}  [{self.code}] {self.text}"


# -- wording shared by the plan and the classes it leaves out (codemods/frozen.py) ------------


def no_pg_text(helpers: list[str], written: str) -> str:
    """A test with no PG that calls ``helpers`` of a base from another module (``written``)."""
    return (
        f"creates no process group distlint can see; it calls {', '.join(helpers)} of "
        f"{written}, from another module, which distlint does not analyse"
    )


def inherited_from_elsewhere(test: str, written: str) -> LeftBehind:
    return LeftBehind(
        test, Reason.EXTERNAL_BASE.code, f"inherited from {written}, defined in another module"
    )


def inherited_from_helper(test: str, helper: str) -> LeftBehind:
    return LeftBehind(
        test, Why.NOT_ANALYSED.code, f"inherited from {helper}, a class distlint does not analyse"
    )


def not_on_reused_workers(blocker: str) -> str:
    return f"its kept tests stay per test, not on reused workers: {blocker}"


def no_tests_note(ancestor: str | None, elsewhere: list[str]) -> str:
    """Why a per-test class lists no test: the first same-file base that lists the tests it runs,
    and its bases from elsewhere (as written)."""
    where: list[str] = []
    if ancestor is not None:
        where.append(f"it runs those of {ancestor} (listed there)")
    if elsewhere:
        where.append(
            f"any others come from {', '.join(elsewhere)}, defined elsewhere (not analysed)"
            if ancestor is not None
            else f"any it runs come from {', '.join(elsewhere)}, defined elsewhere (not analysed)"
        )
    return "defines no tests of its own; " + "; ".join(where) if where else "defines no tests"


@dataclass
class ClassReport:
    name: str
    #: ``<Class><Suffix>``, when one was created.
    continuous: str | None = None
    #: The continuous classes of the tests with their own options value (one per value).
    variants: list[str] = field(default_factory=list)
    #: Moved tests that went to one of ``variants`` rather than ``continuous``: test -> class.
    moved_to: dict[str, str] = field(default_factory=dict)
    #: Migrating again: those of ``continuous`` and ``variants`` that were already in the module
    #: (the moved tests joined them).
    existing: list[str] = field(default_factory=list)
    #: The mixin holding members both classes need, when one was created.
    mixin: str | None = None
    mixin_existed: bool = False
    #: The per-test class was removed (no tests left).
    removed: bool = False
    moved: list[str] = field(default_factory=list)
    left: list[LeftBehind] = field(default_factory=list)
    #: The continuous class inherits the tests moved from these classes' continuous classes.
    inherits_from: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: The class now derives from ReusedWorkersTest (the family's root does): the tests it kept
    #: run on reused workers, each with its own PG; ``reused`` says why each could not share one.
    reused_workers: bool = False
    reused: list[LeftBehind] = field(default_factory=list)

    @property
    def kept(self) -> list[LeftBehind]:
        """Every test that stays in the class, on reused workers or per test, with its reason."""
        return [*self.reused, *self.left]

    @property
    def changed(self) -> bool:
        return bool(self.continuous or self.mixin or self.removed or self.reused_workers)

    def continuous_classes(self) -> list[str]:
        """Every continuous class the tests of this class went to (``continuous`` and ``variants``)."""
        return [self.continuous, *self.variants] if self.continuous else []

    def lines(self) -> list[str]:
        head = self.name
        if self.continuous:
            new = [n for n in self.continuous_classes() if n not in self.existing]
            joined = [n for n in self.continuous_classes() if n in self.existing]
            targets = [", ".join(new)] if new else []
            if joined:
                targets.append(f"into the existing {', '.join(joined)}")
            head += f" -> {'; '.join(targets)}"
        extras = []
        if self.mixin:
            extras.append(f"shared: {'the existing ' if self.mixin_existed else ''}{self.mixin}")
        if self.removed:
            extras.append(f"{self.name} removed: no tests left")
        if self.reused_workers:
            extras.append(f"{self.name} on reused workers")
        if extras:
            head += f" ({'; '.join(extras)})"
        out = [f"  {head}"]
        out += [
            f"    moved  {name}" + (f" -> {self.moved_to[name]}" if name in self.moved_to else "")
            for name in self.moved
        ]
        out += [f"    {reused.line('reused')}" for reused in self.reused]
        out += [f"    {left.line()}" for left in self.left]
        for base in self.inherits_from:
            out.append(f"    inherits the tests moved from {base}")
        out += [f"    note: {note}" for note in self.notes]
        return out


@dataclass
class FileReport:
    path: str
    classes: list[ClassReport] = field(default_factory=list)
    #: File-level notes (e.g. a main block distlint could not switch to its runner).
    notes: list[str] = field(default_factory=list)

    @property
    def moved_count(self) -> int:
        return sum(len(c.moved) for c in self.classes)

    @property
    def reused_count(self) -> int:
        return sum(len(c.reused) for c in self.classes)

    @property
    def left_count(self) -> int:
        return sum(len(c.left) for c in self.classes)

    def text(self) -> str:
        if not self.classes:
            return f"{self.path}: no per-test-spawn classes\n"
        moved, reused, left = self.moved_count, self.reused_count, self.left_count
        on_reused = f", {reused} on reused workers" if reused else ""
        lines = [
            f"{self.path}: {moved} test{'s' if moved != 1 else ''} moved{on_reused}, {left} left"
        ]
        for report in self.classes:
            lines += report.lines()
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines) + "\n"
