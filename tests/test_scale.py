"""What the performance work of issue 14 must not change: the fast decode gives the byte table's
answer for every id list, valid or not (the whole-dataset scan, now chunked, is tested through
shards in tests/test_shards.py)."""

from __future__ import annotations

import random

import pytest

from pipeline.core.tokenizer import load_tokenizer
from pipeline.core.tokenizer.base import Tokenizer


@pytest.mark.parametrize("spec", ["kimi-k2.5", "o200k_harmony"])
def test_fast_decode_equals_the_byte_table(spec):
    tok = load_tokenizer(spec)
    assert type(tok).decode_bytes is not Tokenizer.decode_bytes  # the fast path is the one under test
    rng = random.Random(14)
    specials = sorted(tok.special_ids)
    for _ in range(2000):
        ids = [rng.choice((rng.randrange(-3, tok.n_vocab + 3), rng.choice(specials), rng.randrange(0, 1000))) for _ in range(rng.randrange(0, 12))]
        outcomes = []
        for decode in (tok.decode_bytes, lambda i: Tokenizer.decode_bytes(tok, i)):
            try:
                outcomes.append(decode(ids))
            except Exception as e:  # noqa: BLE001 - the same error either way
                outcomes.append(type(e))
        assert outcomes[0] == outcomes[1], ids
    text = "Grüße, 世界! <|im_end|> \n\t" * 20
    assert tok.decode(tok.encode_ordinary(text)) == text
