"""``distlint migrate`` over many files, at ``distlint check``'s cost per file.

The same pipeline as :func:`distlint.engine.check`: discovery (include/exclude, the config
of each file), a per-file result cache (:mod:`distlint.codemods.migrate_cache`), and the
engine's worker processes (:func:`distlint.engine.run_file_tasks`: serially for a few
misses, forked workers for more, largest files first). Each file goes through
:func:`distlint.codemods.migrate_continuous.migrate_source`, whose pre-screen settles a file
without a per-test-spawn class with one stdlib ``ast`` parse, as ``check`` does; only files
with something to move are rewritten (and verified). Results come back in discovery's order,
whatever order the workers finished in, so the output is deterministic.

Nothing here writes a user's file: the command line (:mod:`distlint.codemods.cli`) decides
what to print or write for each :class:`MigrationResult`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from distlint.cache import CACHE_DIRECTORY_NAME, content_digest
from distlint.codemods.migrate_cache import MigrateCache
from distlint.codemods.migrate_continuous import MigrateOptions, MigrationResult, migrate_source
from distlint.config import Config, ConfigResolver
from distlint.discovery import Diagnostic, discover
from distlint.engine import (
    ProgressCallback,
    cache_root,
    default_jobs,
    internal_error,
    read_file,
    run_file_tasks,
)


@dataclass
class TreeOptions:
    paths: Sequence[str] = (".",)
    migrate: MigrateOptions = field(default_factory=MigrateOptions)
    #: Worker processes (``None``: the CPUs available).
    jobs: int | None = None
    use_cache: bool = True
    #: Where the cache lives (``None``: ``.distlint_cache`` at the project root).
    cache_dir: Path | None = None
    progress: ProgressCallback | None = None


@dataclass
class TreeMigration:
    #: One result per discovered file, in discovery's order.
    results: list[MigrationResult]
    diagnostics: list[Diagnostic]
    #: Each result's configuration (what ``--verify`` runs it with), in the same order.
    configs: list[Config] = field(default_factory=list)
    cache_hits: int = 0
    #: Worker processes used (0: everything ran in this process).
    workers: int = 0


@dataclass
class _Task:
    path: str
    source: bytes
    config: Config
    options: MigrateOptions


def _migrate_one(task: _Task) -> MigrationResult:
    """Migrate one file's bytes; never raises (a crash becomes the file's one-line error)."""
    try:
        return migrate_source(task.source, task.path, task.config, task.options)
    except Exception as exc:  # noqa: BLE001 - a bug in one file must not stop the others
        return _internal_failure(task, exc)


def _crashed(task: _Task) -> MigrationResult:
    return _internal_failure(task, None)


def _internal_failure(task: _Task, exc: BaseException | None) -> MigrationResult:
    error = internal_error(task.path, exc)
    return MigrationResult(task.path, task.source, error=error, internal_error=True)


def migrate_tree(options: TreeOptions, resolver: ConfigResolver | None = None) -> TreeMigration:
    """Migrate (in memory) every file under ``options.paths``.

    Raises :class:`distlint.config.ConfigError` for a bad configuration."""
    resolver = resolver or ConfigResolver()
    found = discover(options.paths, resolver)
    cache: MigrateCache | None = None
    if options.use_cache:
        directory = options.cache_dir or cache_root(options.paths, resolver) / CACHE_DIRECTORY_NAME
        cache = MigrateCache(directory, options.migrate)
    results: dict[str, MigrationResult] = {}
    tasks: list[_Task] = []
    keys: dict[str, str] = {}
    hits = 0
    for target in found.targets:
        source, error = read_file(target.path)
        if source is None:
            results[target.path] = MigrationResult(target.path, b"", error=error)
            continue
        if cache is not None:
            key = keys[target.path] = cache.key(target.config, target.path, content_digest(source))
            cached = cache.load(target.path, key, source)
            if cached is not None:
                results[target.path] = cached
                hits += 1
                continue
        tasks.append(_Task(target.path, source, target.config, options.migrate))
    jobs = options.jobs or default_jobs()
    done, workers = run_file_tasks(
        _migrate_one,
        tasks,
        jobs,
        options.progress,
        size=lambda task: len(task.source),
        crashed=_crashed,
    )
    for result in done:
        results[result.path] = result
        if cache is not None and not result.internal_error:
            cache.store(result.path, keys[result.path], result)
    if cache is not None and cache.write_failed:
        found.diagnostics.append(
            Diagnostic(str(cache.directory), f"cache not written: {cache.write_failed}", "warning")
        )
    # Discovery's order (the paths as given, each directory walked in sorted order), not the
    # workers' completion order.
    ordered = [results[target.path] for target in found.targets]
    configs = [target.config for target in found.targets]
    return TreeMigration(ordered, found.diagnostics, configs, hits, workers)
