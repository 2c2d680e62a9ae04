"""Tokenizers loaded from local data files, behind one small interface.

Three on-disk formats are read, and no code from a model repository ever runs:

* tiktoken BPE files: Kimi's ``tiktoken.model`` + ``tokenizer_config.json``, or an
  OpenAI ``*.tiktoken`` file;
* Hugging Face ``tokenizer.json``, or ``vocab.json`` + ``merges.txt``;
* the tokenizer inside a GGUF model file.

Every backend answers the same questions: encode text as ordinary text (marker text stays
ordinary tokens), encode it the way the model's own tokenizer does (marker text becomes the
special id), give the raw bytes of a token, decode, and list the special-token table.

Modules: ``base`` (the interface and the byte table), ``tiktoken_files``, ``hf_files`` (one per
on-disk family), ``resolve`` (spec -> files -> one load per process), and one adapter per library
whose private parts are used (``tiktoken_adapter``, ``tokenizers_adapter``): nothing else reaches
into a library's internals.
"""

from __future__ import annotations

from .base import Tokenizer, TokenizerNotFound
from .gguf_files import gguf_cache_dir
from .hf_files import HFTokenizer
from .resolve import (
    PACKAGE_FILE_PREFIX,
    TOKENIZER_FILES,
    _load_path,
    load_tokenizer,
    location_exists,
    resolve_package_file,
    resolve_tokenizer_dir,
    tokenizer_location,
)
from .tiktoken_files import KIMI_PAT_STR, TiktokenTokenizer

__all__ = [
    "Tokenizer",
    "TokenizerNotFound",
    "load_tokenizer",
    "tokenizer_location",
    "location_exists",
    "resolve_tokenizer_dir",
    "resolve_package_file",
    "PACKAGE_FILE_PREFIX",
    "TOKENIZER_FILES",
    "KIMI_PAT_STR",
    "TiktokenTokenizer",
    "HFTokenizer",
    "gguf_cache_dir",
]
