"""The command line of torch's ``run_tests()``, as PyTorch's ``test/run_test.py`` uses it.

PyTorch's CI runs a test file as ``python -bb test_x.py <flags>``. The flags are those of
torch's ``common_utils.parse_cmd_line_args`` (``--save-xml``, ``--import-slow-tests``,
``--import-disabled-tests``, ``--rerun-disabled-tests``, ``--use-pytest``, ``--subprocess``...)
and, for pytest, those of PyTorch's ``test/conftest.py`` and plugins (``--shard-id=1
--num-shards=1``, ``-vv -rfEX -p no:xdist -x --reruns=2``, ``--sc=KEY --print-items``). A file
migrated with ``--runtime distlint`` calls :func:`distlint.runtime.run_tests`, so it must take
the same command line: :func:`parse` splits it into what :mod:`launch` honours (as torch's
``run_tests`` does) and what it ignores, with a one-line note for each ignored flag.

Nothing here imports torch; :func:`load_test_lists` reaches torch's test helpers only when a
list is asked for.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import re
import warnings
from collections.abc import Mapping, Sequence
from typing import NoReturn

#: torch's defaults for the bare flags (common_utils.DEFAULT_*_TESTS_FILE).
DEFAULT_SLOW_TESTS_FILE = "slow_tests.json"
DEFAULT_DISABLED_TESTS_FILE = ".pytorch-disabled-tests.json"

# Why each flag that does not apply is ignored (the note run_tests prints).
_IGNORED = {
    "subprocess": "each test's ranks are processes of their own, or start from a fresh "
    "process's state on a continuous class's ranks",
    "jit_executor": "TorchScript executor modes do not apply to distributed tests",
    "test_bailouts": "TorchScript executor modes do not apply to distributed tests",
    "seed": "the ranks seed every test with torch's fixed seed (1234)",
    "run_parallel": "tests run in this process and their ranks; no test shards in subprocesses",
}

# PyTorch's pytest-only options (test/conftest.py, pytest_shard_custom, pytest-rerunfailures,
# pytest-flakefinder, pytest's own): meaningful only under --use-pytest. Name -> takes a value.
_PYTEST_ONLY = {
    "--sc": True,
    "--scs": True,
    "--rs": True,
    "--print-items": False,
    "--reruns": True,
    "--flake-finder": False,
    "--flake-runs": True,
    "-rfEX": False,
    "-p": True,
    "-m": True,
    "--junit-xml-reruns": True,
    "--use-main-module": False,
    "--tb": True,
    "--color": True,
}


@dataclasses.dataclass
class TorchFlags:
    """What run_tests() does with a command line torch's run_tests would accept."""

    argv: list  # what is left for unittest (or pytest under --use-pytest), argv[0] first
    save_xml: str | None = None  # folder for the JUnit XML report, as torch's --save-xml
    log_suffix: str = ""
    slow_tests_file: str | None = None
    disabled_tests_file: str | None = None
    rerun_disabled_tests: bool = False
    use_pytest: bool = False
    pytest_single_test: list | None = None
    discover_tests: bool = False
    repeat: int = 1
    showlocals: bool = False
    accept: bool = False
    shard_id: int = 1
    num_shards: int = 1
    notes: list = dataclasses.field(default_factory=list)  # one line per ignored flag


def report_source(environ: Mapping[str, str]) -> str:
    """torch's default --save-xml folder (``_get_test_report_path``)."""
    return os.path.join(
        "test-reports", environ.get("TEST_REPORT_SOURCE_OVERRIDE", "python-unittest")
    )


def _parser(environ: Mapping[str, str]) -> argparse.ArgumentParser:
    # torch's own definitions (common_utils.parse_cmd_line_args), plus the older --seed.
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--subprocess", action="store_true")
    parser.add_argument("--accept", action="store_true")
    parser.add_argument("--jit-executor", "--jit_executor", type=str)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--test-bailouts", "--test_bailouts", action="store_true")
    parser.add_argument("--use-pytest", action="store_true")
    # As torch: in CI ($CI set) the report is written without the flag.
    parser.add_argument(
        "--save-xml",
        nargs="?",
        type=str,
        const=report_source(environ),
        default=report_source(environ) if environ.get("CI") else None,
    )
    parser.add_argument("--discover-tests", action="store_true")
    parser.add_argument("--log-suffix", type=str, default="")
    parser.add_argument("--run-parallel", type=int, default=1)
    parser.add_argument("--import-slow-tests", type=str, nargs="?", const=DEFAULT_SLOW_TESTS_FILE)
    parser.add_argument(
        "--import-disabled-tests", type=str, nargs="?", const=DEFAULT_DISABLED_TESTS_FILE
    )
    parser.add_argument("--rerun-disabled-tests", action="store_true")
    parser.add_argument("--pytest-single-test", type=str, nargs=1)
    parser.add_argument("--showlocals", action=argparse.BooleanOptionalAction, default=False)
    parser.add_argument("--seed", type=int)
    return parser


def _shard_parser() -> argparse.ArgumentParser:
    # PyTorch's shard plugin (test/pytest_shard_custom.py): pytest's under --use-pytest,
    # honoured here otherwise.
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--shard-id", type=int, default=1)
    parser.add_argument("--num-shards", type=int, default=1)
    return parser


def parse(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> TorchFlags:
    """Split ``argv`` (``sys.argv``: the script first) into torch's flags and the rest.

    ValueError (one line) for a flag given a value it cannot take, e.g. ``--repeat x``.
    """
    environ = os.environ if environ is None else environ
    argv = list(argv)
    parser = _parser(environ)
    parser.error = _raise  # type: ignore[method-assign] # a one-line error, not argparse's exit
    args, rest = parser.parse_known_args(argv[1:])
    shards = argparse.Namespace(shard_id=1, num_shards=1)
    if not args.use_pytest:
        shard_parser = _shard_parser()
        shard_parser.error = _raise  # type: ignore[method-assign]
        shards, rest = shard_parser.parse_known_args(rest)
    flags = TorchFlags(
        argv=argv[:1],
        save_xml=args.save_xml,
        log_suffix=args.log_suffix,
        slow_tests_file=args.import_slow_tests,
        disabled_tests_file=args.import_disabled_tests,
        rerun_disabled_tests=args.rerun_disabled_tests,
        use_pytest=args.use_pytest,
        pytest_single_test=args.pytest_single_test,
        discover_tests=args.discover_tests,
        repeat=args.repeat,
        showlocals=args.showlocals,
        accept=args.accept,
        shard_id=shards.shard_id,
        num_shards=shards.num_shards,
    )
    if not 1 <= flags.shard_id <= flags.num_shards:
        raise ValueError(
            f"--shard-id {flags.shard_id} is not a shard of --num-shards {flags.num_shards}"
        )
    for name, why in _IGNORED.items():
        value = getattr(args, name)
        if value and not (name == "run_parallel" and value == 1):
            flag = "--" + name.replace("_", "-")
            flags.notes.append(f"{flag} ignored: {why}")
    flags.argv += rest if flags.use_pytest else _for_unittest(rest, flags.notes)
    return flags


def _raise(message: str) -> NoReturn:
    raise ValueError(message)


def _for_unittest(rest: list, notes: list) -> list:
    """unittest's share of the rest: pytest-only options dropped (noted), ``-x`` as ``-f``."""
    kept: list = []
    dropped: list = []
    items = iter(rest)
    for item in items:
        name, has_value, _ = item.partition("=")
        takes_value = _PYTEST_ONLY.get(name)
        if takes_value is not None:
            dropped.append(name)
            if takes_value and not has_value:
                next(items, None)
        elif item == "-x":  # run_test.py turns unittest's -f into pytest's -x
            kept.append("-f")
        else:
            kept.append(item)
    if dropped:
        notes.append(
            f"{' '.join(dict.fromkeys(dropped))} ignored: pytest options (no --use-pytest)"
        )
    return kept


def report_path(flags: TorchFlags, script: str, *, pytest: bool, stamp: str) -> str | None:
    """Where --save-xml writes, as torch's ``get_report_path``: ``DIR+SUFFIX/<file>/...xml``."""
    if not flags.save_xml:
        return None
    name = re.sub("/", ".", re.sub(r"\.py$", "", script))
    folder = os.path.join(flags.save_xml + flags.log_suffix, name)
    if pytest:
        folder = folder.replace("python-unittest", "python-pytest")
    return os.path.join(folder, f"TEST-{name}-{stamp}.xml")


def pytest_args(flags: TorchFlags, junit_xml: str | None) -> list:
    """The pytest command line torch's run_tests builds under --use-pytest.

    pytest's own ``--junit-xml`` writes the report (torch passes ``--junit-xml-reruns``, an
    option of PyTorch's conftest.py; pytest's works with it and without it), and the file is
    collected by path, not through PyTorch's ``--use-main-module``."""
    args = list(flags.argv)
    if flags.showlocals:
        args[1:1] = ["--showlocals", "--tb=long", "--color=yes"]
    if junit_xml is not None:
        args.append(f"--junit-xml={junit_xml}")
    if flags.pytest_single_test:
        args = list(flags.pytest_single_test) + args[1:]
    return args


def in_shard(test_id: str, script: str, flags: TorchFlags) -> bool:
    """Whether a test belongs to this shard: the hash rule of PyTorch's shard plugin on
    ``script::Class::test``, so the shards of a file split its tests between them."""
    if flags.num_shards <= 1:
        return True
    node = script + "::" + "::".join(test_id.split(".")[-2:])
    digest = int.from_bytes(hashlib.sha256(node.encode()).digest(), "little")
    return digest % flags.num_shards == flags.shard_id - 1


def load_test_lists(flags: TorchFlags) -> list:
    """Load the slow- and disabled-test lists into torch's test helpers, as torch's run_tests
    does (its disabled/slow check then reads them); the notes for what could not be loaded."""
    wanted = [
        ("slow_tests_dict", "SLOW_TESTS_FILE", flags.slow_tests_file),
        ("disabled_tests_dict", "DISABLED_TESTS_FILE", flags.disabled_tests_file),
    ]
    if not any(path for _, _, path in wanted) and not flags.rerun_disabled_tests:
        return []
    try:
        from torch.testing._internal import common_utils
    except Exception:  # noqa: BLE001 - numpy/expecttest missing: nothing reads the lists
        return ["--import-*-tests ignored: torch's test helpers cannot be imported"]
    common_utils.RERUN_DISABLED_TESTS = flags.rerun_disabled_tests
    for attribute, variable, path in wanted:
        if not path:
            continue
        if not os.path.exists(path):
            # torch's words and category: a missing list is not an error in CI.
            warnings.warn(
                f"{variable.split('_')[0].lower()} test file provided but not found: {path}",
                stacklevel=3,
            )
            continue
        with open(path) as handle:
            setattr(common_utils, attribute, json.load(handle))
        os.environ[variable] = path  # as torch: processes started later find the list too
    return []
