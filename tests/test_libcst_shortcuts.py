"""distlint.libcst_shortcuts: the same results as libcst's own code, and libcst's hooks back
after the block (also when it raises)."""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m
import pytest
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor
from libcst.matchers import _visitors
from libcst.metadata import MetadataWrapper

from distlint.libcst_shortcuts import _GATHERERS, matchers_gathered_once

MODULE = '''"""Doc."""
import os
import torch.distributed as dist
from torch.testing._internal.common_utils import run_tests, TestCase


class T(TestCase):
    @staticmethod
    def test_a():
        return dist.get_rank()
'''


def _with_imports_changed() -> str:
    module = cst.parse_module(MODULE)
    added = CodemodContext()
    AddImportsVisitor.add_needed_import(added, "distlint.runtime", "run_tests")
    AddImportsVisitor.add_needed_import(added, "sys")
    module = module.visit(AddImportsVisitor(added))
    wrapper = MetadataWrapper(module)
    removed = CodemodContext(wrapper=wrapper)
    RemoveImportsVisitor.remove_unused_import(removed, "os")
    RemoveImportsVisitor.remove_unused_import(
        removed, "torch.testing._internal.common_utils", "run_tests"
    )
    return wrapper.visit(RemoveImportsVisitor(removed)).code


def test_import_visitors_give_libcsts_result() -> None:
    expected = _with_imports_changed()
    assert "import os" not in expected and "import sys" in expected  # the edits happened
    with matchers_gathered_once():
        assert _with_imports_changed() == expected


class _Counter(m.MatcherDecoratableVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    @m.visit(m.Name())
    def seen(self, node: cst.Name) -> None:
        self.names.append(node.value)

    @m.call_if_inside(m.ClassDef())
    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        self.names.append(node.value)


class _Subclass(_Counter):
    """Inherits the decorated methods: still gathered."""


@pytest.mark.parametrize("visitor", [_Counter, _Subclass])
def test_decorated_visitors_are_gathered_as_before(visitor: type[_Counter]) -> None:
    module = cst.parse_module('X = "outside"\nclass C:\n    y = "inside"\n')
    plain = visitor()
    module.visit(plain)
    with matchers_gathered_once():
        shortcut = visitor()
        module.visit(shortcut)
    assert shortcut.names == plain.names
    assert '"inside"' in plain.names and '"outside"' not in plain.names


def test_the_gatherers_are_restored_even_when_the_block_raises() -> None:
    before = {name: getattr(_visitors, name) for name in _GATHERERS}
    with pytest.raises(RuntimeError), matchers_gathered_once():
        assert all(getattr(_visitors, name) is not before[name] for name in _GATHERERS)
        raise RuntimeError
    assert {name: getattr(_visitors, name) for name in _GATHERERS} == before
