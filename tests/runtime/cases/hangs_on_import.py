"""A module whose import does not end (within any test's patience) when DISTLINT_CASE_HANG is set.

A fork server told to preload it hangs; imported anywhere else by accident, it is harmless.
"""

import os
import time

if os.environ.get("DISTLINT_CASE_HANG"):
    time.sleep(600)
