"""The code blocks of README.md and docs/*.md, as the docs tests read them.

A shell (``sh``, ``bash``) or ``python`` block runs in a test unless the line before its opening fence
says why it cannot: ``<!-- docs-test: not run: REASON -->``. The blocks of one page run in order, in one
folder, so a page can build on what an earlier block made.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNNABLE = {"sh", "bash", "python"}
_NOT_RUN = re.compile(r"<!--\s*docs-test:\s*not run:\s*(?P<reason>.*?)\s*-->")
_FENCE = re.compile(r"^```(?P<lang>[\w-]*)\s*$")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    not_run: str | None  # the reason, when marked

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks(page: Path) -> list[Block]:
    lines = page.read_text(encoding="utf-8").split("\n")
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m or not m.group("lang"):
            i += 1
            continue
        start = i
        i += 1
        while i < len(lines) and lines[i].rstrip() != "```":
            i += 1
        prev = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        marked = _NOT_RUN.search(prev)
        out.append(Block(page, start + 1, m.group("lang"), "\n".join(lines[start + 1:i]) + "\n",
                         marked.group("reason") if marked else None))
        i += 1
    return out
