"""A test that is still running when the outer test signals the whole process."""

import os
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from distlint.runtime import MultiProcContinuousTest, run_tests  # noqa: E402


class Sleeper(MultiProcContinuousTest):
    @classmethod
    def backend_str(cls):
        return "gloo"

    def test_sleeps(self):
        with open(f"{os.environ['DISTLINT_CASE_MARKER']}.{self.rank}", "w") as handle:
            handle.write(str(os.getpid()))
        time.sleep(120)


if __name__ == "__main__":
    run_tests()
