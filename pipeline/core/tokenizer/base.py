"""The interface every tokenizer answers, and the byte table behind its bytes and decoding."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..errors import TokfidelityError
from ..files import open_input

__all__ = ["Tokenizer", "TokenizerNotFound", "read_json"]


class TokenizerNotFound(TokfidelityError, FileNotFoundError):
    """No tokenizer could be found; the message lists every place that was tried. ``spec``, ``tried``
    and ``folder`` (the folder name a tokenizers root would need) let each caller say it in one line
    (``summary``) and name its own option (``advice``)."""

    def __init__(self, message: str, *, spec: str | None = None, tried: Sequence[str] = (), folder: str | None = None, **kw):
        super().__init__(message, **kw)
        self.spec, self.tried, self.folder = spec, list(tried), folder

    def summary(self) -> str:
        """One line: which tokenizer, and where it was looked for."""
        if self.spec is None:
            return self.message
        return f"tokenizer {self.spec!r} not found" + (f" (tried: {'; '.join(self.tried)})" if self.tried else "")

    def advice(self, option: str = "--tokenizer PATH") -> str:
        """What to do, naming the caller's option for an explicit path."""
        where = f"a folder holding a {self.folder!r} folder" if self.folder else "the folder of tokenizer folders"
        return f"pass {option}, or set TOKFIDELITY_TOKENIZERS to {where}"


class Tokenizer:
    """A loaded tokenizer. Subclasses fill in the encoders and the byte table (``_bytes``: id -> the
    token's raw bytes, a special token's text as UTF-8); bytes and decoding are answered here from it."""

    name: str
    source: str
    files: tuple[Path, ...]
    n_vocab: int
    special_tokens: Mapping[str, int]  # text -> id: the added/special-token table
    special_ids: frozenset[int]

    def __init__(self, name: str, source: str, files: Sequence[Path], special_tokens: Mapping[str, int]):
        self._bytes: list[bytes] = []  # id -> the token's raw bytes; each backend fills it once at load
        self.name = name
        self.source = source
        self.files = tuple(files)
        self.special_tokens = dict(special_tokens)
        self.special_ids = frozenset(self.special_tokens.values())
        self.special_text = {i: t for t, i in self.special_tokens.items()}

    # -- primitives -------------------------------------------------------------------------
    def encode_ordinary(self, text: str) -> list[int]:
        """Encode as ordinary text: literal marker text stays ordinary tokens."""
        raise NotImplementedError

    def encode(self, text: str) -> list[int]:
        """Encode as the model's own tokenizer does: marker text becomes its special id."""
        raise NotImplementedError

    # A backend that can give encode_ordinary's ids packed (text -> a buffer of native unsigned 32-bit
    # ints, or None for "ask encode_ordinary") defines encode_ordinary_packed; None: it cannot.
    encode_ordinary_packed = None

    # -- the byte table ---------------------------------------------------------------------
    def token_bytes(self, token_id: int) -> bytes:
        """The raw bytes of one token (a special token's text, UTF-8)."""
        return self._bytes[token_id]

    def token_bytes_list(self, ids: Sequence[int]) -> list[bytes]:
        """The raw bytes of each token, in order."""
        return list(map(self._bytes.__getitem__, ids))

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        return b"".join(map(self._bytes.__getitem__, ids))

    # -- derived ----------------------------------------------------------------------------
    def encode_ordinary_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [self.encode_ordinary(t) for t in texts]

    def decode(self, ids: Sequence[int]) -> str:
        """Decode to text; invalid UTF-8 becomes U+FFFD, as engines do."""
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

    def token_text(self, token_id: int) -> str:
        return self.token_bytes(token_id).decode("utf-8", errors="replace")

    def is_valid_id(self, token_id: int) -> bool:
        return 0 <= token_id < self.n_vocab

    @functools.cached_property
    def file_digests(self) -> dict[str, str]:
        """sha256 of each file, by absolute path, taken when the tokenizer is loaded (``load_tokenizer``
        asks at once): what was loaded, for the gate's pins, whatever happens to the files later."""
        out = {}
        for path in self.files:
            with open_input(path) as f:
                out[str(Path(path).resolve())] = hashlib.file_digest(f, "sha256").hexdigest()
        return out

    @functools.cached_property
    def fingerprint(self) -> str:
        """sha256 over the tokenizer's files (name and content, as loaded) and its special-token table."""
        h = hashlib.sha256()
        digests = self.file_digests
        for path in sorted(self.files, key=lambda p: p.name):
            h.update(path.name.encode() + b"\0")
            h.update(bytes.fromhex(digests[str(Path(path).resolve())]))
        table = sorted((i, t) for t, i in self.special_tokens.items())
        h.update(json.dumps(table, ensure_ascii=False).encode())
        return h.hexdigest()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} from {self.source}>"


def read_json(path: Path) -> dict:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


@functools.cache
def byte_level_decoder() -> dict[str, int]:
    """GPT-2's byte-level alphabet, inverted: printable stand-in char -> byte."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}
