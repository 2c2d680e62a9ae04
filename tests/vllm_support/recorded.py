"""Engine responses recorded as data, one file per engine release, under ``tests/engine_responses/``.

``tests/record-engine-responses`` runs an engine release's own code (vLLM's detokenizer, parsers and
chat-response assembly through ``driver.py``; no server, no model) on every differential case of
``cases.all_groups()`` and writes what it returned, with the engine's name and version, as
``<engine>-<version>.json.gz``. ``tests/test_engine_releases.py`` then checks every view standing for a
recorded release against it without that release installed.

The cases themselves are not stored: they are rebuilt from their seeds. Each recorded case keeps a
digest of its input (ids, finish reason, request), so a change to the case generators shows as "cases
changed since recording" instead of a silent comparison with another input.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

__all__ = ["RECORDED", "case_digest", "group_key", "write_release", "read_release", "releases", "recorded_releases"]

RECORDED = Path(__file__).resolve().parents[1] / "engine_responses"
FIELDS = ("reasoning", "content", "tool_calls", "finish_reason", "choice_nulls")


def case_digest(case: dict) -> str:
    """A digest of what a case feeds the engine: ids, finish reason, tools and tool_choice."""
    data = json.dumps({k: case.get(k) for k in ("ids", "finish", "tools", "tool_choice")}, sort_keys=True,
                      ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(data.encode()).hexdigest()[:16]


def group_key(group) -> str:
    """A group's name in a recording: its family, chat template kwargs and label."""
    key = f"{group.family} {json.dumps(group.setup.get('chat_template_kwargs') or {}, sort_keys=True)}"
    return f"{key} {group.label}" if group.label else key


def write_release(engine: str, version: str, groups, responses, folder: Path = RECORDED) -> Path:
    """Write one release's responses to every case of every group (``responses`` in the groups' order)."""
    doc = {"engine": engine, "version": version, "recorded_by": "tests/record-engine-responses", "groups": {}}
    for group, answers in zip(groups, responses):
        cases = {}
        for name, answer in zip(group.cases, answers):
            if "error" in answer:
                raise RuntimeError(f"{engine} {version}: {group_key(group)} {name}: the engine failed: {answer['error']}")
            cases[name] = {"digest": case_digest(group.driver_case(name)), "response": {k: answer.get(k) for k in FIELDS}}
        doc["groups"][group_key(group)] = cases
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{engine}-{version}.json.gz"
    data = json.dumps(doc, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()
    path.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    return path


def read_release(path: Path) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()))


def releases(folder: Path = RECORDED) -> list[Path]:
    """Every recording file under ``folder``, its sub-folders included (a release's groups may be recorded apart)."""
    return sorted(folder.rglob("*.json.gz"))


def recorded_releases(folder: Path = RECORDED) -> dict[tuple[str, str], dict]:
    """Each recorded release, (engine, version) -> its document, with the groups of every file recording that
    release merged; a group recorded in two files is an error naming both."""
    out: dict[tuple[str, str], dict] = {}
    where: dict[tuple[str, str, str], Path] = {}
    for path in releases(folder):
        doc = read_release(path)
        release = (doc["engine"], doc["version"])
        merged = out.setdefault(release, {**doc, "groups": {}})
        for key, cases in doc["groups"].items():
            if key in merged["groups"]:
                raise ValueError(f"{release}: group {key} is recorded in {where[(*release, key)]} and in {path}")
            merged["groups"][key] = cases
            where[(*release, key)] = path
    return out
