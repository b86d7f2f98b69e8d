"""The README read in ten minutes (issue 46): at most 15 KB, the two commands CI and a new
machine rely on, and every link of the README and docs/ landing on a file and a heading that
exist (the sections moved into docs/ keep their anchors)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
PAGES = (README, *sorted((REPO / "docs").glob("*.md")))
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _outside_code(text: str) -> str:
    """The text with fenced code blocks and inline code spans blanked out."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)
    return re.sub(r"`[^`\n]*`", "", text)


def anchors(page: Path) -> set[str]:
    """The heading anchors GitHub gives a page: lower case, punctuation dropped, blanks as
    hyphens, a repeated one numbered."""
    seen: dict[str, int] = {}
    found = set()
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.DOTALL | re.MULTILINE)
    for heading in re.findall(r"^#{1,6} (.+)$", text, flags=re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if not count else f"{slug}-{count}")
    return found


def test_the_readme_is_at_most_15_kb() -> None:
    assert len(README.read_bytes()) <= 15 * 1024


def test_the_readme_states_the_two_commands_and_ci_runs_its_test_command() -> None:
    readme = README.read_text()
    assert "    make demo   # runs the main job" in readme
    assert "    make test   # runs every test" in readme
    # .ci/run: "the README's test command, nothing weaker".
    assert re.search(r"^make test\b", (REPO / ".ci" / "run").read_text(), re.MULTILINE)


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_every_relative_link_lands_on_a_file_and_a_heading(page: Path) -> None:
    broken = []
    for target in LINK.findall(_outside_code(page.read_text())):
        if re.match(r"[a-z]+:", target):
            continue  # http(s), mailto: not ours to check
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        lands = linked.exists() and (
            not anchor or linked.suffix != ".md" or anchor in anchors(linked)
        )
        if not lands:
            broken.append(target)
    assert not broken, broken
