"""``MultiProcessTestCase``: per-test workers spawned by ``setUp``; each test creates its own PG.

Its tests move to a class deriving from ``MultiProcContinuousTest`` (``distlint.runtime``'s
or torch's), which starts the workers and the PG once per class, from class-level facts.
"""

from __future__ import annotations

import json

import libcst as cst

from distlint.analysis.pg.class_eligibility import MULTI_PROCESS_TEST_CASE
from distlint.codemods.bases.spec import PerTestBase, Target
from distlint.codemods.layout import INDENT, LINE_LENGTH
from distlint.torch_names import DISTLINT_RUNTIME, TORCH_DISTRIBUTED_TESTING

CONTINUOUS_BASE = "MultiProcContinuousTest"
#: The continuous base per ``--runtime`` (also the targets of DistributedTestBase).
TARGETS = {
    "distlint": Target(DISTLINT_RUNTIME, CONTINUOUS_BASE),
    "torch": Target(TORCH_DISTRIBUTED_TESTING, CONTINUOUS_BASE),
}
#: MultiProcessTestCase's world size for a class that sets none.
DEFAULT_WORLD_SIZE = Target(TORCH_DISTRIBUTED_TESTING, "DEFAULT_WORLD_SIZE")

BASE = PerTestBase(
    name=MULTI_PROCESS_TEST_CASE,
    targets=TARGETS,
    default_world_size={"distlint": DEFAULT_WORLD_SIZE, "torch": DEFAULT_WORLD_SIZE},
)


#: The class attribute ``distlint.runtime.MultiProcContinuousTest`` reads the ranks' environment from.
WORKER_ENV = "worker_env"


def environment_statements(environment: dict[str, str], runtime: str) -> list[cst.BaseStatement]:
    """What a continuous class needs so its ranks start with the environment the per-test ``setUp``
    set before spawning: ``worker_env`` with distlint's runtime; with torch's, which spawns the ranks
    in the first test's ``setUp``, ``setUpClass`` sets the variables and a class cleanup puts them
    back (cleanups run last in, first out, so a subclass's and its base's nest; the caller imports
    ``os`` and ``unittest.mock``)."""
    if not environment:
        return []
    items = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in environment.items()]
    if runtime == "distlint":
        return [cst.parse_statement(f"{WORKER_ENV} = {_dict_literal(items, WORKER_ENV, 1)}\n")]
    setup = cst.parse_statement(
        "@classmethod\n"
        "def setUpClass(cls):\n"
        "    # The ranks start in the first test's setUp: they inherit this environment.\n"
        "    super().setUpClass()\n"
        f"    environment = {_dict_literal(items, 'environment', 2)}\n"
        "    patch = unittest.mock.patch.dict(os.environ, environment)\n"
        "    patch.start()\n"
        "    cls.addClassCleanup(patch.stop)\n"
    )
    return [setup]


def _dict_literal(items: list[str], target: str, depth: int) -> str:
    """``{k: v, ...}`` as black writes it after ``<target> = `` at ``depth`` (relative to the
    statement parsed: a line of its own per item when the line is too long)."""
    one_line = "{" + ", ".join(items) + "}"
    if len(INDENT * depth + f"{target} = {one_line}") <= LINE_LENGTH:
        return one_line
    inner = INDENT * (depth - 1)
    return "{\n" + "".join(f"{inner}{INDENT}{item},\n" for item in items) + inner + "}"


def gloo_options_statements(distributed: str) -> list[cst.BaseStatement]:
    """``_init_pg`` of a gloo class with ``opts()`` on torch's continuous class (``distributed``:
    the name ``torch.distributed`` is bound to). torch's ``_init_pg`` passes ``opts()`` to
    ``init_process_group``, which builds gloo with a timeout only (threads, devices and lazy init
    dropped), so its tests would run on other options than they were written against: they get a
    ``ProcessGroupGloo`` built from ``opts()``, as each per-test test built one, and the default
    group stays for ``dist.*`` calls (what distlint's runtime does, ``distlint.runtime.class_pg``)."""
    d = distributed
    function = cst.parse_statement(
        "@classmethod\n"
        "def _init_pg(cls, rank, world_size, rdvz_file):\n"
        "    # init_process_group drops gloo's opts(): the tests get a group built from them.\n"
        "    super()._init_pg(rank, world_size, rdvz_file)\n"
        f'    store = {d}.PrefixStore("opts/", {d}.FileStore(rdvz_file, world_size))\n'
        f"    cls.pg = {d}.ProcessGroupGloo(store, rank, world_size, cls.opts())\n"
    )
    return [function]
