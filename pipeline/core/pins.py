"""What a verification run judged, pinned by sha256 when it was read, checked against the disk at the end.

A gate record must describe the inputs that were judged, not whatever is on disk when the run
ends: a test that appends to ``samples.jsonl`` mid-run, or a background edit of a tokenizer file,
would otherwise open the gate for data nobody verified. So every input is hashed when it is read
(the samples file by the pass that indexes it, the manifest from the bytes that are parsed, the
other dataset files and the tokenizer files when the dataset is loaded), and before a record is
written ``Pins.changes`` compares those hashes with the disk: any difference keeps the gate shut.

Symlinks inside a dataset folder (a linked ``__snapshots__``) are followed: what they point to is
part of the dataset.

The samples file, most of a dataset's bytes (650 MB at 40,000 samples), is not read a second time at
the end when ``os.stat`` shows it is the same file, unchanged: the pass that hashed it kept its
``Stamp`` (device, inode, size, modification and change times), taken before reading, and only a
file that had been still for ``SETTLED_NS`` by then gets one. Any write afterwards moves its change
time past what the stamp holds (a program may set a file's modification time back, not its change
time), and a write within the same tick of a coarse clock cannot hide, since nothing wrote for
seconds before the stamp; a file replaced by another has another inode. So an equal stamp means the
bytes hashed, as git's index trusts them; anything else, or no stamp, and the file is hashed again.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .files import open_input

__all__ = ["Pins", "Stamp", "settled_stamp", "SETTLED_NS", "template_changes", "golden_file_hashes", "file_sha256", "changed_files", "sha256_bytes", "folder_reaching", "state_dir_problem", "UNREADABLE", "unreadable_files"]

_SKIPPED_SUFFIXES = (".lock", ".tmp")
UNREADABLE = "unreadable: "  # a golden file's pin when it cannot be read: this, then why (never a sha256)

Stamp = tuple[int, int, int, int, int]  # (st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns) of a file
SETTLED_NS = 2_000_000_000  # a file stamped must have been still this long (coarse clocks: FAT's are 2 s)


def settled_stamp(st: os.stat_result) -> Stamp | None:
    """The stamp of a file from its ``stat`` taken just before its bytes are read and hashed, or None when it
    changed within ``SETTLED_NS`` of now (a later write in the same clock tick could leave the stamp as it is)."""
    if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) < SETTLED_NS:
        return None
    return _stamp(st)


def _stamp(st: os.stat_result) -> Stamp:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _stamp_now(path: Path) -> Stamp | None:
    try:
        return _stamp(os.stat(path))
    except OSError:
        return None


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_sha256(path: str | os.PathLike) -> str:
    with open_input(path) as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _walk_each_folder_once(folder: Path) -> Iterable[tuple[str, list[str], list[str]]]:
    """``os.walk`` following symlinked folders, each real folder once (so a link loop ends)."""
    seen: set[str] = set()
    for root, dirs, files in os.walk(folder, followlinks=True):
        real = os.path.realpath(root)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        yield root, dirs, files


def _dataset_files(dataset_dir: Path) -> Iterable[tuple[str, Path]]:
    """(relative name, path) of every file of a dataset folder, following symlinked folders (each
    real folder once, so a link loop ends)."""
    for root, dirs, files in _walk_each_folder_once(dataset_dir):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            path = Path(root) / name
            if name.endswith(_SKIPPED_SUFFIXES) or not path.is_file():
                continue
            yield path.relative_to(dataset_dir).as_posix(), path


def folder_reaching(dataset_dir: str | os.PathLike, target: str | os.PathLike) -> str | None:
    """The entry of a dataset folder (relative; the folder itself is ".") that is ``target``, or holds it,
    following links as the golden-file pins do (a link to a folder not made yet included): ``target``'s
    files would be pinned as the dataset's. None: no entry reaches it."""
    dataset_dir = Path(dataset_dir)
    real_target = Path(os.path.realpath(target))
    for root, dirs, files in _walk_each_folder_once(dataset_dir):
        for path in (Path(root), *(Path(root) / n for n in (*dirs, *files) if os.path.islink(Path(root) / n))):
            resolved = Path(os.path.realpath(path))
            if resolved == real_target or resolved in real_target.parents:
                return path.relative_to(dataset_dir).as_posix()
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
    return None


def state_dir_problem(dataset_dir: str | os.PathLike, state_dir: str | os.PathLike) -> str | None:
    """Why a state dir cannot keep the gate records of a dataset: the dataset folder reaches it (a link to
    it, or it lies inside), so its gate records would be pinned as golden files, and the record a run writes
    would change them: the gate could never stay open. None: they are apart."""
    entry = folder_reaching(dataset_dir, state_dir)
    if entry is None:
        return None
    where = Path(dataset_dir) if entry == "." else Path(dataset_dir) / entry
    return (f"the dataset folder {dataset_dir} reaches the state dir {state_dir} through {where}: its gate records would "
            "count as golden files of the dataset, and each record a run writes would change them, so the gate could never "
            "stay open. Keep the state dir out of the dataset folder: remove that link, or give another --tokfidelity-state-dir")


def golden_file_hashes(dataset_dir: str | os.PathLike, skip: Iterable[str] = (),
                       known: Mapping[str, tuple[Stamp, str]] | None = None) -> dict[str, str]:
    """sha256 of every file of a dataset (manifest, samples, reviewed snapshots), by relative path;
    symlinks followed. ``skip``: relative names hashed elsewhere (from the bytes that were read). ``known``:
    relative name -> (its settled stamp, its sha256) when it was hashed; a file whose stamp is still that one
    is not read again (see the module's docstring)."""
    skipped = set(skip)
    out = {}
    for rel, path in _dataset_files(Path(dataset_dir)):
        if rel in skipped:
            continue
        if known and rel in known and _stamp_now(path) == known[rel][0]:
            out[rel] = known[rel][1]
            continue
        try:
            out[rel] = file_sha256(path)
        except OSError as e:  # pinned as unreadable: every check that compares pins names it (unreadable_files)
            out[rel] = f"{UNREADABLE}{e.strerror or type(e).__name__}"
    return out


def unreadable_files(hashes: Mapping[str, str]) -> dict[str, str]:
    """The files of ``golden_file_hashes`` that could not be read -> why."""
    return {rel: h[len(UNREADABLE):] for rel, h in sorted(hashes.items()) if h.startswith(UNREADABLE)}


def changed_files(label: str, recorded: Mapping[str, str], now: Mapping[str, str]) -> list[str]:
    notes = []
    for key in sorted(set(recorded) | set(now)):
        if key in now and now[key].startswith(UNREADABLE):
            notes.append(f"{label} {key} cannot be read ({now[key][len(UNREADABLE):]})")
        elif key not in now:
            notes.append(f"{label} {key} was removed")
        elif key not in recorded:
            notes.append(f"{label} {key} was added")
        elif recorded[key] != now[key]:
            notes.append(f"{label} {key} changed")
    return notes


@dataclass
class Pins:
    """sha256 of the bytes a run read: dataset files by relative path, tokenizer files by path, and
    the file the chat template was read from (``chat_template.jinja``, ``tokenizer_config.json`` or a
    GGUF) by path."""

    golden: dict[str, str] = field(default_factory=dict)
    tokenizer: dict[str, str] = field(default_factory=dict)
    template: dict[str, str] = field(default_factory=dict)
    template_sha256: str | None = None  # the template's content as rendered (render.template_digest): what a gate pins
    # golden file -> its settled stamp when it was hashed in this process (settled_stamp); never sent or recorded
    stamps: dict[str, Stamp] = field(default_factory=dict, compare=False)
    # the code that judged (fingerprints.code_file_hashes) as the run began, where this process hashed it then
    # (a lone run's indexing process); empty: the record hashes it as it is written. Never sent.
    code: dict[str, str] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"golden": dict(self.golden), "tokenizer": dict(self.tokenizer), "template": dict(self.template),
                "template_sha256": self.template_sha256}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Pins":
        return cls(dict(d.get("golden", {})), dict(d.get("tokenizer", {})), dict(d.get("template", {})), d.get("template_sha256"))

    def golden_now(self, dataset_dir: str | os.PathLike) -> dict[str, str]:
        """``golden_file_hashes(dataset_dir)``: the dataset's files as they are on disk now, a file whose settled
        stamp still holds taken from these pins without being read again."""
        known = {rel: (stamp, self.golden[rel]) for rel, stamp in self.stamps.items() if rel in self.golden}
        return golden_file_hashes(dataset_dir, known=known)

    def changes(self, dataset_dir: str | os.PathLike) -> list[str]:
        """What differs on disk now from what was read ([] when nothing does)."""
        now = self.golden_now(dataset_dir)
        notes = [f"{n} since it was read" for n in changed_files("golden file", self.golden, now)]
        return (notes + _pinned_file_changes("tokenizer file", self.tokenizer, "since it was loaded")
                + template_changes(self.template, "since it was read"))


def template_changes(pinned: Mapping[str, str], when: str) -> list[str]:
    """The pinned chat-template files that differ on disk now, each named."""
    return _pinned_file_changes("chat template", pinned, when)


def _pinned_file_changes(what: str, pinned: Mapping[str, str], when: str) -> list[str]:
    """The files of ``pinned`` (path -> sha256) that differ on disk now or cannot be read, each named."""
    notes = []
    for path, digest in sorted(pinned.items()):
        try:
            now = file_sha256(path)
        except OSError as e:
            notes.append(f"{what} {path} cannot be read any more ({e.strerror or type(e).__name__})")
            continue
        if now != digest:
            notes.append(f"{what} {path} changed {when}")
    return notes
