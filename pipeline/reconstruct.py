"""Documented import path, kept stable: the code lives in ``pipeline.core.reconstruct``."""

from pipeline.core.reconstruct import *  # noqa: F401,F403
from pipeline.core.reconstruct import __all__  # noqa: F401
