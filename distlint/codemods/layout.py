"""The layout of what ``distlint migrate`` writes: as black lays it out, so a migrated file
needs no formatter pass its original did not need (PyTorch's lint job rejects such a diff).

libcst's import visitors join an import list on one line and put new names first; a class
with a mixin and a continuous base, or a factory call with ``base_class=``, can outgrow the
line. These functions give such statements black's layout (line length :data:`LINE_LENGTH`):
one line when it fits, else one item per line with a trailing comma (for a call, first the
arguments together on one indented line). An import list the original wrote one name per
line stays so, and one the original sorted stays sorted. Statements migrate did not change
are left as they are.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from distlint.codemods.rewrite import strip_blank_leading, with_blank_leading
from distlint.cst_utils import code_of, is_string_statement

#: black's default line length (PyTorch's formatter uses it).
LINE_LENGTH = 88
INDENT = "    "


def _broken(last_line: str, comment: cst.Comment | None = None) -> cst.ParenthesizedWhitespace:
    """A line break inside brackets, the next line starting with ``last_line``."""
    return cst.ParenthesizedWhitespace(
        first_line=cst.TrailingWhitespace(comment=comment),
        indent=True,
        last_line=cst.SimpleWhitespace(last_line),
    )


def _comment_after(comma: cst.Comma | cst.MaybeSentinel) -> cst.Comment | None:
    """The comment after an item of a list written one per line (``name,  # noqa``)."""
    if isinstance(comma, cst.Comma) and isinstance(
        comma.whitespace_after, cst.ParenthesizedWhitespace
    ):
        return comma.whitespace_after.first_line.comment
    return None


def _is_exploded(node: cst.ImportFrom) -> bool:
    return node.lpar is not None and "\n" in code_of(node)


def _sort_key(alias: cst.ImportAlias) -> str:
    return code_of(alias.name).casefold()  # usort's order (case-insensitive)


def _alias_name(alias: cst.ImportAlias) -> str:
    return code_of(alias).split(",")[0].strip()


def import_layout(original: cst.Module, result: cst.Module) -> cst.Module:
    """``result`` with each top-level ``from M import ...`` it changed laid out as ``original``'s
    import of ``M`` was (one name per line, sorted), or as black would (new imports)."""
    before: dict[str, list[cst.ImportFrom]] = {}
    unchanged: set[str] = set()
    for statement in original.body:
        small = _single_import_from(statement)
        if small is not None:
            before.setdefault(_module_of(small), []).append(small)
            unchanged.add(code_of(statement))
    body: list[cst.BaseStatement] = []
    for statement in result.body:
        small = _single_import_from(statement)
        if small is None or code_of(statement) in unchanged:
            body.append(statement)
            continue
        assert isinstance(statement, cst.SimpleStatementLine)
        laid = _lay_out_import(small, before.get(_module_of(small), []))
        body.append(statement.with_changes(body=[laid]))
    return result.with_changes(body=body)


def _single_import_from(statement: cst.BaseStatement) -> cst.ImportFrom | None:
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        small = statement.body[0]
        if isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
            return small
    return None


def _module_of(node: cst.ImportFrom) -> str:
    return "." * len(node.relative) + (code_of(node.module) if node.module is not None else "")


def _lay_out_import(node: cst.ImportFrom, originals: Sequence[cst.ImportFrom]) -> cst.ImportFrom:
    assert not isinstance(node.names, cst.ImportStar)
    names = list(node.names)
    original_names = [a for o in originals for a in o.names]  # type: ignore[union-attr]
    comments = {_alias_name(a): _comment_after(a.comma) for a in original_names}
    if original_names:
        order = [_alias_name(a) for a in original_names]
        was_sorted = order == sorted(order, key=str.casefold)
        if was_sorted:
            names.sort(key=_sort_key)
        else:  # the original's order, then the new names
            known = [a for name in order for a in names if _alias_name(a) == name]
            names = known + [a for a in names if a not in known]
    else:
        names.sort(key=_sort_key)
    exploded = any(_is_exploded(o) for o in originals)
    one_line = node.with_changes(
        names=[
            a.with_changes(
                comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                if i < len(names) - 1
                else cst.MaybeSentinel.DEFAULT
            )
            for i, a in enumerate(names)
        ],
        lpar=None,
        rpar=None,
    )
    if not exploded and len(code_of(one_line)) <= LINE_LENGTH:
        return one_line
    return node.with_changes(
        names=[
            a.with_changes(
                comma=cst.Comma(
                    whitespace_after=_broken(
                        INDENT if i < len(names) - 1 else "", comments.get(_alias_name(a))
                    )
                )
            )
            for i, a in enumerate(names)
        ],
        lpar=cst.LeftParen(whitespace_after=_broken(INDENT)),
        rpar=cst.RightParen(),
    )


def class_header_layout(node: cst.ClassDef) -> cst.ClassDef:
    """A module-level class whose ``class X(A, B):`` line is too long: one base per line."""
    args = [*node.bases, *node.keywords]
    plain = node.with_changes(
        bases=[_plain_arg(a, i < len(args) - 1) for i, a in enumerate(node.bases)],
        keywords=[
            _plain_arg(a, len(node.bases) + i < len(args) - 1) for i, a in enumerate(node.keywords)
        ],
        lpar=cst.LeftParen() if args else node.lpar,
        rpar=cst.RightParen() if args else node.rpar,
    )
    bare = plain.with_changes(
        body=cst.SimpleStatementSuite([cst.Pass()]), decorators=[], leading_lines=[]
    )
    header = code_of(bare).strip()
    if not args or len(header) - len(" pass") <= LINE_LENGTH:
        return plain
    inner = INDENT + ", ".join(code_of(a).strip().rstrip(",") for a in args)
    if len(inner) <= LINE_LENGTH:  # black's right-hand split: the bases on one line
        return plain.with_changes(
            lpar=cst.LeftParen(whitespace_after=_broken(INDENT)), **_last_broken(plain)
        )
    return node.with_changes(
        bases=[_broken_arg(a, i == len(args) - 1) for i, a in enumerate(node.bases)],
        keywords=[
            _broken_arg(a, len(node.bases) + i == len(args) - 1)
            for i, a in enumerate(node.keywords)
        ],
        lpar=cst.LeftParen(whitespace_after=_broken(INDENT)),
        rpar=cst.RightParen(),
    )


def _last_broken(node: cst.ClassDef) -> dict[str, list[cst.Arg]]:
    """The class's last base or keyword followed by a line break (``)`` at the line's start)."""
    field = "keywords" if node.keywords else "bases"
    items = list(getattr(node, field))
    items[-1] = items[-1].with_changes(whitespace_after_arg=_broken(""))
    return {field: items}


def _plain_arg(arg: cst.Arg, more: bool) -> cst.Arg:
    return arg.with_changes(
        comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        if more
        else cst.MaybeSentinel.DEFAULT,
        whitespace_after_arg=cst.SimpleWhitespace(""),
    )


def _broken_arg(arg: cst.Arg, last: bool) -> cst.Arg:
    return arg.with_changes(
        comma=cst.Comma(whitespace_after=_broken("" if last else INDENT)),
        whitespace_after_arg=cst.SimpleWhitespace(""),
    )


def call_layout(prefix: str, call: cst.Call, exploded: bool) -> cst.Call:
    """A module-level call as black lays it out after ``prefix`` (``exploded``: the original put
    one argument per line, black's "magic trailing comma"): one line, else the arguments on one
    indented line, else one per line with a trailing comma."""
    args = list(call.args)
    if not exploded and not any("\n" in code_of(a.value) for a in args):
        plain = call.with_changes(
            args=[_plain_arg(a, i < len(args) - 1) for i, a in enumerate(args)],
            whitespace_before_args=cst.SimpleWhitespace(""),
        )
        if len(prefix + code_of(plain)) <= LINE_LENGTH:
            return plain
        hugged = plain.with_changes(
            whitespace_before_args=_broken(INDENT),
            args=[
                *plain.args[:-1],
                plain.args[-1].with_changes(whitespace_after_arg=_broken("")),
            ],
        )
        inner = INDENT + ", ".join(code_of(a).strip().rstrip(",") for a in args)
        if len(inner) <= LINE_LENGTH:
            return hugged
    return call.with_changes(
        whitespace_before_args=_broken(INDENT),
        args=[_broken_arg(a, i == len(args) - 1) for i, a in enumerate(args)],
    )


def pep8_spaced(statements: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
    """A class body's statements with PEP 8 spacing: none before the first, one around methods."""
    out: list[cst.BaseStatement] = []
    for index, statement in enumerate(statements):
        if index == 0:
            out.append(strip_blank_leading(statement))
            continue
        previous = statements[index - 1]
        compound = (cst.FunctionDef, cst.ClassDef)
        if (
            isinstance(statement, compound)
            or isinstance(previous, compound)
            or is_string_statement(previous)
        ):
            out.append(with_blank_leading(statement))
        else:
            out.append(statement)
    return out
