"""What the tests of the text ``distlint migrate`` leaves out of libcst's tree share
(``tests/test_frozen.py``, ``tests/test_body_stand_ins.py``): a migration with things left out
must be the one of the whole file."""

from __future__ import annotations

from pathlib import Path

from distlint.codemods.migrate_continuous import MigrateOptions, MigrationResult, _migrate
from distlint.config import Config

ROOT = Path(__file__).resolve().parents[1]

MAIN = """

if __name__ == "__main__":
    run_tests()
"""
#: The options whose migrations differ in what can be left out.
OPTIONS = {
    "distlint": MigrateOptions(),
    "torch": MigrateOptions(runtime="torch"),
    "no-reused-workers": MigrateOptions(reused_workers=False),
    "suffix": MigrateOptions(class_suffix="Shared"),
}


def same_as_whole(
    text: str,
    options: MigrateOptions = OPTIONS["distlint"],
    config: Config | None = None,
    path: str = "t.py",
) -> MigrationResult:
    """The migration of ``text`` with things left out, asserted equal to the whole file's."""
    source = text.encode()
    config = config or Config()
    left_out = _migrate(source, path, config, options, True)
    whole = _migrate(source, path, config, options, False)
    assert left_out.error == whole.error
    assert left_out.report.text() == whole.report.text()
    assert left_out.migrated == whole.migrated
    return left_out


def multi_process_fixtures() -> list[Path]:
    """The fixtures with a class that spawns ranks (the others have nothing to leave out)."""
    return sorted(
        p
        for p in (ROOT / "fixtures").rglob("*.py")
        if "_spawn_processes" in p.read_text(errors="replace")
        or "TestBase" in p.read_text(errors="replace")
    )
