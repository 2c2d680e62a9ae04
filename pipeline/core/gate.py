"""Gate records: proof that a dataset's fidelity suite ran green against today's inputs.

A full, green ``pytest --tokfidelity-dataset=NAME`` run writes a record under the state dir
(``$TOKFIDELITY_STATE_DIR``, else ``.tokfidelity/`` in the working directory). Gated pipeline
stages call ``check_gate`` before they send a request or write a file: the gate is open only
when a record exists, its run was green, and the golden files, the tokenizer and the code
that decides verdicts are byte-for-byte what the record saw. A failing run writes a closed
record, so the gate says why it is shut.

No pytest here: the plugin writes records, everyone else only reads them.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .decision import Completeness, Counts, Decision, decide
from .files import open_input
from .fingerprints import PACKAGE_ROOT, changed_inputs, code_file_hashes, library_versions
from .fingerprints import digest as mapping_digest
from .names import view_release
from .pins import Pins, golden_file_hashes

__all__ = [
    "GateStatus",
    "check_gate",
    "write_open_record",
    "write_closed_record",
    "read_record",
    "record_path",
    "default_state_dir",
    "default_golden_dir",
    "golden_file_hashes",
    "resolve_dataset_dir",
    "open_command",
    "judged_views",
    "RECORD_FORMAT",
    "Counts",
    "Completeness",
    "Decision",
    "decide",
    "Pins",
]

RECORD_FORMAT = 1
PROMPTS_OFF_NOTE = (" Its prompts were not verified: the run had --tokfidelity-prompts=off (`tokfidelity build` refuses "
                    "such a gate; run the suite without it).")


@dataclass(frozen=True)
class GateStatus:
    open: bool
    dataset: str  # dataset folder name, e.g. "B3_magicoder"
    message: str  # one paragraph: why open/closed, what is missing or changed
    open_command: str  # the command that opens it, e.g. "pytest --tokfidelity-dataset=B3_magicoder"
    next_step: str = ""  # closed: the one thing to do next (a rerun cannot fix every reason)
    unknown: bool = False  # the name matches no dataset, or several: a usage error, not a closed gate
    tokenizer: str | None = None  # the tokenizer the check loaded (an override, else where the record found it)
    prompts_checked: bool = True  # False: opened by a run with --tokfidelity-prompts=off
    views: frozenset[str] = frozenset()  # open: the views the green run judged (judged_views)
    template_sha256: str | None = None  # open: the content of the chat template the green run rendered with

    def __bool__(self) -> bool:
        return self.open


# ------------------------------------------------------------------------------------------
# Places
# ------------------------------------------------------------------------------------------
def default_state_dir() -> Path:
    return Path(os.environ.get("TOKFIDELITY_STATE_DIR") or ".tokfidelity")


def default_golden_dir() -> Path:
    """``golden/`` in the working directory when there is one, else the project's ``golden/``."""
    here = Path("golden")
    return here if here.is_dir() else PACKAGE_ROOT / "golden"


def record_path(state_dir: str | os.PathLike, dataset: str) -> Path:
    return Path(state_dir) / "gates" / f"{dataset}.json"


def resolve_dataset_dir(golden_dir: str | os.PathLike, dataset: str) -> Path:
    """The one dataset folder NAME (exact) or NAME_* names; ValueError says what exists."""
    from .golden import find_datasets

    golden_dir = Path(golden_dir)
    exact = golden_dir / dataset
    if (exact / "manifest.json").is_file():
        return exact
    matches = find_datasets(golden_dir, [dataset])
    if len(matches) > 1:
        raise ValueError(
            f"{dataset!r} matches {len(matches)} datasets in {golden_dir} "
            f"({', '.join(p.name for p in matches)}); a gate belongs to one: name it in full"
        )
    return matches[0]


def open_command(
    dataset: str,
    golden_dir: str | os.PathLike | None = None,
    tokenizer: str | None = None,
    state_dir: str | os.PathLike | None = None,
) -> str:
    """The pytest command that opens a gate (the state dir named when it is not the default)."""
    parts = ["pytest", f"--tokfidelity-dataset={dataset}"]
    if golden_dir is not None:
        parts.append(f"--tokfidelity-golden-dir={golden_dir}")
    if tokenizer is not None:
        parts.append(f"--tokfidelity-tokenizer={tokenizer}")
    if state_dir is not None and Path(state_dir) != default_state_dir():
        parts.append(f"--tokfidelity-state-dir={state_dir}")
    return " ".join(parts)


# ------------------------------------------------------------------------------------------
# Records
# ------------------------------------------------------------------------------------------
def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def write_record_json(path: Path, obj: Mapping[str, Any]) -> Path:
    from .files import atomic_write

    atomic_write(path, json.dumps(obj, indent=2, ensure_ascii=False) + "\n", mkdir=True)
    return path


def write_open_record(
    dataset_dir: str | os.PathLike,
    *,
    state_dir: str | os.PathLike | None = None,
    tokenizer_spec: str,
    tokenizer_fingerprint: str,
    profile: str,
    view: str | Sequence[str],
    counts: Counts | Mapping[str, Any],
    pytest_args: Sequence[str] = (),
    pins: Pins | None = None,
    tokenizer_location: str | None = None,
    prompts: str = "on",
    counts_by_view: Mapping[str, Counts] | None = None,
    own: Mapping[str, Any] | None = None,
) -> Path:
    """Record a full green run of one dataset: the gate opens for these exact inputs.
    ``view``: the view, or every view, its samples were judged under (``views`` in the record; ``view``
    too when there is one); ``counts_by_view``: the counts of each view, when there are several.
    ``pins``: the hashes of what the run read (default: the dataset files as they are now);
    ``tokenizer_location``: where the run found the tokenizer (checks use it when given none);
    ``prompts``: "on", or "off" when the run skipped the prompt verdicts (--tokfidelity-prompts=off);
    ``own``: the reconstruction and rendering judged (``own_code.record_fields``; None: tokfidelity's)."""
    dataset_dir = Path(dataset_dir)
    record = {
        "format": RECORD_FORMAT,
        "status": "open",
        "dataset": dataset_dir.name,
        "prompts": prompts,
        **pinned_fields(dataset_dir, tokenizer_spec, tokenizer_fingerprint, profile, view, pins, tokenizer_location, own),
        "counts": counts.to_record() if isinstance(counts, Counts) else dict(counts),
        **({"counts_by_view": {v: c.to_record() for v, c in counts_by_view.items()}} if counts_by_view else {}),
        "pytest_args": list(pytest_args),
        "time": now_iso(),
    }
    return write_record_json(record_path(state_dir or default_state_dir(), dataset_dir.name), record)


def write_closed_record(
    dataset: str,
    *,
    state_dir: str | os.PathLike | None = None,
    reason: str,
    counts: Counts | Mapping[str, Any] | None = None,
    pytest_args: Sequence[str] = (),
    next_step: str | None = None,
) -> Path:
    """Close a dataset's gate after a failing run, keeping why (and ``next_step``, what to change
    before a run can open it) for ``gate check``."""
    record = {
        "format": RECORD_FORMAT,
        "status": "closed",
        "dataset": dataset,
        "reason": reason,
        **({"next": next_step} if next_step else {}),
        "counts": counts.to_record() if isinstance(counts, Counts) else dict(counts or {}),
        "pytest_args": list(pytest_args),
        "time": now_iso(),
    }
    return write_record_json(record_path(state_dir or default_state_dir(), dataset), record)


def read_record(state_dir: str | os.PathLike | None, dataset: str) -> dict[str, Any] | None:
    path = record_path(state_dir or default_state_dir(), dataset)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        return {"status": "unreadable", "reason": f"{path}: {e}"}
    except RecursionError:  # JSON nested deeper than the parser goes: never a record this code wrote
        return {"status": "unreadable", "reason": f"{path}: nested too deeply to be a gate record"}
    return record if isinstance(record, dict) else {"status": "unreadable", "reason": f"{path}: not a JSON object"}


def judged_views(record: Mapping[str, Any] | None) -> frozenset[str]:
    """The views a gate record's run judged the dataset under: its ``views`` list; a record written
    before runs judged several views has one ``view`` (that one). Empty for no record, a record naming
    no view (a closed one), and a record whose fields disagree (a ``view`` that is not its one view, an
    entry that is not a name, a name twice: edited by hand): such a gate judged no view."""
    if not isinstance(record, Mapping):
        return frozenset()
    view, views = record.get("view"), record.get("views")
    if views is None:
        return frozenset([view]) if isinstance(view, str) and view else frozenset()
    if not isinstance(views, list) or not all(isinstance(v, str) and v for v in views) or len(set(views)) != len(views):
        return frozenset()
    if "view" in record and views != [view]:
        return frozenset()
    return frozenset(views)


def count_samples(samples_file: str | os.PathLike) -> int:
    """Samples in a samples.jsonl: its non-blank lines (a UTF-8 byte-order mark is not a line's content)."""
    n = 0
    with open_input(samples_file) as f:
        for line_no, line in enumerate(f, 1):
            if line_no == 1 and line.startswith(b"\xef\xbb\xbf"):
                line = line[3:]
            if line.strip():
                n += 1
    return n


def _option_problems(record: Mapping[str, Any], profile: str | None, view: str | None) -> tuple[list[str], list[str]]:
    """A stage option that changes how ids are made must be what the gate was opened with: (problems, next steps)."""
    problems, steps = [], []
    if profile is not None and profile != record.get("profile"):
        problems.append(f"--profile {profile} differs from the profile the gate was opened with ({record.get('profile')!r})")
        steps.append(f"run with --profile {record.get('profile')} (or without --profile), or verify a dataset whose manifest "
                     f"names profile {profile} and gate on that one")
    judged = sorted(judged_views(record))
    if view is not None and view not in judged:
        problems.append(f"view {view} is not a view the gate was opened with ({', '.join(judged) or 'none recorded'})")
        steps.append(f"use view {' or '.join(judged) or '?'}, or add {view} to the manifest's field api_views and verify the dataset again")
    return problems, steps


def _counts_problem(record: Mapping[str, Any], manifest: Any, dataset_dir: Path) -> str | None:
    """Why the record's counts could not have opened the gate (None: they could)."""
    try:
        counts = Counts.from_dict(record.get("counts", {}))
        # one sample test per sample and view
        expected = count_samples(dataset_dir / "samples.jsonl") * max(1, len(judged_views(record)))
    except (ValueError, OSError) as e:
        return f"the record's counts are unusable ({e})"
    decision = decide(counts, manifest, Completeness(expected=expected, passed=counts.passed))
    if not decision.open:
        return f"the record's counts could not have opened the gate ({decision.reason})"
    return None


def _gate_tokenizer(override: str | None, record: Mapping[str, Any], manifest: Any) -> str:
    """The tokenizer a check loads: the override, else where the green run found it (when it is still
    there: a fresh shell need not repeat the run's TOKFIDELITY_TOKENIZERS), else the manifest's."""
    if override:
        return override
    location = record.get("tokenizer_location")
    if isinstance(location, str) and location:
        from .tokenizer import location_exists

        if location_exists(location):
            return location
    return manifest.tokenizer


def _tokenizer_problem(spec: str, record: Mapping[str, Any], command: str) -> tuple[str, str] | None:
    """(what is wrong with the tokenizer ``spec``, what to do), or None when it is the gate's."""
    from .tokenizer import TokenizerNotFound, load_tokenizer

    try:
        fingerprint = load_tokenizer(spec).fingerprint
    except TokenizerNotFound as e:  # not a closed gate to reopen: the files are elsewhere
        return e.summary(), e.advice()
    except Exception as e:  # noqa: BLE001 - any load failure keeps the gate shut, with its reason
        detail = " ".join(line.strip() for line in str(e).splitlines())
        return f"tokenizer {spec!r} cannot be loaded ({type(e).__name__}: {detail})", "fix or fetch the tokenizer's files again"
    if fingerprint != record.get("tokenizer_fingerprint"):
        opened_with = record.get("tokenizer_location") or record.get("tokenizer")
        return (
            f"tokenizer {spec!r} has fingerprint {fingerprint[:12]}, the record has "
            f"{str(record.get('tokenizer_fingerprint'))[:12]} (from {record.get('tokenizer')!r})",
            f"pass --tokenizer {opened_with} (the tokenizer the gate was opened with), or open the gate for this one: "
            f"`{command} --tokfidelity-tokenizer={spec}`",
        )
    return None


def _recorded_command(record: Mapping[str, Any], command: str) -> str:
    """``command`` with the other ``--tokfidelity-*`` options the recorded run had (its tokenizer, view, own
    reconstruction: what the same run needs again); the run's node ids and pytest's own options left out."""
    args = record.get("pytest_args")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return command
    kept: list[str] = []
    for i, arg in enumerate(args):
        if arg.startswith("--tokfidelity-") and f" {arg.split('=')[0]}=" not in f" {command}":
            kept.append(arg)
            if "=" not in arg and i + 1 < len(args) and not args[i + 1].startswith("-"):
                kept.append(args[i + 1])
    return " ".join([command, *(shlex.quote(a) for a in kept)])


def _record_problems(record: Mapping[str, Any], where: Path, command: str) -> tuple[str, str] | None:
    """(why a record cannot open the gate by its status, format or shape, what to do), or None."""
    rerun = f"run `{command}`"
    if record.get("status") == "unreadable":
        return f"the record is unreadable ({record['reason']})", rerun
    if record.get("status") != "open":
        rerun = f"run `{_recorded_command(record, command)}`"
        fix = record.get("next")
        step = f"{fix}; then {rerun}" if isinstance(fix, str) and fix else rerun
        return f"the last run ({record.get('time', '?')}) failed: {record.get('reason', 'no reason recorded')}", step
    if record.get("format") != RECORD_FORMAT:
        return f"{where} has record format {record.get('format')!r}, this code writes {RECORD_FORMAT}", rerun
    damaged = [k for k in ("golden_files", "code_files", "libraries", "counts", "template_files") if not isinstance(record.get(k, {}), dict)]
    if damaged:
        return f"{where} is damaged (field {damaged[0]!r} is not an object)", rerun
    return None


def _pinned_problems(record: Mapping[str, Any], dataset_dir: Path, tokenizer: str | None, command: str):
    """What differs today from what the record pinned: (problems, next steps, the tokenizer checked)."""
    rerun = f"run `{command}`"
    problems, code_changes = changed_inputs(record, dataset_dir)
    steps = [rerun] if problems else []
    from .golden import GoldenError, load_manifest

    checked = None
    try:
        manifest = load_manifest(dataset_dir)
    except GoldenError as e:
        problems.append(f"the manifest is invalid ({e})")
        steps.append(f"fix {dataset_dir / 'manifest.json'} as said, then {rerun}")
        manifest = None
    if manifest is not None:
        before = len(problems)
        if record.get("profile") != manifest.profile:
            problems.append(f"the record's profile is {record.get('profile')!r}, the manifest says {manifest.profile!r}")
        if (judged := judged_views(record)) != set(manifest.views):
            problems.append(f"the recorded run judged the views {', '.join(sorted(judged)) or 'none recorded'}, "
                            f"the manifest lists {', '.join(manifest.views)}")
        if not problems and (why := _counts_problem(record, manifest, dataset_dir)):
            problems.append(why)
        if len(problems) > before:
            steps.append(rerun)
        checked = _gate_tokenizer(tokenizer, record, manifest)
        if (found := _tokenizer_problem(checked, record, command)) is not None:
            problems.append(found[0])
            steps.append(found[1])
        elif template_problems := _template_problems(record, checked, manifest):
            problems += template_problems
            steps.append(rerun)
    more = _render_problems(record) + code_changes
    if more:
        problems += more
        steps.append(rerun)
    return problems, steps, checked


def check_gate(
    dataset: str,
    *,
    golden_dir: str | os.PathLike | None = None,
    tokenizer: str | None = None,
    state_dir: str | os.PathLike | None = None,
    profile: str | None = None,
    view: str | None = None,
    reconstructor: str | None = None,
    renderer: str | None = None,
) -> GateStatus:
    """Is the gate of ``dataset`` open? ``reconstructor`` / ``renderer``: the project's own code the caller
    builds with, by the name the record gives it (None: tokfidelity's own); a gate opened for other code is
    closed to it. Open when a green record matches today's golden files,
    tokenizer fingerprint and code fingerprint, its counts could have opened it, and the stage's
    own ``profile`` / ``tokenizer`` / ``view`` (None: the manifest's) are the ones it was opened
    with; otherwise the message says what is missing or changed, and ``next_step`` what to do
    (``open_command`` when a run of the suite can open it). Without ``tokenizer`` the check loads
    the tokenizer from where the green run found it, when that is still there."""
    state = Path(state_dir) if state_dir is not None else default_state_dir()
    gdir = Path(golden_dir) if golden_dir is not None else default_golden_dir()
    try:
        dataset_dir = resolve_dataset_dir(gdir, dataset)
    except ValueError as e:
        return GateStatus(False, dataset, str(e), "", "name one dataset with --dataset (a folder NAME, or the NAME of NAME_*)", unknown=True)
    name = dataset_dir.name
    command = open_command(name, golden_dir, tokenizer, state_dir)

    def closed(why: str, steps: Sequence[str] = (), checked: str | None = None) -> GateStatus:
        step = "; ".join(dict.fromkeys(steps)) or f"run `{command}` to open it"
        return GateStatus(False, name, f"gate for {name} is closed: {why}.", command, step, tokenizer=checked)

    from .pins import state_dir_problem

    if (layout := state_dir_problem(dataset_dir, state)) is not None:
        return GateStatus(False, name, f"gate for {name} is closed: {layout}.", command,
                          "move the state dir (or the link to it) out of the dataset folder, then run "
                          f"`{command}`")
    record = read_record(state, name)
    where = record_path(state, name)
    if record is None:
        return closed(f"no verification run is recorded ({where} does not exist)")
    if (found := _record_problems(record, where, command)) is not None:
        return closed(*found[:1], found[1:])
    option_problems, option_steps = _option_problems(record, profile, view)
    from .own_code import record_problems

    own_problems, own_steps = record_problems(record, reconstructor, renderer)
    option_problems, option_steps = option_problems + own_problems, option_steps + own_steps
    if option_problems:
        return closed("; ".join(option_problems), option_steps)
    problems, steps, checked = _pinned_problems(record, dataset_dir, tokenizer, command)
    if problems:
        return closed(f"since the green run of {record.get('time', '?')}: " + "; ".join(problems), steps, checked)
    counts = record.get("counts", {})
    summary = ", ".join(f"{k} {v}" for k, v in counts.items() if isinstance(v, (int, float)))
    off = PROMPTS_OFF_NOTE if record.get("prompts") == "off" else ""
    from .own_code import judged_note

    return GateStatus(
        True,
        name,
        f"gate for {name} is open: green run of {record.get('time', '?')} ({summary}) matches today's golden "
        f"files, tokenizer and code{judged_note(record)}.{off}",
        command,
        tokenizer=checked,
        prompts_checked=not off,
        views=frozenset(judged_views(record)),  # a set whatever judged_views returns
        template_sha256=record.get("template_sha256"),
    )
def _render_pins(tokenizer_spec, profile, pins: Pins | None, dataset_dir: Path | None = None) -> tuple[dict[str, str], str | None, dict[str, Any] | None]:
    """The chat template a run rendered prompts with (from its pins; else read now): the file it was read
    from, and its content's sha256 (render.template_digest); and the render settings of its profile."""
    from .prompt_renderers import prompt_template_pins, use_manifest_template
    from .render import render_settings

    template = dict(pins.template) if pins is not None else {}
    digest = pins.template_sha256 if pins is not None else None
    if pins is None and tokenizer_spec and profile:
        try:
            from .golden import load_manifest
            from .profiles import bind_profile
            from .tokenizer import load_tokenizer

            tokenizer = load_tokenizer(tokenizer_spec)
            bound = bind_profile(profile, tokenizer)
            use_manifest_template(load_manifest(dataset_dir), bound, tokenizer)
            template, digest = prompt_template_pins(bound, tokenizer)
        except Exception:  # noqa: BLE001 - no tokenizer: nothing rendered, nothing to pin
            template, digest = {}, None
    try:
        from .profiles import get_profile_spec

        settings = render_settings(get_profile_spec(profile)) if profile else None
    except (KeyError, ValueError):
        settings = None
    return template, digest, settings


def _template_problems(record: Mapping[str, Any], spec: str | None, manifest: Any) -> list[str]:
    """The chat template the tokenizer ``spec`` renders the manifest's prompts with today (the file the manifest
    names, checked against its sha256, else the tokenizer's own), when its content is not the one the green run
    rendered with (pinned by content: the same files elsewhere pass, another file winning fails)."""
    if "template_sha256" not in record:
        return ["the record pins no chat template content (written by an older tokfidelity)"] if record.get("template_files") else []
    from .profiles import bind_profile
    from .prompt_renderers import prompt_template_pins, use_manifest_template
    from .render import TemplateMismatch, template_source
    from .tokenizer import load_tokenizer

    try:
        tokenizer = load_tokenizer(spec) if spec else None
        profile = bind_profile(manifest.profile, tokenizer) if tokenizer is not None else None
    except Exception:  # noqa: BLE001 - the tokenizer check says why it cannot be loaded
        return []
    if tokenizer is None:
        return []
    try:
        use_manifest_template(manifest, profile, tokenizer)
        digest = prompt_template_pins(profile, tokenizer, fresh=True)[1]
    except TemplateMismatch as e:
        return [str(e)]
    except (OSError, ValueError) as e:
        return [f"the chat template of tokenizer {spec!r} cannot be read ({type(e).__name__}: {e})"]
    if digest != record.get("template_sha256"):
        pinned = str(record.get("template_sha256"))[:12] if record.get("template_sha256") else "none"
        return [f"chat template {template_source(tokenizer)} changed since the green run: its content has sha256 "
                f"{(digest or 'none')[:12]}, the run rendered with {pinned}"]
    return []


def _render_problems(record: Mapping[str, Any]) -> list[str]:
    """The render settings that differ from what the record pinned."""
    problems = []
    if "render" in record and record.get("profile"):
        _, _, settings = _render_pins(None, record.get("profile"), None)
        if settings != record.get("render"):
            problems.append(f"the render settings of profile {record.get('profile')} changed: {record.get('render')} -> {settings}")
    return problems


def pinned_fields(
    dataset_dir: Path, tokenizer_spec, tokenizer_fingerprint, profile, view, pins: Pins | None, tokenizer_location: str | None = None,
    own: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """What a record pins: golden files, tokenizer, profile, view, the code judged (tokfidelity's, and the
    project's own reconstruction and rendering when those were judged) and libraries."""
    from .own_code import record_fields
    golden = dict(pins.golden) if pins is not None else golden_file_hashes(dataset_dir)
    code = dict(pins.code) if pins is not None and pins.code else code_file_hashes([profile])
    libs = library_versions()
    template, template_sha256, settings = _render_pins(tokenizer_spec, profile, pins, dataset_dir)
    return {
        "dataset_dir": str(dataset_dir.resolve()),
        "golden_files": golden,
        "golden_sha256": mapping_digest(golden),
        "tokenizer": tokenizer_spec,
        "tokenizer_fingerprint": tokenizer_fingerprint,
        "tokenizer_location": tokenizer_location,
        "tokenizer_files": dict(pins.tokenizer) if pins is not None else {},
        "template_files": template,  # the file the chat template the prompts were rendered with was read from
        "template_sha256": template_sha256,  # that template's content: what the gate checks, wherever the files are
        "render": settings,  # the render's keyword arguments: the profile's template variables and tool steps
        "profile": profile,
        **({"view": view} if isinstance(view, str) else {"view": view[0]} if len(view) == 1 else {}),
        "views": [view] if isinstance(view, str) else list(view),
        # the engine release each view stands for ("vllm 0.33.0"): a view name follows the newest release
        "view_releases": {v: view_release(profile, v) for v in ([view] if isinstance(view, str) else view)},
        "code_files": code,
        **(dict(own) if own is not None else record_fields(None, None)),
        "libraries": libs,
        "code_fingerprint": mapping_digest({**code, **{f"lib:{k}": v for k, v in libs.items()}}),
    }
