"""The report's inline CSS and JavaScript (no network: the page's CSP allows nothing else).

The script reads the filter state from the URL (``#filter:verdict=new,known;class=whitespace;
dataset=B3_magicoder``, or the same keys as a query string ``?verdict=new&class=...``), shows or
hides the detailed samples, renders the summarised list a page at a time from the embedded data,
and writes the state back to the URL when a filter changes, so a filtered view can be linked.
Text it writes from the data goes through ``textContent``, with invisible characters (bidi
controls, zero-width characters) written as ``\\u202e``, as the page's markup shows them.

Sample cards are drawn when they scroll into view (``content-visibility:auto``: 40,000 samples
load in seconds), except the first 12 that the filters show, drawn at once, so that the first
screens and a headless ``--screenshot`` capture show them (lazily drawn cards came out blank).

The layout holds down to a phone's width (420 px): below 760 px the side-by-side token windows
stack, wide tables scroll inside their own box (the dataset table keeps its gate column second,
so it shows without scrolling), and long words and commands wrap.
"""

CSS = """
:root{--bg:#fff;--fg:#1d1f21;--mute:#6a6f75;--line:#d8dde3;--new:#d62728;--known:#b38300;--policy:#5f7f9f;--bad:#555}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);background:var(--bg);margin:0 auto;max-width:1500px;padding:16px 24px}
h1,h3,h4,p,li,code,summary,.meta,legend{overflow-wrap:anywhere}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
h3{font-size:14px;margin:0 0 6px}h4{font-size:13px;margin:10px 0 4px;font-weight:600}
.meta{color:var(--mute);font-size:12px}
.verdict{border:2px solid;border-radius:5px;padding:6px 12px;margin:10px 0 6px}.verdict p{margin:2px 0}
.verdict .head{font-size:17px;font-weight:700}.verdict ul{margin:4px 0;padding-left:20px}
.verdict.failed{background:#fdecea;border-color:var(--new)}.verdict.failed .head{color:#a51d1e}
.verdict.passed{background:#e8f5e9;border-color:#4a9a55}.verdict.passed .head{color:#1b6f2a}
.verdict.unchanged{background:#f4f6f8;border-color:#9aa5b1}
.partial{background:#fff3cd;border:1px solid #e0c060;padding:6px 12px;border-radius:4px;font-weight:600;margin:6px 0}
.complete{border:1px solid var(--line);padding:6px 12px;border-radius:4px;margin:6px 0;color:var(--mute)}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse}th,td{padding:3px 8px;border-bottom:1px solid var(--line);text-align:right;vertical-align:top}
th{background:#f4f6f8;font-weight:600}td.l,th.l{text-align:left}
.gate-open{color:#1b7f2a;font-weight:600}.gate-closed{color:var(--new);font-weight:600}.gate-unchanged,.gate-mixed{color:var(--mute)}
.charts{display:flex;flex-wrap:wrap;gap:28px}.charts>div{min-width:0;max-width:100%}.chart text{font-size:11px;fill:#333}
.chart{max-width:100%;height:auto}
.v{display:inline-block;padding:0 6px;border-radius:3px;color:#fff;font-size:12px;font-weight:600}
.v-new{background:var(--new)}.v-known{background:var(--known)}.v-policy{background:var(--policy)}.v-bad-input{background:var(--bad)}
.c{display:inline-block;padding:0 5px;border-radius:3px;font-size:12px;border:1px solid;margin-right:3px}
code,pre,.toks{font-family:ui-monospace,"SFMono-Regular",Menlo,Consolas,monospace}
pre{background:#f6f8fa;padding:8px;overflow:auto;font-size:12px;max-height:320px}
code.cmd{background:#f0f3f6;padding:2px 6px;border-radius:3px;user-select:all}
#filters{position:sticky;top:0;background:#fffffff2;border-bottom:1px solid var(--line);padding:6px 0;z-index:2}
#filters fieldset{display:inline-block;border:1px solid var(--line);margin:2px 6px 2px 0;padding:2px 8px}
#filters label{margin-right:8px;white-space:nowrap;font-size:12px}
#shown{font-weight:600;margin-left:6px}
article.sample{border:1px solid var(--line);border-radius:5px;padding:8px 12px;margin:10px 0;
  content-visibility:auto;contain-intrinsic-size:auto 260px}
article.sample.eager{content-visibility:visible}
article.sample[hidden],tr[hidden]{display:none}
.sbs{display:grid;grid-template-columns:1fr 1fr;gap:10px}
.side{border-left:3px solid #cfd6dd;padding-left:6px;min-width:0}.side h5{margin:0 0 2px;font-size:11px;color:var(--mute);font-weight:600}
.toks{display:flex;flex-wrap:wrap;gap:2px;font-size:12px}
.t{display:inline-flex;flex-direction:column;border:1px solid #c9d0d8;border-radius:3px;padding:1px 3px;background:#fafbfc;min-width:14px;white-space:pre}
.t i{font-style:normal;font-size:9px;color:var(--mute)}
.t.h{background:#ffe9e9;border-color:#e08080}.t.sp{background:#ece6ff;border-color:#7d5fd0;font-weight:700}
.t.h.sp{background:#f6dcef;border-color:#d62728;box-shadow:0 0 0 1px #d62728}
.t.bad b{color:#b00;text-decoration:underline wavy #b00}.t.cx{outline:2px dashed #d08000}
.t u{text-decoration:none;font-size:10px;color:#a05a00}
w{color:#9aa5b1}w.inv{color:#b00;font-size:10px;border:1px dotted #b00;border-radius:2px}
em.lk{font-style:normal;color:inherit;text-decoration:underline dotted #7d5fd0}
pre.reason{background:#f4f4f4;border-left:3px solid var(--bad);white-space:pre-wrap;overflow-wrap:anywhere}
.adv td{text-align:left;max-width:900px}
.more{color:var(--mute);font-size:12px}
button{font:inherit;padding:2px 10px}
.key .t{font-size:11px}
@media (max-width:760px){
  body{padding:10px 10px}
  .sbs{grid-template-columns:1fr}
  .adv thead{display:none}.adv tr{display:block;border-bottom:1px solid var(--line);padding:4px 0}
  .adv td{display:inline-block;border:0;max-width:100%}.adv td:last-child{display:block}
  #filters{position:static}
  #summary .name{position:sticky;left:0;background:var(--bg);max-width:9em}
}
"""

JS = r"""
(function () {
  var data = JSON.parse(document.getElementById('tf-data').textContent);
  var KEYS = ['verdict', 'class', 'dataset'];
  var state = {verdict: new Set(), class: new Set(), dataset: new Set()};
  var PAGE = 200, limit = PAGE, EAGER = 12;
  var INVISIBLE = /[\u00ad\u034f\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\ufff9-\ufffb]|\udb40[\udc00-\udc7f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
  function shown(s) {  // invisible characters as \\u202e, as the page's markup writes them
    return String(s).replace(INVISIBLE, function (c) {
      return '\\u' + c.codePointAt(0).toString(16).padStart(4, '0');
    });
  }
  function fromString(s) {
    KEYS.forEach(function (k) { state[k] = new Set(); });
    s.split(/[;&]/).forEach(function (part) {
      var kv = part.split('='), k = decodeURIComponent(kv[0] || '');
      if (state[k] && kv[1]) decodeURIComponent(kv[1]).split(',').forEach(function (v) { if (v) state[k].add(v); });
    });
  }
  function toString() {
    return KEYS.filter(function (k) { return state[k].size; })
      .map(function (k) { return k + '=' + Array.from(state[k]).join(','); }).join(';');
  }
  function readUrl() {
    var h = decodeURIComponent(location.hash.slice(1));
    if (h.indexOf('filter:') === 0) fromString(h.slice(7));
    else if (!h && location.search.length > 1) fromString(location.search.slice(1));
  }
  function match(ds, verdict, classes) {
    if (state.dataset.size && !state.dataset.has(ds)) return false;
    if (state.verdict.size && !state.verdict.has(verdict)) return false;
    if (state.class.size && !classes.some(function (c) { return state.class.has(c); })) return false;
    return true;
  }
  function renderRows(rows) {
    var body = document.getElementById('summarised-rows'), frag = document.createDocumentFragment();
    if (!body) return;  // no summarised samples: no table
    body.textContent = '';
    rows.slice(0, limit).forEach(function (r) {
      var tr = document.createElement('tr');
      tr.className = 'srow';
      tr.dataset.dataset = data.datasets[r[0]];
      tr.dataset.verdict = data.verdicts[r[2]];
      tr.dataset.id = r[1];
      var cells = [data.datasets[r[0]] + '/' + r[1], data.verdicts[r[2]],
        r[3].map(function (c) { return data.classes[c]; }).join(', '), r[4], r[5], r[6], r[7]];
      cells.forEach(function (text, i) {
        var td = document.createElement('td');
        if (i < 3) td.className = 'l';
        td.textContent = typeof text === 'number' ? text.toLocaleString('en') : shown(text);
        tr.appendChild(td);
      });
      frag.appendChild(tr);
    });
    body.appendChild(frag);
    var more = document.getElementById('more-rows');
    more.hidden = rows.length <= limit;
    more.textContent = 'show ' + Math.min(PAGE, rows.length - limit).toLocaleString('en') + ' more of ' +
      (rows.length - limit).toLocaleString('en');
    document.getElementById('summarised-count').textContent = rows.length.toLocaleString('en');
  }
  function apply() {
    document.querySelectorAll('#filters input').forEach(function (box) {
      var on = state[box.name].has(box.value);
      box.checked = on;
      if (on) box.setAttribute('checked', ''); else box.removeAttribute('checked');  // seen in a DOM dump too
    });
    var shown = 0;
    document.querySelectorAll('article.sample').forEach(function (a) {
      var ok = match(a.dataset.dataset, a.dataset.verdict, a.dataset.classes.split(' '));
      a.hidden = !ok;
      a.classList.toggle('eager', ok && shown < EAGER);  // drawn at once: the first screens, and screenshots
      if (ok) shown++;
    });
    var rows = data.rows.filter(function (r) {
      return match(data.datasets[r[0]], data.verdicts[r[2]], r[3].map(function (c) { return data.classes[c]; }));
    });
    renderRows(rows);
    var total = document.querySelectorAll('article.sample').length + data.rows.length;
    document.getElementById('shown').textContent = 'showing ' + (shown + rows.length).toLocaleString('en') + ' of ' +
      total.toLocaleString('en') + ' samples (' + shown.toLocaleString('en') + ' in detail)';
    document.body.dataset.shown = shown + rows.length;
    document.body.dataset.shownDetailed = shown;
    document.body.dataset.filter = toString();
  }
  document.getElementById('filters').addEventListener('change', function (e) {
    var box = e.target;
    if (!box.name || !state[box.name]) return;
    if (box.checked) state[box.name].add(box.value); else state[box.name].delete(box.value);
    limit = PAGE;
    history.replaceState(null, '', '#filter:' + toString());
    apply();
  });
  document.getElementById('clear-filters').addEventListener('click', function () {
    KEYS.forEach(function (k) { state[k] = new Set(); });
    history.replaceState(null, '', '#filter:');
    apply();
  });
  var more = document.getElementById('more-rows');
  if (more) more.addEventListener('click', function () { limit += PAGE; apply(); });
  window.addEventListener('hashchange', function () { readUrl(); limit = PAGE; apply(); });
  readUrl();
  apply();
  document.body.dataset.readyMs = Math.round(performance.now());
})();
"""
