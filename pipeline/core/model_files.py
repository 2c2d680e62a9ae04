"""Model files handed to transformers as data only: no code from a model folder ever runs.

transformers runs Python from a model folder when a config's ``auto_map`` names a class (after
asking "Do you wish to run the custom code? [y/N]" on a terminal). Two rules keep that from
happening, wherever transformers loads anything:

* every call writes ``trust_remote_code=False`` itself, so a reader (and a test) sees it at the call;
* a GGUF file is self-contained, so transformers sees it alone, in a temporary folder holding
  only a link to it (``gguf_alone``): files beside it (a Kimi ``tokenizer_config.json`` with its
  ``auto_map``, a ``tokenization_*.py``) are never read;
* a model folder whose config asks for its own code is refused before transformers is called
  (``refuse_folder_code``), with a message saying what to do.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import TokfidelityError

__all__ = ["FolderCodeRefused", "gguf_alone", "refuse_folder_code", "transformers_source"]


# Configs in which transformers looks for ``auto_map``.
_CONFIG_FILES = ("config.json", "tokenizer_config.json", "processor_config.json", "preprocessor_config.json")


class FolderCodeRefused(TokfidelityError, ValueError):
    """A model folder asks to run its own Python code; it never runs."""


@contextmanager
def gguf_alone(path: os.PathLike | str) -> Iterator[tuple[str, str]]:
    """``(folder, file name)`` of a temporary folder holding only a link to the GGUF file."""
    path = Path(path).resolve()
    with tempfile.TemporaryDirectory(prefix="tokfidelity-gguf-") as folder:
        os.symlink(path, Path(folder) / path.name)
        yield folder, path.name


def refuse_folder_code(folder: os.PathLike | str) -> None:
    """Raise FolderCodeRefused when a model folder's config names its own Python code (``auto_map``)."""
    folder = Path(folder)
    for name in _CONFIG_FILES:
        config = folder / name
        if not config.is_file():
            continue
        try:
            data = json.loads(config.read_text(encoding="utf-8-sig"))
        except (OSError, ValueError):
            continue  # transformers reports an unreadable config itself
        if isinstance(data, dict) and data.get("auto_map"):
            raise FolderCodeRefused(
                f"{config}: field 'auto_map' names Python code in the model folder; tokfidelity never runs code "
                "from a model folder: use a folder whose classes transformers ships (or a GGUF file)"
            )


@contextmanager
def transformers_source(path: os.PathLike | str) -> Iterator[tuple[str, dict]]:
    """``(folder, kwargs)`` for ``from_pretrained``: a GGUF file alone, or a checked model folder.
    The caller passes ``trust_remote_code=False`` itself, beside these kwargs."""
    path = Path(path)
    if path.is_file():
        with gguf_alone(path) as (folder, name):
            yield folder, {"gguf_file": name}
        return
    refuse_folder_code(path)
    yield str(path), {}
