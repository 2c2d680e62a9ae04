"""The two chat-template engines side by side: CPU per render and the import each needs.

For every shipped template-rendered dataset, every conversation (tools and variables prepared once per
set, as PromptJudge does) is rendered by MiniJinja (``MiniJinjaTemplate``) and by transformers' renderer
(``TemplateRenderer``), in interleaved rounds, warm; the figure is CPU per render (median of the rounds).
The texts are compared too (tests/test_minijinja_renderer.py is the proof; this only refuses to time
two engines that disagree). Then each engine's import in a fresh process, CPU seconds (median of runs).

    .venv/bin/python bench/bench_renderers.py [--rounds 5] [--imports 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TOKFIDELITY_TOKENIZERS", str(ROOT.parent / "shared" / "tokenizers"))

from pipeline.core.minijinja_renderer import MiniJinjaTemplate  # noqa: E402
from pipeline.core.profiles import bind_profile  # noqa: E402
from pipeline.core.render import chat_template, prepare, template_inputs  # noqa: E402
from pipeline.core.template_adapter import TemplateRenderer  # noqa: E402
from pipeline.core.tokenizer import load_tokenizer  # noqa: E402
from pipeline.core.tokenizer.resolve import tokenizer_location  # noqa: E402


def cases(dataset: Path) -> tuple[str, list]:
    manifest = json.loads((dataset / "manifest.json").read_text(encoding="utf-8"))
    tok = load_tokenizer(tokenizer_location(manifest["tokenizer"]))
    profile = bind_profile(manifest["profile"], tok)
    prepared: dict = {}
    out = []
    for line in (dataset / "samples.jsonl").read_text(encoding="utf-8").splitlines():
        sample = json.loads(line)
        if not sample.get("messages"):
            continue
        key = json.dumps([sample.get("tools"), sample.get("chat_template_kwargs")])
        if key not in prepared:
            tools, kwargs = template_inputs(sample.get("tools"), profile, sample.get("chat_template_kwargs"))
            prepared[key] = (prepare(tools, kwargs, tok), chat_template(tok, tools)[0])
        inputs, template = prepared[key]
        out.append(([{k: v for k, v in m.items() if v is not None} for m in sample["messages"]], inputs, template))
    return manifest["profile"], out


def cpu_per_render(render, items) -> float:
    start = time.process_time()
    for conversation, prepared, template in items:
        render(template)(conversation, prepared)
    return (time.process_time() - start) / len(items)


def import_cpu(code: str, runs: int) -> float:
    probe = f"import resource, time; {code}; r = resource.getrusage(resource.RUSAGE_SELF); print(r.ru_utime + r.ru_stime)"
    base = "import resource; r = resource.getrusage(resource.RUSAGE_SELF); print(r.ru_utime + r.ru_stime)"
    got = []
    for _ in range(runs):
        with_it = float(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout)
        bare = float(subprocess.run([sys.executable, "-c", base], capture_output=True, text=True, check=True).stdout)
        got.append(with_it - bare)
    return statistics.median(got)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--imports", type=int, default=5)
    args = ap.parse_args()
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {os.cpu_count()} CPUs, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} at start")
    for manifest in sorted((ROOT / "golden").glob("*/manifest.json")):
        if json.loads(manifest.read_text(encoding="utf-8"))["profile"] == "gpt-oss":
            continue
        profile, items = cases(manifest.parent)
        minis = {t: MiniJinjaTemplate(t) for _, _, t in items}  # compiled once, as ChatRenderer does
        refs = {t: TemplateRenderer(t) for _, _, t in items}
        mini = lambda t: (lambda c, p: minis[t](c, p.tools, p.variables, True))  # noqa: E731
        ref = lambda t: (lambda c, p: refs[t](c, p, True))  # noqa: E731
        for c, p, t in items:
            if mini(t)(c, p) != ref(t)(c, p):
                sys.exit(f"{manifest.parent.name}: the engines disagree; run tests/test_minijinja_renderer.py")
        ours, theirs = [], []
        for _ in range(args.rounds):
            ours.append(cpu_per_render(mini, items))
            theirs.append(cpu_per_render(ref, items))
        m, r = statistics.median(ours), statistics.median(theirs)
        print(f"{manifest.parent.name} ({profile}, {len(items)} conversations): MiniJinja {1000 * m:.3f} ms, "
              f"transformers {1000 * r:.3f} ms CPU a render, warm (medians of {args.rounds} interleaved rounds): {m / r:.2f}x")
    mj = import_cpu("import minijinja", args.imports)
    tf = import_cpu("from transformers.utils import chat_template_utils", args.imports)
    print(f"import, CPU in a fresh process (median of {args.imports}): minijinja {mj:.3f} s, transformers' renderer {tf:.3f} s")
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
