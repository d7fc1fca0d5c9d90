"""Moved to :mod:`distlint.analysis.mainblock.continuous_launch`.

This alias keeps ``distlint/rules``' imports working until they import from there; then
delete it.
"""

from distlint.analysis.mainblock.continuous_launch import RANK_ENTRY  # noqa: F401
