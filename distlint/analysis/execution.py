"""Moved to :mod:`distlint.analysis.pg.execution`.

This alias keeps ``distlint/rules``' imports working until they import from there; then
delete it.
"""

from distlint.analysis.pg.execution import integer_literal  # noqa: F401
