"""``[tool.distlint]`` configuration: one validated, immutable :class:`Config`.

Keys are written in kebab-case in ``pyproject.toml``. An unknown key or a bad value is
a :class:`ConfigError` naming the key and the file; the CLI turns it into exit code 2.
"""

from __future__ import annotations

import fnmatch
import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any, Callable

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as tomllib

REQUIRE_MAIN_CHOICES = ("auto", "always", "never")


class ConfigError(Exception):
    """A configuration problem; ``str()`` is the one-line message shown to the user."""


@dataclass(frozen=True)
class Config:
    """Every setting distlint reads. Field names are the kebab-case keys with ``_``."""

    #: Codes or prefixes to enable (empty: every rule that is on by default).
    select: tuple[str, ...] = ()
    #: Codes or prefixes to disable (applied after ``select``).
    ignore: tuple[str, ...] = ()
    #: ``(glob, codes)`` pairs: codes ignored in files matching the glob.
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: File-name globs of test files found by directory discovery.
    include: tuple[str, ...] = ("test_*.py", "*_test.py")
    #: Globs (matched against path components and relative paths) never checked by discovery.
    exclude: tuple[str, ...] = ()
    #: Callables that run a module's tests: bare names or dotted qualified names.
    runners: tuple[str, ...] = ("run_tests",)
    #: When a main block is required: "auto" (modules importing a runner), "always", "never".
    require_main: str = "auto"
    #: Extra base classes whose tests spawn processes per test (qualified or bare names).
    per_test_bases: tuple[str, ...] = ()
    #: Extra base classes that keep one PG for the whole class.
    continuous_bases: tuple[str, ...] = ()
    #: Extra helper names (methods/functions) known to create a PG.
    pg_helpers: tuple[str, ...] = ()
    #: Extra decorators known to create a PG around a test.
    pg_decorators: tuple[str, ...] = ()
    #: Where the config came from (for messages); not a user key.
    source: str | None = field(default=None, compare=False)

    # -- construction ------------------------------------------------------------------
    @classmethod
    def from_table(
        cls, table: Mapping[str, Any], source: str = "<config>", base: Config | None = None
    ) -> Config:
        """Validate a ``[tool.distlint]`` table (kebab-case keys) on top of ``base``."""
        known = {f.name.replace("_", "-"): f.name for f in fields(cls) if f.name != "source"}
        values: dict = {}
        for key, value in table.items():
            if key not in known:
                raise ConfigError(
                    f"{source}: error: unknown key '{key}' in [tool.distlint] "
                    f"(known: {', '.join(sorted(known))})"
                )
            values[known[key]] = _validate(key, value, source)
        return replace(base or cls(), source=source, **values)

    def fingerprint(self) -> str:
        """A stable text of every setting (not ``source``): part of the cache key."""
        return repr(
            tuple((f.name, getattr(self, f.name)) for f in fields(self) if f.name != "source")
        )

    # -- queries -----------------------------------------------------------------------
    def enabled_codes(
        self, all_codes: Iterable[tuple[str, bool]], path: str | None = None
    ) -> frozenset:
        """Codes enabled for ``path`` from ``(code, default_enabled)`` pairs."""
        enabled = set()
        for code, default_on in all_codes:
            on = any(code.startswith(s) for s in self.select) if self.select else default_on
            if on and not any(code.startswith(i) for i in self.ignore):
                enabled.add(code)
        if path is not None:
            for glob, codes in self.per_file_ignores:
                if path_matches(path, glob):
                    enabled = {c for c in enabled if not any(c.startswith(i) for i in codes)}
        return frozenset(enabled)


def path_matches(path: str, glob: str) -> bool:
    """Whether ``path`` (any form) matches ``glob`` as a whole, as a suffix, or by file name."""
    if os.sep == "/" and path and path[0] != "/":
        parts = path.split("/")
        if "" not in parts and "." not in parts:
            # Already what pathlib would make of it (relative, no empty or "." parts): the same
            # candidates by string operations, without building a path object per suffix (this
            # is asked for every file discovered, and a warm run does little else).
            return (
                fnmatch.fnmatch(path, glob)
                or fnmatch.fnmatch(parts[-1], glob)
                or any(fnmatch.fnmatch("/".join(parts[i:]), glob) for i in range(1, len(parts)))
            )
    posix = PurePosixPath(Path(path).as_posix())
    if fnmatch.fnmatch(str(posix), glob) or fnmatch.fnmatch(posix.name, glob):
        return True
    posix_parts = posix.parts
    return any(
        fnmatch.fnmatch(str(PurePosixPath(*posix_parts[i:])), glob)
        for i in range(1, len(posix_parts))
    )


def globs_matcher(globs: tuple[str, ...]) -> Callable[[str], bool]:
    """``lambda path: any(path_matches(path, glob) for glob in globs)``, compiled once.

    For the usual path (relative, no empty or ``.`` parts) a single regular expression
    decides: "the glob matches the suffix starting at the path's start or after one of its
    ``/``" is what ``(?:.*/)?`` in front of the translated glob tries, the whole path and the
    file name included. Discovery asks this for every file it sees.
    """
    return _compiled_globs(tuple(globs))


@cache
def _compiled_globs(globs: tuple[str, ...]) -> Callable[[str], bool]:
    if not globs:
        return lambda path: False
    if os.sep != "/":  # pragma: no cover - Windows: the general path
        return lambda path: any(path_matches(path, glob) for glob in globs)
    pattern = re.compile("(?s:.*/)?(?:" + "|".join(fnmatch.translate(glob) for glob in globs) + ")")

    def matches(path: str) -> bool:
        if path and path[0] != "/":
            parts = path.split("/")
            if (
                "" not in parts and "." not in parts
            ):  # path_matches' fast case, decided the same way
                return pattern.match(path) is not None
        return any(path_matches(path, glob) for glob in globs)

    return matches


def _validate(key: str, value: Any, source: str) -> Any:
    def bad(expected: str) -> ConfigError:
        return ConfigError(
            f"{source}: error: [tool.distlint] '{key}' must be {expected}, got {value!r}"
        )

    if key == "require-main":
        if value not in REQUIRE_MAIN_CHOICES:
            raise bad("one of " + ", ".join(repr(c) for c in REQUIRE_MAIN_CHOICES))
        return value
    if key == "per-file-ignores":
        if not isinstance(value, Mapping):
            raise bad("a table of glob = [codes]")
        pairs = []
        for glob, codes in value.items():
            if not _is_str_list(codes):
                raise bad("a table of glob = [codes]")
            pairs.append((str(glob), tuple(_check_codes(key, codes, source))))
        return tuple(pairs)
    if not _is_str_list(value):
        raise bad("a list of strings")
    if key in ("select", "ignore"):
        return tuple(_check_codes(key, value, source))
    return tuple(value)


def _is_str_list(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)


def _is_code(code: str) -> bool:
    """``DL``, ``DL1``, ``DL20``, ``DL201``: a rule code or a prefix of one."""
    return code.startswith("DL") and (code[2:] == "" or code[2:].isdigit())


def _check_codes(key: str, codes: Sequence[str], source: str) -> Sequence[str]:
    for code in codes:
        if not _is_code(code):
            raise ConfigError(
                f"{source}: error: [tool.distlint] '{key}' has '{code}', "
                "not a rule code or prefix such as 'DL1' or 'DL201'"
            )
    return codes


def find_pyproject(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` at or above ``start`` (a file or directory)."""
    here = start.resolve()
    if not here.is_dir():
        here = here.parent
    for directory in (here, *here.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_config(start: Path) -> Config:
    """Config from the nearest ``pyproject.toml`` above ``start``; defaults when none has a table."""
    pyproject = find_pyproject(start)
    if pyproject is None:
        return Config()
    return _load_pyproject(pyproject)


def _load_pyproject(pyproject: Path) -> Config:
    try:
        with open(pyproject, "rb") as handle:
            document = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{pyproject}: error: cannot read TOML: {exc}") from None
    tool = document.get("tool", {})
    table = tool.get("distlint") if isinstance(tool, Mapping) else None
    if table is None:
        return Config(source=str(pyproject))
    if not isinstance(table, Mapping):
        raise ConfigError(f"{pyproject}: error: [tool.distlint] must be a table")
    return Config.from_table(table, source=str(pyproject))


@dataclass(frozen=True)
class Overrides:
    """Settings given on the command line; they win over ``[tool.distlint]``.

    ``select`` replaces the file's ``select`` *and* its ``ignore`` (what you select on
    the command line is what runs); ``ignore`` is added to whatever ignore is in force.
    ``per-file-ignores`` always apply.
    """

    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()

    def apply(self, config: Config) -> Config:
        changes: dict[str, Any] = {}
        if self.select is not None:
            changes["select"] = tuple(self.select)
            changes["ignore"] = tuple(self.ignore)
        elif self.ignore:
            changes["ignore"] = tuple(config.ignore) + tuple(self.ignore)
        return replace(config, **changes) if changes else config

    @staticmethod
    def validate_codes(option: str, codes: Sequence[str]) -> tuple[str, ...]:
        """Check command-line codes like the config keys (raises :class:`ConfigError`)."""
        for code in codes:
            if not _is_code(code):
                raise ConfigError(
                    f"error: {option} has '{code}', not a rule code or prefix such as 'DL1' or 'DL201'"
                )
        return tuple(codes)


@dataclass(frozen=True)
class ResolvedConfig:
    """The config in force for a directory and the project root it came from."""

    config: Config
    #: Directory of the ``pyproject.toml`` the config came from (``None``: no pyproject).
    root: Path | None


class ConfigResolver:
    """Nearest-``pyproject.toml`` lookup for many directories, each answered once.

    Directories are taken as given (absolute, symlinks not resolved): the project a
    file belongs to is the one its path shows. Each ``pyproject.toml`` is read once.
    """

    def __init__(self, overrides: Overrides | None = None) -> None:
        self.overrides = overrides or Overrides()
        self._by_directory: dict[Path, ResolvedConfig] = {}
        self._by_pyproject: dict[Path, ResolvedConfig] = {}
        self._default: ResolvedConfig | None = None

    def for_directory(self, directory: Path) -> ResolvedConfig:
        directory = Path(os.path.abspath(directory))
        found = self._by_directory.get(directory)
        if found is not None:
            return found
        pyproject = directory / "pyproject.toml"
        if pyproject.is_file():
            found = self._load(pyproject)
        elif directory.parent != directory:
            found = self.for_directory(directory.parent)
        else:
            if self._default is None:
                self._default = ResolvedConfig(self.overrides.apply(Config()), None)
            found = self._default
        self._by_directory[directory] = found
        return found

    def for_file(self, path: Path) -> ResolvedConfig:
        return self.for_directory(Path(os.path.abspath(path)).parent)

    def _load(self, pyproject: Path) -> ResolvedConfig:
        found = self._by_pyproject.get(pyproject)
        if found is None:
            found = ResolvedConfig(
                self.overrides.apply(_load_pyproject(pyproject)), pyproject.parent
            )
            self._by_pyproject[pyproject] = found
        return found
