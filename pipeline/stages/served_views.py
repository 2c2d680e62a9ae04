"""Which view each provider serves with, and which views reproduce the text of its responses.

A bulk run through OpenRouter reaches many providers; some serve with vLLM, others with SGLang, and a
verdict holds only for the view (the prediction of a server's text from ids) it was judged under.

* ``--view-for PROVIDER=VIEW`` (repeatable; ``run.json``'s ``view_for`` object on a resumed run) says
  which of the profile's views a provider serves with; ``*=VIEW`` stands for every provider not named
  (and responses that name none, as a local server's); the rest take the dataset manifest's view.
  Each record carries its ``view``: the gated stages refuse records from a view the gate did not judge.
* When the server returned the output ids, ``views_reproduce`` says for every view of the profile
  whether that view's response for those ids equals the response's text (reasoning, content, tool-call
  names and arguments, finish reason; call ids are not compared: engines mint them). ``ViewMatrix``
  counts them per provider and names a provider whose view does not reproduce its responses.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import TokfidelityError
from ..core.names import VIEW_NAMES
from ..core.profiles import Profile
from ..core.responses import ApiTurn
from ..core.tokenizer import Tokenizer
from ..core.views import api_view

__all__ = ["ViewForError", "ANY_PROVIDER", "UNNAMED", "parse_view_for", "view_for_from_run", "view_of",
           "views_reproduce", "ViewMatrix"]

ANY_PROVIDER = "*"
UNNAMED = "(not named)"  # a response without a "provider" field (a local server)
EXAMPLE = "e.g. --view-for DeepInfra=vllm"


class ViewForError(TokfidelityError, ValueError):
    """A --view-for value or a run.json view_for entry that cannot be used; the message says where."""


def _checked_view(view: str, where: str, profile: Profile) -> str:
    views = tuple(profile.spec.views)
    if view in views:
        return view
    if view not in VIEW_NAMES:
        raise ViewForError(f"{where}: unknown view {view!r}; profile {profile.name}'s views: {', '.join(views)}")
    raise ViewForError(f"{where}: profile {profile.name} has no view {view!r}; its views: {', '.join(views)} "
                       f"(views of other profiles: {', '.join(v for v in VIEW_NAMES if v not in views)})")


def parse_view_for(values: Iterable[str], profile: Profile) -> dict[str, str]:
    """``--view-for PROVIDER=VIEW`` values as {provider: view}, each view one the profile has; ViewForError
    naming the value otherwise (no '=', an empty side, an unknown view, a provider given two views)."""
    out: dict[str, str] = {}
    for i, value in enumerate(values, 1):
        where = f"--view-for {value!r} (occurrence {i})"
        provider, sep, view = value.partition("=")
        provider, view = provider.strip(), view.strip()
        if not sep or not provider or not view:
            raise ViewForError(f"{where}: expected PROVIDER=VIEW, the provider as the responses name it ({EXAMPLE}; "
                               f"{ANY_PROVIDER}=VIEW for every provider not named)")
        _checked_view(view, where, profile)
        if out.get(provider, view) != view:
            raise ViewForError(f"{where}: provider {provider!r} is already given view {out[provider]!r}; give one view a provider")
        out[provider] = view
    return out


def view_for_from_run(run: Mapping[str, Any], run_path: str, run_text: str, profile: Profile) -> dict[str, str]:
    """The ``view_for`` object of a run.json (the run config of a generate folder), checked like
    --view-for; ViewForError naming the file, the line and the field."""
    value = run.get("view_for")
    if value is None:
        return {}
    start = run_text.find('"view_for"')

    def fail(key: str | None, message: str):
        at = run_text.find(json.dumps(key), start) if key is not None and start >= 0 else start
        line = run_text.count("\n", 0, at) + 1 if at >= 0 else 0
        raise ViewForError(message, path=run_path, line=line, field="view_for" + (f".{key}" if key is not None else ""))

    if not isinstance(value, dict):
        fail(None, f'expected an object {{"PROVIDER": "VIEW"}}, got {type(value).__name__}')
    for provider, view in value.items():
        if not provider or not isinstance(view, str):
            fail(provider, f"expected a view name (a string), got {view!r}")
        try:
            _checked_view(view, "", profile)
        except ViewForError as e:
            fail(provider, e.message.removeprefix(": "))
    return dict(value)


def view_of(provider: Any, view_for: Mapping[str, str], default: str) -> str:
    """The view records of ``provider`` (a response's "provider" field) are served with."""
    name = provider if isinstance(provider, str) else None
    if name is not None and name in view_for:
        return view_for[name]
    return view_for.get(ANY_PROVIDER, default)


def _text_of(turn: ApiTurn | Mapping[str, Any]) -> tuple:
    """What a view must reproduce of a response: the texts, the calls' names and arguments, the finish reason."""
    if isinstance(turn, ApiTurn):
        calls = tuple((c.name, c.arguments) for c in turn.tool_calls)
        return turn.reasoning or None, turn.content or "", calls, turn.finish_reason
    calls = tuple((c["function"]["name"], c["function"]["arguments"]) for c in turn["tool_calls"] or ())
    return turn["reasoning"] or None, turn["content"] or "", calls, turn["finish_reason"]


def views_reproduce(output_ids: Sequence[int], turn: ApiTurn, profile: Profile, tokenizer: Tokenizer) -> dict[str, bool]:
    """For each view of the profile: does its response for the engine's ``output_ids`` equal ``turn``'s text?
    The engine's finish reason is the response's (as the suite's judge takes it)."""
    want = _text_of(turn)
    out = {}
    for view in profile.spec.views:
        try:
            got = _text_of(api_view(output_ids, turn.finish_reason, profile, tokenizer, view))
        except Exception:  # noqa: BLE001 - a view that cannot read these ids does not reproduce them
            got = None
        out[view] = got == want
    return out


@dataclass
class _ProviderViews:
    served_with: dict[str, int] = field(default_factory=dict)  # view -> records recorded as served with it
    compared: int = 0  # records with engine ids whose text every view was tried on
    reproduced: dict[str, int] = field(default_factory=dict)  # view -> of those, responses it reproduces

    def as_dict(self) -> dict[str, Any]:
        return {"served_with": dict(sorted(self.served_with.items())), "compared": self.compared,
                "reproduced": dict(self.reproduced)}


@dataclass
class ViewMatrix:
    """Per provider x view: the records served with each view, and how many responses each view reproduces."""

    providers: dict[str, _ProviderViews] = field(default_factory=dict)

    def add(self, record: Mapping[str, Any]) -> None:
        view = record.get("view")
        if not isinstance(view, str):  # a record written before views were recorded
            return
        name = record.get("provider") if isinstance(record.get("provider"), str) else UNNAMED
        row = self.providers.setdefault(name, _ProviderViews())
        row.served_with[view] = row.served_with.get(view, 0) + 1
        reproduce = record.get("views_reproduce")
        if isinstance(reproduce, dict) and reproduce:
            row.compared += 1
            for v, ok in reproduce.items():
                row.reproduced[v] = row.reproduced.get(v, 0) + (ok is True)

    def as_dict(self) -> dict[str, Any]:
        return {name: row.as_dict() for name, row in sorted(self.providers.items())}

    def lines(self) -> list[str]:
        """The provider x view table, then one call-out per provider whose view does not reproduce its text."""
        out = []
        for name, row in sorted(self.providers.items()):
            served = ", ".join(f"{v} {n}" for v, n in sorted(row.served_with.items()))
            table = ", ".join(f"{v} {k}/{row.compared}" for v, k in row.reproduced.items()) if row.compared else "no engine ids to compare"
            out.append(f"  views, provider {name} (records served with: {served}): responses each view reproduces: {table}")
        return out + self.call_outs()

    def call_outs(self) -> list[str]:
        out = []
        for name, row in sorted(self.providers.items()):
            if not row.compared:
                continue
            best = max(row.reproduced.values())
            for view in sorted(row.served_with):
                k = row.reproduced.get(view, 0)
                if k == row.compared:
                    continue
                better = [v for v, n in row.reproduced.items() if n == best and n > k]
                provider = ANY_PROVIDER if name == UNNAMED else name
                if better:
                    step = (f"its server likely runs {better[0]}: generate with --view-for {provider}={better[0]} into a new "
                            f"--out folder (a folder keeps one view per provider), and judge the dataset under {better[0]} "
                            "(the manifest's api_views) before training on them")
                else:
                    step = ("no view of the profile does better: see the records' 'views_reproduce' and 'divergence', and "
                            "diagnose the responses (`tokfidelity golden-from` then the suite) before trusting their text")
                out.append(f"  provider {name}: its records say view {view}, which reproduces {k} of the {row.compared} "
                           f"responses with engine ids; {step}")
        return out
