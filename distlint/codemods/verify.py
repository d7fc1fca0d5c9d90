"""``distlint migrate --verify``: run the original and the migrated file, keep what keeps outcomes.

For a file that would change: the original runs once (per-test classes with fast start), the
migrated version twice (in file order and reversed, :mod:`distlint.codemods.verify_run`), and the
outcomes are compared per ``Class.test`` id, moved classes named as their originals. A difference
is confirmed by running both sides again: a test whose outcome changes between two runs of the
same side is *flaky* (it stays where it was written, reason ``flaky``: no run can prove that
moving it keeps it). A confirmed difference of a moved test demotes it (reason ``diverged``);
when the test passes on shared ranks alone, the moved test before it that makes it fail is
looked for (runs of halves of the tests before it) and demoted instead, naming the test it
disturbs. The file is then migrated again without the demoted tests, until the outcomes match
or nothing is left to move. Everything runs under one time budget per file.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from distlint.analysis.model import Reason
from distlint.codemods.factories import LOCAL_TENSOR_SUFFIX, local_tensor_name
from distlint.codemods.keep_marks import with_keep_marks
from distlint.codemods.migrate_continuous import MigrateOptions, MigrationResult, migrate_source
from distlint.codemods.verify_run import MISSING, BudgetExceeded, RunHung, Runner, RunResult
from distlint.config import Config

#: Per file, all runs together: a 50-test PyTorch file takes about a minute a run with fast start,
#: and a file with demotions needs several runs.
DEFAULT_BUDGET_S = 1800.0
#: Runs that look for the test that disturbs another (halving the tests before it), per disturbed test.
MAX_SEARCH_RUNS = 6
#: A migrated run is stopped as hung past this many times the original's wall time (it shares
#: ranks, so it should take less), and never before MIN_HANG_LIMIT_S.
HANG_FACTOR = 4.0
MIN_HANG_LIMIT_S = 180.0


@dataclass
class Demotion:
    test: str  # ``Class.test``, the class that defines it
    code: str
    text: str
    #: Other ids that diverged by the same decision: the classes that inherit the test.
    also: list[str] = field(default_factory=list)

    def line(self) -> str:
        also = f" (also {', '.join(self.also)})" if self.also else ""
        return f"  demoted  {self.test}  [{self.code}] {self.text}{also}"


@dataclass
class FileVerdict:
    """What ``--verify`` found for one file; ``result`` is the migration to use (with demotions)."""

    path: str
    result: MigrationResult
    verified: bool = False
    #: Why the file is not verified (it is not written).
    why_not: str = ""
    tests_run: int = 0
    kept: int = 0
    moved_run: int = 0
    demoted: list[Demotion] = field(default_factory=list)
    #: ``Class.test`` -> the outcomes its runs gave (not moved).
    flaky: dict[str, str] = field(default_factory=dict)
    #: Skipped on both sides: nothing shows that moving them keeps what they test.
    not_proven: list[str] = field(default_factory=list)
    #: Failing (or erroring) on both sides: kept, but a failure proves less than a pass.
    failing_both: list[str] = field(default_factory=list)
    seconds_before: float = 0.0
    seconds_after: float = 0.0
    runs: int = 0

    def text(self) -> str:
        head = f"{self.path}: " + ("verified" if self.verified else "NOT verified, not written")
        lines = [
            head + f": {self.tests_run} tests run, {self.kept} outcomes kept "
            f"{'(file order and reversed)' if self.verified else '(last run)'}, "
            f"{self.moved_run} moved tests ran, "
            f"{len(self.demoted)} demoted, {len(self.flaky)} flaky; wall {self.seconds_before:.1f} s -> "
            f"{self.seconds_after:.1f} s ({self.runs} runs)"
        ]
        if self.why_not:
            lines.append(f"  why: {self.why_not}")
        lines += [d.line() for d in self.demoted]
        lines += [
            f"  flaky    {test}  [{Reason.FLAKY.code}] {outcomes}: not moved"
            for test, outcomes in self.flaky.items()
        ]
        if self.not_proven:
            lines.append(
                "  not proven on this machine (skipped on both sides): "
                + ", ".join(self.not_proven)
            )
        if self.failing_both:
            lines.append(
                "  fail on both sides (counted as kept; the original fails here too): "
                + ", ".join(self.failing_both)
            )
        return "\n".join(lines) + "\n"


def renamed_classes(result: MigrationResult) -> dict[str, str]:
    """Migrated class name -> the original class its tests came from (local-tensor twins too)."""
    renamed = {new: c.name for c in result.report.classes for new in c.continuous_classes()}
    renamed.update({local_tensor_name(new): local_tensor_name(old) for new, old in renamed.items()})
    # A class on reused workers keeps its name: its tests moved all the same (to other ranks).
    renamed.update({c.name: c.name for c in result.report.classes if c.reused})
    return renamed


def mapped(run: RunResult, renamed: Mapping[str, str]) -> dict[str, str]:
    """``run``'s outcomes with migrated classes named as their originals."""
    out: dict[str, str] = {}
    for test_id, outcome in run.outcomes.items():
        cls, test = test_id.split(".", 1)
        out[f"{renamed.get(cls, cls)}.{test}"] = outcome
    return out


def differences(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """Ids whose outcome differs (a test only one side ran counts as ``missing`` on the other)."""
    ids = list(before) + [i for i in after if i not in before]
    return [i for i in ids if before.get(i, MISSING) != after.get(i, MISSING)]


class Verifier:
    def __init__(
        self,
        path: str,
        source: bytes,
        config: Config,
        options: MigrateOptions,
        budget_s: float = DEFAULT_BUDGET_S,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.path, self.source, self.config, self.options = path, source, config, options
        self.budget_s = budget_s
        self.hold: dict[str, tuple[str, str]] = {}
        self.runner = Runner(Path(path), time.monotonic() + budget_s, progress)
        self.runs = 0
        #: Set once the original ran (see _verify).
        self.hang_limit_s: float | None = None

    def _run(self, source: bytes, label: str, **kwargs: Any) -> RunResult:
        self.runs += 1
        if source != self.source and self.hang_limit_s is not None:
            kwargs.setdefault("limit_s", self.hang_limit_s)
        return self.runner.run(source, label, **kwargs)

    def verify(self, first: MigrationResult | None = None) -> FileVerdict:
        """Verify the file; ``first``: its migration with ``options``, when already made."""
        first = first or migrate_source(self.source, self.path, self.config, self.options)
        verdict = FileVerdict(self.path, first)
        if first.error or not first.changed:
            verdict.verified = first.error is None
            return verdict
        try:
            self._verify(verdict)
        except BudgetExceeded as exc:
            verdict.verified = False
            verdict.why_not = (
                f"the time budget of {self.budget_s:g} s ran out (during: {exc}); "
                "raise it with --verify-budget"
            )
        verdict.runs = self.runs
        if verdict.verified:
            # What the runs found stays with the tests: later runs of migrate keep them too.
            marks = {d.test: f"--verify: {d.code}" for d in verdict.demoted}
            marks.update({test: f"--verify: {Reason.FLAKY.code}" for test in verdict.flaky})
            verdict.result = with_keep_marks(verdict.result, marks)
        return verdict

    def _migrate(self) -> MigrationResult:
        return migrate_source(
            self.source, self.path, self.config, replace(self.options, hold=dict(self.hold))
        )

    def _verify(self, verdict: FileVerdict) -> None:
        original = self._run(self.source, "original")
        verdict.seconds_before = original.seconds
        if not original.outcomes:
            verdict.why_not = (
                f"the original reported no test (pytest exit {original.returncode}): "
                + _no_test_reason(original.output_tail)
            )
            return
        # A migrated run that takes this much longer than the original hangs: it is stopped,
        # and the moved class (or test) it hung in stays behind, rather than the budget going.
        self.hang_limit_s = max(MIN_HANG_LIMIT_S, HANG_FACTOR * original.seconds)
        flaky: dict[str, str] = {}
        while True:
            try:
                self._compare(verdict, original, flaky)
                return
            except RunHung as hung:
                if not self._hold_hung(verdict, hung):
                    verdict.why_not = (
                        f"the {hung.label} run hung in {hung.test_id or 'collection'} "
                        f"(stopped after {hung.seconds:.0f} s), a test that does not move"
                    )
                    return
            verdict.result = self._migrate()
            if verdict.result.error or not verdict.result.changed:
                verdict.flaky = flaky
                verdict.why_not = (
                    verdict.result.error or "every moved test was demoted: nothing left to move"
                )
                return

    def _hold_hung(self, verdict: FileVerdict, hung: RunHung) -> bool:
        """Leave behind what a hung migrated run was running: the whole moved class when the
        test was the first of its class to start (the class hangs on shared ranks: its workers,
        its PG), else the test. False when it is no moved test."""
        result = verdict.result
        renamed = renamed_classes(result)
        if hung.test_id is None or hung.test_id.split(".", 1)[0] not in renamed:
            return False
        cls, test = hung.test_id.split(".", 1)
        reports = {c.name: c for c in result.report.classes}
        original_cls = renamed[cls]
        text = f"hangs on shared ranks (its run was stopped after {hung.seconds:.0f} s)"
        moved = reports[original_cls].moved if original_cls in reports else []
        if hung.first_of_class and moved:
            for name in moved:
                self._hold(verdict, result, f"{original_cls}.{name}", f"its class {cls} {text}")
        else:
            self._hold(verdict, result, f"{original_cls}.{test}", text)
        return True

    def _compare(self, verdict: FileVerdict, original: RunResult, flaky: dict[str, str]) -> None:
        result = verdict.result
        forward: RunResult | None = None
        while True:
            renamed = renamed_classes(result)
            if forward is None:
                forward = self._run(result.migrated or b"", "migrated")
                if not forward.outcomes:
                    verdict.result = result
                    verdict.why_not = (
                        f"the migrated file reported no test (pytest exit {forward.returncode}): "
                        + _no_test_reason(forward.output_tail)
                    )
                    return
            # The report's figures as of this run: what it says if the budget runs out later.
            self._tally(verdict, result, original, forward, renamed, flaky)
            sides = [(forward, False)]
            if not self._diverged(original, forward, renamed, flaky):
                # Reversed only when file order keeps every outcome (but flaky ones): a difference
                # already means another plan, run in both orders again.
                sides.append((self._run(result.migrated or b"", "migrated", reverse=True), True))
            diverged = {
                test_id: run
                for run, _ in reversed(sides)
                for test_id in differences(original.outcomes, mapped(run, renamed))
                if test_id not in flaky
            }
            if diverged:  # confirm: the migrated side again, then the original; a change is flaky
                for run, reverse in sides:
                    if not any(r is run for r in diverged.values()):
                        continue
                    again = self._run(result.migrated or b"", "migrated, again", reverse=reverse)
                    for test_id in differences(mapped(run, renamed), mapped(again, renamed)):
                        flaky.setdefault(
                            test_id, _outcomes(test_id, run, again, renamed, "migrated file")
                        )
                pending = sorted(t for t in diverged if t not in flaky and t in original.outcomes)
                if pending:  # the original runs per test: the tests in question alone say the same
                    again = self._run(self.source, "original, again", select=pending)
                    for test_id in pending:
                        if again.outcomes.get(test_id, MISSING) != original.outcomes[test_id]:
                            flaky[test_id] = _outcomes(test_id, original, again, {}, "original")
            confirmed = {t: run for t, run in diverged.items() if t not in flaky}
            moved = self._moved_ids(renamed, forward)
            held_flaky = {
                t: (Reason.FLAKY.code, f"{Reason.FLAKY.value.text} ({flaky[t]})")
                for t in flaky
                if t in moved
            }
            if not confirmed and not held_flaky:
                if len(sides) == 1:  # file order differed only by flaky tests: now reversed
                    continue
                self._finish(verdict)
                return
            if any(t not in moved for t in confirmed):
                stray = sorted(t for t in confirmed if t not in moved)
                verdict.result = result
                verdict.why_not = (
                    "tests that do not move end differently when the others move: "
                    + ", ".join(f"{t} ({_pair(original, confirmed[t], t, renamed)})" for t in stray)
                )
                return
            held_before = dict(self.hold)
            for test_id, key in held_flaky.items():
                self.hold[self._defining(result, test_id)] = key
            diverged_tests = self._whole_classes(verdict, result, original, confirmed, renamed)
            for test_id, run in _first_per_class(diverged_tests, renamed):
                self._demote(verdict, result, original, run, test_id, renamed)
            if self.hold == held_before:  # nothing distlint can leave behind explains it
                verdict.why_not = (
                    "outcomes differ, and no moved test can be named as the cause: "
                    + (", ".join(sorted(confirmed or held_flaky)))
                )
                return
            result = self._migrate()
            forward = None
            verdict.result = result
            if result.error or not result.changed:
                verdict.flaky = flaky
                verdict.why_not = (
                    result.error or "every moved test was demoted: nothing left to move"
                )
                verdict.verified = False
                return

    @staticmethod
    def _finish(verdict: FileVerdict) -> None:
        """The outcomes match (the figures are tallied already): verified, if a moved test ran."""
        if verdict.moved_run == 0:
            verdict.why_not = (
                "no moved test ran on this machine (all skipped on both sides): "
                "nothing shows the migrated file tests the same thing"
            )
            return
        verdict.verified = True

    def _tally(
        self,
        verdict: FileVerdict,
        result: MigrationResult,
        original: RunResult,
        forward: RunResult,
        renamed: Mapping[str, str],
        flaky: dict[str, str],
    ) -> None:
        """The report's figures, from ``forward``: the last run of the migrated file."""
        after = mapped(forward, renamed)
        moved = self._moved_ids(renamed, forward)
        verdict.result = result
        verdict.flaky = flaky
        verdict.seconds_after = forward.seconds
        verdict.tests_run = len(after)
        verdict.kept = sum(1 for t, o in after.items() if original.outcomes.get(t) == o)
        verdict.moved_run = sum(1 for t in moved if after.get(t) not in ("skipped", MISSING))
        verdict.not_proven = sorted(
            t for t, o in after.items() if o == "skipped" and original.outcomes.get(t) == "skipped"
        )
        verdict.failing_both = sorted(
            t
            for t, o in after.items()
            if o in ("failed", "error") and original.outcomes.get(t) in ("failed", "error")
        )

    # -- who diverged ----------------------------------------------------------------------
    @staticmethod
    def _diverged(
        original: RunResult, run: RunResult, renamed: Mapping[str, str], flaky: dict[str, str]
    ) -> bool:
        return any(t not in flaky for t in differences(original.outcomes, mapped(run, renamed)))

    @staticmethod
    def _moved_ids(renamed: Mapping[str, str], run: RunResult) -> set[str]:
        """Original ids of the tests that run in a migrated class."""
        return {
            f"{renamed[cls]}.{test}"
            for cls, test in (t.split(".", 1) for t in run.outcomes)
            if cls in renamed
        }

    def _defining(self, result: MigrationResult, test_id: str) -> str:
        """``Class.test`` of the class whose decision moved ``test_id`` (twins and subclasses
        inherit their moved tests from it)."""
        cls, test = test_id.split(".", 1)
        reports = {c.name: c for c in result.report.classes}
        if cls not in reports and cls.endswith(LOCAL_TENSOR_SUFFIX):
            cls = cls[: -len(LOCAL_TENSOR_SUFFIX)]
        seen = set()
        while cls in reports and cls not in seen:
            seen.add(cls)
            if test in reports[cls].moved:
                return f"{cls}.{test}"
            cls = (reports[cls].inherits_from or [""])[0]
        return test_id

    def _whole_classes(
        self,
        verdict: FileVerdict,
        result: MigrationResult,
        original: RunResult,
        confirmed: dict[str, RunResult],
        renamed: Mapping[str, str],
    ) -> Iterator[tuple[str, RunResult]]:
        """Demote at once the tests of a migrated class every test of which diverged, when its
        first test diverges alone too (the class fails on shared ranks as a whole: its PG, its
        world size...), rather than one run per test; yield the other diverged tests."""
        by_class: dict[str, list[str]] = {}
        for test_id, run in confirmed.items():
            migrated_id = migrated_in(run, test_id, renamed)
            by_class.setdefault(migrated_id.split(".", 1)[0], []).append(test_id)
        for cls, ids in by_class.items():
            run = confirmed[ids[0]]
            ran = [t for t in run.order if t.split(".", 1)[0] == cls]
            if cls not in renamed or len(ids) < 2 or len(ids) != len(ran):
                yield from ((t, confirmed[t]) for t in ids)
                continue
            first = mapped_id(ran[0], renamed)
            after = mapped(run, renamed)
            if all(after.get(t) == "skipped" for t in ids if t != first):
                # The first fails and the rest skip: torch's class skips every test after a
                # failure (its poison pill); the first explains them (see _first_per_class).
                yield from ((t, confirmed[t]) for t in ids)
                continue
            alone = self._run(result.migrated or b"", f"migrated, {first} alone", select=ran[:1])
            if mapped(alone, renamed).get(first, MISSING) == original.outcomes.get(first):
                yield from ((t, confirmed[t]) for t in ids)
                continue
            for test_id in ids:
                self._hold(
                    verdict,
                    result,
                    test_id,
                    f"every test of {cls} ends differently on shared ranks, the first alone too "
                    f"({_pair(original, confirmed[test_id], test_id, renamed)})",
                )

    def _demote(
        self,
        verdict: FileVerdict,
        result: MigrationResult,
        original: RunResult,
        run: RunResult,
        test_id: str,
        renamed: Mapping[str, str],
    ) -> None:
        migrated_id = migrated_in(run, test_id, renamed)
        pair = _pair(original, run, test_id, renamed)
        alone = self._run(
            result.migrated or b"", f"migrated, {test_id} alone", select=[migrated_id]
        )
        if mapped(alone, renamed).get(test_id, MISSING) != original.outcomes.get(test_id):
            self._hold(verdict, result, test_id, f"ends differently on shared ranks ({pair})")
            return
        order = [t for t in run.order if t.split(".", 1)[0] in renamed]
        before = order[: order.index(migrated_id)] if migrated_id in order else []
        culprit = self._search(result, renamed, test_id, migrated_id, before, original)
        if culprit is None:
            self._hold(
                verdict,
                result,
                test_id,
                f"passes alone but ends differently after the tests before it on shared ranks ({pair})",
            )
            return
        culprit_id = mapped_id(culprit, renamed)
        after = mapped(run, renamed)
        if after.get(culprit_id) in ("failed", "error") and after.get(test_id) == "skipped":
            # Torch's continuous classes skip every later test once one fails (their poison
            # pill): the culprit's failure is the cause, the skip its effect.
            reason = (
                f"fails on shared ranks, and the class then skips the tests after it, {test_id}"
                f" among them ({pair})"
            )
        else:
            reason = f"changes the outcome of {test_id} run after it on shared ranks ({pair})"
        self._hold(verdict, result, culprit_id, reason)

    def _search(
        self,
        result: MigrationResult,
        renamed: Mapping[str, str],
        test_id: str,
        migrated_id: str,
        before: Sequence[str],
        original: RunResult,
    ) -> str | None:
        """The test of ``before`` after which ``migrated_id`` ends differently, by halves."""
        expected = original.outcomes.get(test_id)
        candidates = list(before)
        for _ in range(MAX_SEARCH_RUNS):
            if not candidates:
                return None
            if len(candidates) == 1:
                return candidates[0]
            half = candidates[: len(candidates) // 2]
            probe = self._run(
                result.migrated or b"",
                f"migrated, who disturbs {test_id}",
                select=[*half, migrated_id],
            )
            disturbed = mapped(probe, renamed).get(test_id, MISSING) != expected
            candidates = half if disturbed else candidates[len(half) :]
        return candidates[0] if len(candidates) == 1 else None  # the last probe may decide it

    def _hold(self, verdict: FileVerdict, result: MigrationResult, test_id: str, text: str) -> None:
        key = self._defining(result, test_id)
        also = [test_id] if test_id != key else []
        earlier = next((d for d in verdict.demoted if d.test == key), None)
        if earlier is not None:  # a class inheriting the test diverged too: one decision, one line
            earlier.also += [t for t in also if t not in earlier.also]
            return
        self.hold[key] = (Reason.DIVERGED.code, text)
        verdict.demoted.append(Demotion(key, Reason.DIVERGED.code, text, also))


def _first_per_class(
    diverged: Iterable[tuple[str, RunResult]], renamed: Mapping[str, str]
) -> list[tuple[str, RunResult]]:
    """The diverged test that ran first in each migrated class: one demotion there often explains
    the rest (a failure makes torch's continuous class skip every later test, a leak disturbs
    all that follow), so the others wait for the next round rather than each costing a search."""
    first: dict[str, tuple[int, str, RunResult]] = {}
    for test_id, run in diverged:
        migrated_id = migrated_in(run, test_id, renamed)
        cls = migrated_id.split(".", 1)[0]
        position = run.order.index(migrated_id) if migrated_id in run.order else len(run.order)
        if cls not in first or position < first[cls][0]:
            first[cls] = (position, test_id, run)
    return [(test_id, run) for _, test_id, run in first.values()]


def mapped_id(migrated_id: str, renamed: Mapping[str, str]) -> str:
    cls, test = migrated_id.split(".", 1)
    return f"{renamed.get(cls, cls)}.{test}"


def migrated_in(run: RunResult, test_id: str, renamed: Mapping[str, str]) -> str:
    """The id ``test_id`` (an original's) ran under in ``run``: found in the run, not by
    inverting ``renamed``, since one class's tests go to several classes (options variants)."""
    return next((t for t in run.order if mapped_id(t, renamed) == test_id), test_id)


def _pair(original: RunResult, run: RunResult, test_id: str, renamed: Mapping[str, str]) -> str:
    after = mapped(run, renamed).get(test_id, MISSING)
    return f"{original.outcomes.get(test_id, MISSING)} per test, {after} on shared ranks"


def _outcomes(
    test_id: str, first: RunResult, second: RunResult, renamed: Mapping[str, str], side: str
) -> str:
    a = mapped(first, renamed).get(test_id, MISSING)
    b = mapped(second, renamed).get(test_id, MISSING)
    return f"{a}, then {b} in two runs of the {side}"


def _no_test_reason(text: str) -> str:
    """What a run that reported no test printed, for the user: pytest's first ``E`` line (the
    collection error: an import the installed torch lacks, say) and its summary line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return "no output"
    error = next((line[1:].strip() for line in lines if line.startswith("E ")), None)
    if error is None or lines[-1].startswith("E "):
        return error or lines[-1]
    return f"{error} ({lines[-1].strip('= ')})"
