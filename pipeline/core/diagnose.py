"""Why two id sequences differ: every divergent hunk, a class for each, and a report for people.

``diagnose(golden_ids, reconstructed_ids, tokenizer)`` runs four steps, each in its own module:

1. align the sequences into blocks where they differ (``alignment.divergent_blocks``);
2. cut the blocks into hunks (here): neighbours that only together keep the bytes are merged,
   replaced special ids at a block's edges and a stop token on one side at the very end become hunks
   of their own, so each hunk has one cause;
3. give each hunk one class (``hunk_rules.classify_hunk``: ordered rules over what
   ``divergence_context.DivergenceContext`` knows of the pair; the classes are the records of
   ``divergence_classes``);
4. show the tokens around the first hunk on both sides (``token_windows``).

The result is a ``diagnosis.Diagnosis``. This runs only for divergent samples; per-run work (nothing
but the tokenizer's tables) is reused. Each name is imported from the module that defines it (the
classes from ``divergence_classes``, the result from ``diagnosis``); ``pipeline.api`` is the one
surface that gathers them for a project's code.
"""

from __future__ import annotations

from collections.abc import Sequence

from .alignment import divergent_blocks
from .diagnosis import Diagnosis, Hunk
from .divergence_classes import TEXT_PRESERVING_CLASSES
from .divergence_context import DivergenceContext
from .hunk_rules import classify_hunk
from .profiles import Profile
from .sequence_bytes import SequenceBytes
from .token_windows import hunk_window
from .tokenizer import Tokenizer

__all__ = ["diagnose"]

_MERGE_GAP = 4  # neighbouring hunks this close are merged when only together they keep the bytes

Block = tuple[int, int, int, int]  # golden[g0:g1] against reconstructed[r0:r1], as (g0, g1, r0, r1)


def diagnose(
    golden_ids: Sequence[int],
    reconstructed_ids: Sequence[int],
    tokenizer: Tokenizer,
    *,
    profile: Profile | None = None,
    finish_reason: str | None = None,
    golden_bytes: bytes | None = None,
    response_finish_reason: str | None = None,
) -> Diagnosis:
    """Every divergent hunk between golden and reconstructed ids, classified, with a report.

    ``profile`` gives regions (tool-call ids and arguments) and the stop id; ``finish_reason``
    ("stop" | "length" | "tool_calls") says whether the golden output was cut at the length limit
    (when None: cut if it does not end with a stop token). ``golden_bytes``: ``tokenizer.decode_bytes(golden_ids)``
    when the caller has it already (the judge's view decoded them). ``response_finish_reason``: the
    response's own, when known: a cut output whose response says otherwise gets ``finish-rewritten``
    for what the reconstruction added at the end."""
    golden = list(golden_ids)
    recon = list(reconstructed_ids)
    token_text = tokenizer.token_text
    if golden == recon:
        return Diagnosis(len(golden), len(recon), [], True, tokenizer_name=tokenizer.name,
                         golden_ids=golden, recon_ids=recon, token_text=token_text)

    ctx = DivergenceContext(golden, recon, tokenizer, profile, finish_reason, golden_bytes, response_finish_reason)
    hunks = []
    for g0, g1, r0, r1 in _hunk_blocks(divergent_blocks(golden, recon), ctx):
        cls = classify_hunk(ctx, g0, g1, r0, r1)
        hunks.append(Hunk(g0, g1, r0, r1, cls, cls in TEXT_PRESERVING_CLASSES))

    first, gbytes, rbytes = hunks[0], ctx.gbytes, ctx.rbytes
    return Diagnosis(
        golden_len=len(golden),
        recon_len=len(recon),
        hunks=hunks,
        texts_identical=gbytes.data == rbytes.data,
        tokenizer_name=tokenizer.name,
        golden_ids=golden,
        recon_ids=recon,
        token_text=token_text,
        windows=lambda: (hunk_window(gbytes, first.golden_start, first.golden_end, token_text),
                         hunk_window(rbytes, first.recon_start, first.recon_end, token_text)),
    )


def _hunk_blocks(blocks: list[Block], ctx: DivergenceContext) -> list[Block]:
    """The aligned blocks cut into hunks of one cause each (see the module)."""
    blocks = _merge_byte_neighbours(blocks, ctx.gbytes, ctx.rbytes)
    blocks = [piece for blk in blocks for piece in _peel_specials(blk, ctx.golden, ctx.recon, ctx.specials)]
    if blocks:
        blocks = blocks[:-1] + _split_stop(blocks[-1], ctx)
    return blocks


def _merge_byte_neighbours(blocks: list[Block], gbytes: SequenceBytes, rbytes: SequenceBytes) -> list[Block]:
    """Merge a hunk with the next one when they are close and only together keep the bytes."""
    out: list[Block] = []
    for blk in blocks:
        if out:
            prev = out[-1]
            gap = blk[0] - prev[1]
            if (
                gap <= _MERGE_GAP
                and gbytes.span(prev[0], prev[1]) != rbytes.span(prev[2], prev[3])
                and gbytes.span(blk[0], blk[1]) != rbytes.span(blk[2], blk[3])
                and gbytes.span(prev[0], blk[1]) == rbytes.span(prev[2], blk[3])
            ):
                out[-1] = (prev[0], blk[1], prev[2], blk[3])
                continue
        out.append(blk)
    return out


def _peel_specials(block: Block, golden: Sequence[int], recon: Sequence[int], specials) -> list[Block]:
    """Split replaced special ids at either edge of a hunk into their own 1-to-1 hunks, so a
    replaced marker next to a text change gives two hunks with two classes."""
    g0, g1, r0, r1 = block
    head, tail = [], []
    while g1 - g0 + r1 - r0 > 2 and g1 > g0 and r1 > r0 and golden[g0] in specials and recon[r0] in specials:
        head.append((g0, g0 + 1, r0, r0 + 1))
        g0, r0 = g0 + 1, r0 + 1
    while g1 - g0 + r1 - r0 > 2 and g1 > g0 and r1 > r0 and golden[g1 - 1] in specials and recon[r1 - 1] in specials:
        tail.append((g1 - 1, g1, r1 - 1, r1))
        g1, r1 = g1 - 1, r1 - 1
    return [*head, (g0, g1, r0, r1), *reversed(tail)]


def _split_stop(block: Block, ctx: DivergenceContext) -> list[Block]:
    """At the very end, peel a stop token present on one side only into its own hunk (unless the
    other side ends with another special id there, a replaced id, or spells the stop token's text,
    marker text: neither is a missing stop token)."""
    golden, recon, stop_ids, specials = ctx.golden, ctx.recon, ctx.stop_ids, ctx.specials
    g0, g1, r0, r1 = block
    if g1 != len(golden) or r1 != len(recon) or (g1 - g0 == 1 and r1 - r0 == 1):
        return [block]
    g_stop = g1 > g0 and golden[g1 - 1] in stop_ids
    r_stop = r1 > r0 and recon[r1 - 1] in stop_ids
    if g_stop == r_stop:
        return [block]
    other_last = (recon[r1 - 1] if r1 > r0 else None) if g_stop else (golden[g1 - 1] if g1 > g0 else None)
    if other_last in specials:
        return [block]
    stop_text = ctx.special_bytes(golden[g1 - 1] if g_stop else recon[r1 - 1])
    other_bytes = ctx.rbytes.span(r0, r1) if g_stop else ctx.gbytes.span(g0, g1)
    if other_bytes.endswith(stop_text):
        return [block]
    if g_stop:
        rest, stop = (g0, g1 - 1, r0, r1), (g1 - 1, g1, r1, r1)
    else:
        rest, stop = (g0, g1, r0, r1 - 1), (g1, g1, r1 - 1, r1)
    if rest[0] == rest[1] and rest[2] == rest[3]:
        return [stop]
    return [rest, stop]
