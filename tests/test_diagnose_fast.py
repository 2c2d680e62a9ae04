"""Diagnosis in O(n log n): the regions of a hunk found by bisection, the
tool calls a hunk touches found by bisection, long equal runs and rare unique tokens compared in C.
Each fast path must give exactly the diagnoses of the plain linear reading (every region asked index by
index, every call scanned), which is written out here as the reference: many random samples of every
family are diagnosed both ways."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest

from family_support import profile_names, tokenizer_for
from pipeline.core import alignment, sequence_bytes
from pipeline.core import diagnose as diagnose_module
from pipeline.core.alignment import _SMALL_RANGE, divergent_blocks
from pipeline.core.diagnose import diagnose
from pipeline.core.divergence_context import DivergenceContext
from pipeline.core.sequence_bytes import ByteOffsets
from pipeline.core.layout import BETWEEN, TRAILING, OutputLayout, Span, split_output
from pipeline.core.profiles import bind_profile
from pipeline.core.reconstruct import reconstruct_output_ids
from pipeline.core.responses import ApiTurn, ToolCall
from pipeline.core.tokenizer import load_tokenizer


# -- the linear code this replaced, as it was ------------------------------------------------------
def old_region_at(self, index):
    for span in self.spans:
        if span.start <= index < span.end:
            return span.kind
    return TRAILING


def old_regions(self, start, end):
    layout = self.layout
    if layout is None:
        return set()
    if start == end:
        idx = [i for i in (start - 1, start) if 0 <= i < len(self.golden)]
        empty = {span.kind for span in layout.spans if span.start == span.end == start}
        return {old_region_at(layout, i) for i in idx} | empty
    return {old_region_at(layout, i) for i in range(start, end)}


def old_dropped_by_parser(self, start, end, regions):
    if BETWEEN in regions:
        return True
    if self.layout is None:
        return False
    if any(not call.complete and start < call.id.start <= end for call in self.layout.tool_calls):
        return True
    # a whole call inside the hunk: one a parser's regex cannot read (vLLM's deepseek_v3, a multi-line call)
    return any(start <= call.id.start and call.arguments.end <= end for call in self.layout.tool_calls)


def old_inside_arguments(self, start, end, gb, rb):
    if self.layout is None or not self.layout.tool_calls:
        return False
    n = min(len(gb), len(rb))
    p = 0
    while p < n and gb[p] == rb[p]:
        p += 1
    q = 0
    while q < n - p and gb[len(gb) - 1 - q] == rb[len(rb) - 1 - q]:
        q += 1
    off, data = self.gbytes.offsets, self.gbytes.data
    lo, hi = off[start] + p, off[end] - q
    for call in self.layout.tool_calls:
        span = call.arguments
        a0, a1 = off[span.start], off[span.end]
        body = data[a0:a1]
        core0 = a0 + len(body) - len(body.lstrip())
        core1 = a1 - (len(body) - len(body.rstrip()))
        if core0 >= core1:
            continue
        if (lo < core1 and hi > core0) if lo < hi else core0 < lo < core1:
            return True
    return False


def old_fill(self, number):
    from itertools import accumulate

    start = number * sequence_bytes._OFFSET_BLOCK
    known, ids, token_bytes = self._known, self._ids, self._token_bytes
    offset = known.get(start)
    if offset is None:
        near = min(known, key=lambda k: abs(k - start))
        if near < start:
            offset = known[near] + sum(map(len, token_bytes(ids[near:start])))
        else:
            offset = known[near] - sum(map(len, token_bytes(ids[start:near])))
    block = list(accumulate(map(len, token_bytes(ids[start : start + sequence_bytes._OFFSET_BLOCK])), initial=offset))
    self._blocks[number] = block
    known[start] = offset
    known[start + len(block) - 1] = block[-1]
    return block


def old_resync_blocks(a, b, alo, ahi, blo, bhi):
    run = alignment._RESYNC_RUN

    def agree(i, j):
        n = min(run, ahi - i, bhi - j)
        if n < run and ahi - i != bhi - j:
            return False
        return a[i : i + n] == b[j : j + n]

    blocks = []
    i, j = alo, blo
    while i < ahi and j < bhi:
        if a[i] == b[j]:
            i += 1
            j += 1
            continue
        found = None
        for d in range(1, alignment._RESYNC_LIMIT + 1):
            for x in range(d + 1):
                ii, jj = i + x, j + d - x
                if ii <= ahi and jj <= bhi and agree(ii, jj):
                    found = ii, jj
                    break
            if found:
                break
        if found is None:
            break
        blocks.append((i, found[0], j, found[1]))
        i, j = found
    if i < ahi or j < bhi:
        blocks.append((i, ahi, j, bhi))
    return blocks


def old_divergent_blocks(a, b, small_range=_SMALL_RANGE):
    import difflib

    blocks = []
    stack = [(0, len(a), 0, len(b))]
    while stack:
        alo, ahi, blo, bhi = stack.pop()
        same = alignment._common_prefix(a, b, alo, blo, min(ahi - alo, bhi - blo))
        alo, blo = alo + same, blo + same
        same = alignment._common_suffix(a, b, ahi, bhi, min(ahi - alo, bhi - blo))
        ahi, bhi = ahi - same, bhi - same
        if alo == ahi or blo == bhi:
            if alo < ahi or blo < bhi:
                blocks.append((alo, ahi, blo, bhi))
            continue
        if (ahi - alo) * (bhi - blo) > small_range:
            a_count = Counter(a[alo:ahi])
            b_count = Counter(b[blo:bhi])
            b_pos = {t: j for j, t in enumerate(b[blo:bhi], blo) if b_count[t] == 1}
            pairs = [(i, b_pos[t]) for i, t in enumerate(a[alo:ahi], alo) if a_count[t] == 1 and t in b_pos]
            anchors = alignment._lis_pairs(pairs)
            if anchors:
                pi, pj = alo, blo
                for i, j in anchors:
                    stack.append((pi, i, pj, j))
                    pi, pj = i + 1, j + 1
                stack.append((pi, ahi, pj, bhi))
                continue
            blocks += old_resync_blocks(a, b, alo, ahi, blo, bhi)
            continue
        matcher = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag != "equal":
                blocks.append((alo + i1, alo + i2, blo + j1, blo + j2))
    blocks.sort()
    merged = []
    for blk in blocks:
        if merged and merged[-1][1] == blk[0] and merged[-1][3] == blk[2]:
            last = merged.pop()
            blk = (last[0], blk[1], last[2], blk[3])
        merged.append(blk)
    return merged


# -- random samples of every family ------------------------------------------------------------------
WORDS = ["the", " answer", " is", " 42", "\n", "  ", "\t", " 東京", " Zoë", " 👍🏽", "{", "}", '"', ",", ":", " x", "initializer",
         " def", "(", ")", "\n\n", " ", "é", " ok", "...", " </think>", " <|im_end|>"]


@pytest.fixture(scope="module", params=profile_names())
def family(request):
    tokenizer = tokenizer_for(request.param)
    return tokenizer, bind_profile(request.param, tokenizer)


def _text(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(WORDS) for _ in range(n))


def _arguments(rng: random.Random) -> str:
    value = {f"k{i}": rng.choice([1, 1.5, "v", "東京", [1, 2], {"a": None}, True]) for i in range(rng.randint(0, 4))}
    text = json.dumps(value, separators=rng.choice([(",", ":"), (", ", ": ")]), ensure_ascii=rng.random() < 0.5)
    return rng.choice(["", " ", "\n"]) + text + rng.choice(["", " ", "\n"])


def random_output(rng: random.Random, tokenizer, profile, calls: int) -> list[int]:
    """Output ids of a random response (reasoning, content, tool calls), cut or not, as the family lays them out."""
    if profile.spec.tool_calls is None and profile.spec.own_layout is None:
        calls = 0  # a format without tool calls (ChatML)
    turn = ApiTurn(
        _text(rng, rng.randint(0, 40)) if profile.spec.thinking else None,
        _text(rng, rng.randint(0, 40)),
        tuple(ToolCall(rng.choice(["get", "put_item"]), _arguments(rng), f"functions.get:{i}") for i in range(calls)),
        rng.choice(["stop", "tool_calls"]) if calls else "stop",
    )
    ids = reconstruct_output_ids(turn, profile, tokenizer)
    if rng.random() < 0.3:  # cut at the length limit, maybe inside a call
        ids = ids[: rng.randint(1, len(ids))]
    return ids


def mutate(rng: random.Random, ids: list[int], tokenizer, profile) -> list[int]:
    """What a rebuild might give instead: ids replaced, dropped, inserted, re-split, markers swapped."""
    out = list(ids)
    markers = sorted(set(profile.ids.values()) | set(profile.stop_ids))
    for _ in range(rng.randint(1, 3 + len(out) // 25)):
        if not out:
            out = tokenizer.encode_ordinary("x")
        i = rng.randrange(len(out))
        kind = rng.random()
        if kind < 0.25:  # re-split a token into its bytes' tokens
            piece = tokenizer.token_bytes(out[i]) if out[i] not in tokenizer.special_ids else b""
            if len(piece) > 1:
                out[i : i + 1] = [t for k in range(len(piece)) for t in tokenizer.encode_ordinary(piece[k : k + 1].decode("latin-1"))][:4]
        elif kind < 0.4:
            out[i] = rng.choice(markers)
        elif kind < 0.55:
            del out[i : i + rng.randint(1, 3)]
        elif kind < 0.7:
            out[i:i] = tokenizer.encode_ordinary(rng.choice(WORDS))
        elif kind < 0.85:
            out[i] = rng.choice(out)
        else:
            out[i : i + 2] = tokenizer.encode_ordinary(tokenizer.decode(out[i : i + 2]).replace(" ", "") or "y")
    return out


def _hunks(d):
    return [(h.golden_start, h.golden_end, h.recon_start, h.recon_end, h.cls) for h in d.hunks]


def _both(golden, recon, tokenizer, profile, finish):
    fast = diagnose(golden, recon, tokenizer, profile=profile, finish_reason=finish)
    with pytest.MonkeyPatch.context() as mp:
        for owner, name, value in ((OutputLayout, "region_at", old_region_at), (DivergenceContext, "regions", old_regions),
                                   (DivergenceContext, "dropped_by_parser", old_dropped_by_parser),
                                   (DivergenceContext, "inside_arguments", old_inside_arguments), (ByteOffsets, "_fill", old_fill),
                                   (diagnose_module, "divergent_blocks", old_divergent_blocks)):
            mp.setattr(owner, name, value)
        slow = diagnose(golden, recon, tokenizer, profile=profile, finish_reason=finish)
    return fast, slow


def test_random_samples_of_every_family_get_the_diagnoses_of_the_linear_code(family):
    tokenizer, profile = family
    rng = random.Random(f"issue-20/{profile.name}")
    classes: Counter = Counter()
    for n in range(60):
        golden = random_output(rng, tokenizer, profile, calls=rng.choice([0, 1, 2, 5, 30]))
        recon = mutate(rng, golden, tokenizer, profile)
        finish = rng.choice([None, "stop", "length", "tool_calls"])
        fast, slow = _both(golden, recon, tokenizer, profile, finish)
        assert _hunks(fast) == _hunks(slow), f"sample {n}"
        assert fast.signature() == slow.signature() and fast.render() == slow.render()
        classes.update(fast.classes)
    assert len(classes) >= 4, classes  # the samples reach several classes, not one


def test_long_samples_with_many_calls_and_no_unique_tokens_get_the_diagnoses_of_the_linear_code():
    tokenizer = load_tokenizer("kimi-k2.5")
    profile = bind_profile("kimi-k2.5", tokenizer)
    rng = random.Random("issue-20/long")
    for n in range(3):
        golden = random_output(rng, tokenizer, profile, calls=300)  # spans in the thousands, repetitive text
        golden = golden * 2 if n == 2 else golden  # no token unique to either side: the greedy resync
        recon = mutate(rng, golden, tokenizer, profile)
        fast, slow = _both(golden, recon, tokenizer, profile, "tool_calls")
        assert len(golden) > 2_000 and len(fast.hunks) > 20
        assert _hunks(fast) == _hunks(slow), f"sample {n}"
        assert fast.render() == slow.render()


def test_alignment_of_long_random_pairs_is_that_of_the_linear_code():
    rng = random.Random("issue-20/blocks")
    for n in range(40):
        alphabet = rng.choice([3, 20, 500, 5000])  # few symbols: nothing unique; many: anchors everywhere
        a = [rng.randrange(alphabet) for _ in range(rng.randint(200, 3000))]
        if n % 2:  # repetitive text with a few tokens found once (fewer than _FEW_UNIQUE, or more)
            for value in rng.sample(range(10_000, 20_000), rng.choice([2, 5, 30, 40])):
                a[rng.randrange(len(a))] = value
        b = list(a)
        for _ in range(rng.randint(1, 60)):
            i = rng.randrange(len(b))
            b[i : i + rng.randint(0, 3)] = [rng.randrange(alphabet) for _ in range(rng.randint(0, 3))]
        assert divergent_blocks(a, b) == old_divergent_blocks(a, b), n


def test_regions_by_bisection_are_those_of_a_scan_of_every_span(family):
    tokenizer, profile = family
    rng = random.Random(f"issue-20/regions/{profile.name}")
    for _ in range(40):
        ids = random_output(rng, tokenizer, profile, calls=rng.choice([0, 1, 3, 20]))
        layout = split_output(ids, profile)
        n = len(ids)
        for i in range(-1, n + 2):
            assert layout.region_at(i) == old_region_at(layout, i)
            assert layout.empty_at(i) == {s.kind for s in layout.spans if s.start == s.end == i}
        for _ in range(100):
            start = rng.randint(0, n + 1)
            end = rng.randint(start, min(n + 2, start + rng.choice([1, 3, 40, n + 2])))
            assert layout.regions_in(start, end) == {old_region_at(layout, i) for i in range(start, end)}


def test_spans_out_of_order_are_still_answered_by_the_first_that_holds_the_index():
    layout = OutputLayout([Span("content", 5, 9), Span("reasoning", 0, 6), Span("marker", 7, 7), Span("stop", 9, 10)])
    for i in range(-1, 12):
        assert layout.region_at(i) == old_region_at(layout, i)
        for j in range(i, 12):
            assert layout.regions_in(i, j) == {old_region_at(layout, k) for k in range(i, j)}
    layout.spans.append(Span("trailing", 10, 12))  # spans added after a question: answered afresh
    assert layout.region_at(11) == "trailing" and layout.regions_in(9, 12) == {"stop", "trailing"}


def test_the_calls_a_hunk_touches_are_found_by_bisection_as_by_a_scan_of_every_call(family):
    """Every (start, end) of outputs with many calls, some cut off: whether the hunk holds the start
    of a call that never closed, and whether it lies inside some call's arguments."""
    tokenizer, profile = family
    rng = random.Random(f"issue-20/calls/{profile.name}")
    for _ in range(6):
        ids = random_output(rng, tokenizer, profile, calls=rng.choice([3, 12]))
        ids = ids[: rng.randint(len(ids) // 2, len(ids))]  # often cut inside a call
        ctx = DivergenceContext(ids, ids, tokenizer, profile, "length")
        n = len(ids)
        for start in range(n + 1):
            for end in range(start, min(n, start + 60) + 1):
                assert ctx.dropped_by_parser(start, end, set()) == old_dropped_by_parser(ctx, start, end, set()), (start, end)
                for gb, rb in ((b"", b""), (b"ab", b"a"), (b" x", b"x ")):
                    assert ctx.inside_arguments(start, end, gb, rb) == old_inside_arguments(ctx, start, end, gb, rb), (start, end, gb)
