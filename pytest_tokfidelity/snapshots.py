"""Reviewed divergences as syrupy snapshots, stored beside their dataset.

One file per dataset, ``<dataset>/__snapshots__/fidelity.ambr`` (syrupy's amber layout: a
``# name: test_fidelity[<DATASET>/<id>]`` header per sample, ``snapshot_key``: a name of its own, not the
test's node id, so that a review stays valid wherever and however the dataset is collected), holding the Diagnosis
signature as key-sorted JSON with one line per key or hunk: short, readable, and a review
diff shows exactly which hunk changed. Exact samples have no entry. The plugin, not syrupy,
finds stale entries (their sample is exact): syrupy's unused-snapshot search assumes
snapshots live beside test files, and would misjudge these.

syrupy hands its extension the test's location (``PyTestLocation``), whose item is a suite test: the
extension reads the test's dataset from the file that collected it (``collection.dataset_run_of``), as
the test itself does, never from a plugin looked up by name.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from syrupy.assertion import SnapshotAssertion
from syrupy.data import SnapshotCollections
from syrupy.extensions.amber import AmberDataSerializer, AmberSnapshotExtension
from syrupy.location import PyTestLocation

from pipeline.core.checked_versions import CheckedRange, usable
from pipeline.core.golden import DEFAULT_VIEW

from .collection import dataset_run_of

__all__ = ["snapshot_key", "reviewed_under_other_names", "DiagnosisExtension", "snapshot_assertion", "syrupy_session", "CHECKED", "self_test", "format_signature", "SNAPSHOT_DIRNAME", "SNAPSHOT_BASENAME", "snapshot_file", "stored_names"]

SNAPSHOT_DIRNAME = "__snapshots__"
SNAPSHOT_BASENAME = "fidelity"


def snapshot_key(dataset: str, test_name: str, view: str | None = None) -> str:
    """The name of a sample's reviewed divergence in its dataset's snapshot file (``test_name``: the
    sample's test name in ``samples.jsonl``, collection.sample_item_name). ``view``: the view the test
    judges under, when its name does not carry it (``SAMPLE[VIEW]`` does). A divergence is reviewed under
    one view, so its name says which: ``SAMPLE[VIEW]``, or ``SAMPLE`` alone for the default view (every
    shipped snapshot). A dataset whose manifest moves from one view to another then finds none of the
    other view's reviews: they pass no test of the new view."""
    if view is not None and view != DEFAULT_VIEW:
        test_name = f"{test_name}[{view}]"
    return f"test_fidelity[{dataset}/{test_name}]"


def snapshot_file(dataset_dir: Path, basename: str = SNAPSHOT_BASENAME) -> Path:
    """A dataset's reviewed divergences: ``fidelity.ambr`` for tokfidelity's own code, ``fidelity@...`` for a
    project's own reconstruction or rendering (DatasetRun.snapshot_basename)."""
    return Path(dataset_dir) / SNAPSHOT_DIRNAME / f"{basename}.{DiagnosisExtension.file_extension}"


def stored_names(dataset_dir: Path, basename: str = SNAPSHOT_BASENAME) -> set[str]:
    path = snapshot_file(dataset_dir, basename)
    if not path.is_file():
        return set()
    try:
        return {s.name for s in AmberDataSerializer.read_file(str(path))}
    except OSError:  # unreadable: test_manifest names the file (every dataset file is pinned), no sample passes on it
        return set()


def reviewed_under_other_names(stored: set[str], key: str) -> list[tuple[str, str]]:
    """(dataset name, stored name) of the same sample's reviews under another dataset's name: ``("B1_glaive",
    "test_fidelity[B1_glaive/b1-0006]")`` for ``key`` ``test_fidelity[B1_copy/b1-0006]`` (``snapshot_key``'s names).
    Names carry the dataset's folder name, so a folder renamed or copied finds none of its reviews; these are what
    it would have found."""
    head, _, rest = key.partition("[")
    sample = rest.partition("/")[2]
    found = []
    for name in stored:
        name_head, _, name_rest = name.partition("[")
        dataset, _, name_sample = name_rest.partition("/")
        if name_head == head and name_sample == sample and name != key:
            found.append((dataset, name))
    return sorted(found)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(", ", ": "))


def format_signature(signature: Any) -> str:
    """A signature as text: a dict gets one line per key; a list of dicts one line per dict."""
    if not isinstance(signature, dict):
        return _compact(signature)
    lines = ["{"]
    keys = sorted(signature)
    for n, key in enumerate(keys):
        value = signature[key]
        comma = "," if n < len(keys) - 1 else ""
        if isinstance(value, list) and value and all(isinstance(v, (dict, list)) for v in value):
            lines.append(f"  {json.dumps(key)}: [")
            for m, v in enumerate(value):
                lines.append(f"    {_compact(v)}{',' if m < len(value) - 1 else ''}")
            lines.append(f"  ]{comma}")
        else:
            lines.append(f"  {json.dumps(key)}: {_compact(value)}{comma}")
    lines.append("}")
    return "\n".join(lines)


class DiagnosisExtension(AmberSnapshotExtension):
    """syrupy extension: store Diagnosis signatures in the dataset's own snapshot file."""

    def serialize(self, data: Any, **kwargs: Any) -> str:
        return format_signature(data)

    @classmethod
    def dirname(cls, *, test_location) -> str:
        item = test_location.item
        dataset = dataset_run_of(item)
        if dataset is None:  # syrupy asks for every test of a mixed run: others keep syrupy's place
            return super().dirname(test_location=test_location)
        return str(dataset.dir / SNAPSHOT_DIRNAME)

    @classmethod
    def get_snapshot_name(cls, *, test_location, index=0) -> str:
        item = test_location.item
        dataset = dataset_run_of(item)
        if dataset is None:
            return super().get_snapshot_name(test_location=test_location, index=index)
        return dataset.snapshot_key(item)

    @classmethod
    def get_file_basename(cls, *, test_location, index) -> str:
        item = test_location.item
        dataset = dataset_run_of(item)
        return SNAPSHOT_BASENAME if dataset is None else dataset.snapshot_basename

    @classmethod
    def matches_test_location(cls, *, test_location, snapshot_location: str) -> bool:
        return True

    def discover_snapshots(self, *, test_location, ignore_extensions=None) -> SnapshotCollections:
        return SnapshotCollections()  # stale entries are the plugin's business (see module doc)


def snapshot_assertion(item) -> SnapshotAssertion:
    """What syrupy's ``snapshot`` fixture gives a test, here for a sample item (which takes no
    fixtures: collection.py), built as that fixture builds it, with DiagnosisExtension. syrupy
    keeps its session on ``config._syrupy``; its fixture reads it from there too."""
    option = item.config.option
    extra = {"update_new_snapshots_only": option.update_new_snapshots_only} if hasattr(option, "update_new_snapshots_only") else {}
    return SnapshotAssertion(
        update_snapshots=option.update_snapshots, extension_class=DiagnosisExtension, test_location=PyTestLocation(item),
        session=syrupy_session(item.config), **extra,
    )


CHECKED = CheckedRange("syrupy", "pytest_tokfidelity/snapshots.py", "7.0.2", "7.0.2")


def self_test() -> None:
    """Raise unless syrupy still keeps its session on ``config._syrupy`` and builds assertions as here."""
    import inspect

    from syrupy import session as syrupy_sessions

    import syrupy

    if "config._syrupy" not in inspect.getsource(syrupy):
        raise AssertionError("syrupy no longer keeps its session on config._syrupy")
    if not hasattr(syrupy_sessions, "SnapshotSession"):
        raise AssertionError("syrupy.session has no SnapshotSession")
    missing = {"update_snapshots", "extension_class", "test_location", "session"} - set(
        inspect.signature(SnapshotAssertion).parameters)
    if missing:
        raise AssertionError(f"SnapshotAssertion() takes no {sorted(missing)}")


def syrupy_session(config):
    """syrupy's session, which it keeps on ``config._syrupy`` (private: the releases in ``CHECKED``;
    outside them ``self_test`` decides). Without it, an error saying which syrupy to install."""
    session = getattr(config, "_syrupy", None) if usable(CHECKED, self_test) else None
    if session is None:
        raise RuntimeError(f"tokfidelity's snapshot adapter does not work with the installed syrupy (checked with "
                           f"{CHECKED.span()}): reviewed divergences cannot be compared; install syrupy=={CHECKED.newest}")
    return session
