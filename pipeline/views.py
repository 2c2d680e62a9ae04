"""Documented import path, kept stable: the code lives in ``pipeline.core.views``."""

from pipeline.core.views import *  # noqa: F401,F403
from pipeline.core.views import __all__  # noqa: F401
