"""tokfidelity hidden-states: target-model hidden states for built training records (gated)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..cli import EXIT_OK, EXIT_FAILED, EXIT_USAGE
from .gated import add_gate_arguments, closed_gate_exit
from ..core.files import out_folder_problem

HELP = "Compute target-model hidden states for `tokfidelity build` records (transformers, or a configured engine command)."


def add_arguments(p):
    add_gate_arguments(p)
    p.add_argument("--data", required=True, help="a `tokfidelity build` --out folder (train.jsonl) or the train.jsonl itself")
    p.add_argument("--out", required=True, help="folder for one file per sample, see --format (existing files are kept)")
    p.add_argument("--model", default=None, help="transformers engine: a *.gguf file, a model folder, or pkg:PACKAGE/FILE")
    p.add_argument("--command", default=None,
                   help="run this engine command line instead (e.g. SpecForge's prepare_hidden_states.py); "
                        "{data}, {out} are replaced by the paths")
    p.add_argument("--format", dest="format", choices=("safetensors", "specforge", "speculators"), default="safetensors",
                   help="file layout (--model only): safetensors (default: <id>.safetensors), specforge (data_{i:08d}.ckpt, "
                        "SpecForge's offline reader), speculators (hidden_states/hs_{i}.safetensors); i is the train.jsonl row")
    p.add_argument("--limit", type=int, default=None, help="only the first N samples")
    p.add_argument("--aux-layers", default=None, help="comma-separated decoder layers for aux_hidden_state (default: 1, n/2-1, n-4)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--no-progress", action="store_true")


def data_paths(args) -> tuple[Path, Path]:
    """(train.jsonl, the build folder) from --data."""
    data = Path(args.data)
    train = data / "train.jsonl" if data.is_dir() else data
    if not train.is_file():
        raise ValueError(f"{train} does not exist: run `tokfidelity build --in ... --out {data}` first")
    return train, train.parent


def check_data_tokenizer(args, status, build_dir: Path) -> None:
    """The records must come from the tokenizer the gate verified; ValueError otherwise."""
    meta_path = build_dir / "export.json"
    if not meta_path.is_file():
        raise ValueError(f"{meta_path} is missing: only `tokfidelity build` output can be used (it records the tokenizer)")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except ValueError as e:  # not JSON, or not UTF-8
        raise ValueError(f"{meta_path}: not valid JSON ({e}); run `tokfidelity build` again") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{meta_path}: expected a JSON object; run `tokfidelity build` again")
    from ..core.tokenizer import load_tokenizer
    from .gated import dataset_manifest

    gated = load_tokenizer(args.tokenizer or dataset_manifest(args, status).tokenizer)
    if meta.get("tokenizer_fingerprint") != gated.fingerprint:
        raise ValueError(
            f"{build_dir} was built with tokenizer {meta.get('tokenizer')!r} ({str(meta.get('tokenizer_fingerprint'))[:12]}), "
            f"but the gate of {status.dataset} verified {gated.name!r} ({gated.fingerprint[:12]}): rebuild with the verified tokenizer"
        )


def run(args) -> int:
    code, status = closed_gate_exit(args, "hidden-states")  # before loading or writing anything
    if code is not None:
        return code
    from ..stages.gpu_stages import fill_command, hidden_states_with_transformers, run_configured_command

    try:
        train, build_dir = data_paths(args)
        check_data_tokenizer(args, status, build_dir)
        if bool(args.model) == bool(args.command):
            raise ValueError("give exactly one of --model (transformers engine) or --command (a configured engine)")
        if args.command and args.format != "safetensors":
            raise ValueError("--format applies to --model only: a configured --command writes whatever its engine writes")
        try:
            layers = [int(x) for x in args.aux_layers.split(",")] if args.aux_layers else None
        except ValueError:
            raise ValueError(f"--aux-layers: expected comma-separated layer numbers, e.g. 1,13,26; got {args.aux_layers!r}") from None
        if problem := out_folder_problem(args.out):
            raise ValueError(problem)
        if args.limit is not None and args.limit < 1:
            raise ValueError(f"--limit: expected a positive number of samples, got {args.limit}")
    except ValueError as e:
        print(f"tokfidelity hidden-states: {e}", file=sys.stderr)
        return EXIT_USAGE
    out = Path(args.out)
    if args.command:
        argv = fill_command(args.command, {"data": str(train), "out": str(out), "hidden_states": str(out)})
        exit_code = run_configured_command(argv, log_path=out / "hidden_states_run.json")
        print(f"tokfidelity hidden-states: {argv[0]} exited with {exit_code}", file=sys.stderr)
        return EXIT_OK if exit_code == 0 else EXIT_FAILED

    from tqdm import tqdm

    with tqdm(desc="hidden-states", unit="sample", file=sys.stderr, disable=args.no_progress) as bar:
        try:
            result = hidden_states_with_transformers(train, args.model, out, limit=args.limit, aux_layers=layers,
                                                     threads=args.threads, on_progress=bar.update, fmt=args.format)
        except (ValueError, FileNotFoundError) as e:
            print(f"tokfidelity hidden-states: {e}", file=sys.stderr)
            return EXIT_FAILED
    print(
        f"tokfidelity hidden-states: {len(result.written)} written, {result.skipped} already there -> {out} ({args.format}) "
        f"(model {result.model}, aux layers {list(result.aux_layers) or 'n/a'}, {result.seconds:.1f}s)",
        file=sys.stderr,
    )
    return EXIT_OK
