"""Per-file result cache in ``.distlint_cache/`` at the project root.

An entry holds one file's findings (or its one-line error) under a key made of:
the file's bytes, the path shown for it, the effective config (rule selection
included), distlint's version, the Python version, and a hash of distlint's own
source files, so editing a rule invalidates every entry without a version bump.

One entry per file path (the name is a hash of the absolute path), so the cache
does not grow with every edit. Writes go to a temporary file that is renamed over
the entry, so concurrent runs never see half an entry; an entry that cannot be read
or parsed, or whose key differs, is a miss. Nothing here imports libcst: a warm run
answers every file from the cache without loading the parser.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Dict, Optional

import distlint
from distlint.config import Config
from distlint.findings import FileResult, Finding

CACHE_DIRECTORY_NAME = ".distlint_cache"
#: Bump when the entry layout changes.
ENTRY_FORMAT = 1
#: Parts of distlint that cannot change a lint result (kept out of the source hash).
_NOT_LINT_CODE = ("runtime",)


def content_digest(data: bytes) -> str:
    # sha256 over blake2b: OpenSSL's sha256 uses the CPU's SHA instructions, ~2x faster here.
    return hashlib.sha256(data).hexdigest()


@lru_cache(maxsize=None)
def source_fingerprint() -> str:
    """Hash of distlint's version, the Python version and distlint's own ``.py`` files."""
    digest = hashlib.blake2b(digest_size=20)
    digest.update(f"{distlint.__version__}|{sys.version_info[0]}.{sys.version_info[1]}|".encode())
    digest.update(package_digest(Path(distlint.__file__).parent).encode())
    return digest.hexdigest()


def package_digest(package: Path) -> str:
    """Hash of the ``.py`` files under ``package`` that can change a lint result."""
    digest = hashlib.blake2b(digest_size=20)
    for directory, subdirectories, files in os.walk(package):
        subdirectories[:] = sorted(d for d in subdirectories
                                   if d != "__pycache__" and not (Path(directory) == package and d in _NOT_LINT_CODE))
        for name in sorted(files):
            if name.endswith(".py"):
                path = Path(directory, name)
                digest.update(str(path.relative_to(package)).encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()


class Cache:
    """Results cache rooted at ``directory`` (usually ``<project>/.distlint_cache``)."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.entries = self.directory / f"v{ENTRY_FORMAT}"
        self._entries_text = str(self.entries)
        self._settings: Dict[Config, str] = {}
        self._prepared = False
        #: Why an entry could not be written (read-only checkout...); the run goes on without.
        self.write_failed: Optional[str] = None

    # -- keys ----------------------------------------------------------------------------
    def settings_key(self, config: Config) -> str:
        key = self._settings.get(config)
        if key is None:
            text = f"{source_fingerprint()}|{config.fingerprint()}"
            key = self._settings[config] = hashlib.blake2b(text.encode(), digest_size=20).hexdigest()
        return key

    def entry_key(self, config: Config, path: str, digest: str) -> str:
        return f"{self.settings_key(config)}:{digest}:{path}"

    def _entry_path(self, path: str) -> str:
        name = hashlib.blake2b(os.path.abspath(path).encode(), digest_size=16).hexdigest()
        return os.path.join(self._entries_text, name + ".json")

    # -- read ----------------------------------------------------------------------------
    def load(self, path: str, key: str) -> Optional[FileResult]:
        """The cached result for ``path`` under ``key``, or ``None`` (miss, stale or corrupt)."""
        try:
            with open(self._entry_path(path), "rb") as handle:
                entry = json.loads(handle.read())
            if entry["key"] != key:
                return None
            findings = [Finding(path, line, col, code, name, message, bool(fixable), end_line, end_col)
                        for line, col, code, name, message, fixable, end_line, end_col in entry["findings"]]
            error = entry["error"]
            if error is not None and not isinstance(error, str):
                return None
            return FileResult(path, findings, error)
        except (OSError, ValueError, KeyError, TypeError):
            return None

    # -- write ---------------------------------------------------------------------------
    def _prepare(self) -> None:
        if self._prepared:
            return
        self.entries.mkdir(parents=True, exist_ok=True)
        # Keep the cache out of version control even where .gitignore does not list it.
        for name, text in ((".gitignore", "# Created by distlint.\n*\n"),
                           ("CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55\n"
                                            "# This file is a cache directory tag created by distlint.\n")):
            try:
                with open(self.directory / name, "x") as handle:
                    handle.write(text)
            except FileExistsError:
                pass
        self._prepared = True

    def store(self, path: str, key: str, result: FileResult) -> None:
        """Record ``result`` for ``path``; failures only disable writing, never the run."""
        if self.write_failed is not None:
            return
        entry = {
            "key": key,
            "findings": [[f.line, f.col, f.code, f.name, f.message, f.fixable, f.end_line, f.end_col]
                         for f in result.findings],
            "error": result.error,
        }
        tmp_name = ""
        try:
            self._prepare()
            fd, tmp_name = tempfile.mkstemp(prefix=".entry-", suffix=".tmp", dir=self.entries)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(entry, handle, separators=(",", ":"))
            os.replace(tmp_name, self._entry_path(path))
            tmp_name = ""
        except OSError as exc:
            self.write_failed = str(exc.strerror or exc)
        finally:
            if tmp_name:
                try:
                    os.unlink(tmp_name)
                except OSError:
                    pass
