"""Fixtures every test file shares: ``kimi``, the real Kimi K2.5 tokenizer, and ``profile``, the
kimi-k2.5 profile bound to it (the one shape of these fixtures; a file needing more builds on them).

Tokenizer files come from ``TOKFIDELITY_TOKENIZERS``; unset, it defaults to ``../shared/tokenizers``
(``tokenizer_roots.py``), so a checkout elsewhere points the variable and nothing else.
"""

import os
import sys
from pathlib import Path

import pytest

from tokenizer_roots import DEFAULT_ROOT

# scripts/_support: what the tests share with the scripts and the bench (a server launcher, a headless browser,
# a plugin run), kept there so that those never import the tests
_SCRIPTS = str(Path(__file__).resolve().parent.parent / "scripts")
if _SCRIPTS not in sys.path:
    sys.path.insert(0, _SCRIPTS)

if not os.environ.get("TOKFIDELITY_TOKENIZERS") and DEFAULT_ROOT.is_dir():
    os.environ["TOKFIDELITY_TOKENIZERS"] = str(DEFAULT_ROOT)

# The fidelity suite renders prompts with transformers' renderer: imported once here, so that pytester's
# in-process runs (which drop the modules a run imported) never import numpy a second time.
import transformers.utils.chat_template_utils  # noqa: E402,F401

from pipeline.core.profiles import bind_profile
from pipeline.core.tokenizer import load_tokenizer


@pytest.fixture(scope="session")
def kimi():
    return load_tokenizer("kimi-k2.5")


@pytest.fixture(scope="session")
def profile(kimi):
    return bind_profile("kimi-k2.5", kimi)


@pytest.fixture(autouse=True)
def _inner_runs_print_as_on_a_desk(monkeypatch):
    """pytest prints each failure's whole message again in its short summary when ``CI`` or
    ``BUILD_NUMBER`` is set (and cuts it to the terminal width otherwise). Tests that count a message in
    a pytester run's output must see the same output on a desk and in CI, so inner runs never see them."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("BUILD_NUMBER", raising=False)
