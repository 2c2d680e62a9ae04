"""vLLM 0.32.0's incremental detokenizer (``vllm/v1/engine/detokenizer.py``), restated for a whole output.

The ids are decoded one at a time; a token whose text so far ends in an incomplete UTF-8 character
is held back until the character completes, so a cut inside a character loses the partial character
(where SGLang sends U+FFFD). The matched stop token is not decoded. With ``skip_special_tokens``, the
tokenizer class's special tokens are skipped. Where the class decodes through transformers' slow
Python path (Kimi's ``TikTokenTokenizer``), ``spaces_between_special_tokens`` joins the pieces around
each of its special tokens with single spaces.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .view import Decode

__all__ = ["incremental_decoder", "class_special_ids", "class_special_texts"]


def class_special_ids(decode: Decode, tokenizer) -> frozenset[int]:
    """The ids the tokenizer class treats as special: ``decode.class_special`` (explicit texts) or,
    with ``decode.class_ordinary``, every special of the tokenizer's table but those."""
    table = tokenizer.special_tokens
    if decode.class_special is not None:
        return frozenset(table[t] for t in decode.class_special if t in table)
    ordinary = set(decode.class_ordinary)
    return frozenset(i for t, i in table.items() if t not in ordinary)


def class_special_texts(decode: Decode, tokenizer) -> tuple[str, ...]:
    """The texts of the class's special tokens (``all_special_tokens``): what vLLM's parser engine
    deletes from the text where they are not its markers."""
    if decode.class_special is not None:
        return decode.class_special
    ordinary = set(decode.class_ordinary)
    return tuple(t for t in tokenizer.special_tokens if t not in ordinary)


def incremental_decoder(decode: Decode, tokenizer) -> Callable:
    """``decode(ids, trim, tokenizer) -> (text, None)`` for this view, bound to the profile's tokenizer."""
    special = class_special_ids(decode, tokenizer)
    spaced = decode.spaces_between_special_tokens and decode.class_special is not None
    lead = " " if spaced and decode.leading_space and not decode.skip_special_tokens else ""  # a skipped prompt token: no space

    def run(ids: Sequence[int], trim: bool, tokenizer) -> tuple[str, None]:
        if trim:
            ids = ids[:-1]
        if not special.intersection(ids):  # the common case: one run of ordinary tokens
            text = _held(tokenizer.decode_bytes(ids), tokenizer, ids)
        else:
            text = _pieces(ids, tokenizer, special, decode.skip_special_tokens, spaced)
        return (lead + text if text else text), None

    return run


def _held(data: bytes, tokenizer, ids: Sequence[int]) -> str:
    """The text of these ordinary tokens as the detokenizer emits it: everything up to the last token
    after which the text so far ended on a whole character."""
    text = data.decode("utf-8", errors="replace")
    if not text.endswith("\ufffd"):
        return text
    # Hold back the tail: drop tokens from the end until what is left decodes without a trailing U+FFFD.
    keep = len(data)
    for token in reversed(ids):
        keep -= len(tokenizer.token_bytes(token))
        head = data[:keep].decode("utf-8", errors="replace")
        if not head.endswith("\ufffd"):
            return head
    return ""


def _pieces(ids, tokenizer, special, skip: bool, spaced: bool) -> str:
    pieces: list[str] = []
    start = 0
    for i, token in enumerate(ids):
        if token in special:
            if start < i:
                pieces.append(tokenizer.decode(ids[start:i]))
            if not skip:
                pieces.append(tokenizer.token_text(token))
            start = i + 1
    if start < len(ids):
        run = ids[start:]
        pieces.append(_held(tokenizer.decode_bytes(run), tokenizer, run))
    return (" " if spaced else "").join(pieces)
