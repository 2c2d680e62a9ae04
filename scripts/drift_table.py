"""scripts/drift's report: what the newest releases change against the lock.

    python scripts/drift_table.py LOCK_DIR NEWEST_LOCK_DIR NEWEST_JUNIT [LOCKED_JUNIT]

Prints Markdown: the packages whose newest release differs from the lock (locked, newest; new and
dropped packages too), then the tests that fail with the newest releases (only those that did not
fail on the locked releases when LOCKED_JUNIT is given), then the differential tests' failures per
engine (each failing case is a response the newer engine code changed, or a view that no longer
matches it).
"""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

LOCKS = ("test.txt", "core-nodeps.txt", "test-nodeps.txt", "vllm.txt")
ENGINES = {"vllm": "test_vllm_differential", "sglang": "test_sglang_"}


def pins(folder: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for name in LOCKS:
        path = folder / name
        if path.is_file():
            for package, pinned in re.findall(r"^([A-Za-z0-9_.-]+)==([^ \\\n]+)", path.read_text(), re.M):
                found.setdefault(package.lower().replace("_", "-"), pinned)
    return found


def failures(junit: Path) -> tuple[set[str], int]:
    if not junit.is_file():
        return set(), 0
    failed, total = set(), 0
    for case in ET.parse(junit).getroot().iter("testcase"):
        total += 1
        if case.find("failure") is not None or case.find("error") is not None:
            failed.add(f"{case.get('classname', '')}::{case.get('name', '')}")
    return failed, total


def main(locked_dir: str, newest_dir: str, newest_junit: str, locked_junit: str | None = None) -> None:
    locked, newest = pins(Path(locked_dir)), pins(Path(newest_dir))
    print("| package | locked | newest |\n|---|---|---|")
    moved = sorted(p for p in locked.keys() | newest.keys() if locked.get(p) != newest.get(p))
    for package in moved:
        print(f"| {package} | {locked.get(package, '(not in the lock)')} | {newest.get(package, '(dropped)')} |")
    if not moved:
        print("| (none: the lock holds the newest release of every package) | | |")
    failed, total = failures(Path(newest_junit))
    before, _ = failures(Path(locked_junit)) if locked_junit else (set(), 0)
    new = sorted(failed - before)
    base = "that passed on the locked releases" if locked_junit else "(the locked suite is green in CI)"
    print(f"\n{len(new)} of {total} tests fail with the newest releases {base}:")
    for test in new:
        print(f"- {test}")
    print("\ndifferential tests failing per engine (a case whose response the newest release changed):")
    for engine, marker in ENGINES.items():
        cases = [t for t in new if marker in t]
        print(f"- {engine}: {len(cases)}" + (f" ({', '.join(cases[:5])}{', ...' if len(cases) > 5 else ''})" if cases else ""))


if __name__ == "__main__":
    main(*sys.argv[1:])
