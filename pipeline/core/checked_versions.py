"""Which releases of another library an adapter was checked against, and what to do outside them.

Each adapter over another library's private parts (``template_adapter``, ``tiktoken_adapter``,
``tokenizers_adapter``, and the plugin's ``pytest_adapter``, ``snapshots``, ``xdist_adapter``)
states a ``CheckedRange``: the oldest and newest release it was read against. The committed lock
installs releases inside every range, so a locked install says nothing. Outside a range the adapter
is not trusted on its version alone: its own self-test runs once per process, on the installed
library, and decides. Passed: the adapter is used as inside the range. Failed: the adapter takes its
library's public path where it has one (slower, same answers), or raises with what to install.
Either way the run says so in one line (``notes``), never as a warning that changes pytest's outcome
counts. ``scripts/drift`` runs the suite on the newest releases, which exercises exactly this.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version

__all__ = ["CheckedRange", "usable", "notes", "installed_release"]


def _release(text: str) -> tuple[int, ...]:
    """The release numbers of a version string ("5.24.0" -> (5, 24, 0); "2.13.0+cpu" -> (2, 13, 0))."""
    from packaging.version import Version

    return Version(text).release


@dataclass(frozen=True)
class CheckedRange:
    """``library``'s releases from ``oldest`` to ``newest`` (inclusive), checked by hand against ``adapter``."""

    library: str  # the distribution name, as pip spells it
    adapter: str  # the module that reaches into it
    oldest: str
    newest: str

    def covers(self, installed: str) -> bool:
        return _release(self.oldest) <= _release(installed) <= _release(self.newest)

    def span(self) -> str:
        return self.oldest if self.oldest == self.newest else f"{self.oldest} to {self.newest}"


_decided: dict[str, bool] = {}
_notes: dict[str, str] = {}


def installed_release(library: str) -> str | None:
    """The installed release of ``library``: from its ``.dist-info`` folder's name where one is on ``sys.path`` (one
    listing of each folder per process, where ``importlib.metadata.version`` searches them all for each name: about
    7 ms each, before a run's first test), else from ``importlib.metadata``."""
    found = _dist_info_versions().get(_normalized(library))
    if found is not None:
        return found
    try:
        return version(library)
    except PackageNotFoundError:
        return None


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


@functools.cache
def _dist_info_versions() -> dict[str, str]:
    """Release by normalized distribution name, from the ``NAME-VERSION.dist-info`` folders on ``sys.path`` (pip
    names them so, from the metadata's own fields); the first on ``sys.path`` wins, as ``importlib.metadata``
    finds it."""
    found: dict[str, str] = {}
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:  # not a folder (a zip), or gone
            continue
        for name in names:
            if name.endswith(".dist-info"):
                dist, dash, release = name[: -len(".dist-info")].partition("-")
                if dash and release:
                    found.setdefault(_normalized(dist), release)
    return found


def usable(checked: CheckedRange, self_test: Callable[[], object], installed: str | None = None) -> bool:
    """May ``checked.adapter`` reach into the installed ``checked.library``? Decided once per process.

    Inside the range: yes, silently. Outside: the adapter's ``self_test`` runs (any exception is a
    failure) and answers; a note for ``notes()`` says which. ``installed`` overrides the lookup (tests)."""
    if installed is None and checked.adapter in _decided:
        return _decided[checked.adapter]
    found = installed if installed is not None else installed_release(checked.library)
    if found is None or checked.covers(found):
        answer = True
    else:
        try:
            self_test()
            answer, outcome = True, "its self-test passed, so it is used"
        except Exception as e:  # noqa: BLE001 - any failure of the self-test means: do not trust the adapter
            answer, outcome = False, f"its self-test failed ({type(e).__name__}: {e}), so the public path is taken"
        _notes[checked.adapter] = (
            f"tokfidelity: {checked.library} {found} is outside the releases {checked.adapter} was checked "
            f"against ({checked.span()}); {outcome} (docs/dependencies.md)")
    if installed is None:
        _decided[checked.adapter] = answer
    return answer


def notes() -> list[str]:
    """One line per adapter found outside its checked range in this process, in the order found."""
    return list(_notes.values())
