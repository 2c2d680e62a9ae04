"""``--tokfidelity-shard=I/N``: the samples one CI shard runs, and the shard record it writes.

A shard runs the samples whose test name hashes to it (``pipeline.core.shards``) and every
whole-dataset check. Its run is decided as a full run is, over its own samples, except the rates
(known divergences per sample, accepted hunks per token): those are the merged run's, decided by
``tokfidelity gate merge``. It writes ``gates/<DATASET>.shard-I-of-N.json``, never the full record.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest

from pipeline.core import shards
from pipeline.core.decision import OPEN, UNCHANGED
from pipeline.core.shards import Shard, parse_shard

from .summary import shown

__all__ = ["shard_option", "shard_size", "rates_deferred", "write_shard"]


def shard_option(config: pytest.Config) -> Shard | None:
    """The ``--tokfidelity-shard`` value (None: not sharded); a usage error when malformed or with
    ``--snapshot-update``, which must see every sample to keep or remove reviewed divergences."""
    value = config.option.tokfidelity_shard
    if value is None:
        return None
    try:
        shard = parse_shard(value)
    except ValueError as e:
        raise pytest.UsageError(f"--tokfidelity-shard: {e}") from None
    if getattr(config.option, "update_snapshots", False):
        raise pytest.UsageError(
            "--snapshot-update cannot run sharded: it records and removes reviewed divergences for the whole "
            "dataset. Run it once without --tokfidelity-shard, commit the snapshots, then run the shards."
        )
    return shard


def shard_size(ds: Any, shard: Shard) -> int:
    """Sample tests of ``ds`` in ``shard``: its samples there, once per view (counted from the index: an
    xdist controller collects nothing)."""
    index = ds.index
    return sum(1 for p in range(len(index)) if shard.holds(index.name(p))) * len(ds.count_keys)


def rates_deferred(manifest: Any) -> Any:
    """The manifest a shard's own decision uses: its rate limits are the merge's business."""
    if manifest is None:
        return None
    return dataclasses.replace(manifest, max_known_divergence_rate=1.0, accept={k: math.inf for k in manifest.accept})


def write_shard(report: Any, ds: Any, shard: Shard, counts: Any, decision: Any, tally: dict, state_dir, args, pins=None) -> str:
    """Write this shard's record (unless the run was partial) and say what happened, for the summary.
    ``pins``: what the run read, checked against the disk when the decision was made (report.py)."""
    if decision.status == UNCHANGED:
        return f"shard record unchanged: {decision.reason}"
    green, reason = decision.status == OPEN, decision.reason
    if not green:
        pins = None
    facts = report.judged_with.get(ds.name, [])
    if not facts or any(f != facts[0] for f in facts):
        ds.setup()
        facts = [ds.judged_with() or {}]
    path = shards.write_shard_record(
        ds.dir, shard, state_dir=state_dir, green=green, reason=reason, counts=counts, expected=shard_size(ds, shard),
        checks_passed=sorted(tally["checks"]), tokenizer_spec=ds.tokenizer_spec, tokenizer_fingerprint=facts[0].get("fingerprint"),
        profile=facts[0].get("profile"), view=ds.views, pins=pins, pytest_args=args, tokenizer_location=facts[0].get("location"),
        prompts="on" if report.session.prompts else "off", own=report.own_fields(),
    )
    verdict = "green" if green else f"failed: {reason}"
    return f"shard {shard} {verdict} (record {shown(path)}); the gate opens with `tokfidelity gate merge --dataset {ds.name}`"
