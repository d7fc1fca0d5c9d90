"""Per-file result cache in ``.distlint_cache/`` at the project root.

An entry holds one file's findings (or its one-line error) under a key made of:
the file's bytes, the path shown for it, the effective config (rule selection
included), distlint's version, the Python version, and a hash of the stats of distlint's
own source files, so editing a rule invalidates every entry without a version bump.

One entry per file path (the name is a hash of the absolute path), so the cache
does not grow with every edit. Writes go to a temporary file that is renamed over
the entry, so concurrent runs never see half an entry; an entry that cannot be read
or parsed, or whose key differs, is a miss. Nothing here imports libcst: a warm run
answers every file from the cache without loading the parser.

A warm run should not even read the files: per settings key, one index file maps each
path to its last ``stat`` (mtime, ctime, size, inode) and result, so an
unchanged file costs one ``stat`` (git's index does the same). Any difference in the stat
(an edit, a ``touch``, an ``os.utime`` that puts the old mtime back: it changes ctime) sends
the file to the content check; a row is recorded without its stat when the file changed less
than :data:`RACY_WINDOW_NS` before it was read, as an edit within the filesystem's timestamp
granularity could then leave the stat as it was.

A few results depend on other files too: a per-test class's base from another module is
read to see whether it brings tests (``FileResult.depends_on``). Entries and index rows
record those files' stats (or their absence), and a result is reused only while every one
of them is unchanged, so editing ``test_c10d_common.py`` re-checks the files deriving from it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

import distlint
from distlint.config import Config
from distlint.findings import FileResult, Finding, stat_key

CACHE_DIRECTORY_NAME = ".distlint_cache"
#: Bump when the entry layout changes (2: entries and index rows record the other files a
#: result depends on).
ENTRY_FORMAT = 2
#: Parts of distlint that cannot change a lint result (kept out of the source hash).
_NOT_LINT_CODE = ("runtime",)
#: A file changed this recently (ns) before it was read is not trusted by its stat next time.
RACY_WINDOW_NS = 2_000_000_000
#: Index files kept (the most recently written): one per settings key in use, e.g. a pre-commit
#: hook's ``--select`` beside full runs; older keys (an earlier distlint, an old config) go.
INDEXES_KEPT = 8


def content_digest(data: bytes) -> str:
    # sha256 over blake2b: OpenSSL's sha256 uses the CPU's SHA instructions, ~2x faster here.
    return hashlib.sha256(data).hexdigest()


@cache
def source_fingerprint() -> str:
    """Hash of distlint's version, the Python version and distlint's own ``.py`` files."""
    digest = hashlib.blake2b(digest_size=20)
    digest.update(f"{distlint.__version__}|{sys.version_info[0]}.{sys.version_info[1]}|".encode())
    digest.update(package_digest(Path(distlint.__file__).parent).encode())
    return digest.hexdigest()


def package_digest(package: Path) -> str:
    """Hash of the ``.py`` files under ``package`` that can change a lint result, by their
    stats (mtime, ctime, size, inode), as the index trusts the linted files' stats: an edit, a
    checkout or a reinstall changes them, and every run pays ~100 ``stat`` calls instead of
    reading and hashing distlint's sources."""
    digest = hashlib.blake2b(digest_size=20)
    for directory, subdirectories, files in os.walk(package):
        subdirectories[:] = sorted(
            d
            for d in subdirectories
            if d != "__pycache__" and not (directory == str(package) and d in _NOT_LINT_CODE)
        )
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                stat = os.stat(path)
                digest.update(
                    f"{os.path.relpath(path, package)}|{stat.st_mtime_ns}|{stat.st_ctime_ns}|"
                    f"{stat.st_size}|{stat.st_ino}\0".encode()
                )
    return digest.hexdigest()


class Cache:
    """Results cache rooted at ``directory`` (usually ``<project>/.distlint_cache``)."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.entries = self.directory / f"v{ENTRY_FORMAT}"
        self.indexes = self.directory / f"v{ENTRY_FORMAT}-index"
        self._entries_text = str(self.entries)
        self._settings: dict[Config, str] = {}
        #: The last config asked about and its key: a run has one config for most files, and
        #: hashing a frozen dataclass of tuples per file costs more than the rest of a warm lookup.
        self._last_settings: tuple[Config | None, str] = (None, "")
        self._prepared = False
        #: Why an entry could not be written (read-only checkout...); the run goes on without.
        self.write_failed: str | None = None
        #: settings key -> {absolute path + shown path: [stat or None, findings, error]} (loaded lazily).
        self._indexes: dict[str, dict[str, list[Any]]] = {}
        self._changed_indexes: set = set()

    # -- keys ----------------------------------------------------------------------------
    def settings_key(self, config: Config) -> str:
        last, key = self._last_settings
        if config is last:
            return key
        known = self._settings.get(config)
        if known is None:
            text = f"{source_fingerprint()}|{config.fingerprint()}"
            key = self._settings[config] = hashlib.blake2b(
                text.encode(), digest_size=20
            ).hexdigest()
        else:
            key = known
        self._last_settings = (config, key)
        return key

    def entry_key(self, config: Config, path: str, digest: str) -> str:
        return f"{self.settings_key(config)}:{digest}:{path}"

    def _entry_path(self, path: str) -> str:
        name = hashlib.blake2b(os.path.abspath(path).encode(), digest_size=16).hexdigest()
        return os.path.join(self._entries_text, name + ".json")

    # -- read ----------------------------------------------------------------------------
    def load(self, path: str, key: str) -> FileResult | None:
        """The cached result for ``path`` under ``key``, or ``None`` (miss, stale or corrupt)."""
        try:
            with open(self._entry_path(path), "rb") as handle:
                entry = json.loads(handle.read())
            if entry["key"] != key or not dependencies_unchanged(entry["depends"]):
                return None
            return _result(path, entry["findings"], entry["error"], entry["depends"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    # -- stat index -----------------------------------------------------------------------
    def _index(self, settings: str) -> dict[str, list[Any]]:
        index = self._indexes.get(settings)
        if index is None:
            try:
                with open(self.indexes / f"{settings}.json", "rb") as handle:
                    index = json.loads(handle.read())
                if not isinstance(index, dict):
                    index = {}
            except (OSError, ValueError):
                index = {}
            self._indexes[settings] = index
        return index

    def lookup_stat(
        self, config: Config, path: str, absolute: str, stat: FileStat
    ) -> FileResult | None:
        """The result recorded for ``path`` (``absolute``: its absolute path) if its stat is
        exactly the one recorded with it."""
        row = self._index(self.settings_key(config)).get(_index_name(path, absolute))
        try:
            if row is None or row[0] != stat.key or not dependencies_unchanged(row[3]):
                return None
            return _result(path, row[1], row[2], row[3])
        except (ValueError, KeyError, TypeError, IndexError):
            return None

    def remember(
        self, config: Config, path: str, absolute: str, stat: FileStat, result: FileResult
    ) -> None:
        """Record ``result`` for ``path`` as it was when ``stat`` was taken (before its bytes were read)."""
        settings = self.settings_key(config)
        row = [
            stat.key if stat.settled else None,
            _finding_rows(result),
            result.error,
            _recorded_dependencies(result),
        ]
        index = self._index(settings)
        name = _index_name(path, absolute)
        if index.get(name) != row:
            index[name] = row
            self._changed_indexes.add(settings)

    def forget(self, config: Config, path: str, absolute: str) -> None:
        """Drop ``path``'s index row (its bytes were just rewritten)."""
        settings = self.settings_key(config)
        if self._index(settings).pop(_index_name(path, absolute), None) is not None:
            self._changed_indexes.add(settings)

    def save_indexes(self) -> None:
        """Write the index files this run changed (atomically; failures only warn), and drop
        the oldest index files beyond :data:`INDEXES_KEPT`."""
        if not self._changed_indexes:
            return
        for settings in sorted(self._changed_indexes):
            self._write_atomically(self.indexes / f"{settings}.json", self._indexes[settings])
        self._changed_indexes.clear()
        self._prune_indexes()

    def _prune_indexes(self) -> None:
        # A settings key changes with distlint's sources, its version and the config: without
        # this, every upgrade or --select variant would leave an index file behind for good.
        try:
            with os.scandir(self.indexes) as scan:
                found = [
                    (entry.stat().st_mtime_ns, entry.path)
                    for entry in scan
                    if entry.name.endswith(".json") and entry.is_file()
                ]
        except OSError:
            return
        for _, path in sorted(found, reverse=True)[INDEXES_KEPT:]:
            try:
                os.unlink(path)
            except OSError:
                pass

    # -- write ---------------------------------------------------------------------------
    def _prepare(self) -> None:
        if self._prepared:
            return
        self.entries.mkdir(parents=True, exist_ok=True)
        self.indexes.mkdir(exist_ok=True)
        # Keep the cache out of version control even where .gitignore does not list it.
        for name, text in (
            (".gitignore", "# Created by distlint.\n*\n"),
            (
                "CACHEDIR.TAG",
                (
                    "Signature: 8a477f597d28d172789f06886806bc55\n"
                    "# This file is a cache directory tag created by distlint.\n"
                ),
            ),
        ):
            try:
                with open(self.directory / name, "x") as handle:
                    handle.write(text)
            except FileExistsError:
                pass
        self._prepared = True

    def store(self, path: str, key: str, result: FileResult) -> None:
        """Record ``result`` for ``path``; failures only disable writing, never the run."""
        entry = {
            "key": key,
            "findings": _finding_rows(result),
            "error": result.error,
            "depends": _recorded_dependencies(result),
        }
        self._write_atomically(self._entry_path(path), entry)

    def _write_atomically(self, target: str | Path, data: Any) -> None:
        """Write ``data`` as JSON to ``target`` (temporary file in its folder, then rename)."""
        if self.write_failed is not None:
            return
        tmp_name = ""
        try:
            self._prepare()
            import tempfile  # only a run that writes entries needs it (~10 ms to import)

            fd, tmp_name = tempfile.mkstemp(
                prefix=".entry-", suffix=".tmp", dir=os.path.dirname(target)
            )
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, separators=(",", ":"))
            os.replace(tmp_name, target)
            tmp_name = ""
        except OSError as exc:
            self.write_failed = str(exc.strerror or exc)
        finally:
            if tmp_name:
                try:
                    os.unlink(tmp_name)
                except OSError:
                    pass


class FileStat(NamedTuple):
    """A file's ``stat`` as the index compares it, taken before the file is read."""

    key: list[int]
    #: The file last changed long enough before this stat that an edit after it reading
    #: cannot keep the same timestamps (see :data:`RACY_WINDOW_NS`).
    settled: bool


def file_stat(stat: os.stat_result) -> FileStat:
    """A file's stat (the one discovery took, before anything read the file) as the index compares it."""
    settled = time.time_ns() - max(stat.st_mtime_ns, stat.st_ctime_ns) > RACY_WINDOW_NS
    return FileStat(stat_key(stat), settled)


#: Recorded for a dependency that changed too recently to be trusted by its stat: matches no stat.
_UNTRUSTED = [-1]


def _recorded_dependencies(result: FileResult) -> dict[str, list[int] | None]:
    """``result.depends_on`` as stored: a file that changed within :data:`RACY_WINDOW_NS` of
    now gets a key no stat matches (an edit within the timestamp granularity could keep its stat)."""
    now = time.time_ns()
    return {
        path: key if key is None or now - max(key[0], key[1]) > RACY_WINDOW_NS else _UNTRUSTED
        for path, key in result.depends_on.items()
    }


def dependencies_unchanged(depends: dict[str, list[int] | None]) -> bool:
    """Whether every file a result depends on has the stat recorded (or is still absent)."""
    if not isinstance(depends, dict):
        return False  # a malformed entry: a miss
    for path, key in depends.items():
        try:
            current: list[int] | None = stat_key(os.stat(path))
        except OSError:
            current = None
        if current != key:
            return False
    return True


def _index_name(path: str, absolute: str) -> str:
    # The shown path is part of the result (errors and messages name it), as in entry keys.
    return f"{absolute}\0{path}"


def _finding_rows(result: FileResult) -> list[list[Any]]:
    return [
        [f.line, f.col, f.code, f.name, f.message, f.fixable, f.end_line, f.end_col]
        for f in result.findings
    ]


def _result(path: str, rows: list[list[Any]], error: Any, depends: Any) -> FileResult:
    """A stored result back (``ValueError``/``TypeError`` for a malformed one)."""
    if error is not None and not isinstance(error, str):
        raise TypeError("malformed error")
    if not isinstance(depends, dict):
        raise TypeError("malformed dependencies")
    findings = [
        Finding(path, line, col, code, name, message, bool(fixable), end_line, end_col)
        for line, col, code, name, message, fixable, end_line, end_col in rows
    ]
    return FileResult(path, findings, error, depends)
