"""Process targets for the fast-start unit tests: cheap to import (no torch), importable by name."""

import json
import os
import time


def report(path, names=(), sleep_s=0.0):
    """Write where this process runs and what it inherited, then (optionally) keep running a while."""
    info = {
        "pid": os.getpid(),
        "ppid": os.getppid(),
        "env": {name: os.environ.get(name) for name in names},
    }
    with open(path + ".tmp", "w") as handle:
        json.dump(info, handle)
    os.replace(path + ".tmp", path)
    time.sleep(sleep_s)


def read(path):
    with open(path) as handle:
        return json.load(handle)
