"""``python -m unittest`` that also writes a JUnit XML report, for the outer tests to read.

    python unittest_main.py REPORT.xml [unittest's arguments ...]

unittest's own main program, called as ``python -m unittest`` calls it
(``module=None``), with distlint's recording result class: the outer test reads
outcomes from the report, not from text a library warning can interleave.
"""

import sys
import time
import unittest

from distlint.runtime import junit_report


class Runner(unittest.TextTestRunner):
    resultclass = junit_report.RecordingTextResult


if __name__ == "__main__":
    report = sys.argv.pop(1)
    started = time.perf_counter()
    program = unittest.main(module=None, exit=False, testRunner=Runner)
    junit_report.write(
        report, program.result.cases.values(), "unittest", time.perf_counter() - started
    )
    sys.exit(0 if program.result.wasSuccessful() else 1)
