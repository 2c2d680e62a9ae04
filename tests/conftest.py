"""Fixtures many test files share: the real Kimi K2.5 tokenizer and its bound profile.

(A test file may define its own ``kimi`` fixture of another shape; pytest lets it override these.)
"""

import pytest

from pipeline.core.profiles import bind_profile
from pipeline.core.tokenizer import load_tokenizer


@pytest.fixture(scope="session")
def kimi():
    return load_tokenizer("kimi-k2.5")


@pytest.fixture(scope="session")
def profile(kimi):
    return bind_profile("kimi-k2.5", kimi)
