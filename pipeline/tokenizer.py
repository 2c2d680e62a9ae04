"""Documented import path, kept stable: the code lives in ``pipeline.core.tokenizer``."""

from pipeline.core.tokenizer import *  # noqa: F401,F403
from pipeline.core.tokenizer import __all__  # noqa: F401
