"""distlint.imports: the one place imports are added and removed (lint fixes and the codemod)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path
from typing import cast

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper

from distlint.import_usage import ImportUsage, imported_names
from distlint.imports import ImportChanges, ImportSpec, add_imports, scheduled_words
from distlint.linter import apply_fixes
from distlint.rules.base import Fix


def _module(code: str) -> cst.Module:
    return cst.parse_module(textwrap.dedent(code))


def _code(code: str) -> str:
    return textwrap.dedent(code)


def test_an_addition_reuses_the_from_line_and_is_not_repeated():
    module = _module("""\
        from torch.testing._internal.common_utils import TestCase

        x = 1
        """)
    specs = [
        ImportSpec("torch.testing._internal.common_utils", "run_tests"),
        ImportSpec("torch.testing._internal.common_utils", "TestCase"),
        ImportSpec("torch.testing._internal.common_utils", "run_tests"),
    ]
    lines = add_imports(module, specs).code.splitlines()
    imports = [line for line in lines if "import" in line]
    assert len(imports) == 1 and imports[0].startswith(
        "from torch.testing._internal.common_utils import "
    )
    assert sorted(imports[0].split(" import ")[1].split(", ")) == ["TestCase", "run_tests"]
    assert lines[-1] == "x = 1"


def test_an_aliased_addition_and_a_module_import():
    module = _module("x = 1\n")
    result = add_imports(
        module,
        [ImportSpec("distlint.runtime", "run_tests", "distlint_run_tests"), ImportSpec("os")],
    )
    assert "from distlint.runtime import run_tests as distlint_run_tests\n" in result.code
    assert "import os\n" in result.code


def test_nothing_to_do_returns_the_same_module():
    module = _module("import os\n")
    assert ImportChanges().apply(module) is module


def test_a_removal_happens_only_when_the_import_is_unused():
    module = _module("""\
        import os
        import sys

        print(sys.argv)
        """)
    changes = ImportChanges().remove_if_unused(ImportSpec("os")).remove_if_unused(ImportSpec("sys"))
    assert changes.apply(module).code == _code("""\
        import sys

        print(sys.argv)
        """)


def test_two_aliases_of_one_module_are_both_removed():
    # RemoveImportsVisitor keeps one alias per module in a pass: each alias gets its own.
    module = _module("""\
        import torch.distributed as c10d
        import torch.distributed as dist

        x = 1
        """)
    changes = ImportChanges()
    changes.remove_if_unused(ImportSpec("torch.distributed", asname="c10d"))
    changes.remove_if_unused(ImportSpec("torch.distributed", asname="dist"))
    assert changes.apply(module).code.strip() == "x = 1"


def test_the_imports_of_a_dropped_node_go_unless_still_used():
    module = _module("""\
        import os
        import sys
        from shutil import rmtree

        def cleanup():
            rmtree(os.getcwd())
            sys.exit(0)

        print(sys.argv)
        """)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    function = module.body[3]
    assert isinstance(function, cst.FunctionDef)
    changes = ImportChanges(wrapper).remove_used_by(function)
    without_function = module.with_changes(body=[*module.body[:3], module.body[4]])
    assert changes.apply(without_function).code == _code("""\
        import sys

        print(sys.argv)
        """)


def test_removing_by_node_needs_the_wrapper_of_that_node():
    module = _module("import os\nos.getcwd()\n")
    with pytest.raises(ValueError, match="metadata is not computed"):
        ImportChanges().remove_used_by(module.body[1])


def test_removing_an_import_statement_by_node_needs_no_wrapper():
    module = _module("import os\nimport sys\nsys.exit()\n")
    import_os, import_sys = (
        cast(cst.SimpleStatementLine, line).body[0] for line in module.body[:2]
    )
    changes = ImportChanges().remove_used_by(import_os).remove_used_by(import_sys)
    assert changes.apply(module).code == "import sys\nsys.exit()\n"


def test_additions_and_removals_in_one_go():
    module = _module("""\
        from torch.testing._internal.common_distributed import MultiProcessTestCase

        class T:
            pass
        """)
    changes = ImportChanges()
    changes.add(ImportSpec("distlint.runtime", "MultiProcContinuousTest"))
    changes.remove_if_unused(
        ImportSpec("torch.testing._internal.common_distributed", "MultiProcessTestCase")
    )
    assert changes.apply(module).code == _code("""\
        from distlint.runtime import MultiProcContinuousTest

        class T:
            pass
        """)


def test_lint_fixes_add_and_remove_imports_through_the_same_helper():
    module = _module("""\
        import os
        import sys

        sys.exit(77)
        """)
    call = module.body[2].body[0].value  # type: ignore[attr-defined]
    fix = Fix(
        edits=((call.args[0].value, cst.parse_expression('TEST_SKIPS["no_cuda"].exit_code')),),
        add_imports=(ImportSpec("torch.testing._internal.common_distributed", "TEST_SKIPS"),),
        remove_imports=(ImportSpec("os"),),
    )
    assert apply_fixes(module, [fix]).code == _code("""\
        import sys
        from torch.testing._internal.common_distributed import TEST_SKIPS

        sys.exit(TEST_SKIPS["no_cuda"].exit_code)
        """)


# -- the import lines alone give what the whole module gives ----------------------------------
#: Modules and the removals scheduled on them: ``apply`` edits the import lines alone (an ``ast``
#: pass says what is unused), and must give exactly what libcst's visitors on the whole module give.
SHAPES = {
    "unused from-import in a parenthesised list": (
        "from a import (\n    x,\n    y,\n)\nfrom b import z\n\nprint(y)\n",
        [("a", "x", None), ("b", "z", None)],
    ),
    "used names stay": ("import os\nimport sys\n\nos.getcwd()\nsys.exit\n", [("os", None, None)]),
    "dotted import bound by its root": (
        "import torch\nimport torch.distributed\n\ntorch.ones(1)\n",
        [("torch.distributed", None, None)],
    ),
    "aliases of one module": (
        "import torch.distributed as c10d\nimport torch.distributed as dist\n\ndist.barrier()\n",
        [("torch.distributed", None, "c10d"), ("torch.distributed", None, "dist")],
    ),
    "exported and string-annotated names": (
        "import os\nimport sys\nimport re\n__all__ = ['os']\nx: 'sys.Thing' = 1\n",
        [("os", None, None), ("sys", None, None), ("re", None, None)],
    ),
    "a comment above a removed line": (
        '"""Doc."""\n# why\nimport os\nimport sys\n\nsys.exit\n',
        [("os", None, None)],
    ),
    "two imports on one line": ("import os; import sys\n\nsys.exit\n", [("os", None, None)]),
    "an import below the top level too": (
        "import os\n\ndef f():\n    import os\n    return 1\n",
        [("os", None, None)],
    ),
    "guarded imports": (
        "try:\n    import numpy\nexcept ImportError:\n    numpy = None\n",
        [("numpy", None, None)],
    ),
    "TypeVar bound in a string": (
        "from typing import TypeVar\nimport torch\nT = TypeVar('T', bound='torch.nn.Module')\n",
        [("torch", None, None)],
    ),
    "TypeVar constraint in a string": (
        "from typing import TypeVar\nimport torch\nT = TypeVar('T', 'torch.Tensor', int)\n",
        [("torch", None, None)],
    ),
    "a __future__ import stays": (
        "from __future__ import annotations\nimport os\n\nx = 1\n",
        [("__future__", "annotations", None), ("os", None, None)],
    ),
    "aliased and dotted from-imports": (
        "from a.b import c as d, e\nfrom f.g import h\n\nprint(e)\n",
        [("a.b", "c", "d"), ("f.g", "h", None)],
    ),
    "comments on the lines": (
        "import os  # noqa: F401\nfrom a import (  # keep\n    x,  # one\n    y,\n)\n\nprint(y)\n",
        [("os", None, None), ("a", "x", None)],
    ),
}


def test_a_local_that_shadows_an_import_keeps_it_where_libcst_would_drop_it():
    """No scopes in the ``ast`` pass: the documented difference, in the safe direction."""
    code = "import os\n\ndef f():\n    os = 1\n    return os\n"
    changes = ImportChanges().remove_if_unused(ImportSpec("os"))
    assert changes.apply(cst.parse_module(code)).code == code
    assert "import os" not in _whole_module(cst.parse_module(code), [("os", None, None)]).code


def _whole_module(module: cst.Module, scheduled) -> cst.Module:
    from libcst.codemod import CodemodContext
    from libcst.codemod.visitors import RemoveImportsVisitor

    for item in scheduled:  # one pass each: libcst keeps one alias per module in a pass
        wrapper = MetadataWrapper(module)
        context = CodemodContext(wrapper=wrapper)
        context.scratch[RemoveImportsVisitor.CONTEXT_KEY] = [item]
        module = wrapper.visit(RemoveImportsVisitor(context))
    return module


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_removals_on_the_import_lines_equal_libcsts_on_the_whole_module(shape):
    code, scheduled = SHAPES[shape]
    changes = ImportChanges()
    for module, obj, asname in scheduled:
        changes.remove_if_unused(ImportSpec(module, obj, asname))
    assert (
        changes.apply(cst.parse_module(code)).code
        == _whole_module(cst.parse_module(code), scheduled).code
    )


ADDITIONS = {
    "after the docstring and imports": '"""Doc."""\nimport os\n\n\nclass A:\n    pass\n',
    "a comment on the first statement": "import os\n# note\nx = 1\n",
    "no imports": "x = 1\n",
    "only imports": "import os\n",
    "an existing from line grows": "from m import b\n\nb()\n",
    "empty module": "",
    "a future import first": "from __future__ import annotations\nimport os\n\nx = 1\n",
    "a parenthesised from line": "from m import (\n    b,  # kept\n    c as e,\n)\nimport n.sub as s\n",
    "an alias already there": "from n import c as d\nfrom . import m\n",
    "strict flag and comments": "__strict__ = True\n# top\nimport os  # why\n\n\ndef f():\n    import m\n",
}


@pytest.mark.parametrize("shape", sorted(ADDITIONS))
def test_additions_on_the_top_block_equal_libcsts_on_the_whole_module(shape):
    from libcst.codemod import CodemodContext
    from libcst.codemod.visitors import AddImportsVisitor

    specs = [ImportSpec("m", "a"), ImportSpec("os"), ImportSpec("n", "c", "d")]
    context = CodemodContext()
    for spec in specs:
        AddImportsVisitor.add_needed_import(context, spec.module, spec.obj, spec.asname)
    module = cst.parse_module(ADDITIONS[shape])
    assert add_imports(module, specs).code == module.visit(AddImportsVisitor(context)).code


def test_the_unused_import_pass_reads_kept_statements_from_their_ast_and_parses_new_ones():
    import ast

    code = "import os\nimport sys\n\nx = os.sep\n"
    module = cst.parse_module(code)
    tree = ast.parse(code)
    parsed = {id(statement): [twin] for statement, twin in zip(module.body, tree.body)}

    def remove_both(edited: cst.Module, originals) -> str:
        changes = ImportChanges(originals=originals)
        changes.remove_if_unused(ImportSpec("os")).remove_if_unused(ImportSpec("sys"))
        return changes.apply(edited).code

    def originals(node: cst.CSTNode):
        return parsed.get(id(node))

    # The kept line is read from its ast statement: os is still used, sys is not.
    assert remove_both(module, originals) == "import os\n\nx = os.sep\n"
    # What the ast statements say is what counts (here they claim the line reads sys too).
    parsed[id(module.body[2])] = ast.parse("x = os.sep, sys").body
    assert remove_both(module, originals) == code
    # A statement the edits made has no ast statements: its own code is parsed.
    edited = module.with_changes(body=[*module.body[:2], cst.parse_statement("y = sys.path\n")])
    assert remove_both(edited, originals) == "import sys\ny = sys.path\n"
    assert remove_both(edited, None) == remove_both(edited, originals)


def test_only_code_that_may_mention_a_scheduled_import_is_read():
    from distlint.imports import may_mention, scheduled_words

    aliased = scheduled_words([("torch.distributed", None, "dist")])
    assert may_mention("y = dist.rank\n", aliased)
    assert may_mention("def f():\n    import torch.distributed\n", aliased)  # imported again
    assert may_mention("y: 'dist.ProcessGroup'\n", aliased)  # a string annotation
    assert not may_mention("distx = 1\ntorch.cuda\n", aliased)
    assert may_mention("y = '\\x64ist'\n", aliased)  # escapes: ast decides
    assert may_mention("ｄｉｓｔ = 1\n", aliased)  # ast normalises the name to dist
    plain = scheduled_words([("torch", None, None), ("m", "obj", None)])
    assert may_mention("torch.cuda.synchronize()\n", plain)
    assert may_mention("obj()\n", plain)
    assert not may_mention("m.other()\n", plain)


def test_an_import_also_made_below_the_top_level_is_left_to_libcsts_scopes():
    import ast

    code = "import torch.distributed as dist\n\n\ndef f():\n    import torch.distributed\n"
    module = cst.parse_module(code)
    parsed = {id(s): [t] for s, t in zip(module.body, ast.parse(code).body)}
    changes = ImportChanges(originals=lambda node: parsed.get(id(node)))
    changes.remove_if_unused(ImportSpec("torch.distributed", None, "dist"))
    scheduled = [("torch.distributed", None, "dist")]
    assert changes.apply(module).code == _whole_module(cst.parse_module(code), scheduled).code


def test_imported_names_come_in_ast_walks_order_without_walking_expressions():
    import ast
    import sys

    from distlint.import_usage import imported_names

    code = (
        "import a\n"
        "try:\n    import b\nexcept ImportError:\n    from c import d as e\nelse:\n    import f\n"
        "class K:\n    import g\n    def m(self):\n        from h import i\n"
        "if x:\n    import j\nfinally_ = 1\nimport k.l as m\n"
    )
    if sys.version_info >= (3, 10):
        code += "match y:\n    case 1:\n        import n\n"
    tree = ast.parse(code)
    expected = [
        alias.name if isinstance(node, ast.Import) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    ]
    found = [entry.scheduled[1] or entry.scheduled[0] for entry in imported_names(tree)]
    assert found == expected
    assert [entry.top_level for entry in imported_names(tree)][:2] == [True, True]


def _pieces(text: str) -> list[tuple[str, ast.stmt]]:
    """Each top-level statement with its text (from its first decorator to its last line)."""
    lines = text.splitlines(keepends=True)
    pieces = []
    for statement in ast.parse(text).body:
        first = min(
            [statement.lineno, *(d.lineno for d in getattr(statement, "decorator_list", ()))]
        )
        pieces.append(("".join(lines[first - 1 : statement.end_lineno]).rstrip("\r\n"), statement))
    return pieces


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_used_among_reads_what_the_whole_walk_reads_member_by_member(newline):
    """The classes left out of libcst's tree are read a member at a time, and only where a
    scheduled name is written: the same answer as walking them whole, on every fixture."""
    root = Path(__file__).resolve().parents[1] / "fixtures"
    compared = 0
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace").replace("\n", newline)
        try:
            ast.parse(text)
        except SyntaxError:
            continue
        scheduled = [entry.scheduled for entry in imported_names(text)]
        if not scheduled:
            continue
        pieces = [
            (code, s)
            for code, s in _pieces(text)
            if not isinstance(s, (ast.Import, ast.ImportFrom))
        ]
        whole = ImportUsage.of_statements([s for _, s in pieces])
        expected = {item for item in scheduled if whole.in_use(item)}
        assert ImportUsage.used_among(pieces, scheduled, scheduled_words) == expected, path
        compared += 1
    assert compared > 50
