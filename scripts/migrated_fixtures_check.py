"""Run migrate fixtures original vs migrated (both runtimes) and compare outcomes; for gpu_check.sh.

    python scripts/migrated_fixtures_check.py FIXTURE.py [...]

Each fixture (from ``fixtures/migrate``) runs as a process through its own main block: the
original with distlint's fast start, then ``distlint migrate`` to each runtime. Outcomes
come from ``tests/outcome_recorder.py``'s JSON report. It holds when no run fails or
errors and every migrated run passes and skips the same test ids as the original (migrated
class names mapped back). On a GPU machine the classes' backend is NCCL (the device's
default): that is what ``scripts/gpu_check.sh`` checks with it. Exit 0 when it holds, 1 when not.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from outcome_recorder import FAST_START_FLAG, read_outcomes  # noqa: E402

from distlint.codemods.migrate_continuous import MigrateOptions, migrate_source  # noqa: E402
from distlint.codemods.verify import renamed_classes  # noqa: E402

RUNTIMES = ("distlint", "torch")
RUN_TIMEOUT_S = 600


def by_outcome(outcomes: Mapping[str, str], renamed: Mapping[str, str]) -> dict[str, Counter]:
    """outcome -> Counter of ``Class.test`` ids, migrated classes named as their originals."""
    found: dict[str, Counter] = {}
    for test_id, outcome in outcomes.items():
        cls, test = test_id.split(".")
        found.setdefault(outcome, Counter())[f"{renamed.get(cls, cls)}.{test}"] += 1
    return found


def compare(
    original: Mapping[str, str], migrated: Mapping[str, str], renamed: Mapping[str, str]
) -> list[str]:
    """What differs between an original's and a migrated file's outcomes (empty: the same)."""
    problems = []
    before, after = by_outcome(original, {}), by_outcome(migrated, renamed)
    if not original:
        problems.append("the original reported no test")
    for name, outcomes in (("original", before), ("migrated", after)):
        bad = {o: sorted(ids) for o, ids in outcomes.items() if o in ("failed", "error")}
        if bad:
            problems.append(f"{name} had {bad}")
    for outcome in ("passed", "skipped"):
        if before.get(outcome, Counter()) != after.get(outcome, Counter()):
            problems.append(
                f"{outcome} differ: original {sorted(before.get(outcome, ()))}, "
                f"migrated {sorted(after.get(outcome, ()))}"
            )
    return problems


def run(script: Path, fast_start: bool) -> dict[str, str]:
    report = script.with_suffix(".outcomes.jsonl")
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    )
    command = [
        sys.executable,
        str(ROOT / "tests" / "outcome_recorder.py"),
        *([FAST_START_FLAG] if fast_start else []),
        str(report),
        script.name,
    ]
    subprocess.run(
        command,
        cwd=script.parent,
        env=env,
        timeout=RUN_TIMEOUT_S,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return read_outcomes(report)


def check(fixture: Path, work: Path) -> list[str]:
    source = fixture.read_bytes()
    (work / "original").mkdir(parents=True)
    (work / "original" / fixture.name).write_bytes(source)
    original = run(work / "original" / fixture.name, fast_start=True)
    print(f"{fixture.name} original: {dict(Counter(original.values()))}")
    problems = []
    for runtime in RUNTIMES:
        result = migrate_source(source, fixture.name, options=MigrateOptions(runtime=runtime))
        if result.error or not result.changed:
            problems.append(f"{runtime}: not migrated ({result.error or 'nothing moved'})")
            continue
        (work / runtime).mkdir()
        (work / runtime / fixture.name).write_bytes(result.migrated)
        renamed = renamed_classes(result)
        migrated = run(work / runtime / fixture.name, fast_start=False)
        print(f"{fixture.name} --runtime {runtime}: {dict(Counter(migrated.values()))}")
        problems += [f"{runtime}: {p}" for p in compare(original, migrated, renamed)]
    return problems


def main(argv: list[str]) -> int:
    problems = []
    with tempfile.TemporaryDirectory(prefix="distlint-migrated-check-") as directory:
        for name in argv:
            fixture = Path(name) if Path(name).exists() else ROOT / "fixtures" / "migrate" / name
            problems += [
                f"{fixture.name}: {p}" for p in check(fixture, Path(directory) / fixture.stem)
            ]
    print(
        "== migrated fixtures: " + ("OK" if not problems else "FAILED\n  " + "\n  ".join(problems))
    )
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
