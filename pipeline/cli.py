"""The ``tokfidelity`` command: one subcommand per module in ``pipeline.commands``.

Each command module defines ``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int``.
A command module imports only light things at its top (heavy ones inside ``run``), and only the
chosen command's module is loaded (all of them for ``tokfidelity --help``), so ``tokfidelity
reconstruct`` never pays for torch or httpx.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

# name -> module under pipeline.commands, in the order `tokfidelity --help` lists them.
COMMANDS = {
    "reconstruct": "reconstruct",
    "render": "render",
    "audit": "audit",
    "gate": "gate",
    "report": "report",
    "capture": "capture",
    "golden-from": "golden_from",
    "generate": "generate",
    "build": "build",
    "hidden-states": "hidden_states",
    "train": "train",
}

# Exit codes shared by every command.
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_GATE_CLOSED = 3
EXIT_INTERRUPTED = 130  # Ctrl-C, as shells report SIGINT
EXIT_PIPE_CLOSED = 141  # stdout closed early (`| head`), as shells report SIGPIPE

# The one table of exit codes: `tokfidelity --help` prints it, README.md and the docs show it, and a test
# checks that they agree.
EXIT_CODES = (
    (EXIT_OK, "done (`gate check`: the gate is open)"),
    (EXIT_FAILED, "failed: bad input lines, flagged records, a closed gate in `gate check`; the message says which"),
    (EXIT_USAGE, "usage: an unknown option, dataset, profile or tokenizer"),
    (EXIT_GATE_CLOSED, "a gated stage refused to run: the gate is closed (it says why and what to run)"),
    (EXIT_INTERRUPTED, "interrupted (Ctrl-C); what was done is kept"),
    (EXIT_PIPE_CLOSED, "stdout closed early (`| head`)"),
)


def _epilog() -> str:
    return "exit codes:\n" + "\n".join(f"  {code:>3}  {meaning}" for code, meaning in EXIT_CODES)


def _version() -> str:
    from . import __version__

    return f"tokfidelity {__version__}"


def _load(module_name: str):
    return importlib.import_module(f"pipeline.commands.{module_name}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="tokfidelity", description="Exact token ids for training data built from model text.",
                                     epilog=_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    # Only the chosen command's module is imported; the others are listed by name.
    chosen = next((a for a in argv if not a.startswith("-")), None)
    for name, module_name in COMMANDS.items():
        if chosen is None or name == chosen:  # `tokfidelity --help` lists every command's one line
            module = _load(module_name)
            p = sub.add_parser(name, help=module.HELP, description=module.HELP)
            if name == chosen:
                module.add_arguments(p)
                p.set_defaults(_run=module.run)
        else:
            sub.add_parser(name, add_help=False)
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args._run(args) or 0)
    except KeyboardInterrupt:
        print(f"tokfidelity {args.command}: interrupted (Ctrl-C)", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # stdout closed early (`| head`): stop quietly, as other Unix tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's final flush does not fail again
        return EXIT_PIPE_CLOSED
    except OSError as e:  # a read-only folder, a full disk, a path through a file: the file named, no traceback
        from .core.files import os_error_message

        print(f"tokfidelity {args.command}: cannot go on: {os_error_message(e)}", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
