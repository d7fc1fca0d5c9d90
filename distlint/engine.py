"""Many files: discovery -> cache lookup -> lint (in worker processes) -> cache -> fixes.

Cost model (BENCHMARKS.md, "`distlint check` throughput"): the main process answers unchanged
files (same ``stat``) from the cache's index, reads and hashes the others and answers what
it can from the cache, without importing libcst; only cache
misses reach the linter, serially when there are few of them and in a process pool
when there are enough to pay for the workers' start-up. Worker processes are
forked after the parent has imported the rules, so they start warm. Serially, each file
is screened first (:mod:`distlint.screening`), and libcst and the rules are imported only
for a file some rule may report in: a run of clean files never imports them.

Fixes are computed in the workers and written by the main process through
:func:`distlint.safe_write.write_python_atomically` (temp file, re-parse, keep mode,
atomic rename), so a file is never half-written.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, TypeVar

if TYPE_CHECKING:
    import multiprocessing.context

from distlint.cache import CACHE_DIRECTORY_NAME, Cache, FileStat, content_digest, file_stat
from distlint.config import Config, ConfigResolver, Overrides
from distlint.discovery import Diagnostic, Target, discover
from distlint.findings import FileResult, Finding

#: Below this many cache misses the pool's start-up costs more than it saves.
MIN_FILES_FOR_POOL = 12
#: Each worker should get at least this many files.
MIN_FILES_PER_WORKER = 6

MODES = ("check", "fix", "diff")
ProgressCallback = Callable[[int, int], None]


@dataclass
class CheckOptions:
    paths: Sequence[str] = (".",)
    #: "check" (report), "fix" (write fixes) or "diff" (compute fixes, write nothing).
    mode: str = "check"
    #: Also compute the whole-file fix of fixable files in "check" mode (lintrunner output).
    want_fixes: bool = False
    overrides: Overrides = field(default_factory=Overrides)
    #: Worker processes (``None``: the CPU count).
    jobs: int | None = None
    use_cache: bool = True
    #: Where the cache lives (``None``: ``.distlint_cache`` at the project root).
    cache_dir: Path | None = None
    progress: ProgressCallback | None = None


@dataclass
class FileOutcome:
    """What happened to one file."""

    path: str
    #: Findings to report (in "fix" mode: those left after fixing) and the file's error.
    result: FileResult
    #: The file's bytes before and after its fixes (only for files with a fix).
    original: bytes | None = None
    fixed: bytes | None = None
    fixed_count: int = 0
    #: Whether the fixed bytes were written to the file.
    written: bool = False
    #: A one-line error about fixing or writing this file.
    fix_error: str | None = None
    #: A bug in distlint (not in the file) stopped this file's check.
    internal_error: bool = False
    from_cache: bool = False
    #: In "fix" mode, the findings before fixing (reported again if the write fails).
    unfixed: FileResult | None = None

    @property
    def findings(self) -> list[Finding]:
        return self.result.findings

    @property
    def errors(self) -> list[str]:
        return [e for e in (self.result.error, self.fix_error) if e]


@dataclass
class CheckReport:
    outcomes: list[FileOutcome]
    diagnostics: list[Diagnostic]
    cache_hits: int = 0
    #: Worker processes used (0: everything ran in this process).
    workers: int = 0

    @property
    def findings(self) -> list[Finding]:
        return [finding for outcome in self.outcomes for finding in outcome.findings]

    @property
    def file_errors(self) -> list[str]:
        return [error for outcome in self.outcomes for error in outcome.errors]

    @property
    def usage_error(self) -> bool:
        return any(d.usage and d.level == "error" for d in self.diagnostics)

    @property
    def internal_error(self) -> bool:
        return any(outcome.internal_error for outcome in self.outcomes)


# -- work done per file (in a worker or in this process) ---------------------------------------


@dataclass
class _Task:
    path: str
    source: bytes
    config: Config
    want_fix: bool


@dataclass
class _TaskResult:
    path: str
    first: FileResult
    fixed: bytes | None = None
    remaining: list[Finding] | None = None
    fixed_count: int = 0
    fix_error: str | None = None
    internal_error: bool = False


def _check_one(task: _Task) -> _TaskResult:
    """Lint (and maybe fix) one file. Never raises: a crash becomes that file's error."""
    from distlint.screening import screen_file  # not needed by a run the cache answers

    try:
        screened = screen_file(task.source, task.path, task.config)
        if screened.result is not None:  # settled without libcst: no finding, nothing to fix
            return _TaskResult(task.path, screened.result)
        from distlint.fact_linter import facts_only, lint_facts
        from distlint.rules import rules_for

        rules = rules_for(screened.codes)
        if facts_only(screened, rules):  # only fact rules may report: no libcst, nothing to fix
            return _TaskResult(task.path, lint_facts(screened, task.config, rules))
        from distlint.linter import fix_source, lint_source

        first = lint_source(task.source, task.path, task.config, screened=screened)
    except Exception as exc:  # noqa: BLE001 - a rule bug must not stop the other files
        return _TaskResult(
            task.path,
            FileResult(task.path, error=internal_error(task.path, exc)),
            internal_error=True,
        )
    result = _TaskResult(task.path, first)
    if not task.want_fix or first.error or not any(f.fixable for f in first.findings):
        return result
    try:
        fixed = fix_source(task.source, task.path, task.config, first=first)
    except (ValueError, RecursionError) as exc:
        result.fix_error = f"{task.path}: error: fix not applied: {exc}"
        return result
    except Exception as exc:  # noqa: BLE001
        result.fix_error = (
            f"{task.path}: error: fix not applied: internal error: {type(exc).__name__}: {exc}"
        )
        result.internal_error = True
        return result
    if fixed.error:
        result.fix_error = fixed.error
    elif fixed.fixed is not None:
        result.fixed = fixed.fixed
        result.remaining = fixed.remaining
        result.fixed_count = fixed.fixed_count
    return result


def _pool_context() -> multiprocessing.context.BaseContext:  # imported only when needed
    import multiprocessing

    # fork: workers inherit the imported rules and start in milliseconds. Only on
    # Linux, where forking a single-threaded parent is safe; elsewhere spawn.
    if sys.platform.startswith("linux"):
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def internal_error(path: str, exc: BaseException | None) -> str:
    """The one-line error of a file distlint itself failed on (``exc``; None: its worker died).
    Such a result is never cached: the next run tries again."""
    what = "a worker process died" if exc is None else f"{type(exc).__name__}: {exc}"
    return f"{path}: error: internal error in distlint: {what}".splitlines()[0]


def _crashed(task: _Task) -> _TaskResult:
    return _TaskResult(
        task.path, FileResult(task.path, error=internal_error(task.path, None)), internal_error=True
    )


def _prepare_check_workers() -> None:
    import distlint.linter  # noqa: F401 - import (and register rules) once, before forking
    from distlint.rules import all_rules

    all_rules()


def _run_tasks(
    tasks: list[_Task], jobs: int, progress: ProgressCallback | None
) -> tuple[list[_TaskResult], int]:
    """Run ``tasks``; return the results and how many worker processes were used."""
    return run_file_tasks(
        _check_one,
        tasks,
        jobs,
        progress,
        size=lambda task: len(task.source),
        crashed=_crashed,
        prepare=_prepare_check_workers,
    )


TaskT = TypeVar("TaskT")
ResultT = TypeVar("ResultT")


def without_collector(work: Callable[[TaskT], ResultT], task: TaskT) -> ResultT:
    """``work(task)`` with Python's cyclic garbage collector paused.

    A large file's libcst tree is a million live objects, and the collector's full passes,
    triggered again and again while the tree is built, walk all of them: a quarter of the
    CPU of linting PyTorch's 295 KB ``test_c10d_nccl.py``. The tree and what the analysis
    builds on it are freed by reference counting when the file is done; the few cycles a file
    leaves are collected once the collector runs again, between files.
    """
    if not gc.isenabled():
        return work(task)
    gc.disable()
    try:
        return work(task)
    finally:
        gc.enable()


def run_file_tasks(
    work: Callable[[TaskT], ResultT],
    tasks: list[TaskT],
    jobs: int,
    progress: ProgressCallback | None,
    size: Callable[[TaskT], int],
    crashed: Callable[[TaskT], ResultT],
    prepare: Callable[[], None] | None = None,
) -> tuple[list[ResultT], int]:
    """``work`` on each task, serially for a few tasks and in forked workers for more (shared by
    ``check`` and ``migrate``); results in completion order, with how many workers ran them.

    ``work`` must never raise (a file's crash is its own result); ``crashed`` stands in for the
    tasks a dying worker left undone; ``prepare`` imports what the workers should inherit."""
    total = len(tasks)
    workers = min(jobs, total // MIN_FILES_PER_WORKER) if total >= MIN_FILES_FOR_POOL else 1
    results: list[ResultT] = []
    if workers <= 1:
        for task in tasks:
            results.append(without_collector(work, task))
            if progress:
                progress(len(results), total)
        return results, 0
    import concurrent.futures
    import concurrent.futures.process

    if prepare is not None:
        prepare()
    # Largest files first: the slowest files start early instead of finishing last.
    ordered = sorted(tasks, key=size, reverse=True)
    with concurrent.futures.ProcessPoolExecutor(
        max_workers=workers, mp_context=_pool_context()
    ) as pool:
        futures = [pool.submit(without_collector, work, task) for task in ordered]
        index = {future: position for position, future in enumerate(futures)}
        done: set[int] = set()
        try:
            for future in concurrent.futures.as_completed(futures):
                results.append(future.result())
                done.add(index[future])
                if progress:
                    progress(len(results), total)
        except concurrent.futures.process.BrokenProcessPool:
            results += [crashed(task) for i, task in enumerate(ordered) if i not in done]
    return results, workers


# -- orchestration -----------------------------------------------------------------------------


def default_jobs() -> int:
    """The CPUs this process may run on (a container's CPU set, not the host's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def cache_root(paths: Sequence[str], resolver: ConfigResolver) -> Path:
    """The project root whose ``.distlint_cache`` this run uses.

    The project of the working directory when every checked path is inside it (the
    usual ``distlint check`` from a checkout); otherwise the project holding all the
    paths; otherwise the working directory.
    """
    cwd = Path.cwd()
    absolute = [os.path.abspath(p) for p in paths] or [str(cwd)]
    here = resolver.for_directory(cwd).root
    if here is not None and all(_is_within(p, here) for p in absolute):
        return here
    try:
        common = Path(os.path.commonpath(absolute))
    except ValueError:  # different drives
        return cwd
    if not common.is_dir():
        common = common.parent
    return resolver.for_directory(common).root or cwd


def _is_within(path: str, directory: Path) -> bool:
    try:
        return os.path.commonpath([path, str(directory)]) == str(directory)
    except ValueError:
        return False


def read_file(path: str) -> tuple[bytes | None, str | None]:
    """A file's bytes, or its one-line error (``check`` and ``migrate`` word it alike)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(), None
    except IsADirectoryError:
        return None, f"{path}: error: is a directory"
    except OSError as exc:
        return None, f"{path}: error: cannot read: {exc.strerror or exc}"


def check(options: CheckOptions, resolver: ConfigResolver | None = None) -> CheckReport:
    """Check (and maybe fix) the files under ``options.paths``.

    Raises :class:`distlint.config.ConfigError` for a bad configuration.
    """
    if options.mode not in MODES:
        raise ValueError(f"unknown mode {options.mode!r}")
    resolver = resolver or ConfigResolver(options.overrides)
    found = discover(options.paths, resolver)
    cache: Cache | None = None
    if options.use_cache:
        cache = Cache(
            options.cache_dir or cache_root(options.paths, resolver) / CACHE_DIRECTORY_NAME
        )
    want_fix = options.mode in ("fix", "diff") or options.want_fixes

    outcomes: dict[str, FileOutcome] = {}
    tasks: list[_Task] = []
    keys: dict[str, str] = {}
    sources: dict[str, bytes] = {}
    stats: dict[str, FileStat] = {}
    hits = 0
    for target in found.targets:
        if cache is not None:
            # Unchanged since the last run (same stat): answered without reading the file.
            stat = stats[target.path] = file_stat(target.stat)
            cached = cache.lookup_stat(target.config, target.path, target.absolute, stat)
            if cached is not None and not (want_fix and any(f.fixable for f in cached.findings)):
                outcomes[target.path] = FileOutcome(target.path, cached, from_cache=True)
                hits += 1
                continue
        source, error = read_file(target.path)
        if source is None:
            outcomes[target.path] = FileOutcome(target.path, FileResult(target.path, error=error))
            continue
        if cache is not None:
            key = keys[target.path] = cache.entry_key(
                target.config, target.path, content_digest(source)
            )
            cached = cache.load(target.path, key)
            if cached is not None:
                cache.remember(
                    target.config, target.path, target.absolute, stats[target.path], cached
                )
            if cached is not None and not (want_fix and any(f.fixable for f in cached.findings)):
                outcomes[target.path] = FileOutcome(target.path, cached, from_cache=True)
                hits += 1
                continue
        sources[target.path] = source
        tasks.append(_Task(target.path, source, target.config, want_fix))

    jobs = options.jobs or default_jobs()
    results, workers = _run_tasks(tasks, jobs, options.progress) if tasks else ([], 0)
    targets = {target.path: target for target in found.targets}
    for result in results:
        outcome = _outcome(result, sources[result.path], options.mode)
        outcomes[result.path] = outcome
        if cache is not None and not result.internal_error:
            cache.store(result.path, keys[result.path], result.first)
            target = targets[result.path]
            cache.remember(
                target.config, result.path, target.absolute, stats[result.path], result.first
            )
    if options.mode == "fix":
        _write_fixes(outcomes.values(), targets, cache)
    if cache is not None:
        cache.save_indexes()
    if cache is not None and cache.write_failed:
        found.diagnostics.append(
            Diagnostic(str(cache.directory), f"cache not written: {cache.write_failed}", "warning")
        )
    ordered = [outcomes[path] for path in sorted(outcomes)]
    for outcome in ordered:
        outcome.result.findings.sort(key=Finding.sort_key)
    return CheckReport(ordered, found.diagnostics, hits, workers)


def _outcome(result: _TaskResult, source: bytes, mode: str) -> FileOutcome:
    outcome = FileOutcome(
        result.path, result.first, fix_error=result.fix_error, internal_error=result.internal_error
    )
    if result.fixed is not None:
        outcome.original, outcome.fixed, outcome.fixed_count = (
            source,
            result.fixed,
            result.fixed_count,
        )
        if mode == "fix":
            # Reported findings are those left once the fixes are in; restored if the write fails.
            outcome.unfixed = result.first
            outcome.result = FileResult(
                result.path,
                list(result.remaining or []),
                result.first.error,
                result.first.depends_on,
            )
    return outcome


def _write_fixes(
    outcomes: Iterable[FileOutcome], targets: dict[str, Target], cache: Cache | None
) -> None:
    from distlint.safe_write import WriteError, write_python_atomically

    for outcome in outcomes:
        if outcome.fixed is None:
            continue
        try:
            write_python_atomically(outcome.path, outcome.fixed)
        except WriteError as exc:
            outcome.fix_error = str(exc)
            outcome.result = outcome.unfixed or outcome.result
            continue
        outcome.written = True
        if cache is not None:
            target = targets[outcome.path]
            key = cache.entry_key(target.config, outcome.path, content_digest(outcome.fixed))
            cache.store(outcome.path, key, outcome.result)
            cache.forget(
                target.config, outcome.path, target.absolute
            )  # rewritten: the next run checks its bytes
