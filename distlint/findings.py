"""Plain result data shared by the linter, the engine, the cache and the outputs.

Kept free of libcst on purpose: a warm run (every file answered from the cache)
formats results without ever importing the parser.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field


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
