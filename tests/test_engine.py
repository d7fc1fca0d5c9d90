"""The multi-file engine: cache, worker pool, orchestration of fixes."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import (
    CLEAN_SOURCE,
    EXTERNAL_BASE_SOURCE,
    MISSPELLED_BASE_FIXED,
    MISSPELLED_BASE_SOURCE,
    write_tree,
)

from distlint import cache as cache_module
from distlint import engine
from distlint.cache import ENTRY_FORMAT, Cache, package_digest
from distlint.config import ConfigResolver, Overrides
from distlint.engine import CheckOptions, cache_root, check
from distlint.rules import rules_by_code

DL302_ONLY = Overrides(select=("DL302",))


def _options(tmp_path: Path, **kwargs) -> CheckOptions:
    kwargs.setdefault("cache_dir", tmp_path / "cache")
    kwargs.setdefault("overrides", DL302_ONLY)
    return CheckOptions(paths=[str(tmp_path / "src")], **kwargs)


def _summary(report) -> list:
    return [
        (o.path, [(f.line, f.col, f.code, f.message) for f in o.findings], o.result.error)
        for o in report.outcomes
    ]


@pytest.fixture
def tree(tmp_path):
    files = {f"src/test_bad_{i}.py": MISSPELLED_BASE_SOURCE for i in range(3)}
    files.update({f"src/test_ok_{i}.py": CLEAN_SOURCE for i in range(3)})
    files["src/test_syntax.py"] = "def broken(:\n"
    write_tree(tmp_path, files)
    return tmp_path


def test_second_run_is_answered_from_the_cache(tree):
    cold = check(_options(tree))
    warm = check(_options(tree))
    assert cold.cache_hits == 0
    assert warm.cache_hits == 7
    assert _summary(warm) == _summary(cold)
    assert [o.from_cache for o in warm.outcomes] == [True] * 7
    # Errors are cached too: the syntax error is reported again without parsing.
    assert warm.outcomes[-1].result.error.endswith(
        "test_syntax.py: error: syntax error at 1:12: invalid syntax"
    )


def test_editing_a_file_invalidates_only_that_file(tree):
    check(_options(tree))
    (tree / "src/test_ok_0.py").write_text(MISSPELLED_BASE_SOURCE)
    report = check(_options(tree))
    assert report.cache_hits == 6
    edited = next(o for o in report.outcomes if o.path.endswith("test_ok_0.py"))
    assert not edited.from_cache and [f.code for f in edited.findings] == ["DL302"]


def test_rule_set_and_config_are_part_of_the_key(tree):
    check(_options(tree))
    report = check(_options(tree, overrides=Overrides(select=("DL3",))))
    assert report.cache_hits == 0
    (tree / "src/pyproject.toml").write_text("[tool.distlint]\nrequire-main = 'never'\n")
    assert check(_options(tree, overrides=Overrides(select=("DL3",)))).cache_hits == 0


def test_distlint_source_is_part_of_the_key(tree, monkeypatch):
    check(_options(tree))
    monkeypatch.setattr(cache_module, "source_fingerprint", lambda: "edited-rule")
    assert check(_options(tree)).cache_hits == 0


def test_package_digest_covers_rules_but_not_the_runtime(tmp_path):
    write_tree(
        tmp_path,
        {
            "pkg/rules/dl999_x.py": "A = 1\n",
            "pkg/runtime/pool.py": "B = 1\n",
            "pkg/__init__.py": "",
        },
    )
    before = package_digest(tmp_path / "pkg")
    (tmp_path / "pkg/runtime/pool.py").write_text("B = 2\n")
    assert package_digest(tmp_path / "pkg") == before
    (tmp_path / "pkg/rules/dl999_x.py").write_text("A = 2\n")
    assert package_digest(tmp_path / "pkg") != before


def test_corrupt_or_foreign_entries_are_misses(tree):
    cold = check(_options(tree))
    entries = sorted((tree / "cache" / f"v{ENTRY_FORMAT}").glob("*.json"))
    assert len(entries) == 7
    entries[0].write_text("{not json")
    entries[1].write_bytes(b"\x00\xff")
    entries[2].write_text(json.dumps({"key": "other", "findings": [], "error": None}))
    entries[3].write_text(
        json.dumps({"key": json.loads(entries[4].read_text())["key"], "findings": [[1]]})
    )
    # Files settled for long are answered from the stat index without opening their entry:
    # without the index, every file goes through its entry, which this test is about.
    shutil.rmtree(tree / "cache" / f"v{ENTRY_FORMAT}-index")
    warm = check(_options(tree))
    assert warm.cache_hits == 3
    assert _summary(warm) == _summary(cold)
    assert check(_options(tree)).cache_hits == 7  # rewritten


def _settled_at_once(monkeypatch) -> None:
    """Trust every file's stat at once (as if it had not changed for seconds)."""
    monkeypatch.setattr(cache_module, "RACY_WINDOW_NS", -(10**18))


def test_unchanged_files_are_answered_by_their_stat_alone(tree, monkeypatch):
    _settled_at_once(monkeypatch)
    cold = check(_options(tree))
    shutil.rmtree(
        tree / "cache" / f"v{ENTRY_FORMAT}"
    )  # no entry left: only the stat index can answer
    warm = check(_options(tree))
    assert warm.cache_hits == 7 and _summary(warm) == _summary(cold)


def test_a_touched_but_unchanged_file_is_checked_by_content_then_trusted_again(tree, monkeypatch):
    _settled_at_once(monkeypatch)
    cold = check(_options(tree))
    touched = tree / "src/test_bad_0.py"
    later = touched.stat().st_mtime_ns + 10**10
    os.utime(touched, ns=(later, later))
    warm = check(_options(tree))  # the touched file goes through its entry: same bytes, a hit
    assert warm.cache_hits == 7 and _summary(warm) == _summary(cold)
    shutil.rmtree(tree / "cache" / f"v{ENTRY_FORMAT}")
    assert check(_options(tree)).cache_hits == 7  # its new stat was recorded


def test_an_edit_keeping_size_and_mtime_is_seen(tree, monkeypatch):
    _settled_at_once(monkeypatch)
    check(_options(tree))
    edited = tree / "src/test_ok_0.py"
    before = edited.stat()
    text = edited.read_text()
    edited.write_text(text.replace("True)\n", "True(\n"))  # same size, now a syntax error
    os.utime(edited, ns=(before.st_atime_ns, before.st_mtime_ns))  # the old mtime back
    assert (edited.stat().st_size, edited.stat().st_mtime_ns) == (
        before.st_size,
        before.st_mtime_ns,
    )
    report = check(_options(tree))
    assert report.cache_hits == 6
    outcome = next(o for o in report.outcomes if o.path.endswith("test_ok_0.py"))
    assert outcome.result.error is not None and not outcome.from_cache


def test_a_file_changed_just_before_it_was_read_is_not_trusted_by_its_stat(tree, monkeypatch):
    # Within the racy window an edit could keep every timestamp (a coarse filesystem clock):
    # such files are checked by content until they settle. (A window of years: every file is recent.)
    monkeypatch.setattr(cache_module, "RACY_WINDOW_NS", 10**18)
    check(_options(tree))
    shutil.rmtree(tree / "cache" / f"v{ENTRY_FORMAT}")
    assert check(_options(tree)).cache_hits == 0


def test_cache_directory_ignores_itself_and_leaves_no_temp_files(tree):
    check(_options(tree))
    cache_dir = tree / "cache"
    assert (cache_dir / ".gitignore").read_text().splitlines()[-1] == "*"
    assert (
        (cache_dir / "CACHEDIR.TAG")
        .read_text()
        .startswith("Signature: 8a477f597d28d172789f06886806bc55")
    )
    assert [
        p.name for p in (cache_dir / f"v{ENTRY_FORMAT}").iterdir() if not p.name.endswith(".json")
    ] == []


def test_no_cache_reads_and_writes_nothing(tree):
    report = check(_options(tree, use_cache=False))
    assert report.cache_hits == 0
    assert not (tree / "cache").exists()


def test_unwritable_cache_is_a_warning_not_a_failure(tree):
    (tree / "cache").write_text("a file where the cache directory should be")
    report = check(_options(tree))
    assert [d.level for d in report.diagnostics] == ["warning"]
    assert "cache not written" in report.diagnostics[0].message
    assert sum(len(o.findings) for o in report.outcomes) == 3


def test_cache_root_is_the_project_of_the_working_directory(tmp_path, monkeypatch):
    write_tree(
        tmp_path,
        {
            "proj/pyproject.toml": "",
            "proj/sub/pyproject.toml": "",
            "proj/sub/test_a.py": "",
            "other/test_b.py": "",
        },
    )
    resolver = ConfigResolver()
    monkeypatch.chdir(tmp_path / "proj")
    assert cache_root(["sub"], resolver) == tmp_path / "proj"
    monkeypatch.chdir(tmp_path / "other")
    assert cache_root(["../proj/sub/test_a.py"], resolver) == tmp_path / "proj" / "sub"
    assert cache_root(["."], resolver) == tmp_path / "other"  # no pyproject: the working directory


def test_default_cache_location_is_project_root(tmp_path, monkeypatch):
    write_tree(tmp_path, {"pyproject.toml": "", "tests/test_a.py": CLEAN_SOURCE})
    monkeypatch.chdir(tmp_path / "tests")
    check(CheckOptions(paths=["."]))
    assert (tmp_path / ".distlint_cache" / f"v{ENTRY_FORMAT}").is_dir()


def test_pool_gives_the_same_results_as_one_process(tmp_path):
    files = {
        f"src/test_{i:02d}.py": (MISSPELLED_BASE_SOURCE if i % 3 == 0 else CLEAN_SOURCE)
        for i in range(24)
    }
    files["src/test_syntax.py"] = "class (:\n"
    write_tree(tmp_path, files)
    serial = check(_options(tmp_path, jobs=1, use_cache=False))
    pooled = check(_options(tmp_path, jobs=2, use_cache=False))
    assert serial.workers == 0 and pooled.workers == 2
    assert _summary(pooled) == _summary(serial)
    assert sum(len(o.findings) for o in pooled.outcomes) == 8


def test_few_files_never_start_a_pool(tree):
    assert check(_options(tree, jobs=8, use_cache=False)).workers == 0


def test_warm_run_neither_imports_libcst_nor_starts_processes(tree):
    check(_options(tree))
    code = textwrap.dedent(f"""
        import sys
        from distlint.engine import CheckOptions, check
        from distlint.config import Overrides
        report = check(CheckOptions(paths=[{str(tree / "src")!r}], cache_dir={str(tree / "cache")!r},
                                    overrides=Overrides(select=("DL302",)), jobs=2))
        print(report.cache_hits, report.workers, "libcst" in sys.modules, "multiprocessing" in sys.modules)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["7", "0", "False", "False"], done.stderr


def test_a_cold_check_imports_libcst_codemod_only_to_fix(tree):
    # libcst.codemod (and the libcst.matchers it pulls in) takes longer to import than a
    # one-file check takes: only fixes, which add and remove imports, may load it.
    code = textwrap.dedent(f"""
        import sys
        from distlint.engine import CheckOptions, check
        report = check(CheckOptions(paths=[{str(tree / "src")!r}], use_cache=False, jobs=1))
        print(sum(len(o.findings) for o in report.outcomes) > 0, "libcst" in sys.modules,
              "libcst.codemod" in sys.modules, "libcst.matchers" in sys.modules)
        check(CheckOptions(paths=[{str(tree / "src")!r}], use_cache=False, jobs=1, mode="diff"))
        print("libcst.codemod" in sys.modules)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["True", "True", "False", "False", "True"], done.stderr


def test_fix_mode_uses_the_cache_for_files_without_fixable_findings(tree):
    check(_options(tree))
    report = check(_options(tree, mode="fix"))
    assert report.cache_hits == 4  # 3 clean + the syntax error; the 3 fixable files were fixed
    assert (tree / "src/test_bad_0.py").read_text() == MISSPELLED_BASE_FIXED
    assert [o.written for o in report.outcomes].count(True) == 3
    # Fixed files were cached under their new content.
    assert check(_options(tree)).cache_hits == 7


def test_diff_mode_keeps_original_and_fixed_bytes(tree):
    report = check(_options(tree, mode="diff"))
    changed = [o for o in report.outcomes if o.fixed is not None]
    assert len(changed) == 3
    assert all(o.original == MISSPELLED_BASE_SOURCE.encode() and not o.written for o in changed)
    assert (tree / "src/test_bad_0.py").read_text() == MISSPELLED_BASE_SOURCE


def test_a_crashing_rule_is_an_internal_error_for_that_file_only(tree, monkeypatch):
    rule = rules_by_code()["DL302"]

    def leave_Module(self, original_node):  # libcst finds visitor methods by __name__
        raise RuntimeError("boom")

    monkeypatch.setattr(rule, "leave_Module", leave_Module)
    report = check(_options(tree, use_cache=False, jobs=1))
    crashed = [o for o in report.outcomes if o.internal_error]
    assert [Path(o.path).name for o in crashed] == [
        "test_bad_0.py",
        "test_bad_1.py",
        "test_bad_2.py",
    ]
    assert crashed[0].result.error.endswith("error: internal error in distlint: RuntimeError: boom")
    assert report.internal_error
    assert len(report.outcomes) == 7


def test_concurrent_runs_share_the_cache_safely(tmp_path, monkeypatch):
    write_tree(
        tmp_path,
        {
            f"src/test_{i:02d}.py": (MISSPELLED_BASE_SOURCE if i % 2 else CLEAN_SOURCE)
            for i in range(30)
        },
    )
    command = [
        sys.executable,
        "-m",
        "distlint",
        "check",
        "--select",
        "DL302",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--jobs",
        "1",
        "src",
    ]
    runs = [
        subprocess.Popen(
            command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    outputs = [run.communicate(timeout=120) for run in runs]
    assert [run.returncode for run in runs] == [1, 1, 1]
    assert len({out for out, _ in outputs}) == 1
    assert outputs[0][0].splitlines()[-1] == "Found 15 errors in 15 files (15 fixable with --fix)."
    entries = list((tmp_path / "cache" / f"v{ENTRY_FORMAT}").iterdir())
    assert len(entries) == 30 and all(e.suffix == ".json" for e in entries)
    monkeypatch.chdir(tmp_path)
    assert (
        check(
            CheckOptions(paths=["src"], cache_dir=tmp_path / "cache", overrides=DL302_ONLY)
        ).cache_hits
        == 30
    )
    # The path shown is part of the key: another spelling of the paths is a miss.
    assert (
        check(
            CheckOptions(
                paths=[str(tmp_path / "src")], cache_dir=tmp_path / "cache", overrides=DL302_ONLY
            )
        ).cache_hits
        == 0
    )


def test_check_rejects_unknown_mode(tmp_path):
    with pytest.raises(ValueError):
        check(CheckOptions(paths=[str(tmp_path)], mode="rewrite"))


def test_engine_thresholds_are_sane():
    assert engine.MIN_FILES_FOR_POOL >= 2 * engine.MIN_FILES_PER_WORKER


def test_cache_entry_roundtrip(tmp_path):
    from distlint.config import Config
    from distlint.findings import FileResult, Finding

    cache = Cache(tmp_path / "c")
    key = cache.entry_key(Config(), "a.py", "digest")
    result = FileResult(
        "a.py", [Finding("a.py", 3, 4, "DL101", "no-main-block", "msg", True, 3, 9)]
    )
    cache.store("a.py", key, result)
    assert cache.load("a.py", key) == result
    assert cache.load("a.py", key + "x") is None
    assert cache.load("b.py", key) is None


# -- positions of reported nodes (distlint.positions) --------------------------------------------

POSITION_CASES = [
    "",
    "x = 1",  # no trailing newline
    "x = 1\r\ny = [\r\n    1,\r\n]\r\n",
    'class A:\n\tdef f(self):\n\t\treturn \'é\' + """a\nb"""\n\n\n# tail comment\n',
    "if True:\n    pass\nelse:\n    x = (1 +\n         2)\r",
    "@dec\nasync def f(*, a: int = 1) -> None:\n    async with x as y:\n        await z\n",
    "x = 1; y = 2\n@dec\nclass Ü(B):\n    name = 'é'  # ü\n\n\nclass Ü(B):\n    name = 'é'  # ü\n",
]


def _all_nodes(module):
    import libcst as cst

    nodes = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, node):
            nodes.append(node)
            return True

    module.visit(Collect())
    return nodes


_FIXTURE_FILES = sorted(Path(__file__).parent.parent.glob("fixtures/**/test_*.py"))


@pytest.mark.parametrize(
    "source",
    POSITION_CASES + [p.read_text() for p in _FIXTURE_FILES],
    ids=[f"case{i}" for i in range(len(POSITION_CASES))] + [p.name for p in _FIXTURE_FILES],
)
def test_node_spans_equal_position_provider(source):
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    from distlint.metadata import node_spans

    module = cst.parse_module(source)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    expected = wrapper.resolve(PositionProvider)
    nodes = _all_nodes(module)
    spans = node_spans(module, nodes)
    for node in nodes:
        want = expected[node]
        assert spans[node] == (
            want.start.line,
            want.start.column,
            want.end.line,
            want.end.column,
        ), node
    # Given the code, only the statements holding the requested nodes are generated: the
    # same spans, asked all at once, one top-level statement at a time, and for the module.
    assert node_spans(module, nodes, source) == spans
    for statement in module.body:
        below = _all_nodes(statement)[::7]
        assert node_spans(module, below, source) == {n: spans[n] for n in below}
    assert node_spans(module, [module], source) == {module: spans[module]}
    # With the ast tree, top-level classes take their spans from it (no code generation).
    tree = ast.parse(source)
    classes = [s for s in module.body if isinstance(s, cst.ClassDef)]
    assert node_spans(module, classes, source, tree) == {c: spans[c] for c in classes}
    for cls in classes:
        asked = [cls, *_all_nodes(cls)[1::5]]
        assert node_spans(module, asked, source, tree) == {n: spans[n] for n in asked}
    # Every class and nodes inside one of them, asked at once (the others need no walk).
    if classes:
        mixed = [*classes, *_all_nodes(classes[-1])[1::9]]
        assert node_spans(module, mixed, source, tree) == {n: spans[n] for n in mixed}


def test_node_spans_generate_only_the_statements_they_need():
    import libcst as cst

    from distlint.metadata import _spans_by_statement

    source = (
        "import os\n\n\nclass A:\n    x = 1\n\n\nclass B:\n    y = 2\n\n\nclass A:\n    x = 1\n"
    )
    module = cst.parse_module(source)
    first_a, b, second_a = module.body[1:]
    spans = _spans_by_statement(module, [b, b.body.body[0]], source)
    assert spans == {b: (8, 0, 9, 9), b.body.body[0]: (9, 4, 9, 9)}
    # The two classes A are the same text: which one is which needs the whole module.
    assert _spans_by_statement(module, [second_a], source) is None
    # Unless the ast tree gives a top-level class its span: nothing is generated then.
    assert _spans_by_statement(module, [second_a], source, ast.parse(source)) == {
        second_a: (12, 0, 13, 9)
    }
    # A module without its last newline: libcst's range for the module counts one.
    assert (
        _spans_by_statement(cst.parse_module("x = 1"), [cst.parse_module("x = 1")], "x = 1") is None
    )


def test_old_index_files_are_pruned_and_the_current_one_kept(tree):
    check(_options(tree))
    indexes = tree / "cache" / f"v{ENTRY_FORMAT}-index"
    (current,) = list(indexes.glob("*.json"))
    now = time.time()
    for number in range(12):  # settings keys of earlier versions and configs
        stale = indexes / f"stale{number:02d}.json"
        stale.write_text("{}")
        os.utime(stale, (now - 1000 + number, now - 1000 + number))
    (tree / "src" / "test_new.py").write_text("x = 1\n")  # a change, so this run writes its index
    check(_options(tree))
    kept = {path.name for path in indexes.glob("*.json")}
    assert len(kept) == cache_module.INDEXES_KEPT
    assert kept == {current.name} | {
        f"stale{number:02d}.json" for number in range(5, 12)
    }  # the newest


# -- results that depend on other files ----------------------------------------------------------


def _dl201(report) -> list:
    return [f.message for o in report.outcomes for f in o.findings if f.code == "DL201"]


def _external_from_cache(report) -> bool:
    [outcome] = [o for o in report.outcomes if o.path.endswith("test_external.py")]
    return outcome.from_cache


def test_a_result_that_read_another_module_is_rechecked_when_that_module_changes(
    tmp_path, monkeypatch
):
    """DL201 reads the module a base comes from (does it bring tests?): the cached result is
    reused only while that module, and the absence of the files looked for, are unchanged."""
    _settled_at_once(monkeypatch)
    write_tree(tmp_path, {"src/test_external.py": EXTERNAL_BASE_SOURCE})
    options = _options(tmp_path, overrides=Overrides(select=("DL201",)))

    unseen = check(options)  # shared_checks.py is not there yet: its tests cannot be seen
    [message] = _dl201(unseen)
    assert (
        "keep it per-test" in message
        and "cannot find the module of `shared_checks.SharedChecks`" in message
    )

    shared = tmp_path / "src" / "shared_checks.py"
    shared.write_text("class SharedChecks:\n    def test_shared(self):\n        pass\n")
    with_tests = check(options)
    assert not _external_from_cache(with_tests)
    [message] = _dl201(with_tests)
    # Read now, and fit to move with the class to reused workers (it needs no process of its own).
    assert "keep its own PG, on reused workers" in message
    assert "(SharedChecks defines 1 test: test_shared)" in message

    shutil.rmtree(tmp_path / "cache" / f"v{ENTRY_FORMAT}")  # only the stat index can answer now
    again = check(options)  # nothing changed: answered from the cache, by stat alone
    assert _external_from_cache(again) and _dl201(again) == _dl201(with_tests)

    shared.write_text("class SharedChecks:\n    def _shared(self):\n        pass\n")  # no test left
    later = shared.stat().st_mtime_ns + 10**10
    os.utime(shared, ns=(later, later))
    helper_only = check(options)
    assert not _external_from_cache(helper_only)
    [message] = _dl201(helper_only)
    assert "; migratable:" in message
    # The content entry checks the dependency too (the stat index gone).
    shutil.rmtree(tmp_path / "cache" / f"v{ENTRY_FORMAT}-index")
    shared.write_text("class SharedChecks:\n    def test_back(self):\n        pass\n")
    os.utime(shared, ns=(later + 10**10, later + 10**10))
    [message] = _dl201(check(options))
    assert "defines 1 test: test_back" in message


def test_a_dependency_that_just_changed_is_not_trusted_by_its_stat(tmp_path):
    """A module read within the racy window gets a stat no file matches: the next run re-checks."""
    write_tree(
        tmp_path,
        {
            "src/test_external.py": EXTERNAL_BASE_SOURCE,
            "src/shared_checks.py": "class SharedChecks:\n    pass\n",
        },
    )
    options = _options(tmp_path, overrides=Overrides(select=("DL201",)))
    assert not _external_from_cache(check(options))
    entries = [
        json.loads(p.read_text()) for p in (tmp_path / "cache" / f"v{ENTRY_FORMAT}").glob("*.json")
    ]
    [depends] = [
        entry["depends"] for entry in entries if entry["depends"]
    ]  # test_external.py's entry
    assert depends[str((tmp_path / "src" / "shared_checks.py").resolve())] == [-1]
    assert not _external_from_cache(check(options))


def _collector_state(task: int) -> tuple[int, bool]:
    import gc

    return task, gc.isenabled()


@pytest.mark.parametrize("jobs", [1, 2])
def test_each_file_runs_with_the_collector_paused_and_it_runs_again_after(jobs):
    import gc

    tasks = list(range(engine.MIN_FILES_FOR_POOL + 2 * engine.MIN_FILES_PER_WORKER))
    results, workers = engine.run_file_tasks(
        _collector_state,
        tasks,
        jobs,
        None,
        size=lambda task: task,
        crashed=lambda task: (task, True),
    )
    assert (workers > 1) == (jobs > 1)
    assert sorted(results) == [(task, False) for task in tasks]
    assert gc.isenabled()
