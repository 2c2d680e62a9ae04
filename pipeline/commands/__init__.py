"""Subcommands of ``tokfidelity``; see pipeline/cli.py for the contract each module follows."""
