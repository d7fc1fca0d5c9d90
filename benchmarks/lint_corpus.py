"""A seeded corpus of realistic test modules for the lint benchmarks.

Files of 5-60 KB (log-normal around 14 KB), shaped like PyTorch / torchrec / torchtitan
test files. The mix (seeded, so every run builds the same files): most files are
ordinary test files with a correct main block; ~20% are distributed per-test-spawn files
(``MultiProcessTestCase`` + a PG per test), ~8% continuous classes, ~5% pytest-run
suites without a main block (torchrec/torchtitan style), and ~5% are the golden fixtures
(``fixtures/**/test_*.py``, whatever is there: the DL1xx problems, PG shapes) padded with
filler test classes to a realistic size.

Used by ``lint_throughput.py`` (the default corpus) and ``pg_analysis.py --corpus-files``;
``python benchmarks/lint_corpus.py DIR [--files N]`` writes it to a folder (to profile on it).
"""

from __future__ import annotations

import ast
import random
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
MIN_SIZE, MAX_SIZE = 5_000, 60_000

OPS = [
    "abs",
    "exp",
    "log1p",
    "sigmoid",
    "tanh",
    "relu",
    "sqrt",
    "sin",
    "cos",
    "erf",
    "neg",
    "reciprocal",
]
REDUCTIONS = ["sum", "mean", "amax", "amin", "prod", "std", "var", "logsumexp"]
DTYPES = ["torch.float32", "torch.float64", "torch.bfloat16", "torch.float16", "torch.int64"]
NOUNS = [
    "linear",
    "conv",
    "embedding",
    "attention",
    "norm",
    "optimizer",
    "scheduler",
    "sampler",
    "module",
    "buffer",
    "parameter",
    "gradient",
    "checkpoint",
    "state_dict",
    "hook",
    "shard",
    "bucket",
    "reducer",
    "pipeline",
    "stage",
    "mesh",
    "placement",
    "collective",
    "tensor",
    "storage",
    "stream",
    "event",
    "graph",
]
VERBS = [
    "forward",
    "backward",
    "load",
    "save",
    "reset",
    "sync",
    "flatten",
    "unflatten",
    "wrap",
    "broadcast",
    "gather",
    "scatter",
    "reduce",
    "resize",
    "clone",
    "detach",
    "compile",
    "trace",
    "export",
    "register",
]
COLLECTIVES = [
    ("all_reduce", "tensor"),
    ("broadcast", "tensor, src=0"),
    ("all_gather", "outputs, tensor"),
    ("reduce_scatter", "output, inputs"),
    ("barrier", ""),
    ("all_to_all", "outputs, inputs"),
]


# -- corpus ---------------------------------------------------------------------------------------


def _name(rng: random.Random, parts: int = 2) -> str:
    return "_".join(rng.choice(NOUNS + VERBS) for _ in range(parts))


def _camel(snake: str) -> str:
    return "".join(part.capitalize() for part in snake.split("_"))


def _filler_method(rng: random.Random, device: str = "self.device_type") -> str:
    """One realistic test method (shapes seen across PyTorch's test suite)."""
    name = f"test_{_name(rng, rng.randint(2, 4))}"
    op, red = rng.choice(OPS), rng.choice(REDUCTIONS)
    n, m = rng.choice([2, 3, 4, 8, 16, 32, 128]), rng.choice([1, 3, 5, 7, 64, 256])
    kind = rng.randrange(7)
    if kind == 0:
        return f'''
    @parametrize("dtype", [{", ".join(rng.sample(DTYPES[:4], 3))}])
    def {name}(self, dtype):
        """`torch.{op}` followed by `{red}` matches the float64 reference."""
        x = torch.randn({n}, {m}, dtype=dtype)
        actual = torch.{op}(x).{red}(dim=-1)
        expected = torch.{op}(x.double()).{red}(dim=-1).to(dtype)
        self.assertEqual(actual, expected, atol={rng.choice(["1e-5", "1e-3", "2e-2"])}, rtol=1e-3)
'''
    if kind == 1:
        return f"""
    def {name}(self):
        model = nn.Sequential(nn.Linear({m}, {n}), nn.ReLU(), nn.Linear({n}, {m}))
        inp = torch.randn({rng.randint(2, 16)}, {m}, requires_grad=True)
        out = model(inp)
        out.{red}().backward()
        # Every parameter received a gradient of the right shape.
        for param in model.parameters():
            self.assertIsNotNone(param.grad)
            self.assertEqual(param.grad.shape, param.shape)
        self.assertEqual(inp.grad.shape, inp.shape)
"""
    if kind == 2:
        return f"""
    def {name}(self):
        for size in ({", ".join(str(rng.randint(1, 512)) for _ in range(rng.randint(2, 5)))}):
            with self.subTest(size=size):
                t = torch.arange(size, dtype=torch.float32)
                self.assertEqual(t.{red}().item(), t.double().{red}().item(), atol=1e-4, rtol=0)
                self.assertTrue(torch.{op}(t).isfinite().all() or size == 0)
"""
    if kind == 3:
        return f"""
    @unittest.skipIf(not torch.cuda.is_available(), "CUDA not available")
    def {name}(self):
        x = torch.randn({n}, {m}, device="cuda")
        y = x.clone().cpu()
        torch.cuda.synchronize()
        self.assertEqual(torch.{op}(x).cpu(), torch.{op}(y))
"""
    if kind == 4:
        return f"""
    def {name}(self):
        sd = {{"weight": torch.randn({n}, {m}), "bias": torch.zeros({n}), "step": torch.tensor({rng.randint(0, 99)})}}
        buffer = io.BytesIO()
        torch.save(sd, buffer)
        buffer.seek(0)
        loaded = torch.load(buffer, weights_only=True)
        self.assertEqual(sorted(loaded), sorted(sd))
        for key, value in sd.items():
            self.assertEqual(loaded[key], value, msg=f"mismatch in {{key}}")
"""
    if kind == 5:
        return f'''
    def {name}(self):
        with self.assertRaisesRegex(RuntimeError, "{rng.choice(["shape", "size mismatch", "expected"])}"):
            torch.randn({n}, {m}) @ torch.randn({m + 1}, {n})
'''
    return f"""
    def {name}(self):
        def helper(t, scale={rng.randint(1, 9)}):
            return torch.{op}(t) * scale

        inputs = [torch.randn({n}) for _ in range({rng.randint(2, 6)})]
        outputs = [helper(t) for t in inputs]
        stacked = torch.stack(outputs)
        self.assertEqual(stacked.shape, (len(inputs), {n}))
        self.assertEqual(stacked.{red}(dim=0), torch.stack([helper(t) for t in inputs]).{red}(dim=0))
"""


def _filler_class(rng: random.Random, base: str = "TestCase") -> str:
    name = f"Test{_camel(_name(rng, 2))}"
    methods = "".join(_filler_method(rng) for _ in range(rng.randint(4, 12)))
    setup = ""
    if rng.random() < 0.4:
        setup = f"""
    def setUp(self):
        super().setUp()
        torch.manual_seed({rng.randint(0, 9999)})
"""
    return f'''

class {name}({base}):
    """Tests for {_name(rng, 2).replace("_", " ")}."""
{setup}{methods}'''


_ORDINARY_HEADER = """# Owner(s): ["module: {owner}"]

import io
import unittest

import torch
import torch.nn as nn
from torch.testing._internal.common_utils import (
    instantiate_parametrized_tests,
    parametrize,
    run_tests,
    TestCase,
)
"""
_MAIN = """

if __name__ == "__main__":
    run_tests()
"""


def ordinary_file(rng: random.Random, target: int) -> str:
    parts = [
        _ORDINARY_HEADER.format(owner=rng.choice(["nn", "optimizers", "autograd", "serialization"]))
    ]
    classes = []
    while _room(parts, target - 200):
        if not _add(parts, _filler_class(rng)):
            break
        classes.append(parts[-1].split("class ", 1)[1].split("(", 1)[0])
    parts.append("\n\n" + "".join(f"instantiate_parametrized_tests({c})\n" for c in classes))
    return "".join(parts) + _MAIN


_SPAWN_HEADER = """# Owner(s): ["oncall: distributed"]

import io
import os
import sys
import unittest
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d
import torch.nn as nn
from torch.testing._internal.common_distributed import (
    MultiProcessTestCase,
    requires_gloo,
    skip_if_lt_x_gpu,
)
from torch.testing._internal.common_utils import parametrize, run_tests, TestCase

if not dist.is_available():
    print("Distributed not available, skipping tests", file=sys.stderr)
    sys.exit(0)
"""


def _spawn_test(rng: random.Random, helper: str) -> str:
    name = f"test_{_name(rng, rng.randint(2, 3))}"
    collective, args = rng.choice(COLLECTIVES)
    n = rng.choice([4, 8, 16, 1024])
    shape = rng.randrange(3)
    if shape == 0:  # init_process_group in the test
        create = """        store = dist.FileStore(self.file_name, self.world_size)
        dist.init_process_group("gloo", store=store, rank=self.rank, world_size=self.world_size)
        pg = dist.group.WORLD"""
    elif shape == 1:  # a backend constructor
        create = """        store = c10d.FileStore(self.file_name, self.world_size)
        pg = c10d.ProcessGroupGloo(store, self.rank, self.world_size, self.opts())"""
    else:  # a same-class helper
        create = f"        pg = self.{helper}()"
    call = {
        "all_reduce": "dist.all_reduce(tensor, group=pg)",
        "broadcast": "dist.broadcast(tensor, src=0, group=pg)",
        "all_gather": "outputs = [torch.empty_like(tensor) for _ in range(self.world_size)]\n"
        "        dist.all_gather(outputs, tensor, group=pg)",
        "reduce_scatter": "dist.barrier(group=pg)",
        "barrier": "dist.barrier(group=pg)",
        "all_to_all": "dist.barrier(group=pg)",
    }[collective]
    return f"""
    @requires_gloo()
    def {name}(self):
{create}
        tensor = torch.full(({n},), float(self.rank + 1))
        {call}
        # Each rank contributed rank + 1.
        self.assertEqual(tensor.numel(), {n})
        dist.destroy_process_group()
"""


def per_test_spawn_file(rng: random.Random, target: int) -> str:
    parts = [_SPAWN_HEADER]
    while _room(parts, target - 300):
        helper = f"_init_{_name(rng, 1)}_pg"
        name = f"{_camel(_name(rng, 2))}Test"
        tests = "".join(_spawn_test(rng, helper) for _ in range(rng.randint(4, 14)))
        added = _add(
            parts,
            f"""

class {name}(MultiProcessTestCase):
    def setUp(self):
        super().setUp()
        self._spawn_processes()

    def tearDown(self):
        super().tearDown()
        try:
            os.remove(self.file_name)
        except OSError:
            pass

    @property
    def world_size(self):
        return {rng.choice([2, 4])}

    def opts(self, threads=2):
        opts = c10d.ProcessGroupGloo._Options()
        opts._timeout = 5.0
        opts._threads = threads
        return opts

    def {helper}(self):
        store = dist.FileStore(self.file_name, self.world_size)
        dist.init_process_group(
            backend="gloo", store=store, rank=self.rank, world_size=self.world_size,
            timeout=timedelta(seconds=60),
        )
        return dist.group.WORLD
{tests}""",
        )
        if not added:
            break
        if rng.random() < 0.5:  # real distributed files also hold plain unit tests
            _add(parts, _filler_class(rng))
    return "".join(parts) + _MAIN


def continuous_file(rng: random.Random, target: int) -> str:
    parts = [_SPAWN_HEADER.replace("MultiProcessTestCase", "MultiProcContinuousTest")]
    while _room(parts, target - 300):
        tests = []
        for _ in range(rng.randint(4, 16)):
            collective = rng.choice(["all_reduce", "broadcast", "barrier"])
            call = {
                "all_reduce": "dist.all_reduce(t)",
                "broadcast": "dist.broadcast(t, src=0)",
                "barrier": "dist.barrier()",
            }[collective]
            tests.append(f"""
    def test_{_name(rng, 3)}(self):
        t = torch.ones({rng.choice([2, 16, 128])}) * (self.rank + 1)
        {call}
        self.assertEqual(t.numel(), t.shape[0])
""")
        if not _add(
            parts,
            f"""

class {_camel(_name(rng, 2))}Test(MultiProcContinuousTest):
    world_size = 2

    @classmethod
    def backend_str(cls):
        return "gloo"
{"".join(tests)}""",
        ):
            break
    return "".join(parts) + _MAIN


def pytest_suite_file(rng: random.Random, target: int) -> str:
    """torchrec / torchtitan style: unittest classes run by pytest, no main block, no run_tests."""
    parts = [
        """#!/usr/bin/env python3
# Copyright (c) Meta Platforms, Inc. and affiliates.

import io
import unittest

import torch
import torch.nn as nn
from torch.testing._internal.common_utils import parametrize
"""
    ]
    while _room(parts, target) and _add(parts, _filler_class(rng, base="unittest.TestCase")):
        pass
    return "".join(parts)


def padded_fixture(rng: random.Random, target: int, source: str) -> str:
    """A golden fixture with filler classes inserted after its imports (its shape kept)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    line = 0
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            line = node.end_lineno or node.lineno
        elif line:
            break
    lines = source.splitlines(keepends=True)
    filler = [
        source,
        "\nimport io as _io_filler  # noqa: F401\nimport unittest\nimport torch.nn as nn\n",
    ]
    while _room(filler, target) and _add(
        filler,
        _filler_class(rng, base="unittest.TestCase").replace("io.BytesIO", "_io_filler.BytesIO"),
    ):
        pass
    filler.pop(0)
    return "".join(lines[:line]) + "".join(filler) + "\n" + "".join(lines[line:])


def _room(parts: list[str], target: int) -> bool:
    return sum(map(len, parts)) < target


def _add(parts: list[str], text: str) -> bool:
    """Append ``text`` unless the file would outgrow MAX_SIZE (the main block included)."""
    if sum(map(len, parts)) + len(text) > MAX_SIZE - 1_500:  # room for instantiate_...() and main
        return False
    parts.append(text)
    return True


def _target_size(rng: random.Random) -> int:
    # Log-normal around 14 KB, clipped to 5-60 KB: many small files, a long tail of big ones.
    return int(min(MAX_SIZE - 2_000, max(MIN_SIZE + 500, rng.lognormvariate(9.55, 0.6))))


def build_corpus(directory: Path, files: int, seed: int = 2) -> dict[str, int]:
    rng = random.Random(seed)
    fixtures = sorted(p for p in (ROOT / "fixtures").rglob("test_*.py"))
    fixture_sources = [p.read_text() for p in fixtures]
    kinds: list[tuple[str, float, Callable[[random.Random, int], str]]] = [
        ("ordinary", 0.62, ordinary_file),
        ("per-test spawn", 0.20, per_test_spawn_file),
        ("continuous", 0.08, continuous_file),
        ("pytest-run suite", 0.05, pytest_suite_file),
        ("padded fixture", 0.05, lambda r, t: padded_fixture(r, t, r.choice(fixture_sources))),
    ]
    if not fixture_sources:
        kinds.pop()
    counts = {name: 0 for name, _, _ in kinds}
    directory.mkdir(parents=True, exist_ok=True)
    for index in range(files):
        name, _, make = rng.choices(kinds, weights=[w for _, w, _ in kinds])[0]
        counts[name] += 1
        text = make(rng, _target_size(rng))
        sub = directory / f"area_{index % 40:02d}"
        sub.mkdir(exist_ok=True)
        (sub / f"test_{index:05d}_{name.split()[0].replace('-', '_')}.py").write_text(text)
    return counts


def main() -> int:
    """Write the corpus to a folder, e.g. to profile ``distlint check`` on the benchmark's files."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("directory", type=Path, help="where to write it (must not exist)")
    parser.add_argument("--files", type=int, default=1000)
    args = parser.parse_args()
    if args.directory.exists():
        raise SystemExit(f"{args.directory} exists: give a new folder")
    counts = build_corpus(args.directory, args.files)
    print(
        f"{args.files} files in {args.directory}: "
        + ", ".join(f"{n} {kind}" for kind, n in counts.items())
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
