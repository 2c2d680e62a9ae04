#!/usr/bin/env python3
"""tokfidelity against the libraries people use to turn messages into tokens, head to head.

For every shipped golden dataset whose profile a peer supports, each sample's API response (its
recorded `response`, else the dataset's `sglang` view of the golden ids) is turned back into output
ids by tokfidelity (`reconstruct_output_ids`) and by each peer (its renderer on a conversation
`[user, assistant]`, taking the assistant's trained / sampled tokens), and compared with the golden
ids. Printed per dataset: exact samples per side, errors, and output tokens per second of the
rebuild alone (one thread; conversion of the response into each library's message type is done
beforehand and not timed).

Peers: `renderers` 0.1.12, `tinker-cookbook` 0.6.1 and `tml-renderers` 0.2.1 (own native
vocabularies). They are installed `--no-deps`, with the few small packages their imports need, into
a separate environment (`.bench-peers/`, made by this script on first use); the project's own
environment is put behind it (a .pth file) for torch, transformers and the tokenizers.

    .venv/bin/python bench/bench_peers.py [--datasets Q1,D1] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH_ENV = ROOT / ".bench-peers"
PEER_PACKAGES = ["renderers==0.1.12", "tinker-cookbook==0.6.1", "tml-renderers==0.2.1"]
# What the peers' imports need and the project's environment lacks (tinker-cookbook imports the tinker SDK).
IMPORT_NEEDS = ["prime-pydantic-config==0.4.3", "tinker==0.38.0", "pillow", "distro", "protobuf"]
PEERS = ("renderers", "tinker-cookbook", "tml-renderers")
# profile -> the tokenizer folder the HF-tokenizer peers load, and each peer's renderer for it
# (a second renderer for samples generated with thinking off, where the peer has one)
SUPPORT = {
    "qwen3": {"hf": "qwen3", "renderers": "Qwen3RendererConfig", "tinker-cookbook": "qwen3", "tml-renderers": "Qwen3",
              "thinking-off": {"renderers": {"enable_thinking": False}, "tinker-cookbook": "qwen3_disable_thinking",
                               "tml-renderers": "disable_thinking"}},
    "deepseek-v3": {"hf": "deepseek-v3", "renderers": "DeepSeekV3RendererConfig", "tinker-cookbook": "deepseekv3",
                    "tml-renderers": "DeepSeekV3"},
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


def ensure_env() -> Path:
    """The bench environment's python, made (venv, --no-deps installs, .pth to the project env) if missing."""
    python = BENCH_ENV / "bin" / "python"
    marker = BENCH_ENV / ".complete"
    if marker.exists():
        return python
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(BENCH_ENV)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", *PEER_PACKAGES, *IMPORT_NEEDS], check=True)
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    # Appended after the bench env's own site-packages: the peers installed here win.
    (Path(purelib) / "zz_tokfidelity_project.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    marker.write_text("ok\n")
    return python


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

    cls = getattr(tml, support["tml-renderers"])
    r = {True: cls(), False: getattr(cls, off["tml-renderers"])() if "tml-renderers" in off else cls()}

    def convert_tml(turn):
        thinking, messages = convert(turn)
        return thinking, tinker_messages_to_sft_message_list(messages, TrainOnWhat.LAST_ASSISTANT_MESSAGE)

    def rebuild(item):
        thinking, message_list = item
        example = r[thinking].render_for_sft(message_list)[-1]
        tokens = [t for span in example.input_token_spans for t in getattr(span.span, "tokens", ())]
        return [t for t, w in zip(tokens, example.per_token_loss_weight_unshifted) if w > 0]

    return convert_tml, rebuild


def _timed(fn, items, repeat):
    """(results of the first pass, best seconds over `repeat` passes)."""
    best, results = float("inf"), None
    for _ in range(repeat):
        out = []
        start = time.perf_counter()
        for item in items:
            try:
                out.append(fn(item))
            except Exception as e:  # noqa: BLE001 - a peer's failure on one sample is a count, not a crash
                out.append(e)
        best = min(best, time.perf_counter() - start)
        results = results or out
    return results, best


def bench_dataset(dataset_dir: Path, repeat: int) -> None:
    from transformers import AutoTokenizer

    from pipeline.core.reconstruct import reconstruct_output_ids
    from pipeline.core.tokenizer import resolve_tokenizer_dir

    manifest, tokenizer, profile, rows = _turns(dataset_dir)
    golden = [s.output_ids for s, _ in rows]
    tokens = sum(map(len, golden))
    turns = [turn for _, turn in rows]
    print(f"{manifest.name} ({manifest.profile}, view {manifest.api_view}): {len(rows)} samples, {tokens:,} output tokens")
    results, seconds = _timed(lambda t: reconstruct_output_ids(t, profile, tokenizer), turns, repeat)
    finish = [s.finish_reason for s, _ in rows]
    _line("tokfidelity", results, golden, tokens, seconds, tokenizer, profile, finish)
    support = SUPPORT.get(manifest.profile)
    if support is None:
        print("  (no peer has a renderer set up here for this profile)")
        return
    hf = None
    if "hf" in support:
        folder, _ = resolve_tokenizer_dir(support["hf"])
        hf = AutoTokenizer.from_pretrained(str(folder), trust_remote_code=False)
    for peer in PEERS:
        if peer not in support:
            print(f"  {peer:<16} not run: {NO_HF_TOKENIZER.get(manifest.profile, 'no renderer set up here')}")
            continue
        try:
            convert, rebuild = _peer(peer, manifest.profile, hf)
            messages = [convert(t) for t in turns]
        except Exception as e:  # noqa: BLE001
            print(f"  {peer:<16} could not run: {type(e).__name__}: {e}")
            continue
        results, seconds = _timed(rebuild, messages, repeat)
        _line(peer, results, golden, tokens, seconds, tokenizer, profile, finish)


def _line(name, results, golden, tokens, seconds, tokenizer, profile, finish):
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
    print(f"  {name:<16} exact {exact:>4}/{len(golden)}  errors {errors:>3}  {tokens / seconds / 1e6:6.2f} M tokens/s"
          f"  (samples with: {shown or '-'})")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--datasets", default="all", help="comma-separated dataset names or prefixes (default: all shipped)")
    p.add_argument("--repeat", type=int, default=3, help="timing passes (best is printed)")
    p.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if not args.inner:
        python = ensure_env()
        env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        return subprocess.run([str(python), __file__, "--inner", "--datasets", args.datasets, "--repeat", str(args.repeat)],
                              env=env).returncode
    sys.path.insert(0, str(ROOT))
    from pipeline.core.golden import find_datasets

    for dataset_dir in find_datasets(ROOT / "golden", [d.strip() for d in args.datasets.split(",") if d.strip()]):
        bench_dataset(Path(dataset_dir), args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
