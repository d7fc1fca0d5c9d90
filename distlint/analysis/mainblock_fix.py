"""Moved to :mod:`distlint.analysis.mainblock.fix`: this alias only keeps ``distlint/rules``' imports working until they
import from there (then delete this file)."""

from distlint.analysis.mainblock.fix import append_main_block, fill_empty_main_block, guard_import_time_runs, move_main_block_to_end  # noqa: F401
