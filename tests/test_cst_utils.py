"""distlint.cst_utils: the small libcst helpers the rules, analyses and codemod share."""

from __future__ import annotations

import libcst as cst

from distlint.cst_utils import (
    NodeIndex,
    ReplaceNodes,
    code_of,
    docstring_statement,
    is_string_statement,
)


def _body(code: str):
    return cst.parse_module(code).body


def test_string_statements_and_docstrings():
    body = _body('"""Doc."""\n"a" "b"\nf"{x}"\nb"raw"\nx = "s"\n"late"\n')
    assert [is_string_statement(s) for s in body] == [True, True, False, True, False, True]
    assert docstring_statement(body) is body[0]
    # A string that does not come first is a no-op line, not a docstring.
    assert docstring_statement(body[1:]) is body[1]
    assert docstring_statement(_body("x = 1\n'late'\n")) is None
    assert docstring_statement(()) is None


def test_code_of_renders_a_node_alone():
    statement = cst.parse_module("if x:\n    y = f(a,  b)\n").body[0]
    assert code_of(statement) == "if x:\n    y = f(a,  b)\n"
    assert code_of(statement.body.body[0].body[0].value) == "f(a,  b)"  # type: ignore[attr-defined]


def test_node_index_knows_every_node_and_its_ancestry():
    module = cst.parse_module("def f():\n    return g(1)\n")
    index = NodeIndex(module)
    function = module.body[0]
    call = function.body.body[0].body[0].value  # type: ignore[attr-defined]
    assert index.nodes[id(call)] is call and index.nodes[id(module)] is module
    chain = index.ancestry(id(call))
    assert chain[0] == id(call) and chain[-1] == id(module) and id(function) in chain
    assert index.ancestry(id(module)) == [id(module)]


def test_replace_nodes_goes_by_identity_not_equality():
    module = cst.parse_module("a = 1\nb = 1\n")
    second_one = module.body[1].body[0].value  # type: ignore[attr-defined]
    result = module.visit(ReplaceNodes({id(second_one): cst.Integer("2")}))
    assert result.code == "a = 1\nb = 2\n"
    removed = module.visit(ReplaceNodes({id(module.body[0]): cst.RemoveFromParent()}))
    assert removed.code == "b = 1\n"
