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
  ``snapshot_update``: the exact command that records this dataset's divergences for review.
- ``samples``: one object per sample that was not exact, in dataset then line order:
  ``dataset``, ``id``, ``line``, ``verdict`` (``new``: an unreviewed divergence, the test failed;
  ``known``: equal to the reviewed snapshot; ``policy``: accepted by the manifest's policy;
  ``bad-input``: the sample could not be read or judged), ``report`` (the text diagnosis, for new,
  known and bad-input samples), and for diagnosed samples: ``finish_reason``, ``tokens`` (golden
  ids), ``rebuilt_tokens``, ``texts_identical`` (decoded bytes equal), ``classes`` (distinct, in
  order of first hunk), ``hunk_count``, ``detail`` (whether the hunks below carry windows) and
  ``hunks`` (at most 100): ``class``, ``golden`` and ``rebuilt`` (``[start, end)`` index spans),
  ``text_preserving``, for the first 20 hunks ``golden_ids``, ``rebuilt_ids`` (at most 24 each) and
  ``golden_text``, ``rebuilt_text`` (each id's text), and with ``detail`` ``window`` (``golden``,
  ``rebuilt``: the tokens around the hunk, each ``{"i": index, "id", "text":
  its text alone, "ctx": what it adds in context, "ok": decode(prefix) + decode([id]) ==
  decode(prefix + [id]), "hunk": inside the hunk, "special": a special or marker id (only when
  true), "bytes": hex of its raw bytes (only when they are not valid UTF-8 alone)}``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["SCHEMA", "VERSION", "VERDICTS", "ResultsError", "check_document"]

SCHEMA = "tokfidelity-results"
VERSION = 1
VERDICTS = ("new", "known", "policy", "bad-input")


class ResultsError(ValueError):
    """A results.json that cannot be used; the message names the file and the field."""


_TOP = {"schema": str, "version": int, "command": list, "partial": bool, "partial_reasons": list,
        "datasets": list, "samples": list}
_DATASET = {"name": str, "samples_total": int, "samples_run": int, "counts": dict, "rates": dict, "gate": dict,
            "partial": bool, "partial_reasons": list, "problems": list, "wall_s": (int, float),
            "snapshot_update": str}
_COUNTS = ("samples", "exact", "policy", "known", "new", "bad_input", "tokens", "hunks")
_SAMPLE = {"dataset": str, "verdict": str}


def _fields(obj: Any, spec: Mapping[str, Any], where: str) -> None:
    if not isinstance(obj, dict):
        raise ResultsError(f"{where}: expected an object, got {type(obj).__name__}")
    for key, kind in spec.items():
        if key not in obj:
            raise ResultsError(f"{where}: field '{key}' is missing")
        value = obj[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ResultsError(f"{where}: field '{key}' has the wrong type ({type(value).__name__})")


def check_document(doc: Any, path: str) -> None:
    """Raise ResultsError (naming ``path`` and the field) unless ``doc`` is a results.json we read."""
    _fields(doc, {"schema": str, "version": int}, path)
    if doc["schema"] != SCHEMA:
        raise ResultsError(f"{path}: field 'schema' is {doc['schema']!r}, not {SCHEMA!r}: not a tokfidelity results file")
    if doc["version"] != VERSION:
        raise ResultsError(
            f"{path}: field 'version' is {doc['version']}; this tokfidelity reads version {VERSION}: "
            "redraw it with the tokfidelity that wrote it"
        )
    _fields(doc, _TOP, path)
    names = set()
    for i, d in enumerate(doc["datasets"]):
        where = f"{path}: field 'datasets[{i}]'"
        _fields(d, _DATASET, where)
        for key in _COUNTS:
            if not isinstance(d["counts"].get(key), int):
                raise ResultsError(f"{where}.counts: field '{key}' is missing or not a number")
        names.add(d["name"])
    for i, s in enumerate(doc["samples"]):
        where = f"{path}: field 'samples[{i}]'"
        _fields(s, _SAMPLE, where)
        if s["verdict"] not in VERDICTS:
            raise ResultsError(f"{where}: field 'verdict' is {s['verdict']!r}; expected one of {', '.join(VERDICTS)}")
        if s["dataset"] not in names:
            raise ResultsError(f"{where}: field 'dataset' names {s['dataset']!r}, which is not in 'datasets'")
        _check_sample_details(s, where)


def _span(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(isinstance(i, int) and not isinstance(i, bool) for i in value)


_TOKEN = {"i": int, "id": int, "text": str, "ctx": str}


def _check_sample_details(s: Mapping[str, Any], where: str) -> None:
    """The optional parts of a sample that the report draws: classes, hunks and their windows."""
    for key, kind in (("classes", list), ("hunks", list), ("tokens", int), ("hunk_count", int), ("report", str)):
        if key in s and (not isinstance(s[key], kind) or isinstance(s[key], bool)):
            raise ResultsError(f"{where}: field '{key}' has the wrong type ({type(s[key]).__name__})")
    if not all(isinstance(c, str) for c in s.get("classes", [])):
        raise ResultsError(f"{where}: field 'classes' holds something other than class names")
    for j, h in enumerate(s.get("hunks", [])):
        at = f"{where}: field 'hunks[{j}]'"
        if not isinstance(h, dict) or not isinstance(h.get("class"), str) or not _span(h.get("golden")) or not _span(h.get("rebuilt")):
            raise ResultsError(f"{at}: expected an object with 'class' (a name) and 'golden', 'rebuilt' ([start, end] indices)")
        window = h.get("window")
        if window is None:
            continue
        if not isinstance(window, dict) or not all(isinstance(window.get(k), list) for k in ("golden", "rebuilt")):
            raise ResultsError(f"{at}: field 'window' must hold 'golden' and 'rebuilt' token lists")
        for side in ("golden", "rebuilt"):
            for k, t in enumerate(window[side]):
                _fields(t, _TOKEN, f"{at}.window.{side}[{k}]")
                if "bytes" in t and not (isinstance(t["bytes"], str) and len(t["bytes"]) % 2 == 0):
                    raise ResultsError(f"{at}.window.{side}[{k}]: field 'bytes' is not hex")
