"""The cheap name resolver gives libcst's ``QualifiedNameProvider`` answers, and nothing downstream changes.

(1) per shape: the resolver's names for a node == the provider's for the same node;
(2) every name-like node of every fixture and rule example, compared with the provider;
(3) differential: ``analyze_module`` and ``lint_source`` (every fixture, every rule example) and
    ``migrate_source`` (fixtures/migrate) give identical results with the resolver and with the real
    provider (``use_libcst_provider``).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, QualifiedNameProvider, QualifiedNameSource

from distlint.analysis.names import qualified_name_map, qualified_names, use_libcst_provider
from distlint.analysis.names.resolver import NameResolver, build_resolver
from distlint.codemods.migrate_continuous import migrate_source
from distlint.config import Config, ConfigResolver
from distlint.linter import lint_source
from distlint.rules import all_rules

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted((ROOT / "fixtures").rglob("test_*.py"))


def _provider(module: cst.Module):
    return MetadataWrapper(module, unsafe_skip_copy=True).resolve(QualifiedNameProvider)


def _names(found) -> frozenset:
    if found is None:
        return frozenset()
    if callable(found):
        found = found()
    return frozenset((q.name, q.source) for q in found)


def _written(module: cst.Module) -> dict[str, list[cst.CSTNode]]:
    """Name/Attribute nodes by how they are written (``dist.init_process_group``)."""
    found: dict[str, list[cst.CSTNode]] = {}

    class Collect(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, (cst.Name, cst.Attribute)):
                name = cst.helpers.get_full_name_for_node(node)
                if name:
                    found.setdefault(name, []).append(node)
            return True

    module.visit(Collect())
    return found


def _resolve(source: str, written: str, occurrence: int):
    """(resolver names, provider names) of the ``occurrence``-th node written as ``written``."""
    module = cst.parse_module(textwrap.dedent(source))
    node = _written(module)[written][occurrence]
    return _names(NameResolver(module).get(node)), _names(_provider(module).get(node))


SHAPES = {
    "import-as": (
        "import torch.distributed as dist\ndist.init_process_group('gloo')\n",
        "dist.init_process_group",
        {"torch.distributed.init_process_group"},
    ),
    "import-dotted-binds-head": (
        "import torch.distributed\ntorch.distributed.barrier()\n",
        "torch.distributed.barrier",
        {"torch.distributed.barrier"},
    ),
    "import-dotted-head-alone": (
        "import torch.distributed\ntorch.cuda\n",
        "torch.cuda",
        {"torch.cuda"},
    ),
    "from-import-as": (
        "from torch.distributed import init_process_group as ipg\nipg()\n",
        "ipg",
        {"torch.distributed.init_process_group"},
    ),
    "relative": ("from .common import helper\nhelper()\n", "helper", {".common.helper"}),
    "relative-dots-only": (
        "from .. import common\ncommon.helper()\n",
        "common.helper",
        {"..common.helper"},
    ),
    "star-import": (
        "from torch.distributed import *\ninit_process_group()\n",
        "init_process_group",
        set(),
    ),
    "import-in-method": (
        """
        class T:
            def test_a(self):
                import torch.distributed as c10d
                c10d.init_process_group("gloo")
        """,
        "c10d.init_process_group",
        {"torch.distributed.init_process_group"},
    ),
    "import-in-try": (
        """
        try:
            from torch.testing._internal.common_distributed import MultiProcessTestCase as Base
        except ImportError:
            from distlint.runtime import MultiProcessTestCase as Base
        class T(Base):
            pass
        """,
        "Base",
        {
            "torch.testing._internal.common_distributed.MultiProcessTestCase",
            "distlint.runtime.MultiProcessTestCase",
        },
    ),
    "import-in-if": (
        """
        if True:
            import torch.distributed as dist
        dist.barrier()
        """,
        "dist.barrier",
        {"torch.distributed.barrier"},
    ),
    "module-def": ("def helper():\n    pass\nhelper()\n", "helper", {"helper"}),
    "module-class": ("class Base:\n    pass\nclass T(Base):\n    pass\n", "Base", {"Base"}),
    "builtin": ("print(len([]))\n", "len", {"builtins.len"}),
    "attribute-chain": (
        "import torch.distributed as dist\ndist.distributed_c10d.init_process_group()\n",
        "dist.distributed_c10d.init_process_group",
        {"torch.distributed.distributed_c10d.init_process_group"},
    ),
    "shadowed-by-parameter": (
        """
        import torch.distributed as dist
        def f(dist):
            dist.barrier()
        """,
        "dist.barrier",
        {"f.<locals>.dist.barrier"},
    ),
    "shadowed-by-local-assignment": (
        """
        import torch.distributed as dist
        def f():
            dist = object()
            dist.barrier()
        """,
        "dist.barrier",
        {"f.<locals>.dist.barrier"},
    ),
    "read-before-local-assignment": (
        """
        import os
        def f():
            os.environ
            os = None
        """,
        "os.environ",
        {"f.<locals>.os.environ"},
    ),
    "name-read-before-rebinding": (
        """
        import os
        def f():
            os
            os = None
        """,
        "os",
        {"os"},
        1,
    ),  # the read (0 is the import)
    "method-local-in-class": (
        """
        class T:
            def helper(self):
                pass
            def test(self):
                helper()
        """,
        "helper",
        set(),
    ),
    "global-in-function": (
        """
        def f():
            global pg
            pg = 1
        pg
        """,
        "pg",
        {"pg"},
    ),
    "comprehension-variable": (
        "import os\n[os for os in range(3)]\n",
        "os",
        {"<comprehension>.os"},
    ),
    "lambda-parameter": (
        "import os\nf = lambda os: os.environ\n",
        "os.environ",
        {"<locals>.os.environ"},
    ),
    "except-as": (
        """
        import e
        try:
            pass
        except Exception as e:
            e.args
        """,
        "e.args",
        {"e.args"},
    ),
    "unbound": ("undefined_thing()\n", "undefined_thing", set()),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_shape_resolves_like_the_provider(shape):
    source, written, expected, *occurrence = SHAPES[shape]
    mine, provider = _resolve(source, written, occurrence[0] if occurrence else -1)
    assert mine == provider
    # and the provider says what we think it says, so the shape tests what its name says
    assert {name for name, _ in provider} == expected


def test_attribute_attr_and_keywords_have_no_names():
    module = cst.parse_module("import os\nos.path.join(a=os.sep)\n")
    call = module.body[1].body[0].value
    resolver, provider = NameResolver(module), _provider(module)
    for node in (call.func.attr, call.func.value.attr, call.args[0].keyword):
        assert resolver.get(node) == resolver[node] == set()
        assert _names(provider[node]) == frozenset()
    assert _names(resolver[call.func]) == {("os.path.join", QualifiedNameSource.IMPORT)}


def test_type_parameters_fall_back_to_the_provider():
    module = cst.parse_module("import os\ndef f[T](x: T) -> T:\n    return os.sep\n")
    names = build_resolver(module)
    assert not isinstance(names, NameResolver)
    node = _written(module)["os.sep"][0]
    assert _names(names.get(node)) == _names(_provider(module).get(node))
    assert {name for name, _ in _names(names.get(node))} == {"os.sep"}


def test_map_is_cached_per_wrapper():
    wrapper = MetadataWrapper(cst.parse_module("import os\n"), unsafe_skip_copy=True)
    assert qualified_name_map(wrapper) is qualified_name_map(wrapper)
    with use_libcst_provider():
        assert not isinstance(qualified_name_map(wrapper), NameResolver)


# -- every node of every fixture and example ------------------------------------------------------


def _example_sources() -> list[str]:
    return [
        textwrap.dedent(example.code)
        for rule in all_rules()
        for example in (*rule.VALID, *rule.INVALID)
    ]


def _sources() -> list[pytest.param]:
    return [pytest.param(path.read_text(), id=str(path.relative_to(ROOT))) for path in FIXTURES] + [
        pytest.param(source, id=f"example-{index}")
        for index, source in enumerate(_example_sources())
    ]


@pytest.mark.parametrize("source", _sources())
def test_every_node_resolves_like_the_provider(source):
    module = cst.parse_module(source)
    provider = _provider(module)
    resolver = NameResolver(module)
    compared = 0
    for node, found in provider.items():
        if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
            continue  # string annotations are not resolved (documented); no rule asks about them
        assert _names(resolver.get(node)) == _names(found), cst.helpers.get_full_name_for_node(node)
        compared += 1
    assert compared > 0
    # and no names for nodes the provider knows nothing about
    assert all(not resolver.get(node) for node in resolver if node not in provider)


# -- differential: what the rules and the migrator conclude ---------------------------------------


def _fixture_config(path: Path) -> Config:
    return ConfigResolver().for_file(path).config


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(ROOT)))
def test_lint_identical_with_the_provider(path):
    """The libcst rules read names through the cheap resolver: the same findings as libcst's
    provider gives. (The PG analysis reads the ``ast`` tree's names, which
    ``tests/test_ast_names.py`` compares with these node for node.)"""
    source = path.read_bytes()
    config = _fixture_config(path)
    linted = lint_source(source, str(path), config)
    with use_libcst_provider():
        linted_real = lint_source(source, str(path), config)
    assert linted.findings == linted_real.findings and linted.error == linted_real.error


MIGRATE_FIXTURES = sorted((ROOT / "fixtures" / "migrate").glob("test_*.py"))


@pytest.mark.parametrize("path", MIGRATE_FIXTURES, ids=lambda p: p.name)
def test_migration_identical_with_the_provider(path):
    """The migrator reads names through the same map (codemods/plan.py): same plan, same output."""
    source = path.read_bytes()
    config = _fixture_config(path)
    migrated = migrate_source(source, str(path), config)
    with use_libcst_provider():
        migrated_real = migrate_source(source, str(path), config)
    assert repr(migrated) == repr(migrated_real)


def test_differential_covers_per_test_pg_files():
    """The differential above is not vacuous: fixtures with PG findings are among them."""
    codes = {
        finding.code
        for path in FIXTURES
        for finding in lint_source(path.read_bytes(), str(path), _fixture_config(path)).findings
    }
    assert {"DL201", "DL202"} <= codes


@pytest.mark.parametrize("rule", all_rules(), ids=lambda rule: rule.code)
def test_rule_examples_identical_with_the_provider(rule):
    for example in (*rule.VALID, *rule.INVALID):
        source = textwrap.dedent(example.code).encode()
        config = Config.from_table({"select": [rule.code], **example.config}, source="<example>")
        with use_libcst_provider():
            linted_real = lint_source(source, example.path, config, [rule], prescreen=False)
        assert (
            lint_source(source, example.path, config, [rule], prescreen=False).findings
            == linted_real.findings
        )


def test_qualified_names_helper_reads_the_resolver():
    module = cst.parse_module("import torch.distributed as dist\ndist.init_process_group('gloo')\n")
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    call = module.body[1].body[0].value
    assert qualified_names(qualified_name_map(wrapper), call) == {
        "torch.distributed.init_process_group"
    }
