"""A tiktoken vocabulary's built state, kept on disk so that only the first load of a file pays for it.

Reading ``tiktoken.model`` (163,840 base64 lines for Kimi K2.5) into tiktoken's ranks and the id ->
bytes table took 0.3-1.0 s of every run; the same state read back from one binary entry takes tens
of milliseconds. The entry lives under tokfidelity's cache root (``files.cache_root()``,
``tokenizer-state/``) and is named by the key: sha256 of the format and the tokenizer file's bytes,
so a changed file gets a new entry and an old one is never read for it.

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

__all__ = ["tiktoken_state", "entry_path", "MAGIC"]

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
