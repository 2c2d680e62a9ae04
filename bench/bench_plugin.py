"""Benchmark of a whole ``pytest --tokfidelity-dataset`` run against raw encode, on a synthetic dataset of one
family (``--family``: Kimi K2.5, the default; Qwen3; DeepSeek-V3; Llama 3.1; Qwen3-Coder; DeepSeek-V3.1;
DeepSeek-V3.2), with the tokenizer (and chat template) of that family's shipped golden dataset.

Goals (issues 14 and 36; ``lone_goal``): on 2 cores, with prompt verdicts on, the whole suite of Kimi K2.5 takes
at most 0.9x the raw single-thread encode time of the same texts (measured here, in this script) from 6,000
samples of about 3,500 tokens up, and at most 1.5x below that (2,000 samples); Qwen3 and DeepSeek-V3 at most
0.33x; and at 40,000 samples (138 M tokens, the seed's run) the controlling process stays under 2 GB.

Texts are prose and code taken from the installed packages' docs and sources (reasoning =
prose, content = code), encoded with the real Kimi tokenizer; a share of samples carries one
harmless re-split (accepted by the manifest's policy), as real model output does.

Every sample has a prompt of realistic length (issue 23): a user turn of prose, a system turn from a
small pool in half of them, and in 60% a tool set drawn from B1's real tool sets; its prompt_ids are what
the family's own prompt renderer gives (Kimi K2.5: tools declared in TypeScript, as its tokenizer does), and the
suite renders and checks each one. The raw baseline encodes the prompt texts too (special tokens allowed,
as the engine), and ``--modes lone-prompts-off`` runs the suite without its prompt verdicts.
``--modes lone-diverging`` runs it on a copy whose every sample has a wrong stop id (every sample fails
with its diagnosis; pytest's failure summary included), for the cost of a run where a whole dataset fails.

Qwen3 samples are ``<think>`` reasoning ``</think>`` content ``<|im_end|>``; the other families' are content
(prose, then code) and their stop token (DeepSeek-V3.1: generated with thinking off). Prompts are rendered by the
family's own prompt renderer (DeepSeek-V3.2: its encoder; DeepSeek-V3.1: the chat template its dataset's manifest
names).

The baseline is the raw tokenizer on one thread: for Kimi tiktoken's ``encode_ordinary``, for a
``tokenizer.json`` family plain ``tokenizers`` encode (the encoder a user would otherwise run), of every text, best of two
passes (wall and CPU seconds; ``--raw-passes 1`` for one, where a pass takes many minutes). With ``--repeat N`` (N >= 2) the runs are interleaved instead: N rounds
of one raw pass, then each pytest configuration once, and each run is compared with its own round's
raw pass (the median ratio decides): a shared machine's speed drifts by 10-20% within minutes, and a
baseline measured minutes before a run compares two different machines. Each pytest run is a whole process (start-up, collection, tokenizer
load, judging, summary, gate record), run through a small wrapper that reports the controlling
process's own CPU seconds and peak RSS, and its children's (judging processes, xdist workers).
On a shared, loaded machine wall times swing; CPU seconds do not: the controlling process's CPU
is the floor of a lone run's wall time, and (all CPU) / cores the floor of any run's.

    .venv/bin/python bench/bench_plugin.py [--family qwen3] [--samples 6000] [--tokens 3500] [--modes lone,n2] [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TOKFIDELITY_TOKENIZERS", str(ROOT.parent / "shared" / "tokenizers"))

from pipeline.core.golden import write_dataset  # noqa: E402
from pipeline.core.profiles import bind_profile  # noqa: E402
from pipeline.core.tokenizer import load_tokenizer  # noqa: E402


def text_pools(limit_chars: int = 8_000_000) -> tuple[str, str]:
    """(prose, code) from the installed packages: docs and licences, and Python sources."""
    site = Path(sysconfig.get_paths()["purelib"])
    prose, code = [], []
    n_prose = n_code = 0
    for path in sorted(site.rglob("*")):
        if n_prose > limit_chars and n_code > limit_chars:
            break
        if not path.is_file() or path.stat().st_size > 400_000:
            continue
        suffix = path.suffix
        if suffix in (".md", ".rst", ".txt") or path.name in ("METADATA", "LICENSE"):
            if n_prose <= limit_chars:
                t = path.read_text(errors="ignore")
                prose.append(t)
                n_prose += len(t)
        elif suffix == ".py" and n_code <= limit_chars:
            t = path.read_text(errors="ignore")
            code.append(t)
            n_code += len(t)
    return "\n".join(prose), "\n".join(code)


# family (its profile's name) -> the shipped golden dataset whose tokenizer and chat template it uses
FAMILIES = {"kimi-k2.5": "B1_glaive", "qwen3": "Q1_glaive", "deepseek-v3": "D1_glaive", "llama3": "L1_glaive",
            "qwen3-coder": "C1_glaive", "deepseek-v3.1": "D31_glaive", "deepseek-v3.2": "D32_glaive"}


def family_manifest(family: str) -> dict:
    """The synthetic dataset's manifest: the family's profile, with the tokenizer and the chat template of its
    shipped dataset."""
    shipped = json.loads((ROOT / "golden" / FAMILIES[family] / "manifest.json").read_text(encoding="utf-8"))
    assert shipped["profile"] == family, (FAMILIES[family], shipped["profile"])
    return {"name": "BENCH", "profile": family, "tokenizer": shipped["tokenizer"], "source": "bench/bench_plugin.py",
            **({"chat_template": shipped["chat_template"]} if "chat_template" in shipped else {}),
            "accept": {"non-canonical-split": 0.001}}


def bound(folder: Path):
    """(tokenizer, profile) of a dataset, with the chat template its manifest names."""
    from pipeline.core.golden import load_manifest
    from pipeline.core.prompt_renderers import use_manifest_template

    manifest = load_manifest(folder)
    tok = load_tokenizer(manifest.tokenizer)
    profile = bind_profile(manifest.profile, tok)
    use_manifest_template(manifest, profile, tok)
    return tok, profile


def make_dataset(folder: Path, manifest: dict, n: int, tokens: int, split_share: float, seed: int = 0):
    """Write a dataset of n samples, streamed (40,000 samples of ids would not fit in memory as lists);
    return (tokenizer, tokens written, the texts as a re-readable sequence)."""
    family = manifest["profile"]
    write_dataset(folder, manifest, [])
    tok, profile = bound(folder)
    prose, code = text_pools()
    rng = random.Random(seed)
    spans = []  # (prose start, prose end, code start, code end): the texts, without holding them
    prompts: list[str] = []  # each sample's rendered prompt text
    conversation = Conversations(profile, tok, prose, rng)
    n_tokens = 0
    with open(folder / "samples.jsonl", "w", encoding="utf-8") as f:
        for i in range(n):
            chars = int(tokens * 4.0 * rng.uniform(0.7, 1.3))
            r_len = int(chars * 0.6)
            r0 = rng.randrange(0, len(prose) - r_len)
            c0 = rng.randrange(0, len(code) - (chars - r_len))
            spans.append((r0, r0 + r_len, c0, c0 + chars - r_len))
            parts = [tok.encode_ordinary(t) for t in _texts(prose, code, spans[-1], family)]
            if rng.random() < split_share:
                parts[-1] = _one_resplit(tok, parts[-1])
            ids = _layout(parts, profile)
            n_tokens += len(ids)
            messages, tools, prompt_ids = conversation()
            prompts.append(tok.decode(prompt_ids))
            sample = {"id": f"b{i:06d}", "messages": messages, **({"tools": tools} if tools else {}),
                      "prompt_ids": prompt_ids, "output_ids": ids, "finish_reason": "stop"}
            f.write(json.dumps(sample, ensure_ascii=False, separators=(",", ":")) + "\n")
    return tok, n_tokens, Texts(prose, code, spans, family, prompts)


SYSTEM_TURNS = (
    "You are a helpful assistant.",
    "You are a careful software engineer. Answer with working code and a short explanation.",
    "You are Kimi, an AI assistant created by Moonshot AI. Be concise; use tools when they help.",
    "You answer questions about the user's calendar, travel and finances. Never invent data: call a tool.",
    "Reply in the language of the question. Prefer bullet points for lists and tables for comparisons.",
)


class Conversations:
    """Realistic prompts: a prose user turn (100-1,500 characters), a system turn from SYSTEM_TURNS in
    half of them, and one of B1's real tool sets in 60%; rendered by the family's own prompt renderer."""

    def __init__(self, profile, tok, prose: str, rng: random.Random):
        from pipeline.core.prompt_renderers import render_prompt

        self.render = lambda messages, tools: render_prompt(messages, tools, profile, tok)
        self.prose, self.rng = prose, rng
        with open(ROOT / "golden" / "B1_glaive" / "samples.jsonl", encoding="utf-8") as f:
            sets = {json.dumps(s["tools"]): s["tools"] for s in map(json.loads, f) if s.get("tools")}
        self.tool_sets = list(sets.values())

    def __call__(self) -> tuple[list[dict], list | None, list[int]]:
        rng = self.rng
        n = int(rng.uniform(100, 1500))
        start = rng.randrange(0, len(self.prose) - n)
        text = self.prose[start : start + n].replace("<|", "< |").replace("<think>", "").replace("</think>", "")
        messages = [{"role": "user", "content": text}]
        if rng.random() < 0.5:
            messages.insert(0, {"role": "system", "content": rng.choice(SYSTEM_TURNS)})
        tools = rng.choice(self.tool_sets) if rng.random() < 0.6 else None
        return messages, tools, self.render(messages, tools)


def _one_resplit(tok, ids: list[int]) -> list[int]:
    """One harmless re-split: a multi-byte ASCII token of the second half written as two tokens."""
    for j in range(len(ids) // 2, len(ids)):
        b = tok.token_bytes(ids[j])
        if len(b) >= 4 and b.isascii():
            halves = tok.encode_ordinary(b[:2].decode()) + tok.encode_ordinary(b[2:].decode())
            if len(halves) == 2:
                return ids[:j] + halves + ids[j + 1 :]
    return ids


def _layout(parts: list[list[int]], profile) -> list[int]:
    """The output ids of a sample from its encoded texts, as the family writes them."""
    if profile.name == "kimi-k2.5":  # the output starts inside the reasoning
        return parts[0] + [profile.ids["think_end"]] + parts[1] + [profile.stop_id]
    if profile.name == "qwen3":
        return [profile.ids["think_begin"]] + parts[0] + [profile.ids["think_end"]] + parts[1] + [profile.stop_id]
    return parts[0] + [profile.stop_id]


def _texts(prose: str, code: str, span: tuple[int, int, int, int], family: str = "kimi-k2.5") -> list[str]:
    """The texts of one sample that are encoded as ordinary text, marker-like text defused."""
    r0, r1, c0, c1 = span
    if family == "kimi-k2.5":
        return [prose[r0:r1].replace("</think>", ""), code[c0:c1].replace("<|", "< |")]
    reasoning, content = prose[r0:r1].replace("<", "< ").strip(), code[c0:c1].replace("<", "< ").strip()
    if family == "qwen3":
        return ["\n" + reasoning + "\n", "\n\n" + content]
    return [reasoning + "\n\n" + content]


@dataclass
class Texts:
    """Every sample's texts, cut from the pools again on each pass."""

    prose: str
    code: str
    spans: list
    family: str = "kimi-k2.5"
    prompts: list = field(default_factory=list)  # rendered prompt texts (encoded with special tokens)

    def __iter__(self):
        for span in self.spans:
            yield from _texts(self.prose, self.code, span, self.family)


def raw_encoder(tok):
    """The baseline's encoder: tiktoken's encode_ordinary for Kimi, plain tokenizers encode for a tokenizer.json."""
    backend = getattr(tok, "backend", None)
    if backend is None:
        return tok.encode_ordinary
    return lambda text: backend.encode(text, add_special_tokens=False).ids


def raw_encode_seconds(tok, texts: Texts, passes: int = 2) -> tuple[float, float]:
    """The goal's baseline: the raw encoder on every output text, and on every prompt text with special
    tokens allowed (as the engine), on one thread, best of ``passes`` (wall, CPU). Texts are cut from the
    pools in blocks outside the timed part."""
    encode = raw_encoder(tok)
    backend = getattr(tok, "backend", None)
    encode_prompt = tok.encode if backend is None else (lambda text: backend.encode(text, add_special_tokens=False).ids)
    best, best_cpu = float("inf"), float("inf")
    for _ in range(passes):
        wall = cpu = 0.0
        for start in range(0, len(texts.spans), 1000):
            block = list(Texts(texts.prose, texts.code, texts.spans[start : start + 1000], texts.family))
            prompts = texts.prompts[start : start + 1000]
            t, c = time.perf_counter(), time.process_time()
            for text in block:
                encode(text)
            for text in prompts:
                encode_prompt(text)
            wall, cpu = wall + time.perf_counter() - t, cpu + time.process_time() - c
        best, best_cpu = min(best, wall), min(best_cpu, cpu)
    return best, best_cpu


# Runs pytest in this process and writes what it cost the controlling process itself, and its children.
_WRAPPER = """
import json, resource, sys, time
import pytest
t = time.perf_counter()
rc = pytest.main(sys.argv[2:])
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "w") as f:
    json.dump({"rc": int(rc), "wall": time.perf_counter() - t, "cpu": me.ru_utime + me.ru_stime,
               "rss_mb": me.ru_maxrss / 1024, "children_cpu": kids.ru_utime + kids.ru_stime}, f)
sys.exit(int(rc))
"""


@dataclass
class Run:
    wall: float  # the whole process, start-up included
    cpu: float  # the controlling process alone
    children_cpu: float  # judging processes, xdist workers
    rss_mb: float  # the controlling process's peak
    out: str


def pytest_run(golden: Path, state: Path, *extra: str, fails: bool = False) -> Run:
    """One whole pytest run, measured (``fails``: a run expected to fail its tests, exit status 1)."""
    stats = state.parent / f"{state.name}.stats.json"
    cmd = [sys.executable, "-c", _WRAPPER, str(stats), "-q", "-p", "no:cacheprovider", "--tokfidelity-dataset=BENCH",
           f"--tokfidelity-golden-dir={golden}", f"--tokfidelity-state-dir={state}", *extra]
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=golden.parent, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode != (1 if fails else 0):
        sys.exit(f"pytest failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    got = json.loads(stats.read_text())
    return Run(wall, got["cpu"], got["children_cpu"], got["rss_mb"], proc.stdout)


def describe(runs: list[Run], raw: float, raw_cpu: float) -> str:
    med = statistics.median(r.wall for r in runs)
    cpu = statistics.median(r.cpu for r in runs)
    kids = statistics.median(r.children_cpu for r in runs)
    return (f"median {med:.2f} s = {med / raw:.2f}x raw encode (runs {', '.join(f'{r.wall:.2f}' for r in runs)} s); "
            f"CPU: controlling process {cpu:.2f} s = {cpu / raw_cpu:.2f}x raw encode CPU, children {kids:.2f} s, "
            f"all {cpu + kids:.2f} s = {(cpu + kids) / raw_cpu:.2f}x; controlling process peak RSS "
            f"{max(r.rss_mb for r in runs):,.0f} MB")


def judge_breakdown(dataset: Path, family: str = "kimi-k2.5", n: int = 500) -> str:
    """Where a judge's CPU goes, per sample, over the first n samples, in this process: reading and
    parsing the line, the API view (decoding the golden ids), reconstruction (encoding), the rest."""
    from pipeline.core.fidelity import Judge
    from pipeline.core.reconstruct import reconstruct_output_ids
    from pipeline.core.views import api_view
    from pytest_tokfidelity.index import SampleIndex

    tok, profile = bound(dataset)
    judge = Judge(profile, tok, "sglang", {"non-canonical-split": 0.001})
    index = SampleIndex(dataset / "samples.jsonl")
    n = min(n, len(index))
    fd = os.open(index.path, os.O_RDONLY)
    try:
        c = time.process_time()
        samples = [index.read(p, fd) for p in range(n)]
        read = time.process_time() - c
    finally:
        os.close(fd)
    c = time.process_time()
    views = [api_view(s.output_ids, s.finish_reason, profile, tok, "sglang") for s in samples]
    view = time.process_time() - c
    c = time.process_time()
    for v in views:
        reconstruct_output_ids(v, profile, tok)
    rebuild = time.process_time() - c
    c = time.process_time()
    for s in samples:
        judge.prompts(s)
    prompt = time.process_time() - c
    c = time.process_time()
    for s in samples:
        judge(s)
    whole = time.process_time() - c
    ms = lambda x: 1000 * x / n  # noqa: E731
    return (f"judging, CPU per sample over {n} samples in this process: read and parse {ms(read):.2f} ms, API view (decode) "
            f"{ms(view):.2f} ms, reconstruction (encode) {ms(rebuild):.2f} ms, prompt verdict (render, encode, compare; "
            f"first pass) {ms(prompt):.2f} ms, the rest of the verdict {ms(whole - view - rebuild - prompt):.2f} ms")


_EMPTY_FUNCTIONS = """
import os, pytest
N = int(os.environ["BENCH_EMPTY_TESTS"])
@pytest.mark.parametrize("case", [(0, i) for i in range(N)], ids=[f"BENCH/b{i:06d}" for i in range(N)])
def test_fidelity(case, request):
    pass
"""

# The fidelity suite's samples are pytest Items that take no fixtures (pytest_tokfidelity/collection.py).
_EMPTY_ITEMS = """
import os, pytest
N = int(os.environ["BENCH_EMPTY_TESTS"])
class Sample(pytest.Item):
    def runtest(self):
        pass
class Suite(pytest.File):
    def collect(self):
        return [Sample.from_parent(self, name=f"test_fidelity[BENCH/b{i:06d}]") for i in range(N)]
def pytest_collect_file(parent, file_path):
    if file_path.name == "suite.samples":
        return Suite.from_parent(parent, path=file_path)
"""


def pytest_per_test(tmp: Path, n: int, extra: list[str]) -> str:
    """pytest's own cost per test: n empty tests against n // 10, controlling process CPU; as
    parametrized functions taking ``(case, request)`` and as bare items (what the suite's samples are)."""
    out = []
    for kind, files, target in (
        ("parametrized functions", {"test_empty.py": _EMPTY_FUNCTIONS}, "test_empty.py"),
        ("bare items", {"conftest.py": _EMPTY_ITEMS, "suite.samples": ""}, "suite.samples"),
    ):
        folder = tmp / f"empty-{kind.split()[0]}"
        folder.mkdir(exist_ok=True)
        for name, text in files.items():
            (folder / name).write_text(text)
        cpu = {}
        for size in (n // 10, n):
            stats = folder / f"stats-{size}.json"
            env = {**os.environ, "BENCH_EMPTY_TESTS": str(size)}
            subprocess.run([sys.executable, "-c", _WRAPPER, str(stats), "-q", "-p", "no:cacheprovider", *extra, target],
                           cwd=folder, env=env, capture_output=True, check=True)
            cpu[size] = json.loads(stats.read_text())["cpu"]
        per = (cpu[n] - cpu[n // 10]) / (n - n // 10)
        out.append(f"{kind} {1000 * per:.2f} ms ({cpu[n]:.2f} s in all)")
    return f"pytest's own cost per test, {n:,} empty tests, CPU of the controlling process: " + "; ".join(out)


NODE_DATASET, NODE_ID = "B1_glaive", "b1-0007"  # a shipped Kimi K2.5 dataset, one sample a reviewer pastes back


def node_id_runs(tmp: Path, rounds: int) -> str:
    """One pasted node id of a shipped dataset (``golden/B1_glaive/samples.jsonl::b1-0007``, prompt verdict on) in a
    project folder of its own, warm cache (one run first, not counted), wall time end to end of the whole
    process; interleaved with a bare ``pytest --version`` in the same folder, and with the suite's state cache and
    the tokenizer-state cache as a user's are (the default cache root unless TOKFIDELITY_CACHE_DIR says otherwise)."""
    import shutil

    project = tmp / "node-id-project"
    shutil.copytree(ROOT / "golden" / NODE_DATASET, project / "golden" / NODE_DATASET, dirs_exist_ok=True)
    node = f"golden/{NODE_DATASET}/samples.jsonl::{NODE_ID}"

    import resource

    cpu: dict[str, list[float]] = {"node": [], "bare": []}

    def wall(what: str, *args: str) -> float:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "pytest", *args], cwd=project, capture_output=True, text=True)
        took = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)  # pytest, and the judges it waited for
        cpu[what].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        if proc.returncode != 0:
            sys.exit(f"pytest {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
        return took

    wall("node", "-q", node)  # warm: the tokenizer state cached, bytecode written
    cpu["node"].clear()
    runs, bare = [], []
    for _ in range(rounds):
        runs.append(wall("node", "-q", node))
        bare.append(wall("bare", "--version"))
    return (f"one node id ({node}, a project of its own, warm cache), median of {rounds} runs: "
            f"{statistics.median(runs):.2f} s wall (runs {', '.join(f'{r:.2f}' for r in runs)}), CPU of all its processes "
            f"{statistics.median(cpu['node']):.2f} s; bare `pytest --version` in the same rounds {statistics.median(bare):.2f} s "
            f"wall (runs {', '.join(f'{r:.2f}' for r in bare)}), {statistics.median(cpu['bare']):.2f} s CPU")


MODES = {"lone": (), "n2": ("-n", "2"), "lone-prompts-off": ("--tokfidelity-prompts=off",), "lone-diverging": ()}
DIVERGING = {"lone-diverging"}  # modes run on diverging_copy(): every sample fails, with its diagnosis


def diverging_copy(golden: Path, tok, family: str) -> Path:
    """The dataset with every sample's stop id replaced by an ordinary token (the founding bug: 163533
    'chas' for Kimi's 163586), so that every sample fails with its diagnosis: what a run where a whole
    dataset fails costs, pytest's failure summary included."""
    stop = bind_profile(family, tok).stop_id
    wrong = tok.encode_ordinary("chas")[0]
    target = golden.parent / "golden-diverging"
    write_dataset(target / "BENCH", json.loads((golden / "BENCH" / "manifest.json").read_text()), [])
    with open(golden / "BENCH" / "samples.jsonl", encoding="utf-8") as f, \
            open(target / "BENCH" / "samples.jsonl", "w", encoding="utf-8") as out:
        for line in f:
            sample = json.loads(line)
            if sample["output_ids"][-1] == stop:
                sample["output_ids"][-1] = wrong
            out.write(json.dumps(sample, ensure_ascii=False, separators=(",", ":")) + "\n")
    return target


def lone_goal(family: str, samples: int) -> float:
    """The wall-time goal of a lone run with prompt verdicts on, as a ratio to raw encode (issue 36): Kimi K2.5 at
    most 0.9x from 6,000 samples and 1.5x below that; Qwen3 and DeepSeek-V3 (a slower raw encode) at most 0.33x;
    issue 14's 1.0x for the other families."""
    if family in ("qwen3", "deepseek-v3"):
        return 0.33
    if family == "kimi-k2.5":
        return 0.9 if samples >= 6000 else 1.5
    return 1.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--family", default="kimi-k2.5", choices=sorted(FAMILIES),
                    help="the synthetic dataset's family, with the tokenizer and chat template of its shipped dataset: "
                    + ", ".join(f"{f} ({d})" for f, d in FAMILIES.items()))
    ap.add_argument("--samples", type=int, default=6000)
    ap.add_argument("--tokens", type=int, default=3500)
    ap.add_argument("--split-share", type=float, default=0.05, help="share of samples with one harmless re-split")
    ap.add_argument("--modes", default="lone,n2", help=f"pytest configurations to run, comma-separated: {', '.join(MODES)}")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs of each pytest configuration; from 2, interleaved with raw encode passes (the median ratio decides)")
    ap.add_argument("--raw-passes", type=int, default=2,
                    help="raw encode passes without --repeat, best taken (1 where a pass takes many minutes: 40,000 tokenizers samples)")
    ap.add_argument("--goal-only", action="store_true",
                    help="skip the judge's CPU breakdown and pytest's cost per test (minutes on a loaded machine)")
    ap.add_argument("--pytest-args", default="", help="extra pytest arguments, space-separated (e.g. -p no:randomly)")
    ap.add_argument("--node-id", type=int, default=0, metavar="ROUNDS",
                    help=f"also time one pasted node id of {NODE_DATASET} in a project of its own, this many rounds")
    ap.add_argument("--node-id-only", action="store_true", help="only the --node-id timing (no synthetic dataset)")
    args = ap.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if unknown := [m for m in modes if m not in MODES]:
        ap.error(f"--modes: unknown {unknown}; known: {', '.join(MODES)}")

    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, family {args.family}; machine: {os.cpu_count()} CPUs, "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at start")
    print(f"bytecode: {'not written (PYTHONDONTWRITEBYTECODE set: every run compiles every module)' if os.environ.get('PYTHONDONTWRITEBYTECODE') else 'written and reused'}")
    with tempfile.TemporaryDirectory(prefix="tokfidelity-bench-") as tmp:
        tmp = Path(tmp)
        if args.node_id or args.node_id_only:
            print(node_id_runs(tmp, max(1, args.node_id)))
            if args.node_id_only:
                print(f"machine: load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end")
                return 0
        t = time.perf_counter()
        manifest = family_manifest(args.family)
        golden = tmp / "golden"
        dataset = golden / "BENCH"
        tok, n_tokens, texts = make_dataset(dataset, manifest, args.samples, args.tokens, args.split_share)
        print(f"dataset: {args.samples:,} samples, {n_tokens:,} tokens ({n_tokens / args.samples:,.0f} per sample), "
              f"{(dataset / 'samples.jsonl').stat().st_size / 1e6:.0f} MB, built in {time.perf_counter() - t:.1f} s")

        extra = args.pytest_args.split()
        interleaved = args.repeat >= 2
        if not interleaved:
            raw, raw_cpu = raw_encode_seconds(tok, texts, passes=max(1, args.raw_passes))
            print(f"raw encode (one thread, same texts): {raw:.2f} s wall, {raw_cpu:.2f} s CPU "
                  f"({n_tokens / raw:,.0f} tokens/s)")
        print(f"encoder: {getattr(tok, 'encoder', '') or 'tiktoken'}; raw baseline: "
              f"{'tokenizers encode' if getattr(tok, 'backend', None) is not None else 'tiktoken encode_ordinary'}")
        if not args.goal_only:
            print(judge_breakdown(dataset, args.family))
            print(pytest_per_test(tmp, args.samples, extra))
        goldens = {mode: diverging_copy(golden, tok, args.family) if mode in DIVERGING else golden for mode in modes}
        results: dict[str, list[Run]] = {mode: [] for mode in modes}
        raws: list[tuple[float, float]] = []  # per round, when interleaved
        for i in range(args.repeat):
            if interleaved:
                raws.append(raw_encode_seconds(tok, texts, passes=1))
                print(f"round {i + 1}: raw encode {raws[-1][0]:.2f} s wall ({n_tokens / raws[-1][0]:,.0f} tokens/s)")
            for mode in modes:
                results[mode].append(pytest_run(goldens[mode], tmp / f"state-{mode}-{i}", *MODES[mode], *extra, fails=mode in DIVERGING))
                if interleaved:
                    print(f"round {i + 1}: pytest {' '.join(MODES[mode]) or '(one process)'} {results[mode][-1].wall:.2f} s "
                          f"= {results[mode][-1].wall / raws[-1][0]:.2f}x that round's raw encode")
        if interleaved:
            raw = statistics.median(r[0] for r in raws)
            raw_cpu = statistics.median(r[1] for r in raws)
            print(f"raw encode (one thread, same texts), median of {len(raws)} rounds: {raw:.2f} s wall, "
                  f"{raw_cpu:.2f} s CPU ({n_tokens / raw:,.0f} tokens/s)")
        ratios = {}
        for mode, runs in results.items():
            lines = runs[-1].out.splitlines()
            summary = next((line for line in lines if line.startswith("BENCH:")), "")
            prompts = next((line.strip() for line in lines if line.startswith("  prompts:")), "")
            print(f"pytest {' '.join(MODES[mode]) or '(one process)'}{' (every sample diverging)' if mode in DIVERGING else ''}: "
                  f"{describe(runs, raw, raw_cpu)}")
            print(f"  {summary}\n  {prompts}")
            ratios[mode] = statistics.median(
                run.wall / (raws[i][0] if interleaved else raw) for i, run in enumerate(runs)
            )
            if interleaved:
                print(f"  median of the rounds' ratios: {ratios[mode]:.2f}x")
        if "lone" in results:
            rss = max(r.rss_mb for r in results["lone"])
            ratio = ratios["lone"]
            goal = lone_goal(args.family, args.samples)
            print(f"goal: lone pytest <= {goal:g}x raw encode: {ratio:.2f}x ({'met' if ratio <= goal else 'MISSED'}); "
                  f"controlling process < 2 GB: {rss:,.0f} MB ({'met' if rss < 2048 else 'MISSED'})")
        print(f"machine: load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
