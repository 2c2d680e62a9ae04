"""Documented import path, kept stable: the code lives in ``pipeline.core.diagnose``."""

from pipeline.core.diagnose import *  # noqa: F401,F403
from pipeline.core.diagnose import __all__  # noqa: F401
