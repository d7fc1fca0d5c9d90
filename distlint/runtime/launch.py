"""``run_tests()``: the ``if __name__ == "__main__"`` entry point of a test file.

* ``python test_x.py [-v] [-k PATTERN] [Class.test_name ...]``: unittest's own
  command line; continuous classes spawn their worker pools.
* ``torchrun --nproc-per-node N test_x.py [...]``: every process is one rank and
  nothing is spawned; ranks agree on each test's outcome, rank 0 prints the
  report (other ranks only a one-line summary when it is a failure), and every
  rank exits non-zero if any test failed.
"""

from __future__ import annotations

import io
import sys
import unittest
from typing import NoReturn, Optional, Sequence

from . import pool_registry
from .role import Role, current_role


def _runner_class(stream):
    class Runner(unittest.TextTestRunner):
        def __init__(self, **kwargs):
            kwargs["stream"] = stream
            super().__init__(**kwargs)

    return Runner


def run_tests(argv: Optional[Sequence[str]] = None, module: str = "__main__") -> NoReturn:
    """Run the module's tests and exit: 0 when all passed (skips allowed), 1 otherwise."""
    argv = list(sys.argv if argv is None else argv)
    inline = current_role() is Role.INLINE
    quiet = inline and _rank() != 0
    stream = io.StringIO() if quiet else sys.stderr
    try:
        program = unittest.main(module=module, argv=argv, exit=False, testRunner=_runner_class(stream))
        success = program.result.wasSuccessful()
    finally:
        if inline:
            from . import inline as inline_mode

            inline_mode.finish()
        pool_registry.shutdown_all()
    if quiet and not success:
        # Outcomes are agreed between ranks, so rank 0's report covers this one;
        # leave a trace of which rank exited non-zero and why.
        summary = [line for line in stream.getvalue().splitlines() if line.startswith("FAILED")]
        sys.stderr.write(f"[rank {_rank()}] {summary[-1] if summary else 'FAILED'}\n")
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(0 if success else 1)


def _rank() -> int:
    import os

    return int(os.environ.get("RANK", "0"))
