"""Test outcomes from a JUnit XML report (``pytest --junit-xml``): the structured way to read
another process's results, which no library warning printed into stdout/stderr can garble.

Used by ``test_migrate_equivalence.py`` and ``benchmarks/migrate_speedup.py``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Dict

#: A ``<testcase>`` child element -> the outcome it records (no such child: passed).
OUTCOME_ELEMENTS = {"failure": "failed", "error": "error", "skipped": "skipped"}
#: The worst outcome wins when a testcase carries several (failed, then errored in teardown).
SEVERITY = ("error", "failed", "skipped")


def junit_outcomes(report: Path) -> Dict[str, str]:
    """``Class.test`` -> ``passed`` / ``skipped`` / ``failed`` / ``error``.

    The class is the last component of the report's ``classname`` (pytest writes
    ``module.Class``); a test id reported twice is an error (ids would be ambiguous).
    """
    outcomes: Dict[str, str] = {}
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        found = {OUTCOME_ELEMENTS[child.tag] for child in case if child.tag in OUTCOME_ELEMENTS}
        outcome = next((name for name in SEVERITY if name in found), "passed")
        test_id = f"{case.get('classname', '').rsplit('.', 1)[-1]}.{case.get('name')}"
        if test_id in outcomes:
            raise ValueError(f"{report}: {test_id} is reported twice")
        outcomes[test_id] = outcome
    return outcomes
