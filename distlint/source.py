"""A file's source as every part of distlint sees it: bytes, text, trees, and per-file facts.

A leaf module: it imports nothing of distlint at run time, so the linter, the rules, the
analyses, the codemod and ``safe_write`` can all import it without importing each other
(``Config`` is only named in annotations). Nor libcst, until :func:`parse` needs it: a file
the pre-screen settles is checked without it.

* :class:`PreScreen` - cheap facts about the bytes (words, the stdlib ``ast`` tree) that
  rules use to say "cannot report here" before anything reaches libcst.
* :class:`FileContext` - what the rules of one file share: path, config, the metadata
  wrapper and memoised analyses (:meth:`FileContext.fact`).
* :func:`decode_source`, :func:`parse`, :func:`verify_python`, :func:`source_lines` -
  reading and checking source with one-line ``ValueError`` messages for bad input.
"""

from __future__ import annotations

import ast
import io
import re
import symtable
import tokenize
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Callable, TypeVar

if TYPE_CHECKING:
    import libcst as cst
    from libcst.metadata import MetadataWrapper

    from distlint.config import Config

T = TypeVar("T")

_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
_NEWLINES = re.compile(r"\r\n?|\n")


class PreScreen:
    """Cheap facts about a file's source, computed before (and instead of) libcst."""

    def __init__(self, source: bytes, path: str) -> None:
        self.source = source
        self.path = path
        self._words: frozenset[bytes] | None = None
        self._ast: Any = None
        #: Why ``ast`` could not parse the file (set by :attr:`ast_module`).
        self.syntax_error: str | None = None

    @property
    def words(self) -> frozenset[bytes]:
        if self._words is None:
            self._words = frozenset(_WORD.findall(self.source))
        return self._words

    def has_any_word(self, words: Iterable[str]) -> bool:
        mine = self.words
        return any(word.encode() in mine for word in words)

    @property
    def ast_module(self) -> ast.Module | None:
        """The stdlib ``ast`` tree, or ``None`` when ``ast`` cannot parse the file."""
        if self._ast is None:
            try:
                self._ast = ast.parse(self.source, self.path)
            except SyntaxError as exc:
                self._ast = False
                self.syntax_error = f"syntax error at {exc.lineno}:{exc.offset or 1}: {exc.msg}"
            except ValueError as exc:
                self._ast = False
                self.syntax_error = f"cannot parse: {exc}"
        return self._ast or None

    def parses(self) -> bool:
        """Whether the file is valid Python, as :attr:`ast_module` says, at less cost when no
        tree was built: CPython's ``symtable`` runs the same parser without making the
        Python objects of a tree (~40% cheaper). Whatever it rejects (it also rejects what only
        the compiler does, ``nonlocal`` at module level), ``ast`` judges, and words the error."""
        if self._ast is None:
            try:
                # Bytes, as ``ast.parse`` gets them (the coding cookie decides); typeshed
                # says str only. Any failure, a TypeError included, leaves it to ``ast``.
                symtable.symtable(self.source, self.path, "exec")  # type: ignore[arg-type]
                return True
            except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
                pass
        return self.ast_module is not None


class FileContext:
    """What rules of one file share: path, config, the trees, and memoised facts.

    ``wrapper`` is the libcst tree's, ``None`` where only fact rules run (the ``ast`` tree
    and its text are all they read).

    Analyses used by several rules (and by the codemods) are computed once per file
    through :meth:`fact`.
    """

    def __init__(
        self,
        path: str,
        config: Config,
        wrapper: MetadataWrapper | None,
        tree: ast.Module | None = None,
        text: str | None = None,
    ) -> None:
        self.path = path
        self.config = config
        self._wrapper = wrapper
        #: The stdlib ``ast`` tree of a text with the module's top-level statements, when the
        #: pre-screen parsed one (analyses may use it to skip statements).
        self.tree = tree
        #: The source text of ``tree`` (read only where there is a tree).
        self.text = text
        self._facts: dict[Any, Any] = {}
        #: Other files an analysis looked at (absolute path -> stat key, None where no file
        #: was): the result depends on them too, and the cache checks them.
        self.depends_on: dict[str, list[int] | None] = {}

    @property
    def wrapper(self) -> MetadataWrapper:
        """The libcst tree's wrapper (what libcst rules read)."""
        if self._wrapper is None:
            raise RuntimeError("this file is linted from its ast tree alone: it has no libcst tree")
        return self._wrapper

    @property
    def module(self) -> cst.Module:
        return self.wrapper.module

    def fact(self, key: Any, compute: Callable[[FileContext], T]) -> T:
        if key not in self._facts:
            self._facts[key] = compute(self)
        return self._facts[key]


def _bad_byte(source: bytes, encoding: str, offset: int) -> ValueError:
    line = source.count(b"\n", 0, offset) + 1
    column = offset - (source.rfind(b"\n", 0, offset) + 1) + 1
    return ValueError(f"not valid {encoding}: byte 0x{source[offset]:02x} at {line}:{column}")


def decode_source(source: bytes, path: str) -> str:
    """Decode as Python does (PEP 263 cookie, BOM); raise ``ValueError`` with a clear reason."""
    if b"\x00" in source:
        raise ValueError("binary file (contains NUL bytes)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    except SyntaxError as exc:
        # detect_encoding also rejects a non-UTF-8 byte in the first two lines: name it.
        try:
            source.decode("utf-8")
        except UnicodeDecodeError as bad:
            raise _bad_byte(source, "utf-8", bad.start) from None
        raise ValueError(f"cannot decode: {exc}") from None
    try:
        return source.decode(encoding)
    except LookupError as exc:
        raise ValueError(f"cannot decode: {exc}") from None
    except UnicodeDecodeError as exc:
        raise _bad_byte(source, exc.encoding, exc.start) from None


def parse(source: bytes | str, path: str) -> cst.Module:
    """libcst parse of bytes or decoded text; bad input raises ``ValueError`` with a one-line
    message."""
    import libcst as cst  # here, not at the top: files the pre-screen settles never need it

    if isinstance(source, bytes):
        decode_source(source, path)  # clear message for bad bytes before libcst's long one
    try:
        return _parse_without_validation(source)
    except cst.ParserSyntaxError as exc:
        # Python's own parser says more precisely what is wrong, and where.
        try:
            ast.parse(source, path)
        except SyntaxError as precise:
            raise ValueError(
                f"syntax error at {precise.lineno}:{precise.offset or 1}: {precise.msg}"
            ) from None
        except (ValueError, RecursionError, MemoryError):
            pass
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else "syntax error"
        raise ValueError(
            f"syntax error at {exc.raw_line}:{exc.raw_column + 1}: {message}"
        ) from None


def _parse_without_validation(source: bytes | str) -> cst.Module:
    """``libcst.parse_module`` without re-validating every node the parser builds.

    libcst's nodes validate their fields on construction (``CSTNode.__post_init__`` calls
    ``_validate``), which guards trees that code assembles by hand; a tree its own parser
    built from valid source passes by construction (libcst's own comment there says as much).
    On PyTorch's 295 KB ``test_c10d_nccl.py`` that is 130,000 calls, ~15% of the parse. The
    hook is switched off for this call only and restored before anything else constructs a
    node (distlint parses on one thread); ``tests/test_source.py`` checks that the trees equal
    validated ones and that construction validates again afterwards. Pinned with the libcst
    versions in pyproject.toml, like the other internals distlint uses.
    """
    import libcst as cst
    from libcst._nodes.base import CSTNode

    validating = CSTNode.__dict__["__post_init__"]
    CSTNode.__post_init__ = _built_by_the_parser  # type: ignore[method-assign,assignment]
    try:
        return cst.parse_module(source)
    finally:
        CSTNode.__post_init__ = validating  # type: ignore[method-assign]


def _built_by_the_parser(node: object) -> None:
    """Stands in for ``CSTNode.__post_init__`` while libcst's parser builds a tree."""


def verify_python(source: bytes | str, path: str) -> None:
    """Raise ``ValueError`` unless ``source`` compiles: CPython's own parser, the one that will run
    the file, re-reads what was written (libcst's parser, ~20x slower, is not needed to judge
    code libcst itself printed)."""
    try:
        compile(source, path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise ValueError(f"result does not compile: {exc.msg} (line {exc.lineno})") from None


def source_lines(text: str) -> list[str]:
    """Lines as libcst counts them (``\\r\\n``, ``\\r``, ``\\n``; not form feeds and the like)."""
    return _NEWLINES.split(text)
