"""Benchmark of report.html at scale: the shipped datasets plus a synthetic dataset of 40,000 samples
of about 3,500 tokens where nearly every sample holds a harmless re-split.

The shipped datasets' results come from a real ``pytest --tokfidelity-report`` run. The synthetic
dataset's results.json is made, not judged (judging 140 M tokens would take minutes here): a few
dozen real ~3,500-token Kimi K2.5 samples (text from the installed packages, as bench_plugin.py)
are given re-splits, whitespace changes or lone UTF-8 bytes and really diagnosed
(``pipeline.reporting.details.SampleDetails`` on ``diagnose``), and their records are repeated with
new ids and shifted positions, in the shares below; as in a real run, only the first 300
text-preserving samples carry token windows. The two are merged as ``tokfidelity report`` merges
files, the page is drawn, and headless Chromium loads it: the figures are the HTML size, the time
to draw it, and the browser's time from navigation to the end of the page's script (and the whole
browser run, against the same run on an empty page).

    .venv/bin/python bench/bench_report.py [--samples 40000] [--tokens 3500] [--out DIR]
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))  # scripts/_support: shared with the tests, which it never imports
sys.path.insert(0, str(ROOT / "bench"))

from bench_plugin import text_pools  # noqa: E402

from pipeline.core.diagnose import diagnose  # noqa: E402
from pipeline.core.golden import GoldenSample  # noqa: E402
from pipeline.core.profiles import bind_profile  # noqa: E402
from pipeline.core.tokenizer import load_tokenizer  # noqa: E402
from pipeline.reporting.details import SampleDetails  # noqa: E402
from pipeline.reporting.html import write_report  # noqa: E402
from pipeline.reporting.results import dataset_entry, merge_results, results_document, write_results  # noqa: E402

SHARES = {"policy": 0.95, "known": 0.01, "new": 0.001}  # the rest are exact
NAME = "S40k_synthetic"


def _resplit(tok, ids: list[int], rng: random.Random) -> list[int]:
    """A multi-byte ASCII token somewhere written as two tokens (a harmless re-split)."""
    for _ in range(200):
        j = rng.randrange(len(ids))
        b = tok.token_bytes(ids[j])
        if len(b) >= 4 and b.isascii():
            halves = tok.encode_ordinary(b[:2].decode()) + tok.encode_ordinary(b[2:].decode())
            if len(halves) == 2:
                return ids[:j] + halves + ids[j + 1:]
    return ids


def templates(tokens: int, n: int = 24, seed: int = 0) -> dict[str, list[dict]]:
    """Real records per kind: re-splits (text kept), and re-split plus a text change."""
    tok = load_tokenizer("kimi-k2.5")
    profile = bind_profile("kimi-k2.5", tok)
    explain = SampleDetails(tok, profile, detail_limit=10**9)
    prose, code = text_pools(2_000_000)
    rng = random.Random(seed)
    out: dict[str, list[dict]] = {"keep": [], "change": []}
    lone = next(t for t in range(tok.n_vocab) if tok.token_bytes(t) == b"\xe2")
    for i in range(n):
        start = rng.randrange(len(code) - tokens * 5)
        canonical = tok.encode_ordinary(prose[start % (len(prose) - tokens * 3):][: tokens * 2] + code[start:][: tokens * 2])
        canonical = canonical[:tokens] + [profile.stop_id]
        golden = canonical
        for _ in range(rng.choice((1, 1, 2, 3))):
            golden = _resplit(tok, golden, rng)
        kind = "keep" if i % 2 == 0 else "change"
        rebuilt = canonical
        if kind == "change":  # a lone UTF-8 byte inside the text, or whitespace changed by the API
            j = rng.randrange(len(golden) // 4, len(golden) - 2)
            if i % 4 == 1:
                golden = golden[:j] + [lone] + golden[j:]
                rebuilt = tok.encode_ordinary(tok.decode(golden[:-1])) + [profile.stop_id]
            else:
                rebuilt = tok.encode_ordinary(tok.decode(golden[:j]) + " " + tok.decode(golden[j:-1])) + [profile.stop_id]
        sample = GoldenSample(id=f"t{i}", output_ids=golden, finish_reason="stop", line=i + 1)
        d = diagnose(golden, rebuilt, tok, profile=profile, finish_reason="stop")
        out[kind].append(explain(sample, d, "policy" if d.harmless else "divergent"))
    return out


def _shift(hunks: list[dict], by: int) -> None:
    """Move a template's hunks (and their windows) ``by`` tokens, so positions spread over the output."""
    for h in hunks:
        h["golden"] = [i + by for i in h["golden"]]
        h["rebuilt"] = [i + by for i in h["rebuilt"]]
        for side in h.get("window", {}).values():
            for t in side:
                t["i"] += by


def synthetic(samples: int, tokens: int) -> dict:
    base = templates(tokens)
    rng = random.Random(1)
    records, counts = [], {"samples": samples, "exact": 0, "policy": 0, "known": 0, "new": 0, "bad_input": 0,
                           "tokens": 0, "hunks": 0, "policy_hunks_by_class": {}, "known_by_class": {}, "new_by_class": {},
                           "stale_snapshots": 0}
    detailed_keep = 0
    for i in range(samples):
        r = rng.random()
        verdict = "policy" if r < SHARES["policy"] else "known" if r < SHARES["policy"] + SHARES["known"] else \
            "new" if r < SHARES["policy"] + SHARES["known"] + SHARES["new"] else "exact"
        counts["tokens"] += tokens + 1
        if verdict == "exact":
            counts["exact"] += 1
            continue
        template = rng.choice(base["keep" if verdict == "policy" else "change"])
        rec = {k: v for k, v in template.items() if k != "hunks"}
        keep_windows = verdict != "policy" or detailed_keep < 300
        detailed_keep += verdict == "policy"
        rec["hunks"] = [copy.deepcopy(h) if keep_windows else {k: v for k, v in h.items() if k != "window"}
                        for h in template["hunks"]]
        low = min([h[k][0] for h in rec["hunks"] for k in ("golden", "rebuilt")]  # indices stay 0 or more
                  + [t["i"] for h in rec["hunks"] for side in h.get("window", {}).values() for t in side])
        _shift(rec["hunks"], rng.randrange(-low, tokens - max(h["golden"][1] for h in rec["hunks"]) + 1))
        rec.update(id=f"syn-{i:06d}", line=i + 1, dataset=NAME, verdict=verdict, detail=keep_windows)
        if verdict != "policy":
            rec["report"] = "(synthetic: see the hunks)"
        counts[verdict] += 1
        counts["hunks"] += rec["hunk_count"]
        key = "policy_hunks_by_class" if verdict == "policy" else f"{verdict}_by_class"
        for c in rec["classes"]:
            counts[key][c] = counts[key].get(c, 0) + 1
        records.append(rec)
    entry = dataset_entry(name=NAME, counts=counts, samples_total=samples, profile="kimi-k2.5", tokenizer="kimi-k2.5",
                          tokenizer_fingerprint="synthetic", view="sglang", golden_files={"samples.jsonl": "synthetic"},
                          accept={"non-canonical-split": 0.01}, max_known_divergence_rate=0.02, gate_note="record unchanged",
                          problems=[], partial_reasons=[], wall_s=0.0)
    return results_document([entry], records, command=["(synthetic)"], partial_reasons=[])


def shipped_results(work: Path) -> Path:
    from _support.pytest_runs import SHIPPED, run_pytest
    import shutil

    for name in SHIPPED:
        shutil.copytree(ROOT / "golden" / name, work / "golden" / name)
    proc = run_pytest(work, work / "shipped")
    if proc.returncode != 0:
        sys.exit(f"pytest on the shipped datasets failed:\n{proc.stdout[-3000:]}")
    return work / "shipped" / "results.json"


def browser_load(page: Path) -> tuple[int, float, float, float]:
    """(ms from navigation to the end of the page's script, wall s of a --dump-dom run, of a --screenshot
    run (load and paint), and of a --screenshot run on an empty page: the browser's own start and stop)."""
    import time as _time

    from _support.browser import Browser, Dom, RecordingProxy

    proxy = RecordingProxy()
    b = Browser(proxy)
    try:
        empty = page.with_name("empty.html")
        empty.write_text("<!doctype html><p>empty</p>", encoding="utf-8")
        t = _time.perf_counter()
        b.screenshot(empty.as_uri(), page.with_name("empty.png"))
        empty_wall = _time.perf_counter() - t
        html, wall = b.dump_dom(page.as_uri())
        ready = int(Dom(html).body()["data-ready-ms"])
        t = _time.perf_counter()
        b.screenshot(page.as_uri(), page.with_name("report.png"))
        shot_wall = _time.perf_counter() - t
        assert b.page_requests == [], b.page_requests
    finally:
        b.close()
        proxy.close()
    return ready, wall, shot_wall, empty_wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=40_000)
    ap.add_argument("--tokens", type=int, default=3_500)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--results", type=Path, default=None, help="redraw this results.json (made by an earlier run) instead")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-report-"))
    out = args.out or work / "report"
    if args.results:
        doc = json.loads(args.results.read_text(encoding="utf-8"))
    else:
        t = time.perf_counter()
        shipped = json.loads(shipped_results(work).read_text(encoding="utf-8"))
        print(f"shipped datasets judged by pytest --tokfidelity-report: {time.perf_counter() - t:.1f} s")
        t = time.perf_counter()
        synth = synthetic(args.samples, args.tokens)
        print(f"synthetic results for {args.samples:,} samples of ~{args.tokens:,} tokens: {len(synth['samples']):,} "
              f"not exact ({time.perf_counter() - t:.1f} s to make)")
        doc = merge_results([("shipped", shipped), ("synthetic", synth)])
    t = time.perf_counter()
    results = write_results(doc, out)
    page = write_report(doc, out)
    draw = time.perf_counter() - t
    detailed = sum(1 for s in doc["samples"] if s.get("detail") or s["verdict"] in ("new", "bad-input"))
    print(f"results.json {results.stat().st_size / 1e6:.1f} MB; report.html {page.stat().st_size / 1e6:.1f} MB "
          f"({detailed:,} samples in detail, {len(doc['samples']) - detailed:,} summarised); written in {draw:.1f} s")
    ready, wall, shot, empty = browser_load(page)
    print(f"chromium: the page's script done (every sample listed, filters applied) {ready / 1000:.2f} s after "
          f"navigation; headless --screenshot run (start, load, paint, stop) {shot:.2f} s against {empty:.2f} s for "
          f"an empty page; --dump-dom run {wall:.2f} s (serialising the DOM included); {page.with_name('report.png')}")


if __name__ == "__main__":
    main()
