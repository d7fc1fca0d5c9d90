"""``distlint.syntax.ast_names`` names every stdlib-``ast`` name, attribute and call as
``distlint.analysis.names`` names the same node of the libcst tree.

(1) parity: every fixture, every rule example, a few torch test helpers and a source of edge
    cases, node for node, paired by source span (libcst's ``PositionProvider``; ``ast``
    columns are UTF-8 bytes), every ast node paired;
(2) the libcst quirks the port mirrors, spelled out (each also checked for parity);
(3) the parity check fails when an answer differs, and the module never imports libcst.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from distlint.analysis.names import node_names, qualified_name_map, qualified_names
from distlint.rules import all_rules
from distlint.syntax.ast_names import AstNames, Unsupported, build_ast_names

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted((ROOT / "fixtures").rglob("*.py"))
#: Large, varied real sources: classes, decorators, comprehensions, conditional imports.
TORCH_SOURCES = (
    "testing/_internal/common_distributed.py",
    "testing/_internal/distributed/_tensor/common_dtensor.py",
    "testing/_internal/common_fsdp.py",
)
_KINDS: dict[type[cst.CSTNode], type[ast.expr]] = {
    cst.Name: ast.Name,
    cst.Attribute: ast.Attribute,
    cst.Call: ast.Call,
}
_NEWLINE = re.compile("\r\n|\r|\n")  # ast's line breaks (str.splitlines has more)


@dataclass
class Comparison:
    #: ast Names, Attributes and Calls in the module; nodes whose answers were compared.
    nodes: int = 0
    compared: int = 0
    problems: list[str] = field(default_factory=list)


class _NotExpressions(cst.CSTVisitor):
    """libcst Names and Attributes that ``ast`` keeps as strings (a def's name, an imported
    module, a keyword, an attribute's ``attr``) or as constants (``True``): no ast node."""

    def __init__(self) -> None:
        self.found: set[cst.CSTNode] = set()

    def _add(self, node: cst.CSTNode | None) -> None:
        if node is None:
            return
        self.found.add(node)
        for child in node.children:
            self._add(child)

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in ("True", "False", "None"):
            self.found.add(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._add(node.name)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._add(node.name)

    def visit_Param(self, node: cst.Param) -> None:
        self._add(node.name)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._add(node.attr)

    def visit_Arg(self, node: cst.Arg) -> None:
        self._add(node.keyword)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        self._add(node.name)
        self._add(node.asname)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self._add(node.module)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        self._add(node.name)

    def visit_NameItem(self, node: cst.NameItem) -> None:
        self._add(node.name)

    def visit_MatchAs(self, node: cst.MatchAs) -> None:
        self._add(node.name)

    def visit_MatchStar(self, node: cst.MatchStar) -> None:
        self._add(node.name)

    def visit_MatchMapping(self, node: cst.MatchMapping) -> None:
        self._add(node.rest)

    def visit_MatchKeywordElement(self, node: cst.MatchKeywordElement) -> None:
        self._add(node.key)


def compare(source: bytes, label: str) -> Comparison:
    """Both answers for every libcst Name/Attribute/Call, paired with the ast node of the
    same kind and span; a problem for each difference and each node left unpaired."""
    module = cst.parse_module(source)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    names = qualified_name_map(wrapper)
    positions = wrapper.resolve(PositionProvider)
    tree = ast.parse(source)
    mine = build_ast_names(tree)
    lines = _NEWLINE.split(source.decode(module.encoding))

    def column(line: int, offset: int) -> int:
        text = lines[line - 1]
        return offset if text.isascii() else len(text.encode()[:offset].decode())

    by_span: dict[tuple[object, ...], ast.expr] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Name, ast.Attribute, ast.Call)):
            end_line, end_column = node.end_lineno or 0, node.end_col_offset or 0
            span = (node.lineno, column(node.lineno, node.col_offset))
            by_span[(type(node), *span, end_line, column(end_line, end_column))] = node
    not_expressions = _NotExpressions()
    module.visit(not_expressions)

    result = Comparison(nodes=len(by_span))
    paired: set[ast.expr] = set()
    for node, where in positions.items():
        kind = _KINDS.get(type(node))
        if kind is None:
            continue
        start, end = where.start, where.end
        at = f"{label}:{start.line}:{start.column + 1}"
        other = by_span.get((kind, start.line, start.column, end.line, end.column))
        if other is None:
            if node not in not_expressions.found:
                result.problems.append(
                    f"{at}: no ast {kind.__name__} for {module.code_for_node(node)!r}"
                )
            continue
        paired.add(other)
        theirs = qualified_names(names, node) if kind is ast.Call else node_names(names, node)
        ours = mine.names_of(other)
        result.compared += 1
        if ours != theirs:
            result.problems.append(
                f"{at}: {kind.__name__} {ast.unparse(other)!r}: "
                f"libcst {sorted(theirs)}, ast {sorted(ours)}"
            )
    result.problems += [
        f"{label}:{node.lineno}:{node.col_offset + 1} (bytes): {type(node).__name__} "
        f"{ast.unparse(node)!r} has no libcst node"
        for node in by_span.values()
        if node not in paired
    ]
    return result


def _torch_source(relative: str) -> Path | None:
    spec = importlib.util.find_spec("torch")  # finds, does not import
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(spec.submodule_search_locations[0]) / relative
    return path if path.is_file() else None


#: Constructs the fixtures may lack: every binding form, scope and walk-order rule.
EDGE_CASES = """\
import os, os.path
import a.b.c
import a.b as ab
from . import rel
from .. import *
from .mod import thing as other, thing
y = 0
[y := 1 for _ in range(2)]
[(z := q) for q in range(3) if z]
q = [[c for c in range(r)] for r in range(3)]
qq = {k: v for k, v in {}.items() if k for v2 in v if v2}
match os.environ:
    case {"k": v, **rest}:
        print(v, rest)
    case os.sep as cap if cap:
        print(cap)
    case thing(attr=val):
        print(val)
try:
    pass
except (ValueError, os.error) as err:
    print(err)
with open("f") as fh, open("g") as (gh, ih):
    print(fh, gh, ih)
def outer():
    counter = 0
    def inner(arg=counter, *args, kw=os.sep, **kws) -> os.PathLike:
        nonlocal counter
        global y
        counter += 1
        y = counter
        import torch.distributed
        torch.distributed.barrier()
        return arg
    class C:
        counter = 2
        def m(self):
            nonlocal counter
            counter = 3
    return inner
class K(os.PathLike, metaclass=type):
    attr = 1
    other = [attr for _ in range(2)]
    def method(self, x=attr):
        attr
        return [attr for attr in range(3)]
    lam = lambda self, q=attr: (q, self, attr)
def deco(f):
    return f
@deco
def decorated(deco=deco):
    deco = 1
    return deco
def f(*a, **k):
    global torch
    import torch.nn as nn
    torch.cuda
f(k=1, *[y], z=os.sep)
x = 1 if (w := 2) else w
d = {w: (v2 := 3), **{}, v2: 4}
async def co():
    async with open("x") as ah:
        async for item in ah:
            await item
    return [i async for i in co()]
def loopy():
    for i in i:
        pass
    del i
    i.real
"abc".join(x)
(a + b).c
a.b().c.d
a.b[0].c
print(f"{os.sep!r:>{y}} {a.b.c}", __name__, __doc__)
@property
def walrus_in_default(x=(property := 1)):
    pass
def late_import():
    torch.distributed.barrier()
    import torch.distributed
"""


def _sources() -> list[object]:
    params: list[object] = [
        pytest.param(path.read_bytes(), id=str(path.relative_to(ROOT))) for path in FIXTURES
    ]
    for relative in TORCH_SOURCES:
        path = _torch_source(relative)
        params.append(
            pytest.param(
                path.read_bytes() if path else b"",
                id=f"torch/{relative}",
                marks=pytest.mark.skipif(path is None, reason="torch is not installed"),
            )
        )
    examples = [
        textwrap.dedent(example.code).encode()
        for rule in all_rules()
        for example in (*rule.VALID, *rule.INVALID)
    ]
    params += [pytest.param(code, id=f"example-{i}") for i, code in enumerate(examples)]
    return [*params, pytest.param(EDGE_CASES.encode(), id="edge-cases")]


@pytest.mark.parametrize("source", _sources())
def test_every_node_is_named_as_libcst_names_it(source: bytes, request: pytest.FixtureRequest):
    result = compare(source, request.node.callspec.id)
    assert result.problems == []
    assert result.compared == result.nodes  # each ast node paired once: none left out


# -- the libcst behaviour mirrored -----------------------------------------------------------------

#: name -> (source, the node as ast.unparse writes it, which of those (source order), names)
SHAPES: dict[str, tuple[str, str, int, set[str]]] = {
    "import-as": (
        "import torch.distributed as dist\ndist.init_process_group('gloo')\n",
        "dist.init_process_group('gloo')",
        0,
        {"torch.distributed.init_process_group"},
    ),
    "dotted-import": (
        "import torch.distributed\ntorch.distributed.barrier()\n",
        "torch.distributed.barrier",
        0,
        {"torch.distributed.barrier"},
    ),
    "relative": (
        "from .. import common\ncommon.helper()\n",
        "common.helper",
        0,
        {"..common.helper"},
    ),
    "conditional-import": (
        "try:\n    from a import Base\nexcept ImportError:\n    from b import Base as Base\nBase\n",
        "Base",
        0,
        {"a.Base", "b.Base"},
    ),
    "builtin": ("print(len([]))\n", "len", 0, {"builtins.len"}),
    "function-local": ("def f():\n    x = 1\n    x\n", "x", 1, {"f.<locals>.x"}),
    "lambda-parameter": ("f = lambda os: os.sep\n", "os.sep", 0, {"<locals>.os.sep"}),
    "class-attribute": ("class C:\n    x = 1\n    y = x\n", "x", 1, {"C.x"}),
    "comprehension": ("[i for i in range(3)]\n", "i", 0, {"<comprehension>.i"}),
    "global": ("def f():\n    global pg\n    pg = 1\n", "pg", 0, {"pg"}),
    # A name read before its local binding is looked up in the scope's parent, even a class.
    "read-before-binding-sees-the-class": (
        "class C:\n    dist = 1\n    def m(self):\n        dist.barrier\n        dist = 2\n",
        "dist",
        1,
        {"C.dist"},
    ),
    # ... while the attribute on it is named from all of the scope's bindings, in any order.
    "attribute-on-a-later-binding": (
        "import os\ndef f():\n    os.environ\n    os = None\n",
        "os.environ",
        0,
        {"f.<locals>.os.environ"},
    ),
    # libcst names an attribute of an unnamed value after None (f"{None}.join").
    "attribute-of-a-literal": ("'-'.join(['a'])\n", "'-'.join", 0, {"builtins.None"}),
    # A for target is bound (libcst's counter moves) before its iterable is read.
    "for-target-before-iterable": (
        "x = []\ndef f():\n    for x in x:\n        pass\n",
        "x",
        2,
        {"f.<locals>.x"},
    ),
    # Inner comprehension targets are bound for the element only, not for the inner ifs.
    "inner-comprehension-target": (
        "y = 0\n[y for x in [[1]] for y in x if y]\n",
        "y",
        3,
        {"y"},
    ),
    # Columns: ast counts bytes, libcst characters.
    "non-ascii": ("é = 'ü'\nprint('ü', é.real)\n", "é.real", 0, {"é.real"}),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_shape(shape: str):
    source, written, occurrence, expected = SHAPES[shape]
    tree = ast.parse(source)
    found = [
        node
        for node in ast.walk(tree)
        if isinstance(node, (ast.Name, ast.Attribute, ast.Call)) and ast.unparse(node) == written
    ]
    found.sort(key=lambda node: (node.lineno, node.col_offset))
    assert build_ast_names(tree).names_of(found[occurrence]) == expected
    assert compare(source.encode(), shape).problems == []


def test_call_is_named_by_its_func_and_other_nodes_have_no_names():
    tree = ast.parse("import os\nos.path.join(os.sep)\n")
    names = build_ast_names(tree)
    call = tree.body[1].value  # type: ignore[attr-defined]
    assert names.names_of(call) == names.names_of(call.func) == {"os.path.join"}
    assert names.names_of(tree.body[0]) == frozenset()
    assert names.names_of(ast.parse("os").body[0].value) == frozenset()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "source", ["nonlocal x\n", "x = " + "a." * 1500 + "b\n"], ids=["module-nonlocal", "deep"]
)
def test_unsupported(source: str):
    with pytest.raises(Unsupported):
        build_ast_names(ast.parse(source))


# -- the check itself ----------------------------------------------------------------------------


def test_parity_check_reports_a_wrong_answer(monkeypatch: pytest.MonkeyPatch):
    source = b"import torch.distributed as dist\n\ndef f():\n    dist.barrier()\n"
    assert compare(source, "ok.py").problems == []
    right = AstNames.names_of

    def wrong(self: AstNames, node: ast.AST) -> frozenset[str]:
        found = right(self, node)
        return frozenset() if "torch.distributed.barrier" in found else found

    monkeypatch.setattr(AstNames, "names_of", wrong)
    problems = compare(source, "wrong.py").problems
    assert sorted(problems) == [
        "wrong.py:4:5: Attribute 'dist.barrier': libcst ['torch.distributed.barrier'], ast []",
        "wrong.py:4:5: Call 'dist.barrier()': libcst ['torch.distributed.barrier'], ast []",
    ]


def test_no_libcst_import():
    code = (
        "import sys, distlint.syntax.ast_names\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'libcst'))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]"
