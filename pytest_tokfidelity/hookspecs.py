"""The hooks a project implements in its ``conftest.py`` to have its own code judged by the suite.

Registered by the plugin (``pytest_addhooks``), as pytest-xdist registers its own. A hook implemented
in a conftest is judged instead of tokfidelity's own code for every sample; the options
``--tokfidelity-reconstruct=MODULE:FUNCTION`` and ``--tokfidelity-render=MODULE:FUNCTION`` name a
function directly (and win over a hook). docs/your-code.md says what each gets and returns.
"""

from __future__ import annotations

import pytest


@pytest.hookspec(firstresult=True)
def pytest_tokfidelity_reconstruct(response, tokenizer):
    """The output ids the model generated, rebuilt by the project's own code from ``response``: the
    message dict the dataset's view returns (``reasoning``/``reasoning_content``, ``content``,
    ``tool_calls``, ``finish_reason``). ``tokenizer``: a ``pipeline.api.TokenizerFacade``. Return a list
    of ints (the stop token included when the model stopped on it)."""


@pytest.hookspec(firstresult=True)
def pytest_tokfidelity_render(messages, tools, chat_template_kwargs, tokenizer):
    """The prompt ids the project's own code renders for a sample's conversation (the golden
    ``messages``, ``tools`` and ``chat_template_kwargs``, the latter two may be None), generation
    prompt included. ``tokenizer``: a ``pipeline.api.TokenizerFacade``."""
