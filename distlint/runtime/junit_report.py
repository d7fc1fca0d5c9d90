"""JUnit XML reports for ``run_tests()``: one ``<testcase>`` per test, with its outcome.

The shape CI systems read (and pytest's ``--junit-xml`` writes): a
``<testsuite>`` with tests/failures/errors/skipped counts, and per test its
``classname`` (``module.Class``), ``name`` and ``time``, with a ``<failure>``,
``<error>`` or ``<skipped>`` child carrying a one-line ``message`` and the full
text.  An expected failure is written as skipped (as pytest writes an xfail), an
unexpected success as a failure, so the counts agree with
``unittest.TestResult.wasSuccessful()``.

Results come from unittest's own result object, never from the text a run
prints, so a library warning on stderr cannot change them.  The file is written
beside its target and renamed over it: a reader never sees half a report.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import re
import socket
import tempfile
import time
import unittest
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from _typeshed import OptExcInfo as ExcInfo

from .rank_state import RESTORED_ATTR

#: Where run_tests() writes the report when neither its argument nor --junit-xml says.
JUNIT_XML_ENV = "DISTLINT_JUNIT_XML"
#: The command-line option run_tests() takes out of argv before unittest parses it.
JUNIT_XML_OPTION = "--junit-xml"
#: In a path, stands for the rank: under torchrun every rank then writes its own report.
RANK_PLACEHOLDER = "{rank}"
#: Testcase property naming the process-wide state a test changed on its ranks (restored).
RESTORED_STATE_PROPERTY = "distlint.restored_state"

PASSED, FAILURE, ERROR, SKIPPED = "passed", "failure", "error", "skipped"

# Characters XML 1.0 cannot carry at all (a test may print terminal colours or NULs).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@dataclasses.dataclass
class CaseRecord:
    """One test's line in the report."""

    classname: str
    name: str
    outcome: str = PASSED  # PASSED / FAILURE / ERROR / SKIPPED
    message: str = ""  # one line
    detail: str = ""  # traceback or reason, in full
    kind: str = ""  # the exception type's name, for <failure type=...>
    seconds: float = 0.0
    #: <properties> of the testcase: (name, value), e.g. the state a test changed on its ranks.
    properties: list = dataclasses.field(default_factory=list)


def identify(test: unittest.TestCase) -> tuple[str, str]:
    """(classname, name) of a test, or of a class/module fixture unittest reports as an _ErrorHolder."""
    method = getattr(test, "_testMethodName", None)
    if method is not None:
        cls = type(test)
        return f"{cls.__module__}.{cls.__qualname__}", method
    # unittest describes fixture errors as "setUpClass (module.Class)".
    description = str(getattr(test, "description", test))
    fixture, _, owner = description.partition(" (")
    return (owner[:-1], fixture) if owner.endswith(")") else ("", description)


class RecordingTextResult(unittest.TextTestResult):
    """unittest's text result that also keeps one :class:`CaseRecord` per test, in run order."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cases: dict[str, CaseRecord] = {}
        self._started: dict[str, float] = {}

    def _case(self, test: unittest.TestCase) -> CaseRecord:
        key = test.id()
        if key not in self.cases:
            self.cases[key] = CaseRecord(*identify(test))
        return self.cases[key]

    def _problem(self, test: unittest.TestCase, outcome: str, err: ExcInfo) -> None:
        case = self._case(test)
        # unittest's own formatting; private, so typeshed leaves it out.
        detail = self._exc_info_to_string(err, test)  # type: ignore[attr-defined]
        if case.outcome in (FAILURE, ERROR):
            # A second problem in the same test (a failing subtest, tearDown after a failure): keep both.
            case.detail += "\n" + detail
            case.outcome = ERROR if ERROR in (case.outcome, outcome) else FAILURE
            return
        exc_type, exc = err[0], err[1]
        case.outcome, case.detail, case.kind = outcome, detail, getattr(exc_type, "__name__", "")
        case.message = (str(exc).strip().splitlines() or [case.kind])[0]

    def startTest(self, test: unittest.TestCase) -> None:  # noqa: N802 - unittest's name
        self._started[test.id()] = time.perf_counter()
        super().startTest(test)

    def stopTest(self, test: unittest.TestCase) -> None:  # noqa: N802
        super().stopTest(test)
        started = self._started.pop(test.id(), None)
        if started is not None:
            self._case(test).seconds = time.perf_counter() - started
        restored = getattr(test, RESTORED_ATTR, ())
        if restored:
            self._case(test).properties.append((RESTORED_STATE_PROPERTY, "; ".join(restored)))

    def addSuccess(self, test: unittest.TestCase) -> None:  # noqa: N802
        super().addSuccess(test)
        self._case(test)

    def addFailure(self, test: unittest.TestCase, err: ExcInfo) -> None:  # noqa: N802
        super().addFailure(test, err)
        self._problem(test, FAILURE, err)

    def addError(self, test: unittest.TestCase, err: ExcInfo) -> None:  # noqa: N802
        super().addError(test, err)
        self._problem(test, ERROR, err)

    def addSubTest(  # noqa: N802
        self, test: unittest.TestCase, subtest: unittest.TestCase, err: ExcInfo | None
    ) -> None:
        super().addSubTest(test, subtest, err)
        if err is not None and err[0] is not None:  # a failed or erroring subtest
            self._problem(
                test, FAILURE if issubclass(err[0], test.failureException) else ERROR, err
            )

    def addSkip(self, test: unittest.TestCase, reason: str) -> None:  # noqa: N802
        super().addSkip(test, reason)
        case = self._case(test)
        case.outcome, case.message, case.detail = SKIPPED, reason, reason

    def addExpectedFailure(self, test: unittest.TestCase, err: ExcInfo) -> None:  # noqa: N802
        super().addExpectedFailure(test, err)
        case = self._case(test)
        case.outcome, case.kind, case.message = SKIPPED, "expectedFailure", "expected failure"
        case.detail = self._exc_info_to_string(err, test)  # type: ignore[attr-defined]

    def addUnexpectedSuccess(self, test: unittest.TestCase) -> None:  # noqa: N802
        super().addUnexpectedSuccess(test)
        case = self._case(test)
        case.outcome, case.kind, case.message = FAILURE, "unexpectedSuccess", "unexpected success"


def take_option(argv: list[str]) -> tuple[list[str], str | None]:
    """Remove ``--junit-xml PATH`` / ``--junit-xml=PATH`` from argv; the rest and the path (last wins).

    ValueError when the option has no path.
    """
    rest: list[str] = []
    path: str | None = None
    items = iter(argv)
    for item in items:
        if item == JUNIT_XML_OPTION:
            path = next(items, None)
        elif item.startswith(JUNIT_XML_OPTION + "="):
            path = item.split("=", 1)[1]
        else:
            rest.append(item)
            continue
        if not path:
            raise ValueError(f"{JUNIT_XML_OPTION} needs a file path")
    return rest, path


def path_for_rank(path: str | None, rank: int | None) -> str | None:
    """Where this process writes: rank 0 only under torchrun, unless the path has ``{rank}``."""
    if not path:
        return None
    if RANK_PLACEHOLDER in path:
        return path.replace(RANK_PLACEHOLDER, str(rank or 0))
    return path if not rank else None


def _text(value: str) -> str:
    return _NOT_XML.sub(lambda match: f"\\x{ord(match.group()):02x}", value)


def render(cases: Iterable[CaseRecord], suite_name: str, seconds: float) -> bytes:
    cases = list(cases)
    count = {
        outcome: sum(case.outcome == outcome for case in cases)
        for outcome in (FAILURE, ERROR, SKIPPED)
    }
    root = ET.Element("testsuites")
    suite = ET.SubElement(
        root,
        "testsuite",
        name=_text(suite_name),
        tests=str(len(cases)),
        failures=str(count[FAILURE]),
        errors=str(count[ERROR]),
        skipped=str(count[SKIPPED]),
        time=f"{seconds:.3f}",
        timestamp=datetime.datetime.now().isoformat(timespec="seconds"),
        hostname=socket.gethostname(),
    )
    for case in cases:
        element = ET.SubElement(
            suite,
            "testcase",
            classname=_text(case.classname),
            name=_text(case.name),
            time=f"{case.seconds:.3f}",
        )
        if case.properties:
            properties = ET.SubElement(element, "properties")
            for name, value in case.properties:
                ET.SubElement(properties, "property", name=_text(name), value=_text(value))
        if case.outcome != PASSED:
            child = ET.SubElement(element, case.outcome, message=_text(case.message))
            if case.kind:
                child.set("type", _text(case.kind))
            child.text = _text(case.detail) or None
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def write(path: str, cases: Iterable[CaseRecord], suite_name: str, seconds: float) -> None:
    """Write the report to ``path`` atomically (parent folders are created); OSError if it cannot."""
    data = render(cases, suite_name, seconds)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=".junit-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp_name, 0o644)  # mkstemp's 0600 would hide the report from a CI agent's user
        os.replace(tmp_name, path)
    except BaseException:
        os.unlink(tmp_name)
        raise
