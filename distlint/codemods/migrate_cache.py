"""``distlint migrate``'s per-file cache, beside ``check``'s in ``.distlint_cache/``.

An entry holds one file's migration: the per-class report, the migrated bytes (when the
file changes) or the file's one-line error, and the stats of the other files the result
depends on (bases from other modules). Its key is ``check``'s settings key (distlint's
sources, version, Python, the file's config) plus the migrate options, the file's bytes and
the path shown for it; an entry that cannot be read, whose key differs, or whose other files
changed is a miss. Writes are atomic (:meth:`distlint.cache.Cache._write_atomically`).
Entries live in their own folder, one per file path, so they never collide with ``check``'s.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path
from typing import Any

from distlint.cache import Cache, _recorded_dependencies, dependencies_unchanged
from distlint.codemods.migrate_continuous import MigrateOptions, MigrationResult
from distlint.codemods.report import ClassReport, FileReport, LeftBehind
from distlint.config import Config

#: Bump when the entry layout changes.
MIGRATE_ENTRY_FORMAT = 1


class MigrateCache(Cache):
    def __init__(self, directory: Path, options: MigrateOptions) -> None:
        super().__init__(directory)
        self.migrations = self.directory / f"migrate-v{MIGRATE_ENTRY_FORMAT}"
        self._options = f"{options.runtime}|{options.class_suffix}|{options.reused_workers}"

    def key(self, config: Config, path: str, digest: str) -> str:
        return f"{self.settings_key(config)}:{self._options}:{digest}:{path}"

    def _migration_path(self, path: str) -> str:
        name = hashlib.blake2b(os.path.abspath(path).encode(), digest_size=16).hexdigest()
        return os.path.join(str(self.migrations), name + ".json")

    def load(self, path: str, key: str, source: bytes) -> MigrationResult | None:  # type: ignore[override]
        """The cached migration of ``source`` (the file's bytes), or ``None``."""
        import json

        try:
            with open(self._migration_path(path), "rb") as handle:
                entry = json.loads(handle.read())
            if entry["key"] != key or not dependencies_unchanged(entry["depends"]):
                return None
            migrated = entry["migrated"]
            return MigrationResult(
                path,
                source,
                None if migrated is None else migrated.encode("latin-1"),
                _report(path, entry["report"]),
                entry["error"],
                dict(entry["depends"]),
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def store(self, path: str, key: str, result: MigrationResult) -> None:  # type: ignore[override]
        if self.write_failed is not None:
            return
        try:
            self._prepare()
            self.migrations.mkdir(exist_ok=True)
        except OSError as exc:
            self.write_failed = str(exc.strerror or exc)
            return
        entry = {
            "key": key,
            # latin-1 maps every byte to one code point: the bytes come back exactly.
            "migrated": None if result.migrated is None else result.migrated.decode("latin-1"),
            "report": dataclasses.asdict(result.report),
            "error": result.error,
            "depends": _recorded_dependencies(result),  # type: ignore[arg-type]
        }
        self._write_atomically(self._migration_path(path), entry)


def _report(path: str, data: dict[str, Any]) -> FileReport:
    classes = []
    for row in data["classes"]:
        row = dict(row)
        row["left"] = [LeftBehind(**left) for left in row["left"]]
        row["reused"] = [LeftBehind(**entry) for entry in row.get("reused", ())]
        classes.append(ClassReport(**row))
    return FileReport(path, classes, list(data["notes"]))
