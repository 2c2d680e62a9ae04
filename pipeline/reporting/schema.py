"""The results.json format (schema ``tokfidelity-results``, version 1), and its check on reading.

A results.json is one JSON object:

- ``schema``: ``"tokfidelity-results"``; ``version``: 1 (a reader refuses other versions; fields
  are only ever added within a version).
- ``created`` (ISO 8601, UTC), ``command`` (the pytest arguments), ``code`` (``fingerprint``: the
  sha256 of the verdict sources and tokenizer library versions, as in gate records; ``libraries``).
- ``partial`` (bool) and ``partial_reasons`` (list of strings): a run that did not verify every
  sample of every dataset (``-k``, ``--tokfidelity-sample``, ``-x``, a lost xdist worker, ...).
- ``sources``: for a merged file, the files it was merged from (else empty).
- ``detail_limit``: how many text-preserving samples per dataset carry token windows (new ones always do).
- ``datasets``: one object per dataset:
  ``name``, ``path`` (its folder, as the run saw it), ``profile``, ``tokenizer`` (the spec used), ``tokenizer_fingerprint``, ``view``,
  ``dataset_fingerprint`` (sha256 over ``golden_files``: each dataset file's sha256 by relative path),
  ``accept``, ``max_known_divergence_rate`` (from the manifest), ``samples_total`` (in the dataset),
  ``samples_run``, ``counts`` (``samples``, ``exact``, ``policy``, ``known``, ``new``, ``bad_input``,
  ``tokens``, ``hunks``, ``policy_hunks_by_class``, ``known_by_class``, ``new_by_class`` (samples per
  class), ``stale_snapshots``), ``rates`` (``divergent_samples``, ``known_samples``, ``new_samples``,
  ``policy_samples``: shares of samples run; ``hunks_per_1k_tokens``), ``wall_s``, ``gate``
  (``state``: ``open`` | ``closed`` | ``unchanged`` | ``mixed`` (merged shards disagree); ``notes``:
  what the run did to the gate record), ``problems``, ``failed_checks`` (whole-dataset checks that
  failed: ``check``, e.g. ``test_stop_tokens``, and ``message``), ``partial``, ``partial_reasons``, and
  ``snapshot_update``: the exact command that records this dataset's divergences for review, and
  ``ran``: which of the dataset's samples this run judged, as ``[start, end)`` ranges of their
  positions in ``samples.jsonl`` (its non-blank lines, from 0), so that merged files can tell which
  samples they cover together (optional, as every field added within the version); ``views``: the views
  its samples were judged under (a manifest's ``api_views``, else its one view; ``view`` is the first)
  and ``by_view``: per view, its ``counts`` and ``rates`` as above, and the ``engine`` release it stands for
  (``"vllm 0.33.0"``) (``counts`` above is then their
  sum: a sample counted once per view; both optional, as every field added within the version).
- ``samples``: one object per sample that was not exact, in dataset then line order:
  ``dataset``, ``id``, ``line``, ``view`` (the view it was judged under), ``verdict`` (``new``: an unreviewed divergence, the test failed;
  ``known``: equal to the reviewed snapshot; ``policy``: accepted by the manifest's policy;
  ``bad-input``: the sample could not be read or judged), ``test`` (the sample test's node id:
  ``pytest TEST`` runs it alone; optional, as every field added within the version), ``report`` (the text diagnosis, for new,
  known and bad-input samples), and for diagnosed samples: ``finish_reason``, ``tokens`` (golden
  ids), ``rebuilt_tokens``, ``texts_identical`` (decoded bytes equal), ``classes`` (distinct, in
  order of first hunk: names of the records in ``pipeline.core.divergence_classes``, and
  ``prompt:CLASS`` for a prompt divergence), ``hunk_count``, ``detail`` (whether the hunks below carry
  windows) and ``hunks`` (at most 100): ``class``, ``golden`` and ``rebuilt`` (``[start, end)`` index
  spans), ``text_preserving`` (the class record's ``keeps_text``), for the first 20 hunks ``golden_ids``, ``rebuilt_ids`` (at most 24 each) and
  ``golden_text``, ``rebuilt_text`` (each id's text), and with ``detail`` ``window`` (``golden``,
  ``rebuilt``: the tokens around the hunk, each ``{"i": index, "id", "text":
  its text alone, "ctx": what it adds in context, "ok": decode(prefix) + decode([id]) ==
  decode(prefix + [id]), "hunk": inside the hunk, "special": a special or marker id (only when
  true), "bytes": hex of its raw bytes (only when they are not valid UTF-8 alone)}``).

Reading checks every field this module names, its type and its range, whatever the nesting, and
keeps only those fields (a newer writer's additions are dropped, never drawn): a ResultsError names
the file and the field's path (``samples[3].hunks[0].golden``). So the page is drawn from checked
values only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["SCHEMA", "VERSION", "VERDICTS", "GATE_STATES", "ResultsError", "check_document"]

SCHEMA = "tokfidelity-results"
VERSION = 1
VERDICTS = ("new", "known", "policy", "bad-input")
GATE_STATES = ("open", "closed", "unchanged", "mixed")


class ResultsError(ValueError):
    """A results.json that cannot be used; the message names the file and the field."""


class _Bad(Exception):
    """A field that fails its check; the containers it sits in add their keys on the way out."""

    def __init__(self, message: str, *path: str):
        self.message = message
        self.path = list(path)


def _name(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "true/false", type(None): "null"}.get(
        type(value), "a number" if type(value) in (int, float) else type(value).__name__)


def _str(v: Any) -> str:
    if type(v) is not str:
        raise _Bad(f"expected a string, got {_name(v)}")
    return v


def _bool(v: Any) -> bool:
    if type(v) is not bool:
        raise _Bad(f"expected true or false, got {_name(v)}")
    return v


def _int(v: Any) -> int:
    if type(v) is not int:
        raise _Bad(f"expected an integer, got {_name(v)}")
    return v


def _count(v: Any) -> int:
    if type(v) is not int or v < 0:
        raise _Bad(f"expected a count (an integer, 0 or more), got {str(v)[:40]}" if type(v) is int else
                   f"expected a count (an integer, 0 or more), got {_name(v)}")
    return v


def _number(v: Any) -> float:
    if type(v) not in (int, float) or not math.isfinite(v) or v < 0:
        raise _Bad(f"expected a number, 0 or more, got {str(v)[:40]}" if type(v) in (int, float) else
                   f"expected a number, got {_name(v)}")
    return v


_SIMPLE = {_str: str, _bool: bool, _int: int, _count: int}  # kinds checked by type alone (_count: and >= 0)


def _optional(kind: Callable) -> Callable:
    return lambda v: None if v is None else kind(v)


def _one_of(*values: str) -> Callable:
    def check(v: Any) -> str:
        if v not in values or type(v) is not str:
            raise _Bad(f"{v[:80]!r} is not one of {', '.join(values)}" if type(v) is str else f"expected a string, got {_name(v)}")
        return v
    return check


def _list(kind: Callable) -> Callable:
    simple = _SIMPLE.get(kind)

    def check(v: Any) -> list:
        if type(v) is not list:
            raise _Bad(f"expected a list, got {_name(v)}")
        if simple is not None and kind is not _count and set(map(type, v)) <= {simple}:  # ids, texts: one C pass
            return list(v)
        out = []
        for i, x in enumerate(v):
            try:
                out.append(kind(x))
            except _Bad as e:
                e.path.append(f"[{i}]")
                raise
        return out
    return check


def _map(kind: Callable) -> Callable:
    """An object whose keys are names (classes, files, libraries) and whose values are ``kind``."""
    def check(v: Any) -> dict:
        if type(v) is not dict:
            raise _Bad(f"expected an object, got {_name(v)}")
        out = {}
        for k, x in v.items():
            try:
                out[k] = kind(x)
            except _Bad as e:
                e.path.append(f".{k}")
                raise
        return out
    return check


def _object(required: Mapping[str, Callable], optional: Mapping[str, Callable] = {}) -> Callable:  # noqa: B006
    """An object with these fields (the optional ones when present); every other field is dropped."""
    fields = [(key, kind, _SIMPLE.get(kind), needed)
              for group, needed in ((required, True), (optional, False)) for key, kind in group.items()]

    def check(v: Any) -> dict:
        if type(v) is not dict:
            raise _Bad(f"expected an object, got {_name(v)}")
        out = {}
        for key, kind, simple, needed in fields:
            if key not in v:
                if needed:
                    raise _Bad("missing", f".{key}")
                continue
            x = v[key]
            if type(x) is simple and (simple is not int or kind is _int or x >= 0):  # the common case, inline
                out[key] = x
                continue
            try:
                out[key] = kind(x)
            except _Bad as e:
                e.path.append(f".{key}")
                raise
        return out
    return check


def _span(v: Any) -> list[int]:
    if type(v) is not list or len(v) != 2 or type(v[0]) is not int or type(v[1]) is not int or not 0 <= v[0] <= v[1]:
        shown = v if type(v) is list and len(v) == 2 and all(type(i) is int for i in v) else _name(v)
        raise _Bad(f"expected [start, end] indices with 0 <= start <= end, got {shown}")
    return list(v)


def _hex(v: Any) -> str:
    if type(v) is not str or len(v) % 2 or v.strip("0123456789abcdef"):
        raise _Bad("expected the hex of the token's bytes")
    return v


def _ranges(v: Any) -> list[list[int]]:
    """``ran``: sorted, separate [start, end) ranges of sample positions."""
    out = _list(_span)(v)
    for i in range(1, len(out)):
        if out[i][0] <= out[i - 1][1]:
            raise _Bad(f"ranges must be sorted and apart; [{i - 1}] and [{i}] are not: {out[i - 1]}, {out[i]}")
    return out


_TOKEN = _object({"i": _count, "id": _int, "text": _str, "ctx": _str},
                 {"ok": _bool, "hunk": _bool, "special": _bool, "bytes": _hex})
_HUNK = _object(
    {"class": _str, "golden": _span, "rebuilt": _span},
    {"text_preserving": _bool, "golden_ids": _list(_int), "rebuilt_ids": _list(_int), "golden_text": _list(_str),
     "rebuilt_text": _list(_str), "window": _object({"golden": _list(_TOKEN), "rebuilt": _list(_TOKEN)})},
)
_PROMPT = _object(  # a prompt divergence (pipeline.core.prompt_check.PromptDivergence.signature(), with its advice)
    {"class": _str, "segment": _str, "first_index": _count},
    {"golden_window": _list(_int), "rendered_window": _list(_int), "golden_text": _list(_str), "rendered_text": _list(_str),
     "advice": _str},
)
_SAMPLE = _object(
    {"dataset": _str, "id": _str, "verdict": _one_of(*VERDICTS)},
    {"line": _optional(_count), "test": _str, "view": _str, "report": _str, "finish_reason": _optional(_str), "tokens": _count,
     "rebuilt_tokens": _count, "texts_identical": _bool, "classes": _list(_str), "hunk_count": _count,
     "detail": _bool, "hunks": _list(_HUNK), "prompt": _PROMPT},
)
_COUNTS = _object(
    dict.fromkeys(("samples", "exact", "policy", "known", "new", "bad_input", "tokens", "hunks"), _count),
    {**dict.fromkeys(("policy_hunks_by_class", "known_by_class", "new_by_class"), _map(_count)), "stale_snapshots": _count,
     **dict.fromkeys(("prompt_exact", "prompt_reviewed", "prompt_new", "prompt_unchecked", "prompt_off"), _count)},
)
_RATES = _object(dict.fromkeys(("divergent_samples", "hunks_per_1k_tokens"), _number),
                 dict.fromkeys(("known_samples", "new_samples", "policy_samples"), _number))
_DATASET = _object(
    {"name": _str, "samples_total": _count, "samples_run": _count, "counts": _COUNTS, "rates": _RATES,
     "gate": _object({"state": _one_of(*GATE_STATES), "notes": _list(_str)}), "partial": _bool,
     "partial_reasons": _list(_str), "problems": _list(_str), "wall_s": _number, "snapshot_update": _str},
    {**dict.fromkeys(("path", "profile", "tokenizer", "tokenizer_fingerprint", "view", "dataset_fingerprint"), _optional(_str)),
     "golden_files": _map(_str), "accept": _map(_number), "max_known_divergence_rate": _number,
     "failed_checks": _list(_object({"check": _str, "message": _str})), "ran": _ranges,
     "views": _list(_str), "by_view": _map(_object({"counts": _COUNTS, "rates": _RATES}, {"engine": _str}))},
)
_DOCUMENT = _object(
    {"schema": _str, "version": _int, "command": _list(_str), "partial": _bool, "partial_reasons": _list(_str),
     "datasets": _list(_DATASET), "samples": _list(_SAMPLE)},
    {"created": _str, "code": _object({}, {"fingerprint": _str, "libraries": _map(_str)}), "sources": _list(_str),
     "detail_limit": _count},
)


def _located(path: str, e: _Bad) -> ResultsError:
    field = "".join(reversed(e.path)).lstrip(".")
    return ResultsError(f"{path}: field '{field}': {e.message}" if field else f"{path}: {e.message}")


def check_document(doc: Any, path: str) -> dict[str, Any]:
    """The document with every field checked (and only the fields this schema names), or a
    ResultsError naming ``path`` and the field."""
    if type(doc) is not dict:
        raise ResultsError(f"{path}: expected a JSON object, got {_name(doc)}: not a tokfidelity results file")
    if doc.get("schema") != SCHEMA:
        raise ResultsError(f"{path}: field 'schema' is {str(doc.get('schema'))[:80]!r}, not {SCHEMA!r}: not a tokfidelity results file")
    if doc.get("version") != VERSION or type(doc.get("version")) is not int:
        raise ResultsError(
            f"{path}: field 'version' is {str(doc.get('version'))[:80]}; this tokfidelity reads version {VERSION}: "
            "redraw it with the tokfidelity that wrote it"
        )
    try:
        out = _DOCUMENT(doc)
        _check_datasets(out)
    except _Bad as e:
        raise _located(path, e) from None
    return out


def _check_datasets(doc: Mapping[str, Any]) -> None:
    """What one field alone cannot say: names unique, samples of listed datasets, ranges in bounds."""
    names: set[str] = set()
    for i, d in enumerate(doc["datasets"]):
        if d["name"] in names:
            raise _Bad(f"{d['name']!r} is listed twice", f"datasets[{i}].name")
        names.add(d["name"])
        if "by_view" in d and (stray := [v for v in d["by_view"] if v not in d.get("views", ())]):
            raise _Bad(f"view {stray[0][:80]!r} is not in the dataset's 'views'", f"datasets[{i}].by_view")
        ran = d.get("ran")
        if ran and ran[-1][1] > d["samples_total"]:
            raise _Bad(f"range {ran[-1]} goes past the dataset's {d['samples_total']} samples", f"datasets[{i}].ran")
    for i, s in enumerate(doc["samples"]):
        if s["dataset"] not in names:
            raise _Bad(f"names {s['dataset']!r}, which is not in 'datasets'", f"samples[{i}].dataset")
