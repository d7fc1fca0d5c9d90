"""The module text ``distlint migrate`` parses: top-level classes that surely run no
multi-process test are left out before libcst parses the file.

``distlint migrate`` rewrites only classes that spawn ranks; a large test file is mostly plain
``TestCase`` classes (torchtitan's 278 KB ``test_passes.py``: 4 of 22 classes spawn), and
libcst's parse is most of what rewriting such a file costs. So, from the stdlib ``ast`` tree,
:func:`plain_class_stand_ins` gives every *provably plain* top-level class a one-statement
stand-in of the same lines (a class whose body is one string, unique in the file): every kept
line keeps its number and columns and every name stays bound, and :meth:`StandIns.restore`
puts the classes' own text back into the migrated module's code.

A class is left out only when all of this holds (anything else keeps it):

* its positional bases are ``object``/builtins' exceptions, a qualified name in
  :data:`PLAIN_BASES` reached through the module's own top-level imports, or other left-out
  classes; no keywords (``metaclass=``);
* its text names no per-test or continuous base, no spawn method (``setUp`` calling
  ``self._spawn_processes()`` makes any class per-test) and no configured base;
* no kept class (anywhere in the module) names it as a base, and its name is bound once;
* its text names no kept top-level class (it may be a use that keeps that class's tests per test,
  :mod:`distlint.analysis.pg.references`);
* the names its bases start with are bound only by one top-level import, and the module has no
  star import.

Without libcst (the stand-ins are computed before libcst parses anything).
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from distlint.screens.names import ast_dotted, top_level_imports
from distlint.screens.pg_names import continuous_words, per_test_words
from distlint.syntax.ast_lines import first_line

if TYPE_CHECKING:
    from distlint.config import Config

#: Bases (qualified as the module's imports bind them) whose classes run no ranks of their own.
PLAIN_BASES = frozenset(
    {
        "object",
        "Exception",
        "unittest.TestCase",
        "unittest.case.TestCase",
        "torch.testing._internal.common_utils.TestCase",
        "torch.nn.Module",
        "torch.nn.modules.module.Module",
        "enum.Enum",
        "typing.NamedTuple",
    }
)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: Nodes that bind their ``name``: ``except E as name`` and, from Python 3.10, ``match`` captures
#: (requires-python is 3.9, whose ``ast`` has no ``MatchAs``).
_NAMED_CAPTURES: tuple[type, ...] = (ast.ExceptHandler,) + tuple(
    getattr(ast, name) for name in ("MatchAs", "MatchStar") if hasattr(ast, name)
)
_NEWLINE = re.compile(r"\r\n|\r|\n")


#: The string a stand-in's body holds (with its number): absent from the file, or nothing is left
#: out (classes here, bodies in :mod:`distlint.codemods.body_stand_ins`).
STAND_IN_MARK = "distlint: left out of the migration"
#: A stand-in's mark, with its number.
_MARK = re.compile(re.escape(STAND_IN_MARK) + r" \(\d+\)")


@dataclass(frozen=True)
class StandIns:
    """A module's text with its plain classes replaced by stand-ins of the same lines."""

    text: str
    #: Each stand-in's text -> the text of the class it stands for.
    originals: dict[str, str]
    #: The left-out classes, or the defs whose bodies are left out (without their decorators,
    #: which stay): what they read still counts as a use of the module's imports.
    statements: tuple[ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef, ...]
    #: The ``ast`` tree of :attr:`text`: the module's other statements, and the stand-ins.
    tree: ast.Module

    def left_out(self) -> list[tuple[str, ast.stmt]]:
        """Each left-out statement with its text (what its code may read is the module's too)."""
        return list(zip(self.originals.values(), self.statements))

    def restore(self, code: str) -> str | None:
        """``code`` (the module printed after its edits) with every statement's own text back, or
        ``None`` when a stand-in is not there exactly once, at the start of a line, as written
        (the caller then parses it all). One pass over ``code``, whatever the stand-ins' count."""
        wanted: dict[str, tuple[int, str, str]] = {}
        for stand_in, original in self.originals.items():
            mark = _MARK.search(stand_in)
            assert mark is not None
            wanted[mark.group()] = (mark.start(), stand_in, original)
        mine = set(wanted)
        pieces: list[str] = []
        done = 0
        for mark in _MARK.finditer(code):
            found = wanted.pop(mark.group(), None)
            if found is None:
                if mark.group() in mine:
                    return None  # there twice
                continue  # another layer's stand-in, put back after this one
            offset, stand_in, original = found
            start = mark.start() - offset
            if (
                start < done
                or (start and code[start - 1] not in "\r\n")
                or not code.startswith(stand_in, start)
            ):
                return None
            pieces += [code[done:start], original]
            done = start + len(stand_in)
        if wanted:
            return None  # not there
        pieces.append(code[done:])
        return "".join(pieces)


def plain_class_stand_ins(
    text: str, tree: ast.Module, config_words: frozenset[str]
) -> StandIns | None:
    """``text`` with its provably plain top-level classes replaced by stand-ins (see the module
    docstring); ``None`` when there is none."""
    if STAND_IN_MARK in text:
        return None
    plain = _plain_classes(tree, _NEWLINE.split(text), config_words)
    if not plain:
        return None
    return stand_in_classes(text, tree, plain)


def stand_in_classes(
    text: str, tree: ast.Module, classes: list[ast.ClassDef], first_number: int = 0
) -> StandIns:
    """``text`` (parsed as ``tree``) with the top-level ``classes`` replaced by stand-ins,
    numbered from ``first_number`` (a text with stand-ins already gets more after them)."""
    lines, endings = split_lines(text)
    originals: dict[str, str] = {}
    stand_in_trees: dict[int, ast.stmt] = {}
    for number, cls in enumerate(classes, first_number):
        first = first_line(cls) - 1
        last = (cls.end_lineno or cls.lineno) - 1
        mark = f"{STAND_IN_MARK} ({number})"
        if first == last:
            replacement = [f'class {cls.name}: "{mark}"']
        else:
            replacement = [f'class {cls.name}: """{mark}', *[""] * (last - first - 1), '"""']
        originals[joined_lines(replacement, endings, first)] = joined_lines(
            lines[first : last + 1], endings, first
        )
        lines[first : last + 1] = replacement
        stand_in_trees[id(cls)] = _parsed_at(replacement, first)
    # The tree of the new text is the module's, with each class's stand-in parsed on its own
    # (its lines are all that changed): no second parse of a large file.
    body = [stand_in_trees.get(id(statement), statement) for statement in tree.body]
    return StandIns(
        "".join(line + ending for line, ending in zip(lines, endings)),
        originals,
        tuple(classes),
        ast.Module(body=body, type_ignores=tree.type_ignores),
    )


def _parsed_at(replacement: list[str], first: int) -> ast.stmt:
    """The stand-in's ``ast`` statement, with the line numbers it has in the module (from line
    index ``first``); its columns are those of its own lines."""
    (statement,) = ast.parse("\n".join(replacement)).body
    return ast.increment_lineno(statement, first)


def split_lines(text: str) -> tuple[list[str], list[str]]:
    """``text``'s lines without their endings, and the endings (``""`` after the last line)."""
    return _NEWLINE.split(text), [*_NEWLINE.findall(text), ""]


def joined_lines(span: list[str], endings: list[str], start: int) -> str:
    """Lines ``start``.. of a text, with the line endings between them (none after the last)."""
    return "".join(
        line + (endings[start + i] if i < len(span) - 1 else "") for i, line in enumerate(span)
    )


def multiprocess_words(config: Config) -> frozenset[str]:
    """Names whose presence in a class's text keeps it: spawn methods, per-test and continuous
    bases, torch's and the configured ones."""
    return per_test_words(config) | continuous_words(config)


def _plain_classes(
    tree: ast.Module, lines: list[str], config_words: frozenset[str]
) -> list[ast.ClassDef]:
    imports, bound, module_classes = _top_level_bindings(tree)
    if bound["*"]:
        return []  # a star import may rebind any base's name
    classes = [s for s in tree.body if isinstance(s, ast.ClassDef)]
    plain: dict[str, ast.ClassDef] = {}
    for cls in classes:  # in order: a base must be defined (and plain) above its subclass
        if bound[cls.name] == 1 and _has_plain_bases(cls, imports, bound, plain):
            if not _names_any(cls, lines, config_words):
                plain[cls.name] = cls
    # A class some kept class derives from is part of that class's analysis (the analysis
    # reads module-level classes only, those in top-level if/try/with blocks included).
    kept_bases = {
        name
        for node in module_classes
        if plain.get(node.name) is not node
        for name in _base_heads(node)
    }
    changed = True
    while changed:
        changed = False
        for name in [n for n in plain if n in kept_bases]:
            kept_bases |= set(_base_heads(plain.pop(name)))
            changed = True
    # A class that names a kept top-level class may be a use of it that keeps that class's tests
    # per test (analysis.pg.references): the analysis must see it.
    kept = frozenset(
        s.name for s in tree.body if isinstance(s, ast.ClassDef) and plain.get(s.name) is not s
    )
    return [cls for cls in plain.values() if not _names_any(cls, lines, kept)]


def _has_plain_bases(
    cls: ast.ClassDef,
    imports: dict[str, str],
    bound: Counter[str],
    plain: dict[str, ast.ClassDef],
) -> bool:
    if cls.keywords:
        return False
    for base in cls.bases:
        dotted = ast_dotted(base)
        if dotted is None:
            return False
        head, _, rest = dotted.partition(".")
        if not rest and head in plain:
            continue
        if head in imports and bound[head] == 1:
            qualified = imports[head] + (f".{rest}" if rest else "")
        elif head in ("object", "Exception") and not rest and bound[head] == 0:
            qualified = head
        else:
            return False
        if qualified not in PLAIN_BASES:
            return False
    return True


def _names_any(cls: ast.ClassDef, lines: list[str], words: frozenset[str]) -> bool:
    first = first_line(cls)
    segment = "\n".join(lines[first - 1 : cls.end_lineno or cls.lineno])
    return any(word in words for word in _WORD.findall(segment))


def _top_level_bindings(
    tree: ast.Module,
) -> tuple[dict[str, str], Counter[str], list[ast.ClassDef]]:
    """What the module's top-level imports bind (name -> qualified name); how many times each
    name is bound at module level (imports, assignments, defs, classes; inside top-level
    ``if``/``try``/``with`` blocks too); and the module-level classes, those blocks' included."""
    bound: Counter[str] = Counter()
    classes: list[ast.ClassDef] = []
    for node in _module_level_nodes(tree):
        if isinstance(node, ast.ClassDef):
            classes.append(node)
        for name in _bound_names(node):
            bound[name] += 1
    return top_level_imports(tree, None), bound, classes


def _module_level_nodes(tree: ast.Module) -> Iterator[ast.AST]:
    """Every node at module level, not inside a function, class or lambda body."""
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(ast.iter_child_nodes(node))


def _bound_names(node: ast.AST) -> Iterator[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield node.name
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        for alias in node.names:
            yield alias.asname or alias.name.split(".")[0]
    elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        yield node.id
    elif isinstance(node, ast.alias) or isinstance(node, (ast.Global, ast.Nonlocal)):
        return
    elif isinstance(node, _NAMED_CAPTURES):
        name = getattr(node, "name", None)
        if name:
            yield name


def _base_heads(cls: ast.ClassDef) -> Iterator[str]:
    for base in cls.bases:
        dotted = ast_dotted(base)
        if dotted is not None:
            yield dotted.partition(".")[0]
