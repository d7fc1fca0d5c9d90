"""``distlint migrate`` at tree scale: workers and the cache give what ``migrate_source`` gives."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import distlint.cache
import distlint.engine
from distlint.codemods.migrate_continuous import MigrationResult, migrate_source
from distlint.codemods.migrate_tree import TreeOptions, migrate_tree
from distlint.config import Config

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "migrate"
#: A base from another module (not a test file: the cache must notice its edits), a file using
#: it, a change, a refusal; and a syntax error.
FILES = (
    "common_gloo_bases.py",
    "test_external_base.py",
    "test_gloo_helper_pg.py",
    "test_needs_own_process.py",
)


def _same(a: MigrationResult, b: MigrationResult) -> bool:
    return (a.path, a.migrated, a.error, a.report.text()) == (
        b.path,
        b.migrated,
        b.error,
        b.report.text(),
    )


@pytest.fixture
def tree(tmp_path: Path, monkeypatch) -> Path:
    for name in FILES:
        shutil.copy(FIXTURES / name, tmp_path / name)
    (tmp_path / "test_broken.py").write_bytes(b"class Broken(:\n    pass\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_workers_give_file_by_file_results_in_path_order(tree: Path, monkeypatch) -> None:
    monkeypatch.setattr(distlint.engine, "MIN_FILES_FOR_POOL", 2)
    monkeypatch.setattr(distlint.engine, "MIN_FILES_PER_WORKER", 1)
    seen: list[tuple[int, int]] = []
    run = migrate_tree(
        TreeOptions(["."], jobs=2, use_cache=False, progress=lambda d, t: seen.append((d, t)))
    )
    assert run.workers == 2 and seen[-1] == (4, 4) and len(seen) == 4
    names = [result.path for result in run.results]
    assert names == sorted(names) and len(names) == 4  # not common_gloo_bases.py: no test_*
    for result in run.results:
        expected = migrate_source(Path(result.path).read_bytes(), result.path, Config())
        assert _same(result, expected), result.path
    assert sum(result.changed for result in run.results) == 2
    assert next(r for r in run.results if r.path == "test_broken.py").error.startswith(
        "test_broken.py: error: syntax error at 1:"
    )


def test_cache_gives_back_the_same_migration_and_notices_a_base_module_edit(
    tree: Path, monkeypatch
) -> None:
    # The files were written just now: within the racy window a dependency is never trusted, and
    # whether the second run falls in it would depend on the machine's speed. (The edit below
    # changes the base module's size, so its stat differs even within one timestamp tick.)
    monkeypatch.setattr(distlint.cache, "RACY_WINDOW_NS", -1)
    options = TreeOptions(["."], jobs=1, cache_dir=tree / "cache")
    first = migrate_tree(options)
    again = migrate_tree(options)
    assert first.cache_hits == 0 and again.cache_hits == 4
    assert all(_same(a, b) for a, b in zip(first.results, again.results))
    # test_external_base.py's result depends on the module its base comes from.
    base = tree / "common_gloo_bases.py"
    base.write_text(base.read_text() + "\n\ndef _unused():\n    pass\n")
    edited = migrate_tree(options)
    assert edited.cache_hits == 3
    assert all(_same(a, b) for a, b in zip(first.results, edited.results) if a.path != base.name)
