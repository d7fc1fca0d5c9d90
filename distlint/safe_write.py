"""Write a user's file so that it is never lost or half-written.

The new content is verified first (libcst parse + ``compile()``), written to a temporary
file in the same directory, flushed to disk, given the original file's mode, and then
atomically renamed over the original. Any failure leaves the original untouched.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from distlint.source import verify_python


class WriteError(Exception):
    """The file was not written; ``str()`` is a one-line ``path: error: ...`` message."""


def write_python_atomically(path: str | Path, content: bytes) -> None:
    """Replace ``path`` with ``content`` after checking that ``content`` is valid Python."""
    target = Path(path)
    try:
        verify_python(content, str(target))
    except ValueError as exc:
        raise WriteError(
            f"{target}: error: not written, the result is not valid Python: {exc}"
        ) from None
    # Write through symlinks to the real file, as an editor would.
    real = Path(os.path.realpath(target))
    try:
        mode = stat.S_IMODE(real.stat().st_mode)
    except OSError as exc:
        raise WriteError(f"{target}: error: cannot stat: {exc.strerror}") from None
    # No write bit at all is a read-only file even for root (for whom access() says yes).
    if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(real, os.W_OK):
        raise WriteError(f"{target}: error: file is read-only, not modified")
    fd, tmp_name = -1, ""
    try:
        fd, tmp_name = tempfile.mkstemp(
            prefix=f".{real.name}.", suffix=".distlint-tmp", dir=real.parent
        )
        with os.fdopen(fd, "wb") as handle:
            fd = -1
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, real)
        tmp_name = ""
    except OSError as exc:
        raise WriteError(f"{target}: error: not written: {exc.strerror or exc}") from None
    finally:
        if fd != -1:
            os.close(fd)
        if tmp_name:
            try:
                os.unlink(tmp_name)
            except OSError:
                pass
