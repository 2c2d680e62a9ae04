"""The docs are tested: every shell and Python block of README.md and docs/*.md runs against the shipped
data (or says why it cannot), every command and pytest option is documented, every documented option
exists, and the README's exit-code table is the one ``tokfidelity --help`` prints."""

from __future__ import annotations

import argparse
import importlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from docs_blocks import ROOT, RUNNABLE, blocks, pages

DOC_TEXT = "\n".join(p.read_text(encoding="utf-8") for p in pages())
# Languages a block may have without running: data and configuration, shown, never executed.
SHOWN_ONLY = {"json", "jsonl", "yaml", "toml", "text", "html", "ini", "diff"}


def test_every_code_block_runs_or_says_why_not():
    problems = []
    for page in pages():
        for b in blocks(page):
            if b.lang not in RUNNABLE | SHOWN_ONLY:
                problems.append(f"{b.where}: block language {b.lang!r}: use one of {sorted(RUNNABLE | SHOWN_ONLY)}")
            if b.not_run is not None and len(b.not_run) < 10:
                problems.append(f"{b.where}: 'not run' needs a reason a reader can check, got {b.not_run!r}")
    assert not problems, "\n".join(problems)


# Hub names the docs use whose folder in the shared tokenizers has another name.
HUB_NAMES = {"Qwen3-8B": "qwen3", "Kimi-K2-Instruct": "kimi-k2"}


def _project(tmp_path: Path) -> dict[str, str]:
    """A folder that looks like a user's project holding the shipped golden datasets, and the environment
    the blocks run in: this checkout's code and virtualenv first on the path, tokenizers found offline."""
    shutil.copytree(ROOT / "golden", tmp_path / "golden")
    roots = [r for r in os.environ.get("TOKFIDELITY_TOKENIZERS", "").split(os.pathsep) if r]
    aliases = tmp_path.parent / f"{tmp_path.name}-tokenizers"  # hub names the docs use, as local folders
    aliases.mkdir()
    for alias, folder in HUB_NAMES.items():
        found = next((Path(r) / folder for r in roots if (Path(r) / folder).is_dir()), None)
        if found is not None:
            (aliases / alias).symlink_to(found)
    env = dict(os.environ)
    env.update(
        PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
        PYTHONPATH=os.pathsep.join(p for p in [str(ROOT), env.get("PYTHONPATH", "")] if p),
        TOKFIDELITY_TOKENIZERS=os.pathsep.join([*roots, str(aliases)]),
        TOKFIDELITY_STATE_DIR=str(tmp_path / ".tokfidelity"),
        HF_HUB_OFFLINE="1",
    )
    env.pop("PYTEST_XDIST_WORKER", None)
    env.pop("PYTEST_ADDOPTS", None)
    return env


RUN_PAGES = [p for p in pages() if any(b.lang in RUNNABLE and b.not_run is None for b in blocks(p))]


@pytest.mark.slow
@pytest.mark.parametrize("page", RUN_PAGES, ids=[p.relative_to(ROOT).as_posix() for p in RUN_PAGES])
def test_page_blocks_run_against_shipped_data(page, tmp_path):
    env = _project(tmp_path)
    for b in blocks(page):
        if b.lang not in RUNNABLE or b.not_run is not None:
            continue
        cmd = ["bash", "-euo", "pipefail", "-c", b.code] if b.lang in ("sh", "bash") else [sys.executable, "-c", b.code]
        run = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
        assert run.returncode == 0, f"{b.where} exited {run.returncode}:\n{b.code}\n--- stdout\n{run.stdout[-3000:]}\n--- stderr\n{run.stderr[-3000:]}"


def _pytest_options() -> set[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    out = subprocess.run([sys.executable, "-m", "pytest", "--help"], capture_output=True, text=True, cwd=ROOT, env=env).stdout
    return set(re.findall(r"--tokfidelity-[\w-]+", out))


def test_every_pytest_option_is_documented_and_every_documented_one_exists():
    real = _pytest_options()
    assert "--tokfidelity-dataset" in real
    documented = set(re.findall(r"--tokfidelity-[\w-]*\w", DOC_TEXT))
    assert not real - documented, f"pytest options not in README.md or docs/: {sorted(real - documented)}"
    assert not documented - real, f"documented pytest options that do not exist: {sorted(documented - real)}"


def _command_options(name: str, module_name: str) -> set[str]:
    parser = argparse.ArgumentParser(prog=f"tokfidelity {name}")
    importlib.import_module(f"pipeline.commands.{module_name}").add_arguments(parser)
    return _options(parser)


def _options(parser: argparse.ArgumentParser) -> set[str]:
    """The parser's option strings and those of its subcommands (`gate check`, `gate merge`...)."""
    out: set[str] = set()
    for action in parser._actions:
        out.update(action.option_strings)
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                out |= _options(sub)
    return out


def test_every_command_is_documented_and_its_documented_options_exist():
    from pipeline.cli import COMMANDS

    problems = []
    for name, module_name in COMMANDS.items():
        if not re.search(rf"tokfidelity {re.escape(name)}\b", DOC_TEXT):
            problems.append(f"`tokfidelity {name}` is not documented in README.md or docs/")
        options = _command_options(name, module_name)
        # Every option written after `tokfidelity NAME` on the same line, in code or prose.
        for m in re.finditer(rf"tokfidelity {re.escape(name)}\b([^\n`]*)", DOC_TEXT):
            for opt in re.findall(r"(?<![\w-])--[a-z][\w-]*", m.group(1)):
                if opt not in options:
                    problems.append(f"`tokfidelity {name} {opt}` is documented, but {name} has no {opt}")
    assert not problems, "\n".join(sorted(set(problems)))


def test_readme_exit_code_table_is_the_cli_table():
    from pipeline.cli import EXIT_CODES

    rows = dict(re.findall(r"^\| (\d+) \| (.+?) \|$", (ROOT / "README.md").read_text(encoding="utf-8"), re.M))
    assert {int(k): v.replace("\\|", "|") for k, v in rows.items()} == dict(EXIT_CODES)
    help_text = subprocess.run([sys.executable, "-m", "pipeline.cli", "--help"], capture_output=True, text=True, cwd=ROOT).stdout
    for code, meaning in EXIT_CODES:
        assert f"{code:>3}  {meaning}" in help_text


def test_views_table_is_the_registrys():
    """docs/views.md's table of profiles and their parsers is what the family registry declares; the
    commands' --profile help lists every registered profile."""
    from pipeline.core.names import profile_names, views_table

    assert views_table() in (ROOT / "docs" / "views.md").read_text(encoding="utf-8"), "paste views_table() into docs/views.md"
    help_text = subprocess.run([sys.executable, "-m", "pipeline.cli", "render", "--help"], capture_output=True, text=True, cwd=ROOT).stdout
    assert all(name in " ".join(help_text.split()) for name in profile_names())


def test_version():
    from pipeline import __version__

    run = subprocess.run([sys.executable, "-m", "pipeline.cli", "--version"], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0 and run.stdout.strip() == f"tokfidelity {__version__}"
