"""The marked snippets of the package's README, by id."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
_BLOCK = re.compile(r"<!-- snippet: ([\w-]+) -->\n```\w*\n(.*?)```", re.S)


def snippets() -> dict[str, str]:
    """Every fenced block of the README, by the id marked above it."""
    text = README.read_text(encoding="utf-8")
    found = {match[1]: match[2] for match in _BLOCK.finditer(text)}
    fences = text.count("```") // 2
    assert len(found) == fences, "every block of the README has a <!-- snippet: id --> above it"
    return found


def snippet(name: str) -> str:
    return snippets()[name]
