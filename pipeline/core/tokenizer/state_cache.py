"""A tokenizer's built state, kept on disk so that only the first load of its files pays for it.

Reading ``tiktoken.model`` (163,840 base64 lines for Kimi K2.5) into tiktoken's ranks and the id ->
bytes table, or a tokenizer.json's byte table and fast-encoder ranks (and proving that encoder), costs
from a few tenths of a second to seconds; the same state read back from one binary entry takes tens of
milliseconds. The entry lives under tokfidelity's cache root (``files.cache_root()``,
``tokenizer-state/``) and is named by the key: sha256 of the format and the tokenizer file's bytes
(``hf_key`` says what else a tokenizer.json's state depends on), so a changed file gets a new entry and
an old one is never read for it.

An entry is ``MAGIC``, the sha256 of the rest (the checksum), then the key, the count, the ranks and
lengths as little-endian 32-bit integers, and the tokens' bytes. It is parsed, never executed (no
pickle, no marshal). Anything else (a short, truncated or corrupt file, a checksum that does not
match, another file's entry under this name, counts that do not add up) is not trusted: the state is
built from the tokenizer file again and the entry rewritten. The cache is safe to delete at any time;
a cache folder that cannot be written only costs the time (the state is built each run).
"""

from __future__ import annotations

import hashlib
import struct
import sys
from array import array
from itertools import accumulate
from pathlib import Path

from ..files import atomic_write, cache_root

__all__ = ["tiktoken_state", "entry_path", "MAGIC", "HF_MAGIC", "hf_key", "read_hf_state", "write_hf_state"]

MAGIC = b"TOKFTIK1"
_COUNT = struct.Struct("<I")


def _key(data: bytes) -> bytes:
    return hashlib.sha256(MAGIC + hashlib.sha256(data).digest()).digest()


def entry_path(key: bytes) -> Path:
    return cache_root() / "tokenizer-state" / f"{key.hex()}.bin"


def _ints(values) -> bytes:
    out = array("I", values)
    if sys.byteorder != "little":
        out.byteswap()
    return out.tobytes()


def _from_ints(data: bytes) -> array:
    out = array("I")
    out.frombytes(data)
    if sys.byteorder != "little":
        out.byteswap()
    return out


def _encode(key: bytes, ranks: dict[bytes, int]) -> bytes:
    tokens = sorted(ranks, key=ranks.__getitem__)
    body = b"".join((key, _COUNT.pack(len(tokens)), _ints(ranks[t] for t in tokens), _ints(map(len, tokens)), *tokens))
    return MAGIC + hashlib.sha256(body).digest() + body


def _decode(key: bytes, entry: bytes) -> tuple[list[bytes], array] | None:
    """(tokens in rank order, their ranks), or None for anything but an intact entry of this key."""
    if len(entry) < 8 + 32 + 32 + 4 or entry[:8] != MAGIC:
        return None
    body = entry[40:]
    if hashlib.sha256(body).digest() != entry[8:40] or body[:32] != key:
        return None
    (n,) = _COUNT.unpack_from(body, 32)
    start = 36 + 8 * n
    if len(body) < start:
        return None
    ranks, lengths = _from_ints(body[36:36 + 4 * n]), _from_ints(body[36 + 4 * n:start])
    offsets = list(accumulate(lengths, initial=start))
    if offsets[-1] != len(body):
        return None
    return [body[a:b] for a, b in zip(offsets, offsets[1:])], ranks


def tiktoken_state(path: Path) -> tuple[dict[bytes, int], list[bytes] | None]:
    """(ranks, id -> bytes table of the ranks or None) of a ``*.tiktoken`` / ``tiktoken.model`` file: from the
    cache where its entry is intact, else built with tiktoken's own reader (and the entry written). The
    table is given where the ranks are exactly 0..n-1 (every shipped file), so the caller need not build it."""
    data = Path(path).read_bytes()
    key = _key(data)
    entry = entry_path(key)
    found = None
    try:
        found = _decode(key, entry.read_bytes())
    except OSError:
        pass
    if found is None:
        from tiktoken.load import load_tiktoken_bpe

        # expected_hash: tiktoken keeps a copy of every file it reads under its own cache, by path, and would
        # otherwise hand back an old copy of a changed file at the same path.
        ranks = load_tiktoken_bpe(str(path), expected_hash=hashlib.sha256(data).hexdigest())
        try:
            atomic_write(entry, _encode(key, ranks), mkdir=True)
        except OSError:
            pass  # no cache: built again next time
        tokens = sorted(ranks, key=ranks.__getitem__)
        values: array | list = [ranks[t] for t in tokens]
    else:
        tokens, values = found
        ranks = dict(zip(tokens, values))
    contiguous = len(ranks) == len(tokens) and array("I", values) == array("I", range(len(tokens)))
    return ranks, tokens if contiguous else None


# ------------------------------------------------------------------------------------------
# A tokenizers-library tokenizer's built state: its byte table, and the fast encoder's ranks and verdict
# ------------------------------------------------------------------------------------------
HF_MAGIC = b"TOKFHF01"
# the code that builds the tokenizer from its files, its table, and decides the verdict
_HF_CODE = ("hf_files.py", "gguf_files.py", "tokenizers_adapter.py", "fast_bpe.py", "bpe_pattern.py")


def hf_key(file_digests: dict[str, str], added_tokens: dict[str, int], fast: bool) -> bytes:
    """What an HF tokenizer's state depends on: its files' bytes (which must describe it whole: the caller
    keys only a tokenizer built from its files), its added tokens, the libraries' versions and the source of
    the code that builds it, its table and proves the fast encoder."""
    import tiktoken
    import tokenizers

    h = hashlib.sha256(HF_MAGIC)
    for part in (tokenizers.__version__, tiktoken.__version__, str(fast), *sorted(file_digests.values()),
                 repr(sorted(added_tokens.items()))):
        h.update(part.encode() + b"\0")
    here = Path(__file__).parent
    for name in _HF_CODE:
        h.update(hashlib.sha256((here / name).read_bytes()).digest())
    return h.digest()


def _frame(magic: bytes, key: bytes, sections: list[list[bytes]]) -> bytes:
    parts = [key, _COUNT.pack(len(sections))]
    for items in sections:
        parts += [_COUNT.pack(len(items)), _ints(map(len, items))]
    parts += [b"".join(items) for items in sections]
    body = b"".join(parts)
    return magic + hashlib.sha256(body).digest() + body


def _unframe(magic: bytes, key: bytes, entry: bytes) -> list[list[bytes]] | None:
    """The sections of an intact entry of this key and kind, else None."""
    if len(entry) < 8 + 32 + 32 + 4 or entry[:8] != magic:
        return None
    body = entry[40:]
    if hashlib.sha256(body).digest() != entry[8:40] or body[:32] != key:
        return None
    (count,) = _COUNT.unpack_from(body, 32)
    at, lengths = 36, []
    for _ in range(count):
        if len(body) < at + 4:
            return None
        (n,) = _COUNT.unpack_from(body, at)
        lengths.append(_from_ints(body[at + 4:at + 4 + 4 * n]))
        if len(lengths[-1]) != n:
            return None
        at += 4 + 4 * n
    sections = []
    for sizes in lengths:
        offsets = list(accumulate(sizes, initial=at))
        if offsets[-1] > len(body):
            return None
        sections.append([body[a:b] for a, b in zip(offsets, offsets[1:])])
        at = offsets[-1]
    return sections if at == len(body) else None


def read_hf_state(key: bytes) -> tuple[dict, list[bytes], dict[bytes, int] | None] | None:
    """(meta, byte table, fast encoder's ranks or None) from an intact entry, else None."""
    import json

    try:
        sections = _unframe(HF_MAGIC, key, entry_path(key).read_bytes())
    except OSError:
        return None
    if sections is None or len(sections) != 4 or len(sections[0]) != 1 or len(sections[3]) != 1:
        return None
    try:
        meta = json.loads(sections[0][0])
    except ValueError:
        return None
    tokens, values = sections[2], _from_ints(sections[3][0])
    if not isinstance(meta, dict) or len(tokens) != len(values):
        return None
    return meta, sections[1], dict(zip(tokens, values)) if meta.get("verdict") == "ok" else None


def write_hf_state(key: bytes, meta: dict, table: list[bytes], ranks: dict[bytes, int] | None) -> None:
    import json

    tokens = sorted(ranks, key=ranks.__getitem__) if ranks else []
    sections = [[json.dumps(meta).encode()], table, tokens, [_ints(ranks[t] for t in tokens)]]
    try:
        atomic_write(entry_path(key), _frame(HF_MAGIC, key, sections), mkdir=True)
    except OSError:
        pass  # no cache: built again next time
