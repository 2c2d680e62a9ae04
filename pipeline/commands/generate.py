"""tokfidelity generate: bulk generation through an OpenAI-compatible API, gated, checked, resumable."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from ..cli import EXIT_OK, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE
from .gated import add_gate_arguments, closed_gate_exit, dataset_manifest, gated_tokenizer
from ..core.files import out_folder_problem

HELP = "Generate completions for a prompts file through a chat-completions API (OpenRouter by default), resumably."

API_KEY_ENV = "OPENROUTER_API_KEY"


def add_arguments(p):
    add_gate_arguments(p)
    p.add_argument("--prompts", required=True, help='JSONL file, one {"id", "messages", "tools"?, "max_tokens"?, "params"?} a line')
    p.add_argument("--out", required=True, help="output folder (generations.jsonl, run.json, summary.json); reused to resume")
    p.add_argument("--base-url", default=None, help="OpenAI-compatible API base URL (default: OpenRouter, https://openrouter.ai/api/v1)")
    p.add_argument("--model", default="moonshotai/kimi-k2.5", help="model name sent in each request (default: %(default)s)")
    p.add_argument("--profile", default=None, help="turn format used to reconstruct ids (default: the dataset manifest's)")
    p.add_argument("--concurrency", type=int, default=32, help="requests in flight at once (default: %(default)s)")
    p.add_argument("--max-retries", type=int, default=8, help="retries per request on 429/5xx/timeouts/dropped connections (default: %(default)s)")
    p.add_argument("--retry-base-delay", type=float, default=0.5, help="first backoff in seconds, doubled each retry, with jitter (default: %(default)s)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds for one whole request, the answer's body included, each attempt (default: %(default)s)")
    p.add_argument("--max-tokens", type=int, default=None, help="max_tokens for every request (a prompt's own value wins)")
    p.add_argument("--temperature", type=float, default=None)
    p.add_argument("--top-p", type=float, default=None)
    p.add_argument("--provider-order", default=None, help="comma-separated providers, sent as provider.order (OpenRouter routing)")
    p.add_argument("--allow-fallbacks", choices=("true", "false"), default=None, help="provider.allow_fallbacks")
    p.add_argument("--require-parameters", choices=("true", "false"), default=None, help="provider.require_parameters")
    p.add_argument("--quantizations", default=None, help="comma-separated, sent as provider.quantizations")
    p.add_argument("--reasoning", default=None, help='JSON object sent as "reasoning", e.g. \'{"enabled": true}\'')
    p.add_argument("--extra-body", default=None, help="JSON object merged into every request body")
    p.add_argument("--return-token-ids", action="store_true",
                   help='send "return_token_ids": true (vLLM, SGLang): the server\'s ids become the records\' ids and the reconstruction is checked against them')
    p.add_argument("--view-for", action="append", default=[], metavar="PROVIDER=VIEW",
                   help="the view (one of the profile's: sglang, vllm, ...) a provider serves with, as responses name it "
                        "(OpenRouter's 'provider'); repeatable; *=VIEW for every provider not named. Default: the manifest's "
                        "view; a resumed run takes run.json's 'view_for'. Each record carries its view")
    p.add_argument("--fsync", action="store_true", help="fsync after every record (survives power loss, slower)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def request_defaults(args) -> dict:
    """Fields sent with every request, from the command line."""
    body: dict = {}
    if args.max_tokens is not None:
        body["max_tokens"] = args.max_tokens
    if args.temperature is not None:
        body["temperature"] = args.temperature
    if args.top_p is not None:
        body["top_p"] = args.top_p
    provider: dict = {}
    if args.provider_order:
        provider["order"] = [s.strip() for s in args.provider_order.split(",") if s.strip()]
    if args.allow_fallbacks is not None:
        provider["allow_fallbacks"] = args.allow_fallbacks == "true"
    if args.require_parameters is not None:
        provider["require_parameters"] = args.require_parameters == "true"
    if args.quantizations:
        provider["quantizations"] = [s.strip() for s in args.quantizations.split(",") if s.strip()]
    if provider:
        body["provider"] = provider
    if args.reasoning:
        body["reasoning"] = _json_object(args.reasoning, "--reasoning")
    if getattr(args, "return_token_ids", False):
        body["return_token_ids"] = True
    if args.extra_body:
        body.update(_json_object(args.extra_body, "--extra-body"))
    return body


def _json_object(text: str, option: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{option}: not valid JSON ({e.msg}, column {e.colno})") from None
    if not isinstance(value, dict):
        raise ValueError(f"{option}: expected a JSON object")
    return value


def run(args) -> int:
    code, status = closed_gate_exit(args, "generate")  # before any request or file
    if code is not None:
        return code

    from ..stages.client import OPENROUTER_BASE_URL
    from ..stages.prompts import PromptError, read_prompts
    from ..core.golden import GoldenError
    from ..core.profiles import ProfileError
    from ..core.binding import bind_dataset
    from ..core.tokenizer import TokenizerNotFound
    from ..core.prompt_renderers import use_manifest_template

    def usage_error(message: str) -> int:
        print(f"tokfidelity generate: {message}", file=sys.stderr)
        return EXIT_USAGE

    base_url = args.base_url or OPENROUTER_BASE_URL
    api_key = (os.environ.get(API_KEY_ENV) or "").strip() or None  # a blank key is no key
    if api_key is None and "openrouter.ai" in base_url:
        return usage_error(f"set {API_KEY_ENV} in the environment (the key is never written or logged)")
    if args.concurrency < 1:
        return usage_error("--concurrency must be at least 1")
    from ..stages.client import check_base_url

    try:
        check_base_url(base_url)
    except ValueError as e:
        return usage_error(f"--base-url: {e}")
    if problem := out_folder_problem(args.out):
        return usage_error(problem)
    try:
        manifest = dataset_manifest(args, status)
        tokenizer, profile = bind_dataset(args.profile or manifest.profile, gated_tokenizer(args, status, manifest))
        use_manifest_template(manifest, profile, tokenizer)  # the chat template its manifest names; TemplateMismatch: a ValueError
        views = _served_views(args, profile, manifest, status)  # a bad --view-for, or run.json's view_for: ViewForError
        prompt_items = list(read_prompts(args.prompts))
        defaults = request_defaults(args)
    except (GoldenError, TokenizerNotFound, ProfileError, PromptError, ValueError) as e:
        return usage_error(str(e))
    prompts = [p for p in prompt_items if not isinstance(p, PromptError)]
    bad_prompts = [p for p in prompt_items if isinstance(p, PromptError)]
    for error in bad_prompts[:10]:
        print(f"tokfidelity generate: skipped {error}", file=sys.stderr)
    if len(bad_prompts) > 10:
        print(f"tokfidelity generate: ... and {len(bad_prompts) - 10} more bad prompt lines", file=sys.stderr)
    if not prompts:
        return usage_error(f"{args.prompts}: no usable prompts ({len(bad_prompts)} bad lines)")
    if "openrouter.ai" in base_url:
        defaults.setdefault("usage", {"include": True})  # OpenRouter then reports usage.cost

    from ..stages.folder_lock import FolderBusy, folder_lock

    try:
        with folder_lock(args.out, "generate"):  # one run at a time per folder: no sample paid for twice
            return _generate_locked(args, manifest, tokenizer, profile, base_url, api_key, defaults, prompts, bad_prompts, views)
    except FolderBusy as e:
        return usage_error(str(e))
    except OSError as e:  # --out not writable, a full disk before the first request: nothing was sent
        from ..core.files import os_error_message

        print(f"tokfidelity generate: cannot use --out {args.out}: {os_error_message(e)}", file=sys.stderr)
        return EXIT_FAILED


def _served_views(args, profile, manifest, status) -> tuple[str, dict[str, str]]:
    """(the default view, {provider: view}) of this run: --view-for, else the run config (run.json's
    'view_for', on a resumed run); ViewForError (a ValueError) naming the value, or the file, line and field.
    Says on stderr which views the gate of the dataset did not judge: the gated stages refuse their records."""
    from ..stages.generate import RUN_FILE
    from ..stages.served_views import parse_view_for, view_for_from_run

    view_for = parse_view_for(args.view_for, profile) if args.view_for else None
    run_path = Path(args.out) / RUN_FILE
    if view_for is None and run_path.is_file():
        try:
            text = run_path.read_text(encoding="utf-8")
            run = json.loads(text)
        except (ValueError, RecursionError):  # claim_run_folder says so, naming the file
            run, text = {}, ""
        view_for = view_for_from_run(run if isinstance(run, dict) else {}, str(run_path), text, profile)
    view_for = view_for or {}
    default = manifest.api_view
    unjudged = sorted(set(view_for.values()) - status.views) if status.views else []
    for view in unjudged:
        providers = ", ".join(sorted(p for p, v in view_for.items() if v == view))
        print(f"tokfidelity generate: note: view {view} (--view-for {providers}) was not judged by the gate of {status.dataset} "
              f"(judged: {', '.join(sorted(status.views))}): `tokfidelity train` and `hidden-states` will refuse records "
              f"rebuilt through it; add {view} to the manifest's api_views and run `{status.open_command}`", file=sys.stderr)
    return default, view_for


def _generate_locked(args, manifest, tokenizer, profile, base_url, api_key, defaults, prompts, bad_prompts, views) -> int:
    from ..stages.client import public_url
    from ..stages.generate import GenerationJob, run_generation, write_summary
    from ..stages.run_folder import GENERATE_KEYS, RunFolderMismatch, claim_run_folder
    from ..stages.secrets import KeyMask

    def usage_error(message: str) -> int:
        print(f"tokfidelity generate: {message}", file=sys.stderr)
        return EXIT_USAGE

    out_dir = Path(args.out)
    run_info = {
        "dataset": manifest.name,
        "profile": profile.name,
        "tokenizer": tokenizer.name,
        "tokenizer_spec": args.tokenizer or manifest.tokenizer,
        "tokenizer_fingerprint": tokenizer.fingerprint,
        "model": args.model,
        "base_url": public_url(base_url),  # never a user:password written to disk
        "view": views[0],  # the view of providers view_for does not name (the manifest's)
        "view_for": views[1],  # the run config: which view each provider serves with (--view-for)
    }
    try:
        claim_run_folder(out_dir, run_info, GENERATE_KEYS, KeyMask(api_key))
    except RunFolderMismatch as e:
        return usage_error(str(e))

    job = GenerationJob(
        out_dir=out_dir,
        profile=profile,
        tokenizer=tokenizer,
        base_url=base_url,
        api_key=api_key,
        model=args.model,
        request_defaults=defaults,
        concurrency=args.concurrency,
        max_retries=args.max_retries,
        timeout=args.timeout,
        retry_base_delay=args.retry_base_delay,
        fsync=args.fsync,
        default_view=views[0],
        view_for=views[1],
    )
    from tqdm import tqdm

    bar = tqdm(total=len(prompts), desc="generate", unit="sample", file=sys.stderr, disable=args.no_progress, mininterval=0.5)
    try:
        result = run_generation(job, prompts, on_progress=bar.update)
    except ValueError as e:  # an unreadable records file
        bar.close()
        return usage_error(str(e))
    bar.close()
    try:
        write_summary(out_dir, result, run_info, mask=job.mask)
    except OSError as e:  # a full disk: the records are what counts, and they are whole
        from ..core.files import os_error_message

        print(f"tokfidelity generate: summary not written: {job.mask.text(os_error_message(e))}", file=sys.stderr)
    code = _report(result, job, len(prompts), len(bad_prompts))
    return EXIT_INTERRUPTED if result.interrupted else EXIT_FAILED if result.stopped_early else code


def _report(result, job, n_prompts: int, n_bad_prompts: int) -> int:
    """Print what the run did and what the records file now holds; the exit code."""
    from ..stages.generate import RECORDS_FILE

    out_dir = job.out_dir
    t = result.totals
    print(
        f"tokfidelity generate: {result.finished} generated, {result.skipped} already done, {len(result.failed)} failed "
        f"({n_prompts} prompts); {out_dir / RECORDS_FILE} holds {t.samples} records: "
        + ", ".join(f"{k} {v}" for k, v in t.checks.items())
        + f"; tokens: prompt {t.prompt_tokens}, completion {t.completion_tokens} (reasoning {t.reasoning_tokens}); cost {t.cost:.6f}",
        file=sys.stderr,
    )
    engine = t.as_dict().get("engine_ids")
    if engine:
        classes = ", ".join(f"{c} {n} ({t.divergence_rates()[c]:.1%})" for c, n in engine["samples_by_class"].items())
        print(f"  engine ids: {engine['compared']} records compared with their reconstruction: {engine['exact']} exact, "
              f"{engine['reconstruction_differs']} differ" + (f" ({classes})" if classes else ""), file=sys.stderr)
    if t.prompt_render.get("differs"):
        print(f"  {t.prompt_render['differs']} records: the server's prompt ids differ from our rendering (see 'prompt_render')", file=sys.stderr)
    for line in t.views.lines():
        print(line, file=sys.stderr)
    seen = set(t.views.providers)
    for name in sorted(set(job.view_for) - seen - {"*"}):
        print(f"  --view-for {name}={job.view_for[name]}: no record names provider {name!r} (providers seen: "
              f"{', '.join(sorted(seen)) or 'none'}); check its spelling against the responses' 'provider'", file=sys.stderr)
    if len(t.by_provider) > 1 or any(name != "(not named)" for name in t.by_provider):
        for name, pt in sorted(t.by_provider.items()):
            print(f"  provider {name}: {pt.samples} records, " + ", ".join(f"{k} {v}" for k, v in pt.checks.items() if v), file=sys.stderr)
    if result.torn_bytes:
        print(f"  cut a torn last line ({result.torn_bytes} bytes) left by an interrupted run; that sample was asked again", file=sys.stderr)
    for sample_id, error in result.failed[:10]:
        print(f"  failed {sample_id}: {job.mask.text(error)}", file=sys.stderr)
    if len(result.failed) > 10:
        print(f"  ... and {len(result.failed) - 10} more failures", file=sys.stderr)
    if result.stopped_early:
        print(f"  stopped early: {job.mask.text(result.stopped_early)}", file=sys.stderr)
    unproven = t.flagged - t.checks.get("reconstruction_differs", 0)
    if unproven:
        print(
            f"  {unproven} records are flagged (check != ok): their ids are not proven; see 'check_detail' in {RECORDS_FILE}",
            file=sys.stderr,
        )
    if n_bad_prompts:
        print(f"  {n_bad_prompts} prompt lines were skipped as unusable (named above); fix them and run again", file=sys.stderr)
    if result.failed:
        print("  run the same command again to retry the failed samples (finished ones are kept)", file=sys.stderr)
    return EXIT_FAILED if result.failed or unproven or n_bad_prompts else EXIT_OK
