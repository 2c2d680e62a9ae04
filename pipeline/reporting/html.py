"""report.html: one self-contained page drawn from a results document (results.json).

Inline CSS, JS and SVG only, and a Content-Security-Policy that forbids every request, so the
page works offline and sends nothing anywhere. Samples with token windows (every new, known and
text-changing one, and the first ``detail_limit`` text-preserving ones per dataset) are drawn as
HTML here; the rest are embedded as compact rows that the script lists a page at a time, so that
40,000 samples load in seconds. Text from the data never reaches the page unescaped, and no
``scheme://`` sequence is written (it is entity- or JSON-escaped), so the file holds no URL.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from pipeline.core.diagnose import ADVICE, CLASSES, TEXT_PRESERVING_CLASSES

from ..core.files import atomic_write
from .assets import CSS, JS
from .charts import CLASS_COLOURS, class_chart, class_hunks, position_bins, position_chart
from .schema import VERDICTS

__all__ = ["render_report", "write_report", "visible"]

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"
VERDICT_TITLES = {"new": "new divergence (failed)", "known": "known divergence (reviewed)",
                  "policy": "accepted by policy", "bad-input": "bad input"}
_VISIBLE = {ord(" "): "<w>\u00b7</w>", ord("\n"): "<w>\u21b5</w>", ord("\t"): "<w>\u21e5</w>", ord("\r"): "<w>\u240d</w>",
            0xFFFD: '<w class="bad">\ufffd</w>'}
_VISIBLE.update({c: f"<w>\\x{c:02x}</w>" for c in (*range(0x20), 0x7F) if c not in _VISIBLE})


def visible(text: str) -> str:
    """HTML for a token's text with whitespace, control characters and U+FFFD made visible."""
    return escape(text, quote=False).translate(_VISIBLE)


def _no_url(html: str) -> str:
    return html.replace("://", ":&#47;&#47;")


def _num(n: Any) -> str:
    return f"{n:,}" if isinstance(n, int) else f"{n:.4g}" if isinstance(n, float) else escape(str(n))


def _class_badge(cls: str) -> str:
    colour = CLASS_COLOURS.get(cls, "#777")
    return f'<a class="c" href="#advice-{escape(cls)}" style="color:{colour};border-color:{colour}">{escape(cls)}</a>'


def _summary_table(datasets: Sequence[Mapping[str, Any]]) -> str:
    cols = [("samples_run", "run"), ("samples_total", "in dataset"), ("exact", "exact"), ("policy", "policy"),
            ("known", "known"), ("new", "new"), ("bad_input", "bad input"), ("tokens", "tokens"), ("hunks", "hunks")]
    head = "".join(f"<th>{escape(t)}</th>" for _, t in cols)
    rows = []
    for d in datasets:
        values = {**d["counts"], "samples_run": d["samples_run"], "samples_total": d["samples_total"]}
        cells = "".join(f'<td data-key="{k}" data-value="{values.get(k, 0)}">{_num(values.get(k, 0))}</td>' for k, _ in cols)
        r = d["rates"]
        gate = d["gate"]
        partial = ' <span class="v v-bad-input">partial</span>' if d["partial"] else ""
        rows.append(
            f'<tr data-dataset="{escape(d["name"])}"><td class="l">{escape(d["name"])}{partial}</td>{cells}'
            f'<td data-key="divergent_samples" data-value="{r["divergent_samples"]}">{r["divergent_samples"]:.2%}</td>'
            f'<td data-key="hunks_per_1k_tokens" data-value="{r["hunks_per_1k_tokens"]}">{r["hunks_per_1k_tokens"]:.3f}</td>'
            f'<td class="l gate-{escape(gate["state"])}" title="{escape(" | ".join(gate["notes"]))}">{escape(gate["state"])}</td></tr>'
        )
    return (f'<table id="summary"><thead><tr><th class="l">dataset</th>{head}<th>divergent samples</th>'
            f'<th>hunks / 1k tokens</th><th class="l">gate</th></tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>")


def _token_title(t: Mapping[str, Any]) -> str:
    check = "ok" if t.get("ok", True) else "DIFFERS: decode(prefix)+decode([id]) != decode(prefix+[id])"
    return f"index {t['i']}; alone {t['text']!r}; in context {t['ctx']!r}; context check {check}"


def _token(t: Mapping[str, Any]) -> str:
    cls = "t" + (" h" if t.get("hunk") else "") + (" sp" if t.get("special") else "") + \
        (" bad" if "bytes" in t else "") + ("" if t.get("ok", True) else " cx")
    shown = "".join(f"\\x{t['bytes'][k:k + 2]}" for k in range(0, len(t["bytes"]), 2)) if "bytes" in t else t["text"]
    ctx, title = "", ""
    if t.get("hunk") or not t.get("ok", True):  # the tokens a reader hovers: index, both texts, the check
        title = f' title="{escape(_token_title(t))}"'
    if not t.get("ok", True):
        ctx = f"<u>\u2717 {visible(t['ctx'])}</u>"
    return f'<span class="{cls}"{title}><b>{visible(shown)}</b><i>{t["id"]}</i>{ctx}</span>'


def _hunk(n: int, h: Mapping[str, Any]) -> str:
    (gs, ge), (rs, re) = h["golden"], h["rebuilt"]
    head = (f'<h4>#{n} {_class_badge(h["class"])} golden[{gs}:{ge}] \u2192 rebuilt[{rs}:{re}]'
            f'{" (text kept)" if h.get("text_preserving") else ""}</h4>')
    window = h.get("window")
    if not window:
        return f'<div class="hunk">{head}</div>'
    bad = sum(not t.get("ok", True) for side in window.values() for t in side)
    verdict = f"{bad} token(s) decode differently alone than in context (\u2717)" if bad else "holds for every token shown"
    check = f'<p class="more">decode check, decode(prefix) + decode([id]) == decode(prefix + [id]): {verdict}</p>'
    sides = ""
    for key in ("golden", "rebuilt"):
        start = f" \u00b7 from index {window[key][0]['i']:,}" if window[key] else ""
        sides += (f'<div class="side"><h5>{key}{start}</h5>'
                  f'<div class="toks">{"".join(_token(t) for t in window[key])}</div></div>')
    return f'<div class="hunk">{head}<div class="sbs">{sides}</div>{check}</div>'


def _sample(n: int, s: Mapping[str, Any]) -> str:
    classes = s.get("classes", [])
    verdict = s["verdict"]
    bits = [f"line {s['line']}" if s.get("line") else ""]
    if "tokens" in s:
        bits.append(f"{s['tokens']:,} golden ids, {s.get('rebuilt_tokens', 0):,} rebuilt")
        bits.append(f"finish {escape(str(s.get('finish_reason')))}")
        bits.append("text identical (only the split differs)" if s.get("texts_identical") else "TEXT CHANGED")
        bits.append(f"{s.get('hunk_count', 0)} hunk(s)")
    hunks = [h for h in s.get("hunks", []) if h.get("window")]
    body = "".join(_hunk(i, h) for i, h in enumerate(hunks, 1))
    rest = s.get("hunk_count", 0) - len(hunks)
    if rest > 0:
        body += f'<p class="more">\u2026 {rest} more hunk(s) without a window (spans in results.json)</p>'
    advice = "".join(f"<li>{_class_badge(c)} {escape(ADVICE.get(c, ''))}</li>" for c in classes)
    report = f"<details><summary>text report</summary><pre>{escape(s['report'])}</pre></details>" if s.get("report") else ""
    return (
        f'<article class="sample" id="s{n}" data-dataset="{escape(s["dataset"])}" data-verdict="{escape(verdict)}" '
        f'data-classes="{escape(" ".join(classes))}" data-sample="{escape(s["dataset"])}/{escape(str(s.get("id", "")))}">'
        f'<h3><span class="v v-{escape(verdict)}" title="{VERDICT_TITLES.get(verdict, "")}">{escape(verdict)}</span> '
        f'{escape(s["dataset"])}/{escape(str(s.get("id", "")))} {"".join(_class_badge(c) for c in classes)}</h3>'
        f'<div class="meta">{" · ".join(b for b in bits if b)}</div>{body}'
        f'{f"<ul>{advice}</ul>" if advice else ""}{report}</article>'
    )


def _filters(doc: Mapping[str, Any], samples: Sequence[Mapping[str, Any]]) -> str:
    verdicts, classes, datasets = {}, {}, {}
    for s in samples:
        verdicts[s["verdict"]] = verdicts.get(s["verdict"], 0) + 1
        datasets[s["dataset"]] = datasets.get(s["dataset"], 0) + 1
        for c in s.get("classes", []):
            classes[c] = classes.get(c, 0) + 1

    def group(name: str, title: str, counts: Mapping[str, int], order: Sequence[str]) -> str:
        keys = [k for k in order if k in counts] + sorted(k for k in counts if k not in order)
        boxes = "".join(f'<label><input type="checkbox" name="{name}" value="{escape(k)}"> {escape(k)} ({counts[k]:,})</label>'
                        for k in keys)
        return f"<fieldset><legend>{title}</legend>{boxes or '<span class=more>none</span>'}</fieldset>"

    return (f'<div id="filters">{group("verdict", "verdict", verdicts, VERDICTS)}'
            f'{group("class", "class (any of)", classes, CLASSES)}'
            f'{group("dataset", "dataset", datasets, [d["name"] for d in doc["datasets"]])}'
            f'<button id="clear-filters" type="button">all</button><span id="shown"></span></div>')


def _problems(datasets: Sequence[Mapping[str, Any]]) -> str:
    """What failed besides samples: whole-dataset checks, rate limits; one block per dataset."""
    items = []
    for d in datasets:
        checks = "".join(f'<details><summary>{escape(c.get("check", ""))} failed</summary><pre>{escape(c.get("message", ""))}</pre>'
                         f"</details>" for c in d.get("failed_checks", []))
        notes = "".join(f"<li>{escape(p)}</li>" for p in d.get("problems", []))
        if checks or notes:
            items.append(f'<li data-dataset="{escape(d["name"])}"><b>{escape(d["name"])}</b><ul>{notes}</ul>{checks}</li>')
    return f'<ul id="problems">{"".join(items)}</ul>' if items else ""


def _advice(samples: Sequence[Mapping[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for s in samples:
        for c in s.get("classes", []):
            counts[c] = counts.get(c, 0) + 1
    rows = "".join(
        f'<tr id="advice-{c}"><td class="l">{_class_badge(c)}</td><td>{counts.get(c, 0):,}</td>'
        f"<td class=\"l\">{'keeps the text' if c in TEXT_PRESERVING_CLASSES else 'changes or loses text'}</td>"
        f"<td>{escape(ADVICE[c])}</td></tr>"
        for c in CLASSES
    )
    return (f'<table class="adv" id="advice"><thead><tr><th class="l">class</th><th>samples</th><th class="l">text</th>'
            f"<th class=\"l\">what to do</th></tr></thead><tbody>{rows}</tbody></table>")


def _review(doc: Mapping[str, Any]) -> str:
    items = []
    for d in doc["datasets"]:
        new, known = d["counts"].get("new", 0), d["counts"].get("known", 0)
        if new:
            items.append(f'<li><b>{escape(d["name"])}</b>: {new:,} new divergence(s). Review them below, then record them with '
                         f'<code class="cmd">{escape(d["snapshot_update"])}</code>, review the snapshot diff '
                         f'(<code>git diff {escape(d.get("path") or d["name"])}/__snapshots__/</code>), commit, and run again without it.</li>')
        elif known:
            items.append(f'<li>{escape(d["name"])}: no new divergences; {known:,} known. To re-record: '
                         f'<code class="cmd">{escape(d["snapshot_update"])}</code></li>')
    return f"<ul id=\"review\">{''.join(items) or '<li>no divergences to review</li>'}</ul>"


def _rows_json(doc: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> str:
    """The summarised samples as compact rows for the script, escaped for a script element."""
    names = [d["name"] for d in doc["datasets"]]
    ds_index = {n: i for i, n in enumerate(names)}
    classes = list(CLASSES) + sorted({c for s in rows for c in s.get("classes", []) if c not in CLASSES})
    c_index = {c: i for i, c in enumerate(classes)}
    v_index = {v: i for i, v in enumerate(VERDICTS)}
    packed = [
        [ds_index[s["dataset"]], str(s.get("id", "")), v_index[s["verdict"]], [c_index[c] for c in s.get("classes", [])],
         s.get("hunk_count", 0), s["hunks"][0]["golden"][0] if s.get("hunks") else -1, s.get("tokens", 0), s.get("line") or 0]
        for s in rows
    ]
    text = json.dumps({"datasets": names, "verdicts": list(VERDICTS), "classes": classes, "rows": packed},
                      ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace("://", ":\\/\\/")


def _status(doc: Mapping[str, Any]) -> str:
    if doc["partial"]:
        reasons = "; ".join(doc["partial_reasons"]) or "not every sample of every dataset was run"
        return f'<p class="partial" id="partial">PARTIAL RUN: {escape(reasons)}. Counts cover only the samples run.</p>'
    return '<p class="complete" id="partial" data-complete="1">Complete run: every sample of every dataset was verified.</p>'


def render_report(doc: Mapping[str, Any]) -> str:
    """The whole page for a results document."""
    samples = doc["samples"]
    detailed = [s for s in samples if s.get("detail") or s["verdict"] in ("new", "bad-input")]
    summarised = [s for s in samples if not (s.get("detail") or s["verdict"] in ("new", "bad-input"))]
    sources = f" · merged from {len(doc['sources'])} files" if doc.get("sources") else ""
    body = [
        f'<h1>tokfidelity divergence report</h1><p class="meta">created {escape(doc.get("created", ""))}{sources} · '
        f'<code>{escape(" ".join(["pytest", *doc.get("command", [])]))}</code> · code '
        f'{escape(str(doc.get("code", {}).get("fingerprint", ""))[:16])}</p>',
        _status(doc),
        "<h2>Datasets</h2>", _summary_table(doc["datasets"]), _problems(doc["datasets"]),
        "<h2>Divergences</h2><div class=\"charts\"><div><h4>hunks by class and verdict (bar length: log scale)</h4>",
        class_chart(class_hunks(samples), VERDICTS),
        "</div><div><h4>where in the output hunks start</h4>", position_chart(position_bins(samples)), "</div></div>",
        "<h2>Reviewing</h2>", _review(doc),
        "<h2>What each class means and what to do</h2>", _advice(samples),
        f"<h2>Samples ({len(samples):,} not exact)</h2>",
        '<p class="key toks">key: <span class="t"><b>tok<w>\u00b7</w>en</b><i>id</i></span> a token (<w>\u00b7</w> space, '
        '<w>\u21b5</w> newline) <span class="t h"><b>in</b><i>hunk</i></span> <span class="t sp"><b>&lt;|im_end|&gt;</b>'
        '<i>special</i></span> <span class="t bad"><b>\\xe2</b><i>bytes</i></span> not UTF-8 alone '
        '<span class="t cx"><b>x</b><i>id</i><u>\u2717 ctx</u></span> decodes differently in context</p>',
        _filters(doc, samples),
        f'<section id="detailed"><h3>In detail: {len(detailed):,} (every new divergence and every sample whose text '
        f'changed; of the others, which only re-split, the first {doc.get("detail_limit", 0):,} per dataset)</h3>',
        "".join(_sample(n, s) for n, s in enumerate(detailed)),
        '</section><section id="summarised"><h3>Summarised: <span id="summarised-count"></span> shown by the filters, of '
        f'{len(summarised):,} text-preserving samples (filtered), a page at a time</h3>'
        '<table><thead><tr><th class="l">sample</th><th class="l">verdict</th><th class="l">classes</th><th>hunks</th>'
        '<th>first index</th><th>golden ids</th><th>line</th></tr></thead><tbody id="summarised-rows"></tbody></table>'
        '<button id="more-rows" type="button" hidden>more</button></section>',
    ]
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        f'<meta name="viewport" content="width=device-width,initial-scale=1"><title>tokfidelity report</title>'
        f"<style>{CSS}</style></head><body>{_no_url(''.join(body))}"
        f'<script type="application/json" id="tf-data">{_rows_json(doc, summarised)}</script>'
        f"<script>{JS}</script></body></html>\n"
    )


def write_report(doc: Mapping[str, Any], out_dir: str | os.PathLike) -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "report.html"
    atomic_write(path, render_report(doc))
    return path
