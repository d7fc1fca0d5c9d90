"""What case tests record about where they ran, for the outer tests to check.

Each record is one JSON line appended to $DISTLINT_CASE_LOG (O_APPEND writes of
one short line are atomic, so ranks can share the file).
"""

import json
import os


def record(test, **fields):
    path = os.environ.get("DISTLINT_CASE_LOG")
    if not path:
        return
    entry = {
        "cls": type(test).__name__,
        "test": test._testMethodName,
        "rank": test.rank,
        "world_size": test.world_size,
        "pid": os.getpid(),
    }
    entry.update(fields)
    with open(path, "a") as handle:
        handle.write(json.dumps(entry) + "\n")


def read(path):
    if not os.path.exists(path):
        return []
    with open(path) as handle:
        return [json.loads(line) for line in handle if line.strip()]
