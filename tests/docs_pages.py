"""The user docs as the docs tests read them: README.md and the reference pages in docs/.

Helpers only (no tests): the page list, a page's text, one section of it, and its fenced
code blocks with the line they start on.
"""

from __future__ import annotations

import pathlib
import re
import textwrap
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def pages() -> list[str]:
    """Every user doc, relative to the checkout: README.md, then docs/*.md."""
    return ["README.md", *sorted(f"docs/{p.name}" for p in DOCS.glob("*.md"))]


def text(page: str) -> str:
    return (ROOT / page).read_text(encoding="utf-8")


def section(page: str, heading: str) -> str:
    """From the line ``heading`` (e.g. ``## Install``) to the next heading of its level or
    above, or the end of the page."""
    body = text(page)
    start = body.index(f"\n{heading}\n") + 1 if not body.startswith(heading) else 0
    level = len(heading) - len(heading.lstrip("#"))
    found = re.compile(rf"^#{{1,{level}}} ", re.M).search(body, start + len(heading))
    return body[start:found.start() if found else len(body)]


@dataclass(frozen=True)
class Block:
    page: str
    lang: str
    line: int  # 1-based line of the opening fence
    code: str  # dedented as a user copies it out of a list item

    @property
    def first_line(self) -> str:
        return next(line for line in self.code.splitlines() if line.strip())

    def __str__(self) -> str:
        return f"{self.page}:{self.line} ({self.lang})"


FENCE = re.compile(r"^( *)```(\w*)\n(.*?)^\1```[ \t]*$", re.M | re.S)


def blocks(page: str, lang: str | None = None) -> list[Block]:
    body = text(page)
    found = []
    for match in FENCE.finditer(body):
        if lang is None or match.group(2) == lang:
            line = body.count("\n", 0, match.start()) + 1
            found.append(Block(page, match.group(2), line, textwrap.dedent(match.group(3))))
    return found
