"""A continuous class whose module logs every process that imports it (run under pytest)."""

import json
import os

import torch
import torch.distributed as dist

from distlint.runtime import MultiProcContinuousTest

_LOG = os.environ.get("DISTLINT_CASE_LOG")
if _LOG:
    with open(_LOG, "a") as handle:
        handle.write(json.dumps({"imported_in": os.getpid()}) + "\n")


class PreloadProbe(MultiProcContinuousTest):
    @classmethod
    def backend_str(cls):
        return "gloo"

    def test_ranks(self):
        tensor = torch.ones(1)
        dist.all_reduce(tensor)
        with open(_LOG, "a") as handle:
            handle.write(json.dumps({"rank_pid": os.getpid()}) + "\n")
