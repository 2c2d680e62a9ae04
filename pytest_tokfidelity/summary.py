"""The terminal summary of one dataset's run: a few lines, each under ``WIDTH`` characters.

Counts that are zero are left out (exact samples are always said), classes follow their count, and
the speed says what its time covers.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from pipeline.core.decision import Counts

__all__ = ["summary_lines", "plural", "shown", "WIDTH"]

WIDTH = 119  # characters a summary line may take


def plural(n: int, one: str, many: str | None = None) -> str:
    """``1 sample``, ``2 samples``; ``many`` when adding an s is wrong."""
    return f"{n:,} {one if n == 1 else many or one + 's'}"


def shown(path: Path) -> Path:
    """A path as the summary shows it: relative to the working directory when under it."""
    try:
        return Path(path).absolute().relative_to(Path.cwd())
    except ValueError:
        return Path(path)


def _by_class(d: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(d.items()))


def _outcomes(counts: Counts) -> str:
    parts = [f"{counts.exact:,} exact"]
    for n, one, many, classes, unit in (
        (counts.policy, "accepted by policy", "accepted by policy", counts.policy_hunks_by_class, "hunks: "),
        (counts.known, "known divergence", None, counts.known_by_class, ""),
        (counts.new, "new divergence", None, counts.new_by_class, ""),
        (counts.bad_input, "with bad input", "with bad input", {}, ""),
    ):
        if n:
            parts.append(plural(n, one, many) + (f" ({unit}{_by_class(classes)})" if classes else ""))
    return ", ".join(parts)


def _prompts(counts: Counts) -> str:
    """The prompt side (``Verdict.prompt``): exact, reviewed and not checked always said; new divergences when any."""
    if counts.prompt_off:
        return f"  prompts: off (--tokfidelity-prompts=off): {plural(counts.prompt_off, 'sample')} not rendered"
    new = f", {plural(counts.prompt_new, 'new divergence')}" if counts.prompt_new else ""
    return (f"  prompts: {counts.prompt_exact:,} exact, {counts.prompt_reviewed:,} reviewed{new}, "
            f"prompt not checked: {counts.prompt_unchecked:,}")


def _views(name: str, by_view: dict[str, Counts]) -> list[str]:
    """A dataset judged under several views: a line per view, with its share of exact samples."""
    n = max(c.samples for c in by_view.values())
    lines = [f"{name}: {plural(n, 'sample')} under {len(by_view)} views ({', '.join(by_view)})"]
    for view, c in by_view.items():
        exact = f" ({c.exact / c.samples:.2%} exact)" if c.samples else ""
        lines.append(f"  view {view}: {plural(c.samples, 'sample')}: {_outcomes(c)}{exact}")
    return lines


def summary_lines(
    name: str, counts: Counts, span: float, loading_included: bool, gate_note: str, problems, stale: str | None = None,
    by_view: dict[str, Counts] | None = None,
) -> list[str]:
    """``span``: seconds from the dataset's first test's start to its last test's end (or the whole
    run's); ``loading_included``: whether that time holds the tokenizer's loading (xdist workers load
    it in their first test; a lone run loads it, and judges the first samples, while it collects).
    ``by_view``: the counts of each view, for a dataset judged under several (``counts``: their sum;
    the prompt, rate and speed lines are over all views' sample tests)."""
    n, tokens = counts.samples, counts.tokens
    divergent = counts.policy + counts.known + counts.new
    per_k = 1000 * counts.hunks / tokens if tokens else 0.0
    covers = "tokenizer loading included" if loading_included else "tests only: tokenizer loaded while collecting"
    lines = [
        *(_views(name, by_view) if by_view else [f"{name}: {plural(n, 'sample')}: {_outcomes(counts)}"]),
        _prompts(counts),
        f"  rates: {divergent / n if n else 0:.2%} of {'sample tests' if by_view else 'samples'} diverge, "
        f"{per_k:.3f} hunks per 1,000 tokens",
    ]
    if tokens:
        lines.append(f"  speed: {plural(tokens, 'token')} in {span:.2f} s, {tokens / span if span else 0:,.0f} tokens/s ({covers})")
    if stale:
        lines.append(f"  {stale}")
    lines += [f"  FAILED: {p}" for p in problems if not p.endswith("failed")]
    lines.append(f"  gate: {gate_note}")
    out = []
    for line in lines:
        indent = " " * (len(line) - len(line.lstrip()) + 4)
        out += textwrap.wrap(line, WIDTH, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False) or [line]
    return out
