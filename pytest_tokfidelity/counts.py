"""Per-dataset outcome counts: made in every process, merged on the controlling one."""

from __future__ import annotations

from typing import Any

__all__ = ["new_counts", "merge_counts", "bump"]


def new_counts() -> dict[str, Any]:
    return {
        "samples": 0, "exact": 0, "policy": 0, "known": 0, "new": 0, "bad_input": 0,
        "tokens": 0, "hunks": 0,
        "policy_hunks_by_class": {}, "known_by_class": {}, "new_by_class": {},
        "stale_snapshots": [],
    }


def merge_counts(into: dict[str, Any], other: dict[str, Any]) -> None:
    for key, value in other.items():
        if isinstance(value, dict):
            target = into.setdefault(key, {})
            for k, v in value.items():
                target[k] = target.get(k, 0) + v
        elif isinstance(value, list):
            into.setdefault(key, []).extend(value)
        else:
            into[key] = into.get(key, 0) + value


def bump(counter: dict[str, int], keys) -> None:
    for k in keys:
        counter[k] = counter.get(k, 0) + 1
