"""Moved to :mod:`distlint.analysis.mainblock.fix`.

This alias keeps ``distlint/rules``' imports working until they import from there; then
delete it.
"""

from distlint.analysis.mainblock.fix import (  # noqa: F401
    append_main_block, fill_empty_main_block, guard_import_time_runs,
    move_main_block_to_end,
)
