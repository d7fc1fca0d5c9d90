"""Moved to :mod:`distlint.analysis.pg.execution`: this alias only keeps ``distlint/rules``' imports working until they
import from there (then delete this file)."""

from distlint.analysis.pg.execution import integer_literal  # noqa: F401
