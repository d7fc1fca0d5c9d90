"""The one place that decides how a test ended, from what every rank did.

Both the spawn dispatcher and torchrun ranks call :func:`decide_outcome` with an
:class:`Observation`; nothing else turns rank results into pass/fail/skip.

Rules, in order:

1. A rank that failed, errored, died (other than with a skip exit code) or did
   not finish before the deadline makes the test fail.  Deaths and timeouts are
   errors; a test whose only problems are assertion failures is a failure.
2. Otherwise a skip on any rank skips the test (PyTorch's rule: one rank may
   decide the test cannot run), with the lowest skipping rank's message.
3. Otherwise a test that left the shared process group destroyed or replaced
   is an error that names it: the next test gets a fresh pool.
4. Otherwise it passed.

The pool may serve the next test only when every rank reported and the PG is
intact on all of them; after anything else it is replaced.

Whatever the verdict, the outcome also says what process-wide state the test changed and
the ranks put back (``Outcome.restored``): it never changes the verdict.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable, Mapping, Sequence

from .protocol import RankResult, Status


class Verdict(str, enum.Enum):
    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"
    SKIP = "skip"


@dataclasses.dataclass(frozen=True)
class Observation:
    """What the dispatcher saw while one test ran."""

    test_id: str
    world_size: int
    results: Mapping[int, RankResult]  # only results tagged with this test's seq
    deaths: Mapping[int, str] = dataclasses.field(
        default_factory=dict
    )  # rank -> "exited with code 3"
    death_skips: Mapping[int, str] = dataclasses.field(
        default_factory=dict
    )  # rank -> registry message
    death_stacks: Mapping[int, str] = dataclasses.field(default_factory=dict)
    timed_out_after_s: float | None = None  # set when the deadline passed
    hung_stacks: Mapping[int, str] = dataclasses.field(default_factory=dict)
    stopped: Sequence[int] = ()  # ranks cut short after a peer failed or skipped


@dataclasses.dataclass(frozen=True)
class Outcome:
    verdict: Verdict
    message: str
    pool_reusable: bool
    #: What the test changed and the ranks restored, one line per change, with its ranks.
    restored: tuple[str, ...] = ()


def _ranks(ranks: Iterable[int]) -> str:
    ordered = sorted(ranks)
    return f"rank {ordered[0]}" if len(ordered) == 1 else "ranks " + ", ".join(map(str, ordered))


def _indent(text: str) -> str:
    return "\n".join("    " + line if line else line for line in text.rstrip().splitlines())


def restored_state(results: Mapping[int, RankResult]) -> tuple[str, ...]:
    """The ranks' restored-state lines, each once, with the ranks that reported it."""
    ranks_of: dict[str, list[int]] = {}
    for rank, result in sorted(results.items()):
        for line in result.restored:
            ranks_of.setdefault(line, []).append(rank)
    return tuple(f"{line} on {_ranks(ranks)}" for line, ranks in ranks_of.items())


def decide_outcome(obs: Observation) -> Outcome:
    outcome = _decide(obs)
    restored = restored_state(obs.results)
    if restored:
        outcome = dataclasses.replace(outcome, restored=restored)
    if not all(result.reusable for result in obs.results.values()):
        # A rank could not put away what the test left: the verdict stands, the ranks go.
        outcome = dataclasses.replace(outcome, pool_reusable=False)
    return outcome


def _decide(obs: Observation) -> Outcome:
    results = obs.results
    failed = {r: res for r, res in results.items() if res.status in (Status.FAILED, Status.ERRORED)}
    skipped = {r: res.detail for r, res in results.items() if res.status is Status.SKIPPED}
    skipped.update(obs.death_skips)
    accounted = set(results) | set(obs.deaths) | set(obs.death_skips) | set(obs.stopped)
    timed_out = obs.timed_out_after_s is not None
    unaccounted = [r for r in range(obs.world_size) if r not in accounted]
    all_reported = len(results) == obs.world_size
    pg_broken = sorted(r for r, res in results.items() if not res.pg_intact)

    if failed or obs.deaths or timed_out or (unaccounted and not skipped):
        sections = []
        for rank in sorted(obs.deaths):
            section = f"{_ranks([rank])} died during {obs.test_id}: {obs.deaths[rank]}"
            if obs.death_stacks.get(rank):
                section += "\n" + _indent(obs.death_stacks[rank])
            sections.append(section)
        for rank, res in sorted(failed.items()):
            sections.append(f"{_ranks([rank])} {res.status.value}:\n{_indent(res.detail)}")
        if timed_out:
            section = (
                f"{obs.test_id} timed out after {obs.timed_out_after_s:g} s; "
                f"{_ranks(unaccounted) if unaccounted else 'no rank'} did not finish"
            )
            for rank in sorted(unaccounted):
                stack = obs.hung_stacks.get(rank) or "(no Python stack could be read)"
                section += f"\n{_ranks([rank])} was at:\n{_indent(stack)}"
            sections.append(section)
        elif unaccounted:
            sections.append(f"{_ranks(unaccounted)} sent no result for {obs.test_id}")
        if obs.stopped:
            were = "was" if len(obs.stopped) == 1 else "were"
            sections.append(
                f"{_ranks(obs.stopped)} {were} still running and {were} stopped; "
                "the next test gets a fresh process group"
            )
        only_assertions = (
            not obs.deaths
            and not timed_out
            and not unaccounted
            and failed
            and all(res.status is Status.FAILED for res in failed.values())
        )
        verdict = Verdict.FAIL if only_assertions else Verdict.ERROR
        return Outcome(verdict, "\n".join(sections), pool_reusable=False)

    if skipped:
        first = min(skipped)
        reusable = all_reported and not pg_broken
        return Outcome(Verdict.SKIP, skipped[first], pool_reusable=reusable)

    if pg_broken:
        return Outcome(
            Verdict.ERROR,
            f"{obs.test_id} destroyed or replaced the shared process group on {_ranks(pg_broken)} "
            "(destroy_process_group / init_process_group inside a continuous test); "
            "the tests after it run on a fresh worker pool",
            pool_reusable=False,
        )

    return Outcome(Verdict.PASS, "", pool_reusable=True)
