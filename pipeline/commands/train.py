"""tokfidelity train: launch the configured drafter trainer (e.g. SpecForge train_eagle3.py) on the data (gated)."""

from __future__ import annotations

import sys
from pathlib import Path

from ..cli import EXIT_OK, EXIT_FAILED, EXIT_USAGE
from .gated import add_gate_arguments, closed_gate_exit, gated_tokenizer
from ..core.files import out_folder_problem

HELP = "Launch the configured drafter training command (SpecForge, speculators, ...) on built data; gated."


def add_arguments(p):
    add_gate_arguments(p)
    p.add_argument("--data", required=True, help="a `tokfidelity build` --out folder (train.jsonl) or the train.jsonl itself")
    p.add_argument("--hidden-states", default=None, help="folder of `tokfidelity hidden-states` output, for {hidden_states}")
    p.add_argument("--out", required=True, help="training output folder, for {out}; train_run.json records the run")
    p.add_argument("--command", required=True,
                   help="the trainer's command line; {data}, {hidden_states}, {out} are replaced, e.g. "
                        "'torchrun scripts/train_eagle3.py --train-data-path {data} --train-hidden-states-path {hidden_states} --output-dir {out} ...'")


def run(args) -> int:
    code, status = closed_gate_exit(args, "train", uses_prompt_ids=True)  # before running or writing anything
    if code is not None:
        return code
    from ..stages.built_data import gated_build
    from ..stages.gpu_stages import fill_command, run_configured_command
    from .gated import dataset_manifest

    try:
        manifest = dataset_manifest(args, status)
        train, _, verified = gated_build(args.data, gated_tokenizer(args, status, manifest), status, manifest.api_view)
        values = {"data": str(train), "out": str(Path(args.out)), "hidden_states": str(Path(args.hidden_states or ""))}
        if problem := out_folder_problem(args.out):
            raise ValueError(problem)
        if "{hidden_states}" in args.command and not args.hidden_states:
            raise ValueError("the command uses {hidden_states}: give --hidden-states")
        argv = fill_command(args.command, values)
    except ValueError as e:
        print(f"tokfidelity train: {e}", file=sys.stderr)
        return EXIT_USAGE
    print(f"tokfidelity train: {verified}", file=sys.stderr)
    print(f"tokfidelity train: gate of {status.dataset} open; running: {' '.join(argv)}", file=sys.stderr)
    exit_code = run_configured_command(argv, log_path=Path(args.out) / "train_run.json")
    print(f"tokfidelity train: {argv[0]} exited with {exit_code} (recorded in {Path(args.out) / 'train_run.json'})", file=sys.stderr)
    return EXIT_OK if exit_code == 0 else EXIT_FAILED
