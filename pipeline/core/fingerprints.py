"""What a gate record pins besides the data: the code that decides verdicts and the libraries it runs on,
and the one rule for what changed since a record's run (``changed_inputs``), which a gate check and a
shard merge both apply."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .pins import changed_files, file_sha256, golden_file_hashes

__all__ = ["PACKAGE_ROOT", "VERDICT_PACKAGES", "TOKENIZER_LIBRARIES", "code_file_hashes", "code_hashes_by_profile", "family_file_hashes", "library_versions", "digest", "changed_inputs"]

PACKAGE_ROOT = Path(__file__).resolve().parent.parent.parent

# The code that decides a verdict: every source file of the verdict core (this package) and of
# the plugin, derived from the tree, so a new core module is covered without a list to keep; and the
# modules of the family judged when another package adds it (entry-point group tokfidelity.families).
VERDICT_PACKAGES = ("pipeline/core", "pytest_tokfidelity")
# Libraries a verdict depends on: the tokenizers, and openai-harmony (renders and checks gpt-oss layouts).
# The Python version stands for its json module, with which the qwen3/deepseek-v3 views re-serialise
# tool-call arguments as SGLang does (number formatting, escapes).
# MiniJinja renders chat templates, transformers (render_jinja_template) and jinja2 those it cannot render
# identically; openai-harmony renders gpt-oss's.
TOKENIZER_LIBRARIES = ("tiktoken", "tokenizers", "openai-harmony", "minijinja", "transformers", "jinja2")


def code_file_hashes(profiles: Iterable[str | None] = ()) -> dict[str, str]:
    """sha256 of the sources that decide verdicts, by path relative to the project root; for the families
    of ``profiles`` that live outside it (another package's), their modules too, as ``family:NAME:PATH``
    with the module's path inside its import root."""
    out: dict[str, str] = {}
    for package in VERDICT_PACKAGES:
        for path in sorted((PACKAGE_ROOT / package).rglob("*.py")):
            out[path.relative_to(PACKAGE_ROOT).as_posix()] = file_sha256(path)
    out.update(family_file_hashes(profiles))
    return out


def code_hashes_by_profile(profiles: Iterable[str | None]) -> dict[str | None, dict[str, str]]:
    """``code_file_hashes([profile])`` of each of ``profiles``, by profile."""
    return {profile: code_file_hashes([profile]) for profile in profiles}


def family_file_hashes(profiles: Iterable[str | None]) -> dict[str, str]:
    """The modules of the families of these profiles that are not part of this package, hashed."""
    from .families import family_of

    out: dict[str, str] = {}
    for profile in profiles:
        family = family_of(profile) if isinstance(profile, str) else None
        if family is None:
            continue
        for module, path in family.source_modules():
            if not path.is_relative_to(PACKAGE_ROOT / "pipeline"):
                key = module.replace(".", "/") + ("/__init__.py" if path.name == "__init__.py" else ".py")
                out[f"family:{family.name}:{key}"] = file_sha256(path)
    return out


def library_versions() -> dict[str, str]:
    """The Python version and the installed release of each of ``TOKENIZER_LIBRARIES`` ("(not installed)" where
    none is), read as the checked-version lookup reads them (one listing of the .dist-info folders per process)."""
    import platform

    from .checked_versions import installed_release

    out = {"python": platform.python_version()}
    for name in TOKENIZER_LIBRARIES:
        out[name] = installed_release(name) or "(not installed)"
    return out


def digest(mapping: Mapping[str, str]) -> str:
    return hashlib.sha256(json.dumps(sorted(mapping.items())).encode()).hexdigest()


def changed_inputs(record: Mapping[str, Any], dataset_dir: Path) -> tuple[list[str], list[str]]:
    """What differs today from what ``record``'s run read: (golden files, then sources and libraries)."""
    golden = changed_files("golden file", record.get("golden_files") or {}, golden_file_hashes(dataset_dir))
    code = changed_files("source", record.get("code_files") or {}, code_file_hashes([record.get("profile")]))
    code += changed_files("library", record.get("libraries") or {}, library_versions())
    return golden, code
