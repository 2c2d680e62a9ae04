"""The real vLLM server, for the tests: ``scripts/_support/vllm_server.py`` (the scripts and the bench start it
too, and never import the tests), under the name the tests import it by."""

from __future__ import annotations

from _support.vllm_server import (  # scripts/_support, on the path from servers/__init__.py
    PYTHON, RENDER_CONFIGS, ROOT, STAMP, UNAVAILABLE_FILE, VENV, render_model_folder, server_args, start_vllm,
    start_vllm_render, stop_vllm, unavailable,
)

__all__ = ["PYTHON", "RENDER_CONFIGS", "ROOT", "STAMP", "UNAVAILABLE_FILE", "VENV", "render_model_folder", "server_args",
           "start_vllm", "start_vllm_render", "stop_vllm", "unavailable"]
