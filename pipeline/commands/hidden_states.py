"""tokfidelity hidden-states: target-model hidden states for built training records (gated)."""

from __future__ import annotations

import sys
from pathlib import Path

from ..cli import EXIT_OK, EXIT_FAILED, EXIT_USAGE
from .gated import add_gate_arguments, closed_gate_exit, gated_tokenizer
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


def run(args) -> int:
    code, status = closed_gate_exit(args, "hidden-states", uses_prompt_ids=True)  # before loading or writing anything
    if code is not None:
        return code
    from ..stages.built_data import gated_build
    from ..stages.gpu_stages import fill_command, hidden_states_with_transformers, run_configured_command
    from .gated import dataset_manifest

    try:
        manifest = dataset_manifest(args, status)
        train, _, verified = gated_build(args.data, gated_tokenizer(args, status, manifest), status, manifest.api_view)
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
    print(f"tokfidelity hidden-states: {verified}", file=sys.stderr)
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
