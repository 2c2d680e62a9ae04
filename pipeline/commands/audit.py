"""tokfidelity audit: check a profile's marker ids, the tokenizer's special tokens and golden final tokens."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..core.names import names_help
from ..cli import EXIT_OK, EXIT_FAILED, EXIT_USAGE

HELP = (
    "Check that every marker of a profile is exactly one special id of the tokenizer, that special tokens "
    "round-trip, and (with --golden) how golden samples end; exit 1 on any failure."
)


def add_arguments(p):
    p.add_argument("--profile", help=f"model turn format: one of {names_help()} (default: the dataset's)")
    p.add_argument("--tokenizer", help="tokenizer path, folder name or hub id (default: the dataset's)")
    p.add_argument("--golden", metavar="DIR", help="a golden dataset folder (manifest.json + samples.jsonl)")
    p.add_argument("--json", action="store_true", help="print the report as JSON instead of a table")


def _fail_usage(message: str) -> int:
    print(f"tokfidelity audit: {message}", file=sys.stderr)
    return EXIT_USAGE


def run(args) -> int:
    from ..core.audit import audit
    from ..core.golden import GoldenError, MANIFEST_FILE, load_manifest, read_samples
    from ..core.profiles import PROFILES, ProfileError
    from ..core.tokenizer import TokenizerNotFound, load_tokenizer

    profile_name, tokenizer_spec, samples = args.profile, args.tokenizer, None
    if args.golden:
        folder = Path(args.golden)
        if not (folder / MANIFEST_FILE).is_file():
            inside = sorted(p.name for p in folder.iterdir() if (p / MANIFEST_FILE).is_file()) if folder.is_dir() else []
            hint = f"; dataset folders inside it: {', '.join(inside)}" if inside else ""
            return _fail_usage(f"--golden {folder}: not a dataset folder (no {MANIFEST_FILE}){hint}")
        try:
            manifest = load_manifest(folder)
        except GoldenError as e:
            return _fail_usage(str(e))
        profile_name = profile_name or manifest.profile
        tokenizer_spec = tokenizer_spec or manifest.tokenizer
        samples = read_samples(folder)
    if not profile_name or not tokenizer_spec:
        return _fail_usage("--profile and --tokenizer are required (or --golden DIR, whose manifest names them)")
    if profile_name not in PROFILES:
        return _fail_usage(f"unknown profile {profile_name!r}; known profiles: {', '.join(sorted(PROFILES))}")
    try:
        tokenizer = load_tokenizer(tokenizer_spec)
    except (TokenizerNotFound, ValueError) as e:
        return _fail_usage(str(e))
    try:
        report = audit(profile_name, tokenizer, samples)
    except ProfileError as e:
        return _fail_usage(str(e))
    if args.json:
        json.dump(report.to_json(), sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        print(report.render())
        note = getattr(tokenizer, "encoder_note", "")
        print(f"encoder: {getattr(tokenizer, 'encoder', 'tiktoken')}" + (f" (tiktoken's faster core not used: {note})" if note else ""))
    return EXIT_OK if report.ok else EXIT_FAILED
