"""The README starts with doing and leads to the reference; no link in README or docs/ is broken.

A relative link resolves when its file (or folder) exists and its ``#anchor``
is a heading of the target page, spelled as GitHub spells heading anchors.
"""

from __future__ import annotations

import re

import pytest

from tests.docs_pages import DOCS, ROOT, blocks, pages, text

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCED = re.compile(r"^( *)```.*?^\1```[ \t]*$", re.M | re.S)
INLINE_CODE = re.compile(r"`[^`\n]*`")


def prose(page: str) -> str:
    """The page without code: fenced blocks and inline code spans can hold anything."""
    return INLINE_CODE.sub("", FENCED.sub("", text(page)))


def anchors(page: str) -> set[str]:
    """GitHub's anchors for the page's headings: lower case, everything but letters, digits,
    ``_``, ``-`` and spaces dropped, spaces to ``-``; a repeated one gets ``-1``, ``-2``..."""
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6} (.+?)\s*$", FENCED.sub("", text(page)), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        candidate, n = slug, 0
        while candidate in found:
            n += 1
            candidate = f"{slug}-{n}"
        found.add(candidate)
    return found


def relative_links(page: str) -> list[str]:
    return [target for target in LINK.findall(prose(page))
            if not re.match(r"[a-z]+:", target)]


def test_the_slugs_are_githubs():
    assert anchors("README.md") >= {"the-two-commands", "what-make-demo-runs", "a-tour"}
    assert "installed-packages-and-sparks-python-workers" in anchors("docs/spark-versions.md")


@pytest.mark.parametrize("page", pages())
def test_every_relative_link_resolves_to_a_file_and_an_anchor(page):
    base = (ROOT / page).parent
    broken = []
    for target in relative_links(page):
        path, _, anchor = target.partition("#")
        resolved = (base / path).resolve() if path else ROOT / page
        if not resolved.exists():
            broken.append(f"{target}: no file {resolved.relative_to(ROOT)}")
        elif anchor and anchor not in anchors(str(resolved.relative_to(ROOT))):
            broken.append(f"{target}: no heading #{anchor} in {resolved.relative_to(ROOT)}")
    assert not broken, f"{page}: " + "; ".join(broken)


def test_the_link_check_sees_links_and_would_fail_a_broken_one():
    assert "docs/reading.md" in relative_links("README.md")
    assert "#nowhere" not in anchors("README.md")


def test_every_docs_page_is_linked_from_the_readme():
    linked = {target.partition("#")[0] for target in relative_links("README.md")}
    assert {f"docs/{p.name}" for p in DOCS.glob("*.md")} <= linked


def test_the_readme_is_short_and_its_first_command_is_on_the_first_screen():
    readme = text("README.md")
    assert len(readme.splitlines()) < 400
    first = blocks("README.md")[0]
    assert first.lang in ("bash", "python") and first.line + 1 <= 60, first
    # The hands-on path starts there too: the walkthrough's first command.
    walkthrough = next(b for b in blocks("README.md", "bash") if "sqliteq" in b.code)
    assert walkthrough.line + 1 <= 60, walkthrough


def test_each_reference_page_leads_back_to_the_readme():
    for page in pages()[1:]:
        assert "(../README.md#a-tour)" in text(page).split("\n\n", 2)[1], page
