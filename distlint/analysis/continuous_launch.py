"""Moved to :mod:`distlint.analysis.mainblock.continuous_launch`: this alias only keeps ``distlint/rules``' imports working until they
import from there (then delete this file)."""

from distlint.analysis.mainblock.continuous_launch import RANK_ENTRY  # noqa: F401
