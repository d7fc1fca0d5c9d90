"""Read the project's Markdown pages the way the docs tests need: fenced blocks, prose, code
spans, tables, headings' anchors and links. Only what the pages use; no Markdown library."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The pages the docs tests read.
PAGES = [
    ROOT / "README.md",
    ROOT / "CONTRIBUTING.md",
    ROOT / "BENCHMARKS.md",
    *sorted((ROOT / "docs").glob("*.md")),
]

_FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w-]*)[ \t]*$")
_EXCERPT = re.compile(r"^<!--\s*excerpt:\s*(?P<path>\S+)\s*-->$")


@dataclass(frozen=True)
class Block:
    """A fenced code block: its language, its dedented text, where it starts (1-based line of the
    opening fence) and, when the line before the fence is ``<!-- excerpt: PATH -->``, PATH."""

    page: Path
    lang: str
    text: str
    line: int
    excerpt_of: str | None

    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def between_markers(page: Path, start: str, end: str) -> str:
    """The text between the page's only ``start`` and ``end`` marker lines."""
    text = page.read_text()
    assert text.count(start) == 1 and text.count(end) == 1, (
        f"{page.name} needs exactly one {start} ... {end}"
    )
    return text.split(start, 1)[1].split(end, 1)[0]


def blocks(page: Path) -> list[Block]:
    found: list[Block] = []
    lines = page.read_text().splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        previous = lines[i - 1].strip() if i else ""
        excerpt = _EXCERPT.match(previous)
        found.append(
            Block(
                page,
                opening["lang"],
                textwrap.dedent("\n".join(lines[i + 1 : end])) + "\n",
                i + 1,
                excerpt["path"] if excerpt else None,
            )
        )
        i = end + 1
    return found


def prose(page: Path) -> str:
    """The page without its fenced blocks (their lines left empty, so line numbers still count)."""
    out, inside = [], False
    for line in page.read_text().splitlines():
        if _FENCE.match(line) or (inside and line.strip() == "```"):
            inside = not inside
            out.append("")
        else:
            out.append("" if inside else line)
    return "\n".join(out)


def code_spans(text: str) -> list[str]:
    return re.findall(r"`([^`\n]+)`", text)


def tables(text: str) -> list[list[list[str]]]:
    """Every pipe table: a list of rows (the header first, the ``---`` row left out), each a list
    of cells. ``\\|`` inside a cell is not a separator."""
    found: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            cells = [
                cell.strip().replace("\\|", "|")
                for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]
            ]
            if not all(re.fullmatch(r":?-+:?", cell) for cell in cells):
                current.append(cells)
        elif current:
            found.append(current)
            current = []
    return found


def table_with_header(text: str, first_header: str) -> list[list[str]]:
    """The rows (header left out) of the only table whose first header cell is ``first_header``."""
    matching = [table for table in tables(text) if table[0][0] == first_header]
    assert len(matching) == 1, f"expected one table headed {first_header!r}, found {len(matching)}"
    return matching[0][1:]


def section(text: str, heading: str) -> str:
    """The text under ``heading`` (a whole heading line) up to the next heading of its level or above."""
    lines = text.splitlines()
    start = lines.index(heading)
    level = len(heading) - len(heading.lstrip("#"))
    end = next(
        (i for i in range(start + 1, len(lines)) if re.match(rf"^#{{1,{level}}} ", lines[i])),
        len(lines),
    )
    return "\n".join(lines[start + 1 : end])


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading anchor of a page (repeated headings get GitHub's ``-1``, ``-2``... suffixes)."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for line in prose(page).splitlines():
        heading = re.match(r"^#{1,6} (.+)$", line)
        if heading:
            base = slug(heading[1])
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: Path) -> list[str]:
    """Targets of the page's Markdown links ``[text](target)`` (not inside code)."""
    text = re.sub(r"`[^`\n]*`", "", prose(page))
    return re.findall(r"\]\(([^)\s]+)\)", text)
