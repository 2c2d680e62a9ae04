#!/usr/bin/env python3
"""tokfidelity against the libraries people use to turn messages into tokens, head to head.

For every shipped golden dataset whose profile a peer supports, each sample's API response (its
recorded `response`, else the dataset's `sglang` view of the golden ids) is turned back into output
ids by tokfidelity (`reconstruct_output_ids`) and by each peer (its renderer on a conversation
`[user, assistant]`, taking the assistant's trained / sampled tokens), and compared with the golden
ids. Printed per dataset: exact samples per side, errors, and output tokens per CPU second (and per
wall second) of the rebuild alone (one thread; conversion of the response into each library's message
type is done beforehand and not timed; best of `--repeat` rounds, each at least 0.3 CPU seconds).

Also per dataset whose tokenizer is a `tokenizer.json` (Qwen3, DeepSeek-V3): plain `tokenizers` encode of
the same output texts (the golden ids decoded, one call per sample, in this process), and tokfidelity's
rebuild time over it (goal: at most 0.6x). At the end, one table of every family and peer.

Peers: `renderers` 0.1.12, `tinker-cookbook` 0.6.1 and `tml-renderers` 0.2.1 (own native
vocabularies), imported from the interpreter that runs this script; a peer that is not installed is
said so. `--env DIR` runs the figures with a separate environment instead: made on first use, with
the peers the running environment lacks installed `--no-deps`, and the running environment put
behind it (a .pth file) for torch, transformers and the tokenizers.

    .venv/bin/python bench/bench_peers.py [--datasets Q1,D1] [--repeat 3] [--env /tmp/peers-env]
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PEER_PACKAGES = {"renderers": "renderers==0.1.12", "tinker-cookbook": "tinker-cookbook==0.6.1",
                 "tml-renderers": "tml-renderers==0.2.1"}
PEER_MODULES = {"renderers": "renderers", "tinker-cookbook": "tinker_cookbook", "tml-renderers": "tml_renderers"}
# What the peers' imports need and the project's environment lacks (tinker-cookbook imports the tinker SDK).
IMPORT_NEEDS = ["prime-pydantic-config==0.4.3", "tinker==0.38.0", "pillow", "distro", "protobuf"]
PEERS = ("renderers", "tinker-cookbook", "tml-renderers")
# profile -> the tokenizer folder the HF-tokenizer peers load, and each peer's renderer for it
# (a second renderer for samples generated with thinking off, where the peer has one). tml-renderers: a class,
# or "Class.constructor".
SUPPORT = {
    "qwen3": {"hf": "qwen3", "renderers": "Qwen3RendererConfig", "tinker-cookbook": "qwen3", "tml-renderers": "Qwen3",
              "thinking-off": {"renderers": {"enable_thinking": False}, "tinker-cookbook": "qwen3_disable_thinking",
                               "tml-renderers": "Qwen3.disable_thinking"}},
    "deepseek-v3": {"hf": "deepseek-v3", "renderers": "DeepSeekV3RendererConfig", "tinker-cookbook": "deepseekv3",
                    "tml-renderers": "DeepSeekV3"},
    # DeepSeek-V3.1's hybrid thinking: tinker-cookbook's deepseekv3 renderers write V3.1's layout (</think> closing the
    # reasoning, `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS` calls, in non-thinking mode), tml-renderers has DeepSeekV31
    "deepseek-v3.1": {"hf": "deepseek-v3.1", "tinker-cookbook": "deepseekv3_thinking", "tml-renderers": "DeepSeekV31.thinking",
                      "thinking-off": {"tinker-cookbook": "deepseekv3_disable_thinking", "tml-renderers": "DeepSeekV31"}},
    "llama3": {"hf": "llama-3.1", "renderers": "Llama3RendererConfig", "tinker-cookbook": "llama3"},
    # renderers' prime-qwen3 is PrimeIntellect's Qwen3 with Qwen3-Coder's XML tool calls (its only such renderer)
    "qwen3-coder": {"hf": "qwen3", "renderers": "PrimeQwen3RendererConfig"},
    # tml-renderers brings its own vocabularies. renderers and tinker-cookbook need a transformers tokenizer
    # object: Kimi's is built only by code from its model repository (never run here), and no transformers
    # tokenizer of o200k_harmony is among the shared tokenizers.
    "kimi-k2.5": {"tml-renderers": "KimiK25"},
    "gpt-oss": {"tml-renderers": "GptOss"},
}
NO_HF_TOKENIZER = {
    "kimi-k2.5": "needs Kimi's tokenizer as a transformers object, which only its repository's code builds",
    "gpt-oss": "needs a transformers tokenizer of o200k_harmony, which the shared tokenizers do not hold",
}
# (profile, peer) -> why the peer has no renderer for it, read in its code (renderers 0.1.12's configs and
# MODEL_RENDERER_MAP, tinker-cookbook 0.6.1's get_renderer, tml-renderers 0.2.1's renderers module)
NO_RENDERER = {  # what the peers' code holds instead is in docs/benchmarks.md, under the peers' table
    ("deepseek-v3.1", "renderers"): "no V3.1 renderer",  # deepseek-v3 (no thinking), deepseek-r1 (always thinking)
    ("deepseek-v3.2", "renderers"): "no V3.2 renderer",  # deepseek-v4: V4's DSML tool_calls block
    ("deepseek-v3.2", "tinker-cookbook"): "no V3.2 renderer",  # deepseekv4_1: V4's DSML
    ("deepseek-v3.2", "tml-renderers"): "no V3.2 renderer",  # DeepSeekV4, DeepSeekV41
    ("llama3", "tml-renderers"): "no Llama renderer",
    ("qwen3-coder", "tinker-cookbook"): "no Qwen3-Coder renderer",  # its qwen3 renderers write JSON tool calls
    ("qwen3-coder", "tml-renderers"): "no Qwen3-Coder renderer",  # Qwen3: JSON tool calls
}


def _missing_peers() -> list[str]:
    import importlib.util

    return [p for p, module in PEER_MODULES.items() if importlib.util.find_spec(module) is None]


def ensure_env(env: Path) -> Path:
    """``env``'s python, made first if missing: a venv with the peers this environment lacks (--no-deps,
    and what their imports need) and this environment behind it (a .pth file)."""
    python = env / "bin" / "python"
    marker = env / ".complete"
    if marker.exists():
        return python
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(env)], check=True)
    missing = [PEER_PACKAGES[p] for p in _missing_peers()]
    needs = [n for n in IMPORT_NEEDS if importlib_metadata_missing(n)]
    if missing or needs:
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", *missing, *needs], check=True)
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    # Appended after the bench env's own site-packages: the peers installed here win.
    (Path(purelib) / "zz_tokfidelity_project.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    marker.write_text("ok\n")
    return python


def importlib_metadata_missing(requirement: str) -> bool:
    from importlib.metadata import PackageNotFoundError, version

    try:
        version(requirement.split("==")[0])
    except PackageNotFoundError:
        return True
    return False


# ------------------------------------------------------------------------------------------
# Inside the bench environment
# ------------------------------------------------------------------------------------------
def _turns(dataset_dir):
    from pipeline.core.golden import load_manifest, read_samples
    from pipeline.core.profiles import bind_profile
    from pipeline.core.responses import parse_response
    from pipeline.core.tokenizer import load_tokenizer
    from pipeline.core.views import api_view

    manifest = load_manifest(dataset_dir)
    tokenizer = load_tokenizer(manifest.tokenizer)
    profile = bind_profile(manifest.profile, tokenizer)
    rows = []
    for s in read_samples(dataset_dir):
        response = s.response if s.response is not None else api_view(s.output_ids, s.finish_reason, profile, tokenizer, manifest.api_view)
        rows.append((s, parse_response(response)))
    return manifest, tokenizer, profile, rows


def _peer(name: str, profile: str, hf):
    """(convert(turn) -> (thinking on, messages), rebuild((thinking on, messages)) -> output ids) for one peer;
    a turn without reasoning of a profile with a thinking-off renderer is rebuilt by that one."""
    support = SUPPORT[profile]
    off = support.get("thinking-off", {})
    user = {"role": "user", "content": "."}
    if name == "renderers":
        import renderers.configs as configs
        from renderers import create_renderer

        config = getattr(configs, support["renderers"])
        r = {True: create_renderer(hf, config()), False: create_renderer(hf, config(**off.get("renderers", {})))}

        def convert(turn):
            m = {"role": "assistant", "content": turn.content or ""}
            if turn.reasoning is not None:
                m["reasoning_content"] = turn.reasoning
            if turn.tool_calls:
                m["tool_calls"] = [{"id": c.id or f"call_{i}", "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                                   for i, c in enumerate(turn.tool_calls)]
            return turn.reasoning is not None or not off, [user, m]

        def rebuild(item):
            thinking, messages = item
            out = r[thinking].render(messages)
            return [t for t, i, sampled in zip(out.token_ids, out.message_indices, out.sampled_mask) if i == 1 and sampled]

        return convert, rebuild

    from tinker_cookbook.renderers import get_renderer
    from tinker_cookbook.renderers.base import ToolCall, TrainOnWhat

    def convert(turn):
        content = ([{"type": "thinking", "thinking": turn.reasoning}] if turn.reasoning is not None else [])
        m = {"role": "assistant", "content": content + [{"type": "text", "text": turn.content or ""}]}
        if turn.tool_calls:
            m["tool_calls"] = [ToolCall(function=ToolCall.FunctionBody(name=c.name, arguments=c.arguments), id=c.id)
                               for c in turn.tool_calls]
        return turn.reasoning is not None or not off, [user, m]

    if name == "tinker-cookbook":
        r = {True: get_renderer(support["tinker-cookbook"], hf), False: get_renderer(off.get("tinker-cookbook", support["tinker-cookbook"]), hf)}

        def rebuild(item):
            thinking, messages = item
            model_input, weights = r[thinking].build_supervised_example(messages)
            return [t for t, w in zip(model_input.to_ints(), weights.tolist()) if w > 0]

        return convert, rebuild

    from tinker_cookbook.third_party.tml_renderers_compat import tinker_messages_to_sft_message_list
    from tml_renderers import renderers as tml

    def make(spec: str):
        name, _, constructor = spec.partition(".")
        return getattr(getattr(tml, name), constructor)() if constructor else getattr(tml, name)()

    r = {True: make(support["tml-renderers"]), False: make(off.get("tml-renderers", support["tml-renderers"]))}

    def convert_tml(turn):
        thinking, messages = convert(turn)
        return thinking, tinker_messages_to_sft_message_list(messages, TrainOnWhat.LAST_ASSISTANT_MESSAGE)

    def rebuild(item):
        thinking, message_list = item
        example = r[thinking].render_for_sft(message_list)[-1]
        tokens = [t for span in example.input_token_spans for t in getattr(span.span, "tokens", ())]
        return [t for t, w in zip(tokens, example.per_token_loss_weight_unshifted) if w > 0]

    return convert_tml, rebuild


def _timed(fn, items, repeat, min_cpu: float = 0.3):
    """(results of the first pass, best CPU seconds of one pass, best wall seconds of one pass).

    CPU seconds of this process decide: on a shared machine wall time measures the neighbours as much
    as the code (one thread: CPU is the floor of a lone run's wall time). Each of ``repeat`` rounds
    repeats the pass until ``min_cpu`` seconds, so short datasets are not timed by the clock's noise."""
    results, cpu, wall = _pass(fn, items, keep=True)
    passes = max(1, math.ceil(min_cpu / max(cpu, 1e-6)))
    best_cpu, best_wall = cpu, wall
    for _ in range(repeat):
        c, w = time.process_time(), time.perf_counter()
        for _ in range(passes):
            _pass(fn, items, keep=False)
        best_cpu = min(best_cpu, (time.process_time() - c) / passes)
        best_wall = min(best_wall, (time.perf_counter() - w) / passes)
    return results, best_cpu, best_wall


def _pass(fn, items, keep: bool):
    out = []
    c, w = time.process_time(), time.perf_counter()
    for item in items:
        try:
            r = fn(item)
        except Exception as e:  # noqa: BLE001 - a peer's failure on one sample is a count, not a crash
            r = e
        if keep:
            out.append(r)
    return out, time.process_time() - c, time.perf_counter() - w


def bench_dataset(dataset_dir: Path, repeat: int, table: list) -> None:
    from transformers import AutoTokenizer

    from pipeline.core.reconstruct import reconstruct_output_ids
    from pipeline.core.tokenizer import resolve_tokenizer_dir

    manifest, tokenizer, profile, rows = _turns(dataset_dir)
    golden = [s.output_ids for s, _ in rows]
    tokens = sum(map(len, golden))
    turns = [turn for _, turn in rows]
    encoder = getattr(tokenizer, "encoder", "") or "tiktoken"
    print(f"{manifest.name} ({manifest.profile}, view {manifest.api_view}, encoder {encoder}): {len(rows)} samples, "
          f"{tokens:,} output tokens")
    results, seconds, wall = _timed(lambda t: reconstruct_output_ids(t, profile, tokenizer), turns, repeat)
    finish = [s.finish_reason for s, _ in rows]
    row = {"family": manifest.profile, "dataset": manifest.name, "samples": len(rows)}
    row["tokfidelity"] = _line("tokfidelity", results, golden, tokens, seconds, wall, tokenizer, profile, finish)
    backend = getattr(tokenizer, "backend", None)
    if backend is not None:  # a tokenizer.json: plain tokenizers encode of the same output texts
        texts = [tokenizer.decode(ids) for ids in golden]
        _, plain, _ = _timed(lambda text: backend.encode(text, add_special_tokens=False), texts, repeat)
        print(f"  {'tokenizers':<16} plain encode of the same output texts: {tokens / plain / 1e6:6.2f} M tokens/s; "
              f"tokfidelity's rebuild takes {seconds / plain:.2f}x its time (goal <= 0.6x)")
        row["vs tokenizers"] = f"{seconds / plain:.2f}x"
    table.append(row)
    support = SUPPORT.get(manifest.profile, {})
    if not support and not any(profile == manifest.profile for profile, _ in NO_RENDERER):
        print("  (no peer has a renderer set up here for this profile)")
        return
    hf = None
    if "hf" in support:
        folder, _ = resolve_tokenizer_dir(support["hf"])
        if (folder / "tokenizer_config.json").is_file():
            hf = AutoTokenizer.from_pretrained(str(folder), trust_remote_code=False)
        else:  # a bare tokenizer.json (DeepSeek-V3.1's): its special tokens from the manifest's chat_template
            from transformers import PreTrainedTokenizerFast

            special = dict((manifest.chat_template or {}).get("special_tokens", {}))
            hf = PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"), **special)
    missing = _missing_peers()
    for peer in PEERS:
        if peer not in support:
            why = NO_RENDERER.get((manifest.profile, peer)) or NO_HF_TOKENIZER.get(manifest.profile, "no renderer set up here")
            print(f"  {peer:<16} not run: {why}")
            row[peer] = "n/a" if manifest.profile in NO_HF_TOKENIZER else why
            continue
        if peer in missing:
            print(f"  {peer:<16} not run: not installed here (pip install {PEER_PACKAGES[peer]}, or --env DIR)")
            row[peer] = "not installed"
            continue
        try:
            convert, rebuild = _peer(peer, manifest.profile, hf)
            messages = [convert(t) for t in turns]
        except Exception as e:  # noqa: BLE001
            print(f"  {peer:<16} could not run: {type(e).__name__}: {e}")
            row[peer] = "error"
            continue
        results, seconds, wall = _timed(rebuild, messages, repeat)
        row[peer] = _line(peer, results, golden, tokens, seconds, wall, tokenizer, profile, finish)


def print_table(table: list) -> None:
    """Every dataset's figures as one Markdown table: M output tokens per CPU second (exact samples)."""
    columns = ["tokfidelity", *PEERS, "vs tokenizers"]
    print("\n| family | dataset | " + " | ".join(columns) + " |")
    print("|---|---|" + "---|" * len(columns))
    for row in table:
        print(f"| {row['family']} | {row['dataset']} ({row['samples']}) | " + " | ".join(row.get(c, "") for c in columns) + " |")


def _line(name, results, golden, tokens, seconds, wall, tokenizer, profile, finish):
    """One side's figures, with the divergence classes (tokfidelity's diagnosis) of what it got wrong."""
    from collections import Counter

    from pipeline.core.diagnose import diagnose

    exact = sum(1 for r, g in zip(results, golden) if r == g)
    errors = sum(1 for r in results if isinstance(r, Exception))
    classes = Counter()
    for r, g, f in zip(results, golden, finish):
        if not isinstance(r, Exception) and r != g:
            classes.update(diagnose(g, r, tokenizer, profile=profile, finish_reason=f).classes)
    shown = ", ".join(f"{c} {n}" for c, n in classes.most_common())
    print(f"  {name:<16} exact {exact:>4}/{len(golden)}  errors {errors:>3}  {tokens / seconds / 1e6:6.2f} M tokens/s CPU"
          f" ({tokens / wall / 1e6:.2f} wall)  (samples with: {shown or '-'})")
    return f"{tokens / seconds / 1e6:.2f} ({exact}/{len(golden)})"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--datasets", default="all", help="comma-separated dataset names or prefixes (default: all shipped)")
    p.add_argument("--repeat", type=int, default=3, help="timing passes (best is printed)")
    p.add_argument("--env", type=Path, help="run in this separate environment, made first with the missing peers")
    args = p.parse_args(argv)
    if args.env is not None:
        python = ensure_env(args.env.resolve())
        env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        return subprocess.run([str(python), __file__, "--datasets", args.datasets, "--repeat", str(args.repeat)],
                              env=env).returncode
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("TOKFIDELITY_TOKENIZERS", str(ROOT.parent / "shared" / "tokenizers"))
    import platform

    from pipeline.core.golden import find_datasets

    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.node()}: {os.cpu_count()} CPUs, "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; one thread, CPU seconds, best of {args.repeat} rounds")
    table: list = []
    for dataset_dir in find_datasets(ROOT / "golden", [d.strip() for d in args.datasets.split(",") if d.strip()]):
        bench_dataset(Path(dataset_dir), args.repeat, table)
    print_table(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
