"""Which code the suite judges: tokfidelity's own, or the project's (an option, else a conftest hook).

``own_functions(config)`` resolves ``--tokfidelity-reconstruct`` / ``--tokfidelity-render`` (imported,
with the project's root tried after sys.path) or the hooks of hookspecs.py into
``pipeline.core.own_code.OwnFunction``s, with their source files pinned. It runs in every process
that judges: the controller and each xdist worker configure themselves, and judging processes are
forked from a process that holds the functions already.
"""

from __future__ import annotations

import os

import pytest

from pipeline.core.own_code import OwnCodeError, OwnFunction, load_function, own_function

from .pytest_adapter import hook_implementations

__all__ = ["own_functions", "HOOKS"]

HOOKS = {"reconstruct": "pytest_tokfidelity_reconstruct", "render": "pytest_tokfidelity_render"}


def _hook_function(config: pytest.Config, kind: str) -> OwnFunction | None:
    """The conftest hook of ``kind`` as a plain function (None: no conftest implements it)."""
    name = HOOKS[kind]
    caller = getattr(config.hook, name)
    impls = hook_implementations(caller)
    if not impls:
        return None
    where = ", ".join(f"{_shown(config, origin)}::{name}" for _, origin in impls)
    if kind == "reconstruct":
        def call(response, tokenizer):
            return caller(response=response, tokenizer=tokenizer)
    else:
        def call(messages, tools, chat_template_kwargs, tokenizer):
            return caller(messages=messages, tools=tools, chat_template_kwargs=chat_template_kwargs, tokenizer=tokenizer)
    return own_function(where, call, [function for function, _ in impls])


def _shown(config: pytest.Config, path: str) -> str:
    try:
        return os.path.relpath(path, config.rootpath)
    except ValueError:
        return path


def own_functions(config: pytest.Config) -> tuple[OwnFunction | None, OwnFunction | None]:
    """(reconstructor, renderer) the suite judges; None: tokfidelity's own. A usage error when an
    option names a function that cannot be found. ``--tokfidelity-trainer``: both are the trainer's
    preprocessing, named (with its version) and loaded per dataset (DatasetRun)."""
    trainer = getattr(config.option, "tokfidelity_trainer", None)
    if trainer:
        if config.option.tokfidelity_reconstruct or config.option.tokfidelity_render:
            raise pytest.UsageError("--tokfidelity-trainer judges the trainer's preprocessing on both sides: "
                                    "give it without --tokfidelity-reconstruct / --tokfidelity-render")
        from pipeline.core.trainers import TrainerError, trainer_name

        try:
            name = trainer_name(trainer)
        except TrainerError as e:
            raise pytest.UsageError(str(e)) from None
        own = OwnFunction(name, None, {})
        return own, own
    found = []
    for kind in ("reconstruct", "render"):
        spec = getattr(config.option, f"tokfidelity_{kind}", None)
        option = f"--tokfidelity-{kind}"
        if spec:
            try:
                found.append(load_function(spec, option, [config.invocation_params.dir, config.rootpath]))
            except OwnCodeError as e:
                raise pytest.UsageError(str(e)) from None
        else:
            found.append(_hook_function(config, kind))
    return found[0], found[1]
