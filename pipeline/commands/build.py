"""tokfidelity build: training records {input_ids, loss_mask} from a golden dataset or generate output."""

from __future__ import annotations

import sys
from pathlib import Path
from ..cli import EXIT_GATE_CLOSED, EXIT_OK, EXIT_FAILED, EXIT_USAGE
from ..core.files import out_folder_problem

HELP = "Build training records {input_ids, loss_mask} (JSONL) from a golden dataset or a generate output folder."


def add_arguments(p):
    p.add_argument("--in", dest="input", required=True, help="golden dataset folder, or a `tokfidelity generate` --out folder")
    p.add_argument("--out", required=True, help="output folder: train.jsonl + export.json (replaced whole on re-run)")
    p.add_argument("--tokenizer", default=None, help="tokenizer spec (default: the input's)")
    p.add_argument("--keep-prompt-mismatch", action="store_true",
                   help="export records whose usage.prompt_tokens disagrees with the rendered prompt (default: left out, counted)")
    p.add_argument("--length-cut", choices=("drop", "keep"), default="drop",
                   help="reconstructed samples cut at the length limit: drop (default; their tail may be unverifiable) or keep. "
                        "Samples whose ids came from the engine are exact and always kept")
    p.add_argument("--state-dir", default=None,
                   help="gate records folder (default: $TOKFIDELITY_STATE_DIR, else ./.tokfidelity): a golden input whose gate "
                        "was opened with --tokfidelity-prompts=off is refused")
    p.add_argument("--turns", choices=("last", "all"), default="last",
                   help="all: also one record per earlier assistant turn of a multi-turn conversation (its prompt the history as "
                        "the template re-renders it for that turn, its loss mask exactly that turn's ids); default: last")
    p.add_argument("--no-progress", action="store_true")


def run(args) -> int:
    from tqdm import tqdm

    from ..stages.export import EXPORT_META_FILE, LEFT_OUT_FILE, build_records, open_build_input, write_export
    from ..core.golden import GoldenError
    from ..core.profiles import ProfileError
    from ..core.binding import bind_dataset
    from ..core.tokenizer import TokenizerNotFound

    if problem := out_folder_problem(args.out):
        print(f"tokfidelity build: {problem}", file=sys.stderr)
        return EXIT_USAGE
    if refused := _prompts_off_gate(args.input, args.state_dir):
        print(f"tokfidelity build: refused, nothing was written. {refused}", file=sys.stderr)
        return EXIT_GATE_CLOSED
    try:
        source = open_build_input(args.input)
        tokenizer, profile = bind_dataset(source.profile_name, args.tokenizer or source.tokenizer_spec)
        if source.manifest is not None:
            from ..core.prompt_renderers import use_manifest_template

            use_manifest_template(source.manifest, profile, tokenizer)  # TemplateMismatch: a ValueError
    except (GoldenError, TokenizerNotFound, ProfileError, ValueError, KeyError) as e:
        print(f"tokfidelity build: {e}", file=sys.stderr)
        return EXIT_USAGE

    with tqdm(desc="build", unit="sample", file=sys.stderr, disable=args.no_progress, mininterval=0.5) as bar:
        result = build_records(source, profile, tokenizer, on_progress=bar.update,
                               keep_prompt_mismatch=args.keep_prompt_mismatch, length_cut=args.length_cut, turns=args.turns)

    if result.prompt_mismatches:
        print(
            f"tokfidelity build: FAILED, nothing written: {len(result.prompt_mismatches)} of {result.prompt_checked} samples "
            "with golden prompt_ids render differently:",
            file=sys.stderr,
        )
        for where, diagnosis in result.prompt_mismatches[:5]:
            print(f"  {where}: {diagnosis}", file=sys.stderr)
        return EXIT_FAILED

    meta = _export_meta(args, source, profile, tokenizer, result)
    path = write_export(args.out, result.records, meta, result.left_out_rows)
    print(
        f"tokfidelity build: {meta['samples']} records ({meta['tokens']} tokens, {meta['loss_tokens']} with loss) -> {path}; "
        f"{result.prompt_checked} prompts checked against golden prompt_ids; {len(result.left_out)} samples left out"
        f" (see {args.out}/{EXPORT_META_FILE} and {LEFT_OUT_FILE})",
        file=sys.stderr,
    )
    checks = result.prompt_checks
    print(
        f"prompt check (rendered prompt vs {'golden prompt_ids' if source.kind == 'golden' else 'usage.prompt_tokens'}): {checks['ok']} ok, {checks['prompt_mismatch']} prompt_mismatch "
        f"({'exported: --keep-prompt-mismatch' if args.keep_prompt_mismatch else 'left out'}), {checks['unknown']} unknown",
        file=sys.stderr,
    )
    print(result.audit.summary(), file=sys.stderr)
    if source.kind == "generations":
        rebuilt, engine = (", ".join(f"{v} {n}" for v, n in sorted(result.views[k].items())) or "none" for k in ("rebuilt", "engine"))
        print(f"views: records rebuilt from text through {rebuilt}; with the engine's own ids, served through {engine}", file=sys.stderr)
    for example in result.audit.history_examples:
        print(f"  re-rendered history {example}", file=sys.stderr)
    for where, why in result.left_out[:10]:
        print(f"  left out {where}: {why}", file=sys.stderr)
    if len(result.left_out) > 10:
        print(f"  ... and {len(result.left_out) - 10} more", file=sys.stderr)
    return EXIT_FAILED if result.left_out else EXIT_OK


def _export_meta(args, source, profile, tokenizer, result) -> dict:
    """export.json's fields (write_export adds the file pins)."""
    return {
        "format": "tokfidelity-train-1",
        "fields": {"input_ids": "prompt ids then output ids", "loss_mask": "0 on the prompt, 1 on the output",
                   "prompt_len": "number of prompt ids", "source": "capture (engine ids) or reconstruction (from API text)"},
        "input": str(source.path),
        "input_kind": source.kind,
        "profile": profile.name,
        "tokenizer": tokenizer.name,
        "tokenizer_fingerprint": tokenizer.fingerprint,
        **_template_fields(tokenizer, profile),
        "samples": len(result.records),
        "left_out": len(result.left_out),
        "prompt_ids_checked": result.prompt_checked,
        "prompt_checks": result.prompt_checks,
        "prompt_mismatch_exported": args.keep_prompt_mismatch,
        "turns": args.turns,
        "turn_records": result.turn_records,
        "mask_audit": result.audit.as_dict(),
        # generate input: records per view their text came through, "rebuilt" (ids from that text: `train` and
        # `hidden-states` refuse a view the gate did not judge) and "engine" (the engine's own ids)
        **({"views": result.views} if source.kind == "generations" else {}),
        "tokens": sum(len(r["input_ids"]) for r in result.records),
        "loss_tokens": sum(len(r["input_ids"]) - r["prompt_len"] for r in result.records),
    }


def _template_fields(tokenizer, profile) -> dict:
    """What the prompts were rendered with: the chat template's content (the gated stages require the one the
    gate verified), the file it was read from, and the render settings (the profile's template variables; a
    sample's own chat_template_kwargs are kept on its record)."""
    from ..core.prompt_renderers import prompt_template_pins
    from ..core.render import render_settings

    files, digest = prompt_template_pins(profile, tokenizer)
    return {"template_sha256": digest, "template_files": files, "render": render_settings(profile.spec)}


def _prompts_off_gate(folder: str, state_dir: str | None) -> str | None:
    """Why a golden dataset may not be built from: its gate was opened by a run that skipped the
    prompt verdicts (the prompt ids of every record would be unverified). None: no such gate."""
    from ..core.gate import open_command, read_record

    path = Path(folder)
    if not (path / "manifest.json").is_file():
        return None
    record = read_record(state_dir, path.name)
    if not record or record.get("status") != "open" or record.get("prompts") != "off":
        return None
    return (f"the gate of {path.name} was opened by a run with --tokfidelity-prompts=off ({record.get('time', '?')}): "
            f"its prompts were not verified. Run `{open_command(path.name)}` (prompt verdicts on) first.")
