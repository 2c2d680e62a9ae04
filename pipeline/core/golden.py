"""Golden datasets on disk: ``<golden dir>/<DATASET>/manifest.json`` + ``samples.jsonl``.

The format is a public contract (docs/golden-format.md). Reading never crashes a
whole run on one bad line: ``read_samples`` yields a ``GoldenError`` in place of a bad sample,
naming the file, the line and the field, and carries on with the next line.
"""

from __future__ import annotations

import json
import os
import re
from operator import countOf
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .files import atomic_write, read_input
from .errors import TokfidelityError
from .jsonl import JsonTextError, duplicate_key, duplicate_key_message, parse_json, read_records
from .names import PROFILE_NAMES, VIEW_NAMES, profile_views
from .responses import ResponseError, normalize_finish_reason

__all__ = [
    "GoldenError",
    "Manifest",
    "GoldenSample",
    "load_manifest",
    "read_samples",
    "parse_sample",
    "id_problem",
    "find_datasets",
    "write_dataset",
    "MANIFEST_FILE",
    "SAMPLES_FILE",
    "FORMAT_VERSION",
    "DEFAULT_VIEW",
]

MANIFEST_FILE = "manifest.json"
SAMPLES_FILE = "samples.jsonl"
DEFAULT_VIEW = "sglang"  # the API view of a manifest that names none (api_view)
# The golden format version this code reads: every version from 1 up to it. A manifest says its own
# in "format" (1 when absent); a change that readers of an older version would misread raises it.
FORMAT_VERSION = 1


class GoldenError(TokfidelityError, ValueError):
    """Bad golden data. Says which file, line (1-based, 0 for a whole file) and field, and what to do."""

    def __init__(self, path: os.PathLike | str, line: int, field: str | None, message: str):
        super().__init__(message, path=path, line=line, field=field)


@dataclass(frozen=True)
class Manifest:
    name: str
    profile: str
    tokenizer: str  # a hub id, a folder name under TOKFIDELITY_TOKENIZERS, or a path
    source: str
    api_view: str = DEFAULT_VIEW  # the first of ``views``
    api_views: tuple[str, ...] = ()  # ``api_views`` when the manifest lists several (empty: ``api_view`` alone)
    max_known_divergence_rate: float = 0.0  # share of samples that may pass as known divergences
    accept: Mapping[str, float] = field(default_factory=dict)  # class -> max hunks per token, by policy
    path: Path = Path(".")  # the dataset folder
    raw: Mapping[str, Any] = field(default_factory=dict)
    format: int = 1  # the golden format version the manifest declares (``format``; 1 when absent)
    problems: tuple = ()  # GoldenErrors of fields replaced by defaults (load_manifest(strict=False) only)
    # the chat template the prompts were rendered with, where the tokenizer folder has none or several:
    # {"file": relative to the tokenizer folder, "sha256": of its bytes, "special_tokens": {"bos_token": ...}}
    chat_template: Mapping[str, Any] | None = None

    @property
    def samples_path(self) -> Path:
        return self.path / SAMPLES_FILE

    @property
    def views(self) -> tuple[str, ...]:
        """Every view the samples are judged under: ``api_views``, else ``api_view`` alone."""
        return self.api_views or (self.api_view,)


@dataclass(frozen=True, slots=True)
class GoldenSample:
    id: str
    output_ids: list[int]
    finish_reason: str  # normalised: stop | length | tool_calls
    line: int
    messages: list | None = None
    tools: list | None = None
    prompt_ids: list[int] | None = None
    response: Mapping[str, Any] | None = None  # a recorded API response, reconstructed instead of a view
    raw_finish_reason: Any = None
    chat_template_kwargs: Mapping[str, Any] | None = None  # the request's template variables ({"enable_thinking": false})
    tool_choice: Any = None  # the request's: "auto", "none", "required" or {"type": "function", "function": {"name": ...}}


def _require(obj: Mapping, key: str, kind: type | tuple, path: Path, line: int, optional: bool = False):
    if key not in obj or obj[key] is None:
        if optional:
            return None
        raise GoldenError(path, line, key, "missing")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise GoldenError(path, line, key, f"expected {names}, got {type(value).__name__}")
    return value


def load_manifest(dataset_dir: os.PathLike | str, strict: bool = True, data: bytes | None = None) -> Manifest:
    """Read and check a dataset's manifest, or raise GoldenError naming the (first) bad field.

    ``strict=False``: a manifest whose profile and tokenizer are usable is returned even when other
    fields are bad, with defaults in their place and the errors in ``Manifest.problems`` (the plugin
    then runs the samples and fails only ``test_manifest``); a file that cannot be read as JSON, or
    an unusable profile or tokenizer, still raises. ``data``: the manifest's bytes when the caller
    read (and pinned) them already."""
    dataset_dir = Path(dataset_dir)
    path = dataset_dir / MANIFEST_FILE
    try:
        if data is None:
            data = read_input(path)
        text = data.decode("utf-8-sig")  # a byte-order mark, as some editors write, is fine
    except FileNotFoundError:
        raise GoldenError(path, 0, None, "missing: every dataset folder needs a manifest.json (see docs/golden-format.md)") from None
    except IsADirectoryError:
        raise GoldenError(path, 0, None, "is a folder: manifest.json must be a JSON file (see docs/golden-format.md)") from None
    except OSError as e:
        raise GoldenError(path, 0, None, f"cannot be read ({e.strerror or type(e).__name__})") from None
    except UnicodeDecodeError as e:
        raise GoldenError(path, 0, None, f"not UTF-8: byte 0x{e.object[e.start]:02x} at byte offset {e.start}") from None
    try:
        raw = parse_json(text)
    except JsonTextError as e:
        raise GoldenError(path, e.line, None, e.message) from None
    duplicate = duplicate_key(text.encode("utf-8"), raw)
    if duplicate is not None:
        raise GoldenError(path, _second_line_of(text, duplicate.rsplit(".", 1)[-1]), duplicate, duplicate_key_message(duplicate))
    if not isinstance(raw, dict):
        raise GoldenError(path, 1, None, "expected a JSON object")
    values, problems = _manifest_fields(raw, path)
    if problems and (strict or "profile" not in values or "tokenizer" not in values):
        raise problems[0]  # not strict: still raised when the profile or tokenizer is unusable
    return Manifest(
        name=values.get("name", dataset_dir.name),
        profile=values["profile"],
        tokenizer=values["tokenizer"],
        source=values.get("source", ""),
        api_view=(values.get("api_views") or (values.get("api_view", DEFAULT_VIEW),))[0],
        api_views=values.get("api_views") or (),
        max_known_divergence_rate=values.get("max_known_divergence_rate", 0.0),
        accept=values.get("accept", {}),
        path=dataset_dir,
        raw=raw,
        format=values.get("format", FORMAT_VERSION),
        problems=tuple(problems),
        chat_template=values.get("chat_template"),
    )


def _second_line_of(text: str, key: str) -> int:
    """The line where ``"key":`` is written a second time (0 when it cannot be told)."""
    starts = [m.start() for m in re.finditer(re.escape(json.dumps(key)) + r"\s*:", text)]
    return text.count("\n", 0, starts[1]) + 1 if len(starts) > 1 else 0


def _manifest_fields(raw: Mapping, path: Path) -> tuple[dict[str, Any], list[GoldenError]]:
    """Each field checked on its own: the values of the good ones, and an error for each bad one
    (in the order they are reported)."""
    values: dict[str, Any] = {}
    problems: list[GoldenError] = []
    for name, check in _FIELD_CHECKS:
        try:
            values[name] = check(raw, path)
        except GoldenError as e:
            problems.append(e)
    return values, problems


def _format_version(raw: Mapping, path: Path) -> int:
    version = raw.get("format", 1)  # manifests before the field existed are format 1
    if type(version) is not int or version < 1:
        raise GoldenError(path, 0, "format", f"expected a format version (an integer from 1), got {version!r}")
    if version > FORMAT_VERSION:
        raise GoldenError(
            path, 0, "format",
            f"format {version} is newer than this tokfidelity reads (up to {FORMAT_VERSION}): update tokfidelity",
        )
    return version


def _profile_name(raw: Mapping, path: Path) -> str:
    profile = _require(raw, "profile", str, path, 0)
    if profile not in PROFILE_NAMES:
        raise GoldenError(path, 0, "profile", f"unknown profile {profile!r}; known: {', '.join(sorted(PROFILE_NAMES))}")
    return profile


def _known_views(raw: Mapping) -> tuple[str, ...]:
    """The views a manifest may name: its profile's (every known view when the profile is unknown)."""
    profile = raw.get("profile")
    return (profile_views(profile) if isinstance(profile, str) else ()) or VIEW_NAMES


def _view_problem(view: Any, raw: Mapping) -> str | None:
    """Why ``view`` is not a view of the manifest's profile (None: it is one), listing the profile's views."""
    known = _known_views(raw)
    if isinstance(view, str) and view in known:
        return None
    profile = raw.get("profile")
    if not (isinstance(profile, str) and profile in PROFILE_NAMES):
        what = f"unknown view {view!r}" if isinstance(view, str) else f"expected a view name, got {view!r}"
        return f"{what}; known: {', '.join(known)}"
    what = f"profile {profile} has no view {view!r}" if isinstance(view, str) else f"expected a view name, got {view!r}"
    return f"{what}; its views: {', '.join(known)}"


def _view_name(raw: Mapping, path: Path) -> str:
    api_view = raw.get("api_view", DEFAULT_VIEW)
    if (problem := _view_problem(api_view, raw)) is not None:
        raise GoldenError(path, 0, "api_view", problem)
    return api_view


def _view_names(raw: Mapping, path: Path) -> tuple[str, ...]:
    """``api_views``: a non-empty list of distinct views of the profile (``()`` when absent)."""
    if "api_views" not in raw:
        return ()
    views = raw["api_views"]
    known = ", ".join(_known_views(raw))
    if "api_view" in raw:
        raise GoldenError(path, 0, "api_views", f"give api_view (one view) or api_views (a list), not both; the views: {known}")
    if not isinstance(views, list) or not views:
        raise GoldenError(path, 0, "api_views", f"expected a non-empty list of view names, got {views!r}; the views: {known}")
    for i, view in enumerate(views):
        if (problem := _view_problem(view, raw)) is not None:
            raise GoldenError(path, 0, f"api_views[{i}]", problem)
        if view in views[:i]:
            raise GoldenError(path, 0, f"api_views[{i}]", f"{view!r} is listed twice; each view once: {known}")
    return tuple(views)


def _rate(raw: Mapping, path: Path) -> float:
    rate = raw.get("max_known_divergence_rate", 0.0)
    if not isinstance(rate, (int, float)) or isinstance(rate, bool) or not 0 <= rate <= 1:
        raise GoldenError(path, 0, "max_known_divergence_rate", f"expected a number from 0 to 1, got {rate!r}")
    return float(rate)


def _accept(raw: Mapping, path: Path) -> dict[str, float]:
    accept = raw.get("accept", {})
    if not isinstance(accept, dict) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in accept.values()
    ):
        raise GoldenError(path, 0, "accept", 'expected {"<class>": <max hunks per token>, ...}')
    return dict(accept)


def _tokenizer_spec(raw: Mapping, path: Path) -> str:
    spec = _require(raw, "tokenizer", str, path, 0)
    if not spec.strip():  # "" would load whatever tokenizer is in the current directory
        raise GoldenError(path, 0, "tokenizer", "empty: give a hub id, a folder name, a path or pkg:PACKAGE/FILE")
    return spec


_SHA256 = re.compile(r"[0-9a-f]{64}")


def _chat_template(raw: Mapping, path: Path) -> dict[str, Any] | None:
    declared = raw.get("chat_template")
    if declared is None:
        return None
    if not isinstance(declared, dict):
        raise GoldenError(path, 0, "chat_template", 'expected {"file": "<file in the tokenizer folder>", "sha256": "<64 hex>"}')
    file = declared.get("file")
    if not isinstance(file, str) or not file or file.startswith(("/", "\\")) or ".." in Path(file).parts or "\\" in file:
        raise GoldenError(path, 0, "chat_template.file", f"expected a file name relative to the tokenizer folder, got {file!r}")
    if not isinstance(declared.get("sha256"), str) or not _SHA256.fullmatch(declared["sha256"]):
        raise GoldenError(path, 0, "chat_template.sha256", f"expected the file's sha256 (64 lowercase hex digits), got {declared.get('sha256')!r}")
    special = declared.get("special_tokens", {})
    if not isinstance(special, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in special.items()):
        raise GoldenError(path, 0, "chat_template.special_tokens", 'expected {"bos_token": "<text>", ...}')
    unknown = sorted(set(declared) - {"file", "sha256", "special_tokens"})
    if unknown:
        raise GoldenError(path, 0, f"chat_template.{unknown[0]}", "unknown field (file, sha256, special_tokens)")
    return {"file": file, "sha256": declared["sha256"], "special_tokens": dict(special)}


_FIELD_CHECKS = (
    ("format", _format_version),
    ("profile", _profile_name),
    ("api_view", _view_name),
    ("api_views", _view_names),
    ("max_known_divergence_rate", _rate),
    ("accept", _accept),
    ("name", lambda raw, path: _require(raw, "name", str, path, 0)),
    ("tokenizer", _tokenizer_spec),
    ("source", lambda raw, path: _require(raw, "source", str, path, 0)),
    ("chat_template", _chat_template),
)


def _int_list(value: Any, path: Path, line: int, key: str, checked: bool = False) -> list[int]:
    if not isinstance(value, list):
        raise GoldenError(path, line, key, f"expected a list of token ids, got {type(value).__name__}")
    # One C-level pass (bool is not a token id: type(True) is bool); the loop below only finds the
    # culprit. Counting the types that are int costs about 3/4 of collecting them in a set. ``checked``:
    # the reader decoded the list as ints only (sample_lines.read_compact).
    if checked or countOf(map(type, value), int) == len(value):
        return value
    for i, x in enumerate(value):
        if type(x) is not int:
            if type(x) is float and x.is_integer() and abs(x) >= 2**63:  # orjson reads integers past 64 bits as floats
                raise GoldenError(path, line, f"{key}[{i}]", f"expected a token id, got an integer too large for one (about {x:.3g})")
            raise GoldenError(path, line, f"{key}[{i}]", f"expected an integer token id, got {x!r}")
    return value


def id_problem(sample_id: str) -> str | None:
    """Why a sample id cannot name a test (None when it can): a lone surrogate (``"\\ud800"`` in the
    JSON) is no character at all, and cannot be written to a terminal, a file or the environment."""
    if sample_id.isascii():
        return None
    try:
        sample_id.encode("utf-8")
    except UnicodeEncodeError as e:
        return (f"holds a lone surrogate (\\u{ord(sample_id[e.start]):04x} at character {e.start + 1}), which is not "
                "valid Unicode: write the id with real characters")
    return None


def parse_sample(obj: Any, path: Path, line: int, ids_checked: bool = False) -> GoldenSample:
    """Check one decoded sample line; raise GoldenError naming the field. ``ids_checked``: ``obj`` comes
    from a reader that decoded ``output_ids`` and ``prompt_ids`` as lists of ints or null
    (``sample_lines.read_compact``), so their items are not checked again."""
    if not isinstance(obj, dict):
        raise GoldenError(path, line, None, f"expected a JSON object, got {type(obj).__name__}")
    sample_id = obj.get("id")
    if isinstance(sample_id, int) and not isinstance(sample_id, bool):
        sample_id = str(sample_id)
    elif type(sample_id) is float and sample_id.is_integer() and abs(sample_id) >= 2**63:  # orjson's reading of a huge integer
        raise GoldenError(path, line, "id", f"an integer too large for an id (about {sample_id:.3g}); write the id as a string")
    if not isinstance(sample_id, str) or not sample_id:
        raise GoldenError(path, line, "id", "missing or not a non-empty string")
    if (problem := id_problem(sample_id)) is not None:
        raise GoldenError(path, line, "id", problem)
    if "output_ids" not in obj:
        raise GoldenError(path, line, "output_ids", "missing")
    output_ids = _int_list(obj["output_ids"], path, line, "output_ids", ids_checked)
    if "finish_reason" not in obj:
        raise GoldenError(path, line, "finish_reason", "missing")
    try:
        finish = normalize_finish_reason(obj["finish_reason"])
    except ResponseError as e:
        raise GoldenError(path, line, "finish_reason", e.message) from None
    if finish == "tool_calls":  # engines report a stop token for tool-call turns; keep one vocabulary
        finish = "stop"
    prompt_ids = obj.get("prompt_ids")
    if prompt_ids is not None:
        prompt_ids = _int_list(prompt_ids, path, line, "prompt_ids", ids_checked)
    response = obj.get("response")
    if response is not None and not isinstance(response, dict):
        raise GoldenError(path, line, "response", f"expected an API response object, got {type(response).__name__}")
    for key in ("messages", "tools"):
        if obj.get(key) is not None and not isinstance(obj[key], list):
            raise GoldenError(path, line, key, f"expected a list, got {type(obj[key]).__name__}")
    template_kwargs = obj.get("chat_template_kwargs")
    if template_kwargs is not None and not isinstance(template_kwargs, dict):
        raise GoldenError(path, line, "chat_template_kwargs", f"expected an object of template variables, got {type(template_kwargs).__name__}")
    tool_choice = obj.get("tool_choice")
    if tool_choice is not None and (problem := tool_choice_problem(tool_choice)) is not None:
        raise GoldenError(path, line, "tool_choice", problem)
    return GoldenSample(
        id=sample_id,
        output_ids=output_ids,
        finish_reason=finish,
        line=line,
        messages=obj.get("messages"),
        tools=obj.get("tools"),
        prompt_ids=prompt_ids,
        response=response,
        raw_finish_reason=obj["finish_reason"],
        chat_template_kwargs=template_kwargs,
        tool_choice=tool_choice,
    )


def tool_choice_problem(value: Any) -> str | None:
    """Why a sample's ``tool_choice`` is not one an API accepts (None when it is)."""
    if value in ("auto", "none", "required"):
        return None
    if isinstance(value, dict):
        function = value.get("function")
        if isinstance(function, dict) and isinstance(function.get("name"), str) and function["name"]:
            return None
    return ('expected "auto", "none", "required" or {"type": "function", "function": {"name": NAME}}, '
            f"got {json.dumps(value, ensure_ascii=False)[:80]}")


def read_samples(dataset_dir: os.PathLike | str) -> Iterator[GoldenSample | GoldenError]:
    """Every sample of a dataset in file order; a bad line yields a GoldenError and reading goes on."""
    path = Path(dataset_dir) / SAMPLES_FILE
    if not path.exists():
        yield GoldenError(path, 0, None, "missing: every dataset folder needs a samples.jsonl (see docs/golden-format.md)")
        return
    if not path.is_file():
        yield GoldenError(path, 0, None, "not a file: samples.jsonl must be a JSONL file (see docs/golden-format.md)")
        return
    yield from read_records(path, parse_sample, GoldenError, unique_keys=True)


def find_datasets(golden_dir: os.PathLike | str, names: Sequence[str]) -> list[Path]:
    """Dataset folders selected by names: NAME matches NAME or NAME_*; 'all' takes every one.
    Raises ValueError naming what was asked for and what exists when a name matches nothing."""
    golden_dir = Path(golden_dir)
    if not golden_dir.is_dir():
        what = "is not a folder" if golden_dir.exists() else "does not exist"
        raise ValueError(f"golden dir {golden_dir} {what}; it should hold one folder per dataset (see docs/golden-format.md)")
    available = sorted(p for p in golden_dir.iterdir() if p.is_dir() and (p / MANIFEST_FILE).exists())
    chosen: list[Path] = []
    for name in names:
        if name == "all":
            matches = available
        else:
            matches = [p for p in available if p.name == name or p.name.startswith(name + "_")]
        if not matches:
            bare = (golden_dir / name).is_dir() and name != "all"
            raise ValueError(
                f"no dataset named {name!r} (or {name}_*) in {golden_dir}"
                + (f" ({golden_dir / name} has no {MANIFEST_FILE}: every dataset folder needs one, see docs/golden-format.md)" if bare else "")
                + f"; available: {', '.join(p.name for p in available) or 'none'}"
            )
        chosen += [p for p in matches if p not in chosen]
    return chosen


def write_dataset(dataset_dir: os.PathLike | str, manifest: Mapping[str, Any], samples: Sequence[Mapping[str, Any]]) -> Path:
    """Write a manifest and samples (one compact JSON object a line), atomically per file."""
    dataset_dir = Path(dataset_dir)
    dataset_dir.mkdir(parents=True, exist_ok=True)
    atomic_write(dataset_dir / MANIFEST_FILE, json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    lines = "".join(json.dumps(s, ensure_ascii=False, separators=(",", ":")) + "\n" for s in samples)
    try:
        lines.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (\ud800 in a prompt): write escaped, as it was given
        lines = "".join(json.dumps(s, separators=(",", ":")) + "\n" for s in samples)
    atomic_write(dataset_dir / SAMPLES_FILE, lines)
    return dataset_dir


