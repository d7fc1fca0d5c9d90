"""Moved to :mod:`distlint.analysis.pg.eligibility`.

This alias keeps ``distlint/rules``' imports working until they import from there; then
delete it.
"""

from distlint.analysis.pg.eligibility import describe_short, reason_counts  # noqa: F401
