"""Where two id sequences differ: the aligned blocks (hunks before they are classified).

``divergent_blocks(a, b)`` strips the common prefix and suffix, splits the middle at tokens found
exactly once on both sides (a patience diff: the longest chain of such anchors in order), aligns
small gaps with difflib and long gaps without anchors (repetitive text) by a greedy nearest resync.
Runs of equal tokens are compared by slices (in C), never token by token in Python, so the usual
case, a few local differences in a long sequence, costs near-linear time.
"""

from __future__ import annotations

import difflib
from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence

__all__ = ["divergent_blocks"]

_SMALL_RANGE = 40_000  # len(a) * len(b) up to which difflib aligns a gap directly
_RESYNC_LIMIT = 96  # tokens skipped (both sides together) when looking for where the sequences agree again
_RESYNC_RUN = 4  # tokens that must agree for a resync to count
_FEW_UNIQUE = 32  # tokens unique to both sides up to which each is found by a search (in C)


def _lis_pairs(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Longest chain of (i, j) pairs increasing in j (pairs come sorted by i): patience sorting."""
    tails: list[int] = []  # j of the last pair of the best chain of each length
    tail_idx: list[int] = []
    prev = [-1] * len(pairs)
    for k, (_, j) in enumerate(pairs):
        pos = bisect_left(tails, j)
        if pos == len(tails):
            tails.append(j)
            tail_idx.append(k)
        else:
            tails[pos] = j
            tail_idx[pos] = k
        prev[k] = tail_idx[pos - 1] if pos else -1
    chain = []
    k = tail_idx[-1] if tail_idx else -1
    while k >= 0:
        chain.append(pairs[k])
        k = prev[k]
    chain.reverse()
    return chain


def _resync_blocks(a, b, alo, ahi, blo, bhi) -> list[tuple[int, int, int, int]]:
    """Greedy alignment for long gaps without unique tokens (e.g. repetitive text): at each
    difference, take the nearest point where the next few tokens agree again."""
    run = _RESYNC_RUN

    def agree(i: int, j: int) -> bool:
        n = min(run, ahi - i, bhi - j)
        if n < run and ahi - i != bhi - j:
            return False
        return a[i : i + n] == b[j : j + n]

    blocks = []
    i, j = alo, blo
    while i < ahi and j < bhi:
        if a[i] == b[j]:  # the run of equal tokens, compared in C
            same = _common_prefix(a, b, i, j, min(ahi - i, bhi - j))
            i += same
            j += same
            continue
        found = None
        for d in range(1, _RESYNC_LIMIT + 1):
            for x in range(d + 1):
                ii, jj = i + x, j + d - x
                # (two different first tokens never agree: the slices are not compared)
                if ii <= ahi and jj <= bhi and (ii == ahi or jj == bhi or a[ii] == b[jj]) and agree(ii, jj):
                    found = ii, jj
                    break
            if found:
                break
        if found is None:  # no agreement nearby: the rest of the gap is one hunk
            break
        blocks.append((i, found[0], j, found[1]))
        i, j = found
    if i < ahi or j < bhi:
        blocks.append((i, ahi, j, bhi))
    return blocks


def _common_prefix(a: Sequence[int], b: Sequence[int], alo: int, blo: int, n: int) -> int:
    """Length of the common prefix of a[alo:alo+n] and b[blo:blo+n]: galloping slice compares
    (done in C) instead of a Python loop over every equal token."""
    same, step = 0, 16
    while same < n:
        k = min(step, n - same)
        if a[alo + same : alo + same + k] == b[blo + same : blo + same + k]:
            same += k
            step *= 2
        elif k > 4:
            step = k // 2
        else:
            while same < n and a[alo + same] == b[blo + same]:
                same += 1
            break
    return same


def _common_suffix(a: Sequence[int], b: Sequence[int], ahi: int, bhi: int, n: int) -> int:
    """Length of the common suffix of a[ahi-n:ahi] and b[bhi-n:bhi], as _common_prefix."""
    same, step = 0, 16
    while same < n:
        k = min(step, n - same)
        if a[ahi - same - k : ahi - same] == b[bhi - same - k : bhi - same]:
            same += k
            step *= 2
        elif k > 4:
            step = k // 2
        else:
            while same < n and a[ahi - same - 1] == b[bhi - same - 1]:
                same += 1
            break
    return same


def _unique_pairs(a, b, alo, ahi, blo, bhi) -> list[tuple[int, int]]:
    """(i, j) for each token found exactly once in a[alo:ahi] and once in b[blo:bhi], at a[i] and
    b[j], in order of i. Few such tokens (repetitive text) are found by searches done in C."""
    b_count = Counter(b[blo:bhi])
    common = {t for t, n in Counter(a[alo:ahi]).items() if n == 1 and b_count.get(t) == 1}
    if len(common) <= _FEW_UNIQUE:
        return sorted((a.index(t, alo, ahi), b.index(t, blo, bhi)) for t in common)
    b_pos = {t: j for j, t in enumerate(b[blo:bhi], blo) if t in common}
    return [(i, b_pos[t]) for i, t in enumerate(a[alo:ahi], alo) if t in common]


def divergent_blocks(a: Sequence[int], b: Sequence[int]) -> list[tuple[int, int, int, int]]:
    """Aligned blocks where ``a`` and ``b`` differ, as (a_start, a_end, b_start, b_end), in order.

    Common prefix and suffix are stripped; the middle is split at tokens that occur exactly once
    on both sides (patience diff), small gaps are aligned by difflib, and long gaps without such
    tokens by a greedy nearest-resync. Near-linear for the usual case of a few local differences
    in a long sequence.
    """
    blocks: list[tuple[int, int, int, int]] = []
    stack = [(0, len(a), 0, len(b))]
    while stack:
        alo, ahi, blo, bhi = stack.pop()
        same = _common_prefix(a, b, alo, blo, min(ahi - alo, bhi - blo))
        alo, blo = alo + same, blo + same
        same = _common_suffix(a, b, ahi, bhi, min(ahi - alo, bhi - blo))
        ahi, bhi = ahi - same, bhi - same
        if alo == ahi or blo == bhi:
            if alo < ahi or blo < bhi:
                blocks.append((alo, ahi, blo, bhi))
            continue
        size = (ahi - alo) * (bhi - blo)
        if size > _SMALL_RANGE:
            anchors = _lis_pairs(_unique_pairs(a, b, alo, ahi, blo, bhi))
            if anchors:
                pi, pj = alo, blo
                for i, j in anchors:
                    stack.append((pi, i, pj, j))
                    pi, pj = i + 1, j + 1
                stack.append((pi, ahi, pj, bhi))
                continue
            blocks += _resync_blocks(a, b, alo, ahi, blo, bhi)
            continue
        matcher = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag != "equal":
                blocks.append((alo + i1, alo + i2, blo + j1, blo + j2))
    blocks.sort()
    merged: list[tuple[int, int, int, int]] = []
    for blk in blocks:  # touching blocks (no equal token between them) are one hunk
        if merged and merged[-1][1] == blk[0] and merged[-1][3] == blk[2]:
            last = merged.pop()
            blk = (last[0], blk[1], last[2], blk[3])
        merged.append(blk)
    return merged

