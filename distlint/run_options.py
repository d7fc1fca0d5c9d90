"""The options ``check`` and ``migrate`` share (worker processes, the cache), declared once.

A leaf: argparse only, so ``distlint check`` can use it without importing the codemod.
"""

from __future__ import annotations

import argparse
import os


def positive_int(text: str) -> int:
    """argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """``--jobs``, ``--no-cache`` and ``--cache-dir``, as both commands take them."""
    parser.add_argument(
        "--jobs",
        "-j",
        type=positive_int,
        default=None,
        metavar="N",
        help="worker processes (default: the CPUs available)",
    )
    parser.add_argument(
        "--no-cache", action="store_true", help="neither read nor write .distlint_cache"
    )
    parser.add_argument(
        "--cache-dir",
        default=os.environ.get("DISTLINT_CACHE_DIR"),
        metavar="DIR",
        help="cache directory (default: .distlint_cache at the project root, "
        "or $DISTLINT_CACHE_DIR)",
    )
