"""Plain result data shared by the linter, the engine, the cache and the outputs.

Kept free of libcst on purpose: a warm run (every file answered from the cache)
formats results without ever importing the parser.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z0-9, ]+))?", re.IGNORECASE)
_DISTLINT_IGNORE = re.compile(r"#\s*distlint:\s*ignore\[(?P<codes>[A-Z0-9, ]+)\]")


def is_suppressed(line_text: str, code: str) -> bool:
    """Whether a ``# noqa`` / ``# distlint: ignore[...]`` comment on the line silences ``code``."""
    for pattern in (_NOQA, _DISTLINT_IGNORE):
        match = pattern.search(line_text)
        if match is None:
            continue
        codes = match.group("codes")
        if codes is None:  # a bare noqa comment: everything on this line
            return True
        if any(code.startswith(c.strip()) for c in codes.split(",") if c.strip()):
            return True
    return False


@dataclass(frozen=True)
class Finding:
    """A located report: plain data, picklable, cacheable."""

    path: str
    line: int  # 1-based
    col: int  # 1-based
    code: str
    name: str
    message: str
    fixable: bool = False
    end_line: int = 0
    end_col: int = 0

    def sort_key(self) -> tuple:
        return (self.path, self.line, self.col, self.code)


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    #: A one-line ``path: error: ...`` message when the file could not be checked.
    error: str | None = None
    #: Other files the result depends on (the modules bases from elsewhere come from): absolute
    #: path -> stat key (mtime, ctime, size, inode), None where no file was. The cache trusts
    #: the result only while each of them is as recorded.
    depends_on: dict[str, list[int] | None] = field(default_factory=dict)


def stat_key(stat: os.stat_result) -> list[int]:
    """What identifies a file's version without reading it: mtime, ctime, size, inode (the cache's
    index compares it for linted files, ``FileResult.depends_on`` records it for the others)."""
    return [stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size, stat.st_ino]
