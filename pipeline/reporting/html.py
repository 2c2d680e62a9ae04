"""report.html: one self-contained page drawn from a results document (results.json).

Inline CSS, JS and SVG only, and a Content-Security-Policy that forbids every request, every form,
a ``<base>`` and every script but the page's own (by its sha256), so the page works offline, sends
nothing anywhere, and markup that came from the data could not run even if it reached the page.
It does not: every value from results.json, whatever its type, is escaped where it is written
(``_t`` for text, ``_a`` for attributes, ``_n`` for numbers), and no ``scheme://`` sequence is
written (it is entity- or JSON-escaped), so the file holds no URL. Characters that would not show
(bidi controls, zero-width characters, lone surrogates) are shown as ``\\u202e``, and marker
characters that common fonts lack (DeepSeek's ``｜``, ``▁``) as their ASCII look-alike, marked.

The page opens with the outcome (gates, failures), then says whether the run was complete.
Samples with token windows (every new, known and text-changing one, and the first ``detail_limit``
text-preserving ones per dataset) are drawn as HTML here; the rest are embedded as compact rows that
the script lists a page at a time, so that 40,000 samples load in seconds.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from pipeline.core.divergence_classes import BY_NAME, CLASSES, RECORDS

from ..core.files import atomic_path
from .assets import CSS, JS
from .charts import CLASS_COLOURS, class_chart, class_hunks, position_bins, position_chart
from .schema import VERDICTS

__all__ = ["render_report", "render_page", "write_report", "visible", "shown", "CSP"]

CSP = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-"
       + base64.b64encode(hashlib.sha256(JS.encode()).digest()).decode()
       + "'; base-uri 'none'; form-action 'none'; frame-src 'none'; object-src 'none'; worker-src 'none'; "
       "connect-src 'none'; img-src 'none'; font-src 'none'; media-src 'none'; manifest-src 'none'; navigate-to 'none'")
VERDICT_TITLES = {"new": "new divergence (failed)", "known": "known divergence (reviewed)",
                  "policy": "accepted by policy", "bad-input": "bad input"}

# Characters that change how the text around them shows, or show as nothing: bidi controls,
# zero-width characters, the soft hyphen, tag characters; and lone surrogates (no character at all).
_INVISIBLE = [0xAD, 0x34F, 0x61C, 0x180E, *range(0x200B, 0x2010), *range(0x202A, 0x202F), *range(0x2060, 0x2065),
              *range(0x2066, 0x206A), 0xFEFF, *range(0xFFF9, 0xFFFC), *range(0xE0000, 0xE0080), *range(0xD800, 0xE000)]
_INVISIBLE_RE = re.compile("[\u00ad\u034f\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
                           "\ufff9-\ufffb\U000e0000-\U000e007f\ud800-\udfff]")
_LOOKALIKE = {0xFF5C: "|", 0x2581: "_"}  # in DeepSeek's markers (<｜end▁of▁sentence｜>); few fonts draw them
_SHOWN = {c: f'<w class="inv">\\u{c:04x}</w>' for c in _INVISIBLE}
_SHOWN.update({c: f'<em class="lk" title="U+{c:04X}">{a}</em>' for c, a in _LOOKALIKE.items()})
_VISIBLE = {ord(" "): "<w>\u00b7</w>", ord("\n"): "<w>\u21b5</w>", ord("\t"): "<w>\u21e5</w>", ord("\r"): "<w>\u240d</w>",
            0xFFFD: '<w class="bad">\ufffd</w>', **_SHOWN}
_VISIBLE.update({c: f"<w>\\x{c:02x}</w>" for c in (*range(0x20), 0x7F) if c not in _VISIBLE})
_SHOWN.update({c: f"<w>\\x{c:02x}</w>" for c in (*range(0x20), 0x7F) if c not in (0x09, 0x0A, 0x0D)})


def _code_points(m: re.Match) -> str:
    return f"\\u{ord(m.group()):04x}"


def visible(text: str) -> str:
    """HTML for a token's text with whitespace, control and invisible characters and U+FFFD made visible."""
    return escape(text, quote=False).translate(_VISIBLE)


def shown(value: Any) -> str:
    """HTML for any value from the data as text: escaped, with invisible characters made visible."""
    return escape(str(value), quote=False).translate(_SHOWN)


_t = shown


def _a(value: Any) -> str:
    """Any value from the data as an attribute value: escaped, invisible characters written as ``\\u....``."""
    return escape(_INVISIBLE_RE.sub(_code_points, str(value)), quote=True)


def _no_url(html: str) -> str:
    return html.replace("://", ":&#47;&#47;")


def _n(n: Any) -> str:
    """A number from the data; anything else is escaped as text."""
    if type(n) is int:
        return f"{n:,}"
    return f"{n:.4g}" if type(n) is float else _t(n)


def _pct(x: Any) -> str:
    return f"{x:.2%}" if type(x) in (int, float) else _t(x)


def _class_badge(cls: str) -> str:
    colour = CLASS_COLOURS.get(cls, "#777")
    return f'<a class="c" href="#advice-{_a(cls)}" style="color:{colour};border-color:{colour}">{_t(cls)}</a>'


_FAILING = ("closed", "mixed")


def _failures(d: Mapping[str, Any]) -> list[str]:
    """What failed in one dataset: new divergences, bad input, failed checks, other problems."""
    c = d["counts"]
    out = [f"{_n(c['new'])} new divergence{'s' * (c['new'] != 1)}"] if c["new"] else []
    if c["bad_input"]:
        out.append(f"{_n(c['bad_input'])} sample{'s' * (c['bad_input'] != 1)} with bad input")
    out += [f"{_t(fc['check'])} failed" for fc in d.get("failed_checks", [])]
    out += [_t(p) for p in d["problems"] if not re.search(r"new divergence\(s\)$|sample\(s\) with bad input$", p)]
    if not out and d["gate"]["state"] in _FAILING:
        out = [_t(d["gate"]["notes"][-1])] if d["gate"]["notes"] else []
    return out


def _verdict(doc: Mapping[str, Any]) -> str:
    """The top of the page: the outcome (gates and failures) first, completeness second."""
    datasets = doc["datasets"]
    states = [d["gate"]["state"] for d in datasets]
    failed = {d["name"]: _failures(d) for d in datasets}
    bad = [d for d in datasets if failed[d["name"]] or d["gate"]["state"] in _FAILING]
    gates = ", ".join(f"{states.count(s)} {s}" for s in ("open", "closed", "mixed", "unchanged") if s in states)
    if bad:
        outcome, head = "failed", f"FAILED: {len(bad)} of {len(datasets)} dataset(s) failed or kept their gate closed"
    elif datasets and all(s == "open" for s in states):
        outcome, head = "passed", f"PASSED: every gate open ({len(datasets)} dataset(s)), nothing failed"
    else:
        outcome, head = "unchanged", "NO VERDICT: nothing failed among the samples run, but no gate was opened"
    items = "".join(
        f'<li><b>{_t(d["name"])}</b>: gate <span class="gate-{_a(d["gate"]["state"])}">{_t(d["gate"]["state"])}</span>'
        f'{"; " + "; ".join(failed[d["name"]]) if failed[d["name"]] else ""}</li>' for d in bad
    )
    return (f'<div id="verdict" class="verdict {outcome}" data-outcome="{outcome}"><p class="head">{head}</p>'
            f'<p>gates: {gates or "none"}</p>{f"<ul>{items}</ul>" if items else ""}</div>{_status(doc)}')


def _status(doc: Mapping[str, Any]) -> str:
    if doc["partial"]:
        reasons = "; ".join(doc["partial_reasons"]) or "not every sample of every dataset was run"
        return f'<p class="partial" id="partial">PARTIAL RUN: {_t(reasons)}. Counts cover only the samples run.</p>'
    return '<p class="complete" id="partial" data-complete="1">Complete run: every sample of every dataset was verified.</p>'


_COLUMNS = [("samples_run", "run"), ("samples_total", "in dataset"), ("exact", "exact"), ("policy", "policy"),
            ("known", "known"), ("new", "new"), ("bad_input", "bad input"), ("tokens", "tokens"), ("hunks", "hunks")]


def _summary_table(datasets: Sequence[Mapping[str, Any]]) -> str:
    head = "".join(f"<th>{t}</th>" for _, t in _COLUMNS)
    rows = []
    for d in datasets:
        values = {**d["counts"], "samples_run": d["samples_run"], "samples_total": d["samples_total"]}
        cells = "".join(f'<td data-key="{k}" data-value="{_a(values.get(k, 0))}">{_n(values.get(k, 0))}</td>' for k, _ in _COLUMNS)
        r, gate = d["rates"], d["gate"]
        partial = ' <span class="v v-bad-input">partial</span>' if d["partial"] else ""
        rows.append(
            f'<tr data-dataset="{_a(d["name"])}"><td class="l name">{_t(d["name"])}{partial}</td>'
            f'<td class="l gate-{_a(gate["state"])}" title="{_a(" | ".join(gate["notes"]))}">{_t(gate["state"])}</td>{cells}'
            f'<td data-key="divergent_samples" data-value="{_a(r["divergent_samples"])}">{_pct(r["divergent_samples"])}</td>'
            f'<td data-key="hunks_per_1k_tokens" data-value="{_a(r["hunks_per_1k_tokens"])}">{_n(r["hunks_per_1k_tokens"])}</td></tr>'
        )
    return (f'<div class="scroll"><table id="summary"><thead><tr><th class="l name">dataset</th><th class="l">gate</th>{head}'
            f'<th>divergent samples</th><th>hunks / 1k tokens</th></tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


def _views_table(datasets: Sequence[Mapping[str, Any]]) -> str:
    """Dataset x view: the share of each view's samples that were exact (a dataset judged under one view
    has one cell; results files written before views were recorded, none)."""
    views = list(dict.fromkeys(v for d in datasets for v in d.get("by_view", {})))
    if not views:
        return ""
    rows = []
    for d in datasets:
        cells = []
        for v in views:
            c = d.get("by_view", {}).get(v, {}).get("counts")
            if c is None:
                cells.append('<td data-view="{}">–</td>'.format(_a(v)))
                continue
            share = c["exact"] / c["samples"] if c["samples"] else 0.0
            cells.append(f'<td data-view="{_a(v)}" data-value="{_a(round(share, 6))}" title="{_a(c["exact"])} of '
                         f'{_a(c["samples"])} exact">{_pct(share)} <span class="more">({_n(c["exact"])}/{_n(c["samples"])})</span></td>')
        rows.append(f'<tr data-dataset="{_a(d["name"])}"><td class="l name">{_t(d["name"])}</td>{"".join(cells)}</tr>')
    releases = {v: e for d in datasets for v, entry in d.get("by_view", {}).items() if (e := entry.get("engine"))}
    head = "".join(f'<th title="{_a(releases[v])}">{_t(v)} <span class="more">({_t(releases[v])})</span></th>'
                   if v in releases else f"<th>{_t(v)}</th>" for v in views)
    return (f'<h3>Exact samples by view</h3><div class="scroll"><table id="views"><thead><tr><th class="l name">dataset</th>'
            f'{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


def _sample_name(s: Mapping[str, Any], several: set[str]) -> str:
    """``DATASET/ID``, with ``[VIEW]`` when its dataset was judged under several views."""
    view = f"[{s['view']}]" if s["dataset"] in several and s.get("view") else ""
    return f'{s["dataset"]}/{s["id"]}{view}'


def _several_views(doc: Mapping[str, Any]) -> set[str]:
    return {d["name"] for d in doc["datasets"] if len(d.get("views", ())) > 1}


def _token_title(t: Mapping[str, Any]) -> str:
    check = "ok" if t.get("ok", True) else "DIFFERS: decode(prefix)+decode([id]) != decode(prefix+[id])"
    return f"index {t['i']}; alone {t['text']!r}; in context {t['ctx']!r}; context check {check}"


def _token(t: Mapping[str, Any]) -> str:
    cls = "t" + (" h" if t.get("hunk") else "") + (" sp" if t.get("special") else "") + \
        (" bad" if "bytes" in t else "") + ("" if t.get("ok", True) else " cx")
    text = "".join(f"\\x{t['bytes'][k:k + 2]}" for k in range(0, len(t["bytes"]), 2)) if "bytes" in t else t["text"]
    ctx, title = "", ""
    if t.get("hunk") or not t.get("ok", True):  # the tokens a reader hovers: index, both texts, the check
        title = f' title="{_a(_token_title(t))}"'
    if not t.get("ok", True):
        ctx = f"<u>\u2717 {visible(t['ctx'])}</u>"
    return f'<span class="{cls}"{title}><b>{visible(text)}</b><i>{_n(t["id"])}</i>{ctx}</span>'


def _hunk(n: int, h: Mapping[str, Any]) -> str:
    (gs, ge), (rs, re_) = h["golden"], h["rebuilt"]
    head = (f'<h4>#{n} {_class_badge(h["class"])} golden[{_n(gs)}:{_n(ge)}] \u2192 rebuilt[{_n(rs)}:{_n(re_)}]'
            f'{" (text kept)" if h.get("text_preserving") else ""}</h4>')
    window = h.get("window")
    if not window:
        return f'<div class="hunk">{head}</div>'
    bad = sum(not t.get("ok", True) for side in window.values() for t in side)
    verdict = f"{bad} token(s) decode differently alone than in context (\u2717)" if bad else "holds for every token shown"
    check = f'<p class="more">decode check, decode(prefix) + decode([id]) == decode(prefix + [id]): {verdict}</p>'
    sides = ""
    for key in ("golden", "rebuilt"):
        start = f" \u00b7 from index {_n(window[key][0]['i'])}" if window[key] else ""
        sides += (f'<div class="side"><h5>{key}{start}</h5>'
                  f'<div class="toks">{"".join(_token(t) for t in window[key])}</div></div>')
    return f'<div class="hunk">{head}<div class="sbs">{sides}</div>{check}</div>'


def _meta(s: Mapping[str, Any]) -> str:
    bits = [f"line {_n(s['line'])}" if s.get("line") else ""]
    if s.get("test"):  # the node id: pasted back, it runs this sample alone
        bits.append(f"<code>pytest {_t(s['test'])}</code>")
    if "tokens" in s:
        bits.append(f"{_n(s['tokens'])} golden ids, {_n(s.get('rebuilt_tokens', 0))} rebuilt")
        bits.append(f"finish {_t(s.get('finish_reason'))}")
        bits.append("text identical (only the split differs)" if s.get("texts_identical") else "TEXT CHANGED")
        bits.append(f"{_n(s.get('hunk_count', 0))} hunk(s)")
    return " \u00b7 ".join(b for b in bits if b)


def _prompt(p: Mapping[str, Any] | None) -> str:
    """A prompt divergence: its class, segment, the two windows and the advice."""
    if not p:
        return ""
    sides = ""
    for key, label in (("golden", "golden prompt_ids"), ("rendered", "rendered")):
        toks = "".join(f'<span class="tok" title="{_a(i)}">{_t(t)}</span>'
                       for i, t in zip(p.get(f"{key}_window", []), p.get(f"{key}_text", [])))
        sides += f'<div class="side"><h5>{label}</h5><div class="toks">{toks}</div></div>'
    return (f'<div class="hunk"><h4>prompt: {_t(p["class"])} in the {_t(p["segment"])}, '
            f'index {_n(p["first_index"])}</h4><div class="sbs">{sides}</div><p class="more">{_t(p.get("advice", ""))}</p></div>')


def _sample(n: int, s: Mapping[str, Any], several: set[str] = frozenset()) -> str:
    classes = s.get("classes", [])
    verdict = s["verdict"]
    hunks = [h for h in s.get("hunks", []) if h.get("window")]
    body = "".join(_hunk(i, h) for i, h in enumerate(hunks, 1))
    rest = s.get("hunk_count", 0) - len(hunks)
    if rest > 0:
        body += f'<p class="more">\u2026 {_n(rest)} more hunk(s) without a window (spans in results.json)</p>'
    advice = "".join(f"<li>{_class_badge(c)} {escape(BY_NAME[c].advice if c in BY_NAME else '')}</li>" for c in classes)
    if not s.get("report"):
        report = ""
    elif verdict == "bad-input":  # the reason is the whole story: shown, not folded away
        report = f'<pre class="reason">{_t(s["report"])}</pre>'
    else:
        report = f"<details><summary>text report</summary><pre>{_t(s['report'])}</pre></details>"
    name = _sample_name(s, several)
    body += _prompt(s.get("prompt"))
    return (
        f'<article class="sample" id="s{n}" data-dataset="{_a(s["dataset"])}" data-verdict="{_a(verdict)}" '
        f'data-classes="{_a(" ".join(classes))}" data-sample="{_a(name)}">'
        f'<h3><span class="v v-{_a(verdict)}" title="{VERDICT_TITLES.get(verdict, "")}">{_t(verdict)}</span> '
        f'{_t(name)} {"".join(_class_badge(c) for c in classes)}</h3>'
        f'<div class="meta">{_meta(s)}</div>{body}'
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
        boxes = "".join(f'<label><input type="checkbox" name="{name}" value="{_a(k)}"> {_t(k)} ({counts[k]:,})</label>'
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
        checks = "".join(f'<details><summary>{_t(c["check"])} failed</summary><pre>{_t(c["message"])}</pre>'
                         f"</details>" for c in d.get("failed_checks", []))
        notes = "".join(f"<li>{_t(p)}</li>" for p in d["problems"])
        if checks or notes:
            items.append(f'<li data-dataset="{_a(d["name"])}"><b>{_t(d["name"])}</b><ul>{notes}</ul>{checks}</li>')
    return f'<ul id="problems">{"".join(items)}</ul>' if items else ""


def _advice(samples: Sequence[Mapping[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for s in samples:
        for c in s.get("classes", []):
            counts[c] = counts.get(c, 0) + 1
    rows = "".join(
        f'<tr id="advice-{r.name}"><td class="l">{_class_badge(r.name)}</td><td>{counts.get(r.name, 0):,}</td>'
        f"<td class=\"l\">{'keeps the text' if r.keeps_text else 'changes or loses text'}</td>"
        f"<td>{escape(r.advice)}</td></tr>"
        for r in RECORDS
    )
    return (f'<table class="adv" id="advice"><thead><tr><th class="l">class</th><th>samples</th><th class="l">text</th>'
            f"<th class=\"l\">what to do</th></tr></thead><tbody>{rows}</tbody></table>")


def _review(doc: Mapping[str, Any]) -> str:
    items = []
    for d in doc["datasets"]:
        new, known = d["counts"]["new"], d["counts"]["known"]
        if new:
            items.append(f'<li><b>{_t(d["name"])}</b>: {_n(new)} new divergence(s). Review them below, then record them with '
                         f'<code class="cmd">{_t(d["snapshot_update"])}</code>, review the snapshot diff '
                         f'(<code>git diff {_t(d.get("path") or d["name"])}/__snapshots__/</code>), commit, and run again without it.</li>')
        elif known:
            items.append(f'<li>{_t(d["name"])}: no new divergences; {_n(known)} known. To re-record: '
                         f'<code class="cmd">{_t(d["snapshot_update"])}</code></li>')
    return f"<ul id=\"review\">{''.join(items) or '<li>no divergences to review</li>'}</ul>"


def _rows_json(doc: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> str:
    """The summarised samples as compact rows for the script, escaped for a script element."""
    names = [d["name"] for d in doc["datasets"]]
    ds_index = {n: i for i, n in enumerate(names)}
    classes = list(CLASSES) + sorted({c for s in rows for c in s.get("classes", []) if c not in CLASSES})
    c_index = {c: i for i, c in enumerate(classes)}
    v_index = {v: i for i, v in enumerate(VERDICTS)}
    several = _several_views(doc)
    packed = [
        [ds_index[s["dataset"]], _sample_name(s, several).split("/", 1)[1], v_index[s["verdict"]], [c_index[c] for c in s.get("classes", [])],
         s.get("hunk_count", 0), s["hunks"][0]["golden"][0] if s.get("hunks") else -1, s.get("tokens", 0), s.get("line") or 0]
        for s in rows
    ]
    text = json.dumps({"datasets": names, "verdicts": list(VERDICTS), "classes": classes, "rows": packed},
                      ensure_ascii=False, separators=(",", ":"))
    text = text.replace("<", "\\u003c").replace("://", ":\\/\\/")
    # a lone surrogate as the text "\\udXXX" (an escaped backslash: JSON.parse gives no surrogate back)
    return re.sub("[\ud800-\udfff]", lambda m: "\\\\u%04x" % ord(m.group()), text)


def _samples(doc: Mapping[str, Any], detailed: Sequence[Mapping[str, Any]], summarised: Sequence[Mapping[str, Any]]) -> str:
    several = _several_views(doc)
    out = (f'<section id="detailed"><h3>In detail: {len(detailed):,} (every new divergence and every sample whose text '
           f'changed; of the others, which only re-split, the first {_n(doc.get("detail_limit", 0))} per dataset)</h3>'
           + "".join(_sample(n, s, several) for n, s in enumerate(detailed)) + "</section>")
    if summarised:  # no table at all when every sample is drawn above
        out += ('<section id="summarised"><h3>Summarised: <span id="summarised-count"></span> shown by the filters, of '
                f'{len(summarised):,} text-preserving samples (filtered), a page at a time</h3><div class="scroll"><table>'
                '<thead><tr><th class="l">sample</th><th class="l">verdict</th><th class="l">classes</th><th>hunks</th>'
                '<th>first index</th><th>golden ids</th><th>line</th></tr></thead><tbody id="summarised-rows"></tbody></table>'
                '</div><button id="more-rows" type="button" hidden>more</button></section>')
    return out


_KEY = ('<p class="key toks">key: <span class="t"><b>tok<w>\u00b7</w>en</b><i>id</i></span> a token (<w>\u00b7</w> space, '
        '<w>\u21b5</w> newline) <span class="t h"><b>in</b><i>hunk</i></span> <span class="t sp"><b>&lt;|im_end|&gt;</b>'
        '<i>special</i></span> <span class="t bad"><b>\\xe2</b><i>bytes</i></span> not UTF-8 alone '
        '<span class="t cx"><b>x</b><i>id</i><u>\u2717 ctx</u></span> decodes differently in context '
        '<span class="t"><b><w class="inv">\\u202e</w></b><i>id</i></span> an invisible character '
        '<span class="t"><b><em class="lk" title="U+FF5C">|</em></b><i>id</i></span> a look-alike for a character '
        'fonts lack (hover: which)</p>')


def render_report(doc: Mapping[str, Any]) -> str:
    """The whole page for a results document."""
    samples = doc["samples"]
    detailed = [s for s in samples if s.get("detail") or s["verdict"] in ("new", "bad-input")]
    summarised = [s for s in samples if not (s.get("detail") or s["verdict"] in ("new", "bad-input"))]
    sources = f" \u00b7 merged from {len(doc['sources'])} files" if doc.get("sources") else ""
    body = [
        f'<h1>tokfidelity divergence report</h1><p class="meta">created {_t(doc.get("created", ""))}{sources} \u00b7 '
        f'<code>{_t(" ".join(["pytest", *doc["command"]]))}</code> \u00b7 code '
        f'{_t(str(doc.get("code", {}).get("fingerprint", ""))[:16])}</p>',
        _verdict(doc),
        "<h2>Datasets</h2>", _summary_table(doc["datasets"]), _views_table(doc["datasets"]), _problems(doc["datasets"]),
        "<h2>Divergences</h2><div class=\"charts\"><div><h4>hunks by class and verdict (bar length: log scale)</h4>",
        class_chart(class_hunks(samples), VERDICTS),
        "</div><div><h4>where in the output hunks start</h4>", position_chart(position_bins(samples)), "</div></div>",
        "<h2>Reviewing</h2>", _review(doc),
        "<h2>What each class means and what to do</h2>", _advice(samples),
        f"<h2>Samples ({len(samples):,} not exact)</h2>", _KEY, _filters(doc, samples), _samples(doc, detailed, summarised),
    ]
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        f'<meta name="viewport" content="width=device-width,initial-scale=1"><title>tokfidelity report</title>'
        f"<style>{CSS}</style></head><body>{_no_url(''.join(body))}"
        f'<script type="application/json" id="tf-data">{_rows_json(doc, summarised)}</script>'
        f"<script>{JS}</script></body></html>\n"
    )


def render_page(doc: Mapping[str, Any]) -> bytes:
    """report.html's bytes (UTF-8; a lone surrogate left in the data is written as ``\\udXXX``)."""
    page = render_report(doc)
    try:
        return page.encode("utf-8")
    except UnicodeEncodeError:  # none should be left (shown, _a and _rows_json write them as text)
        return re.sub("[\ud800-\udfff]", _code_points, page).encode("utf-8")


def write_report(doc: Mapping[str, Any], out_dir: str | os.PathLike) -> Path:
    """DIR/report.html alone (``results.write_outputs`` writes it with its results.json)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "report.html"
    page = render_page(doc)
    with atomic_path(path) as tmp:
        tmp.write_bytes(page)
    return path
