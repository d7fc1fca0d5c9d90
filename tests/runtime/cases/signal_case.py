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
        # Write then rename: the test polls for the file and must never read it half-written.
        marker = f"{os.environ['DISTLINT_CASE_MARKER']}.{self.rank}"
        with open(marker + ".tmp", "w") as handle:
            handle.write(str(os.getpid()))
        os.replace(marker + ".tmp", marker)
        time.sleep(120)


if __name__ == "__main__":
    run_tests()
