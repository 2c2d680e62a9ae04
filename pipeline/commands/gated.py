"""What every gated stage (generate, hidden-states, train) shares: the gate options and the
check that runs before anything else."""

from __future__ import annotations

import sys
from pathlib import Path

from ..cli import EXIT_GATE_CLOSED, EXIT_USAGE


def add_gate_arguments(p) -> None:
    p.add_argument("--dataset", required=True, help="golden dataset whose gate must be open (NAME or NAME_*)")
    p.add_argument("--golden-dir", default=None, help="folder of golden datasets (default: ./golden, else the project's golden/)")
    p.add_argument("--state-dir", default=None, help="gate records folder (default: $TOKFIDELITY_STATE_DIR, else ./.tokfidelity)")
    p.add_argument("--tokenizer", default=None, help="tokenizer path, folder name or hub id (default: the dataset manifest's)")


def closed_gate_exit(args, stage: str, *, uses_prompt_ids: bool = False):
    """Check the dataset's gate first of all. Returns (exit code 3, status) when closed, after telling
    stderr why and what to do next (2 for a name that matches no dataset); (None, GateStatus) when
    open. Nothing else has run yet. ``uses_prompt_ids``: the stage feeds built records' prompt ids to a
    model, so a gate whose run skipped the prompt verdicts (--tokfidelity-prompts=off) is closed to it,
    whatever build made the records (one made before that gate opened, or from a generate folder)."""
    from ..core.gate import check_gate

    status = check_gate(
        args.dataset, golden_dir=args.golden_dir, state_dir=args.state_dir,
        tokenizer=args.tokenizer, profile=getattr(args, "profile", None), view=getattr(args, "view", None),
    )
    if status.open and uses_prompt_ids and not status.prompts_checked:
        print(f"tokfidelity {stage}: refused, nothing was run or written. The gate of {status.dataset} was opened by a run "
              f"with --tokfidelity-prompts=off: the prompt ids of the built records come from a chat template that run "
              f"did not verify.\nnext: run `{status.open_command}` (prompt verdicts on)", file=sys.stderr)
        return EXIT_GATE_CLOSED, status
    if status.open:
        return None, status
    if status.unknown:
        print(f"tokfidelity {stage}: --dataset: {status.message}\nnext: {status.next_step}", file=sys.stderr)
        return EXIT_USAGE, status
    print(f"tokfidelity {stage}: refused, nothing was sent or written. {status.message}\nnext: {status.next_step}", file=sys.stderr)
    return EXIT_GATE_CLOSED, status


def gated_tokenizer(args, status, manifest) -> str:
    """The tokenizer a gated stage loads: ``--tokenizer``, else the one the gate check loaded (where
    the green run found it), else the manifest's."""
    return args.tokenizer or status.tokenizer or manifest.tokenizer


def dataset_manifest(args, status):
    """The manifest of the gated dataset (the folder the gate named)."""
    from ..core.gate import default_golden_dir, resolve_dataset_dir
    from ..core.golden import load_manifest

    golden_dir = Path(args.golden_dir) if args.golden_dir else default_golden_dir()
    return load_manifest(resolve_dataset_dir(golden_dir, status.dataset))
