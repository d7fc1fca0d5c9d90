"""Moved to :mod:`distlint.analysis.pg.eligibility`: this alias only keeps ``distlint/rules``' imports working until they
import from there (then delete this file)."""

from distlint.analysis.pg.eligibility import describe_short, reason_counts  # noqa: F401
