"""Documented import path, kept stable: the code lives in ``pipeline.core.profiles``."""

from pipeline.core.profiles import *  # noqa: F401,F403
from pipeline.core.profiles import __all__  # noqa: F401
