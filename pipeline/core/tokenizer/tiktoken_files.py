"""tiktoken BPE files: Kimi's ``tiktoken.model`` + ``tokenizer_config.json``, OpenAI ``*.tiktoken`` files."""

from __future__ import annotations

from pathlib import Path

from .base import Tokenizer, read_json
from .state_cache import tiktoken_state
from .tiktoken_adapter import core_bpe, encoding_params, packed_encoder

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
    def __init__(self, name, source, files, mergeable_ranks, special_tokens, pat_str, long_input_cut: bool,
                 table: list[bytes] | None = None):
        """``table``: the ranks' id -> bytes list where the caller has it (ranks exactly 0..n-1), else built here."""
        import tiktoken

        super().__init__(name, source, files, special_tokens)
        self._enc = tiktoken.Encoding(
            name=name, pat_str=pat_str, mergeable_ranks=mergeable_ranks, special_tokens=dict(special_tokens)
        )
        self._core = core_bpe(self._enc)  # the Rust core; the Python layer only adds checks
        self._packed = packed_encoder(self._core)
        self._long_input_cut = long_input_cut
        self.n_vocab = self._enc.n_vocab
        if table is not None and len(table) == len(mergeable_ranks):
            self._bytes = table + [b""] * (self.n_vocab - len(table))
        else:
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

    def encode_ordinary_packed(self, text: str):
        """``encode_ordinary(text)`` as a buffer of native unsigned 32-bit ints (``array("I")``'s items),
        without a Python int per id; None where only encode_ordinary answers (lone surrogates, Kimi's
        cut of long inputs, any error, which encode_ordinary then raises as it always did)."""
        if self._pieces(text) is not None:
            return None
        try:
            return self._packed(text)
        except Exception:  # noqa: BLE001 - encode_ordinary gives the answer, or its own error
            return None

    def encode_ordinary_batch(self, texts):
        if self._long_input_cut and any(len(t) > KIMI_MAX_RUN_CHARS for t in texts):
            return [self.encode_ordinary(t) for t in texts]
        return self._enc.encode_ordinary_batch(list(texts))

    def decode_bytes(self, ids) -> bytes:
        """The Rust core's decode (about 1.5x faster per sample than joining the byte table in Python);
        an id it does not know (negative, past the vocabulary, a gap in the ranks) gets the table's answer."""
        try:
            return self._core.decode_bytes(ids)
        except (KeyError, OverflowError, TypeError, ValueError):
            return super().decode_bytes(ids)

    def encode(self, text: str) -> list[int]:
        out: list[int] = []
        for piece in self._pieces(text) or [text]:
            out += self._enc.encode(piece, allowed_special="all")
        return out


def _load_kimi_tiktoken(folder: Path) -> TiktokenTokenizer:
    model_file = folder / "tiktoken.model"
    config_file = folder / "tokenizer_config.json"
    ranks, table = tiktoken_state(model_file)
    named: dict[int, str] = {}
    if config_file.exists():
        config = read_json(config_file)
        named = {int(k): v["content"] for k, v in config.get("added_tokens_decoder", {}).items()}
        pat_str = config.get("pat_str", KIMI_PAT_STR)
    else:
        pat_str = KIMI_PAT_STR
    base = len(ranks)
    specials = {
        named.get(i, f"<|reserved_token_{i}|>"): i for i in range(base, base + KIMI_NUM_RESERVED_SPECIAL + 2)
    }
    files = [p for p in (model_file, config_file) if p.exists()]
    return TiktokenTokenizer(folder.name, str(folder), files, ranks, specials, pat_str, long_input_cut=True, table=table)


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
    from tiktoken_ext import openai_public

    encoding_name = encoding_name or path.stem
    constructor = openai_public.ENCODING_CONSTRUCTORS.get(encoding_name)
    if constructor is None:
        raise ValueError(
            f"{path}: unknown tiktoken encoding {encoding_name!r}; known: "
            f"{', '.join(sorted(openai_public.ENCODING_CONSTRUCTORS))}"
        )
    ranks, table = tiktoken_state(path)
    params = encoding_params(constructor, ranks)  # its pattern and specials, with our ranks (no download)
    # One text per id, the last one given: tiktoken's o200k_harmony names 200018 both <|endofprompt|> and
    # <|reserved_200018|>; openai-harmony (gpt-oss's own implementation) knows only the latter.
    by_id = {i: text for text, i in params["special_tokens"].items()}
    specials = {text: i for i, text in by_id.items()}
    return TiktokenTokenizer(encoding_name, str(path), [path], ranks, specials, params["pat_str"], long_input_cut=False, table=table)
