"""tokfidelity as a library: what a project calls from its own code (docs/your-code.md).

Load a tokenizer and profile once (``load``; a golden dataset's as its manifest says, chat template
included: ``load_dataset``), then per sample:

* ``reconstruct(response, bound)``: the output ids tokfidelity rebuilds from a response's text;
* ``render_prompt_ids(messages, tools, chat_template_kwargs, bound)``: the prompt ids the engine feeds
  the model, through the model's own chat template (openai-harmony for gpt-oss);
* ``server_response(output_ids, finish_reason, bound, view)``: the message a server returns for ids;
* ``judge_sample(sample, bound, ...)``: the suite's verdict on one golden sample, with tokfidelity's
  code or with the project's own reconstruction and rendering;
* ``diagnose(golden_ids, rebuilt_ids, bound)``: each divergent hunk, classified, with advice.

``TokenizerFacade`` is the transformers-style tokenizer a project's own functions are given. Nothing
else of ``pipeline`` needs importing; names here stay stable.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .core.diagnosis import Diagnosis
from .core.diagnose import diagnose as _diagnose
from .core.errors import TokfidelityError
from .core.fidelity import BAD_INPUT, DIVERGENT, EXACT, POLICY, Judge, Verdict
from .core.golden import GoldenSample, parse_sample
from .core.own_code import OwnFunction, TokenizerFacade, bound_reconstructor, bound_renderer, own_function
from .core.profiles import Profile
from .core.tokenizer import Tokenizer

__all__ = [
    "Bound", "load", "load_dataset", "reconstruct", "render_prompt_ids", "server_response", "judge_sample", "diagnose",
    "TokenizerFacade", "Verdict", "Diagnosis", "TokfidelityError", "EXACT", "POLICY", "DIVERGENT", "BAD_INPUT",
]


@dataclass(frozen=True)
class Bound:
    """A tokenizer and a profile bound to it (``load``): what every function here takes."""

    tokenizer: Tokenizer
    profile: Profile
    location: str

    @property
    def facade(self) -> TokenizerFacade:
        """The transformers-style tokenizer a project's own function is given."""
        return TokenizerFacade(self.tokenizer, self.location)


def load(profile: str, tokenizer: str) -> Bound:
    """The tokenizer (a path, a folder name under $TOKFIDELITY_TOKENIZERS, or a hub id) loaded, its
    files fingerprinted, and ``profile`` (e.g. "kimi-k2.5", "qwen3") bound to its ids."""
    from .core.binding import bind_dataset
    from .core.tokenizer import tokenizer_location

    location = tokenizer_location(tokenizer)
    loaded, bound = bind_dataset(profile, location)
    return Bound(loaded, bound, location)


def load_dataset(folder: str) -> Bound:
    """``load`` as a golden dataset's manifest says: its profile, its tokenizer and the chat template file it
    names (``chat_template``, checked against its sha256: a ``TokfidelityError`` naming the manifest and field
    when it differs)."""
    from .core.golden import load_manifest
    from .core.prompt_renderers import use_manifest_template

    manifest = load_manifest(folder)
    bound = load(manifest.profile, manifest.tokenizer)
    use_manifest_template(manifest, bound.profile, bound.tokenizer)
    return bound


def reconstruct(response: Mapping[str, Any], bound: Bound) -> list[int]:
    """The output ids a model generated for ``response`` (a flat message with ``finish_reason``, or a
    chat-completion body), stop token included unless the response was cut at the length limit."""
    from .core.reconstruct import reconstruct_output_ids

    return reconstruct_output_ids(response, bound.profile, bound.tokenizer)


def render_prompt_ids(messages: Sequence[Mapping[str, Any]], tools: Sequence[Any] | None,
                      chat_template_kwargs: Mapping[str, Any] | None, bound: Bound) -> list[int]:
    """The prompt ids an engine feeds the model for this conversation, generation prompt included."""
    from .core.prompt_check import PromptJudge

    return PromptJudge(bound.profile, bound.tokenizer).ids(messages, tools, chat_template_kwargs)


def server_response(output_ids: Sequence[int], finish_reason: str, bound: Bound, view: str = "sglang") -> dict[str, Any]:
    """The message (``reasoning``, ``content``, ``tool_calls``, ``finish_reason``) the server ``view``
    returns for these output ids: what a project's reconstruction gets in the suite."""
    from .core.own_code import flat_message
    from .core.views import api_view

    return flat_message(api_view(output_ids, finish_reason, bound.profile, bound.tokenizer, view))


def _own(function: Callable[..., Any] | OwnFunction | None) -> OwnFunction | None:
    if function is None or isinstance(function, OwnFunction):
        return function
    return own_function(f"{function.__module__}:{function.__qualname__}", function)


def judge_sample(sample: Mapping[str, Any] | GoldenSample, bound: Bound, *, view: str = "sglang",
                 reconstruct: Callable[..., Any] | None = None, render: Callable[..., Any] | None = None,
                 accept: Mapping[str, float] | None = None) -> Verdict:
    """The suite's verdict on one golden sample (a ``samples.jsonl`` line as a dict): its output ids
    rebuilt from the view's response, and its prompt ids rendered when it records ``prompt_ids``.
    ``reconstruct`` ``(response, tokenizer) -> ids`` and ``render`` ``(messages, tools,
    chat_template_kwargs, tokenizer) -> ids`` judge a project's own functions instead of tokfidelity's.
    ``Verdict.kind`` is EXACT, POLICY, DIVERGENT or BAD_INPUT; ``Verdict.report`` the diagnosis."""
    from pathlib import Path

    if not isinstance(sample, GoldenSample):
        sample = parse_sample(dict(sample), Path("(sample)"), 1)
    rec, ren = _own(reconstruct), _own(render)
    judge = Judge(
        bound.profile, bound.tokenizer, view, accept,
        reconstruct=bound_reconstructor(rec, bound.tokenizer, bound.location) if rec else None,
        render=bound_renderer(ren, bound.tokenizer, bound.location) if ren else None,
    )
    return judge(sample)


def diagnose(golden_ids: Sequence[int], rebuilt_ids: Sequence[int], bound: Bound, finish_reason: str | None = None) -> Diagnosis:
    """Every divergent hunk between the golden and the rebuilt output ids, classified (``.classes``),
    with both id windows and advice (``.render()``)."""
    return _diagnose(golden_ids, rebuilt_ids, bound.tokenizer, profile=bound.profile, finish_reason=finish_reason)
