#!/usr/bin/env python3
"""The trainers' tables (docs/trainers.md): SpecForge's preprocessing judged on every shipped golden dataset
whose family one of its templates covers; per dataset and template, samples exact / total and the top classes.
With --speculators, speculators' preparation instead, through a vLLM render server (.venv-vllm) started for
each dataset whose tokenizer one can serve here.

    TOKFIDELITY_TOKENIZERS=../shared/tokenizers TOKFIDELITY_TOKENIZER_CLASS=../shared/engine-code/kimi/tokenization_kimi.py \
        .venv/bin/python scripts/trainer_table.py [--speculators] [DATASET ...]

Kimi's datasets need TOKFIDELITY_TOKENIZER_CLASS: the model repository's tokenizer class, run only when its
sha256 is pinned (pipeline.core.trainers.PINNED_CLASSES); without it their rows say why they are not measured.

Each sample is judged as `pytest --tokfidelity-dataset=DS --tokfidelity-trainer=specforge:TEMPLATE` judges it
(pipeline.core.trainers through fidelity.Judge, the dataset's first view)."""

from __future__ import annotations

import collections
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# profile -> the SpecForge 0.2.0 templates written for that family (the registry names no trainer's templates)
TEMPLATES = {"qwen3": ("qwen3-thinking", "qwen3-instruct"), "deepseek-v3": ("deepseek-v3",), "gpt-oss": ("gpt-oss",),
             "chatml": ("qwen",), "kimi-k2.5": ("kimi-k2-thinking", "kimi-k2-instruct"), "llama3": ("llama3",),
             "qwen3-coder": ("qwen3-instruct", "qwen"), "deepseek-v3.1": ("deepseek-v3", "deepseek-v32"),
             "deepseek-v3.2": ("deepseek-v32",)}
# (profile, template) -> further rows: chat-template arguments, or model_template=False (the tokenizer files alone)
VARIANTS = {("kimi-k2.5", "kimi-k2-thinking"): ({"preserve_thinking": True},),
            ("deepseek-v3.2", "deepseek-v32"): ({"model_template": False},)}


def measure(dataset: Path, template: str, template_kwargs: dict | None = None, spec: str | None = None,
            model_template: bool = True) -> str:
    """One row: ``spec`` (default ``specforge:TEMPLATE``) judged on every sample, shown as ``template``."""
    from pipeline.core.binding import bind_dataset
    from pipeline.core.fidelity import EXACT, Judge
    from pipeline.core.golden import GoldenSample, load_manifest, read_samples
    from pipeline.core.prompt_renderers import use_manifest_template
    from pipeline.core.tokenizer import tokenizer_location
    from pipeline.core.trainers import CLASS_PREFIX, TrainerError, load_trainer

    manifest = load_manifest(dataset)
    location = tokenizer_location(manifest.tokenizer)
    tokenizer, profile = bind_dataset(manifest.profile, location)
    # the chat template file the manifest names, checked; the trainer's tokenizer is given it too
    use_manifest_template(manifest, profile, tokenizer)
    try:
        trainer = load_trainer(spec or f"specforge:{template}", location, template_kwargs, manifest.profile,
                               model_template=model_template)
    except TrainerError as e:
        return f"| {dataset.name} | {template} | not measured | {e.message.split(';')[0].split(' (')[0]} |"
    judge = Judge(profile, tokenizer, manifest.views[0], trainer=trainer)
    classes: collections.Counter = collections.Counter()
    exact = total = 0
    for sample in read_samples(dataset):
        if not isinstance(sample, GoldenSample):
            continue
        total += 1
        try:
            verdict = judge(sample)
        except Exception as e:  # noqa: BLE001 - the trainer could not build the sample: counted by its error
            classes[f"error: {type(e).__name__}"] += 1
            continue
        exact += verdict.kind == EXACT
        classes.update(c.removeprefix(CLASS_PREFIX) for c in verdict.classes)
    top = ", ".join(f"{c} {n}" for c, n in classes.most_common(4)) or "-"
    shown = template + "".join(f", `{k}={v}`" for k, v in (template_kwargs or {}).items())
    if trainer.rendered_by:  # what the tokenizer SpecForge gets was given to render the prompts as the engine did
        shown += f" ({trainer.rendered_by})"
    elif not model_template:
        shown += " (the tokenizer files alone: SpecForge's fallback rendering)"
    return f"| {dataset.name} | {shown} | {exact} / {total} | {top} |"


def speculators_rows(wanted: set[str]) -> None:
    """speculators 0.9.0's preparation through a vLLM render server started per dataset (``--speculators``)."""
    import tempfile

    from pipeline.core.binding import bind_dataset
    from pipeline.core.golden import load_manifest
    from pipeline.core.prompt_renderers import use_manifest_template
    from pipeline.core.tokenizer import tokenizer_location
    from pipeline.stages.model_folder import model_folder

    from _support.vllm_server import (  # scripts/_support: this script's folder is first on the path
        RENDER_CONFIGS, render_model_folder, server_args, start_vllm_render, stop_vllm, unavailable,
    )

    print("| dataset | rendered by (vLLM 0.32.0 render server) | exact / total | top classes (samples) |")
    print("|---|---|---:|---|")
    reason = unavailable()
    for dataset in sorted(p for p in (ROOT / "golden").iterdir() if (p / "manifest.json").is_file()):
        if wanted and dataset.name not in wanted:
            continue
        manifest = load_manifest(dataset)
        location = Path(tokenizer_location(manifest.tokenizer))
        if location.suffix == ".gguf":  # the model the dataset was captured from, as the engines load it
            shown = f"its model ({location.name}, converted)"
        elif location.name in RENDER_CONFIGS:
            config = RENDER_CONFIGS.get(manifest.profile) or RENDER_CONFIGS[location.name]
            shown = f"`{location.name}` tokenizer files + a config.json ({config['architectures'][0]})"
        else:
            print(f"| {dataset.name} | - | not measured | {NOT_SERVED.get(manifest.profile, 'no render server')} |")
            continue
        if reason:
            print(f"| {dataset.name} | {shown} | not measured | {reason} |")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            if location.suffix == ".gguf":
                model, extra = model_folder(manifest.tokenizer), ()
            else:  # the server is given the chat template the manifest names, where the folder's own is not it
                bound, profile = bind_dataset(manifest.profile, str(location))
                use_manifest_template(manifest, profile, bound)
                model, extra = render_model_folder(location, Path(tmp) / "model", manifest.profile)
            args = server_args(manifest.profile) + extra
            try:
                proc, url = start_vllm_render(model, Path(tmp) / "server.log", args)
            except RuntimeError as e:  # the server refuses the folder: its last words are the reason
                print(f"| {dataset.name} | {shown} | not measured | vLLM: {str(e).strip().splitlines()[-1][:300]} |")
                continue
            try:
                flags = " ".join(Path(a).name if a.startswith("/") else a for a in args)
                label = shown + (f", `{flags}`" if flags else "")
                print(measure(dataset, label, spec=f"speculators:{url}"), flush=True)
            finally:
                stop_vllm(proc)


# profile -> why no vLLM render server here serves that family's tokenizer and template
NOT_SERVED = {
    "gpt-oss": "no tokenizer folder for gpt-oss here (a bare tiktoken encoding, no tokenizer_config.json), which "
               "a vLLM server loads",
}



def main() -> int:
    from pipeline.core.golden import load_manifest

    if "--speculators" in sys.argv[1:]:
        speculators_rows(set(sys.argv[1:]) - {"--speculators"})
        return 0
    print("| dataset | SpecForge 0.2.0 template | exact / total | top classes (samples) |")
    print("|---|---|---:|---|")
    wanted = set(sys.argv[1:])
    for dataset in sorted(p for p in (ROOT / "golden").iterdir() if (p / "manifest.json").is_file()):
        if wanted and dataset.name not in wanted:
            continue
        profile = load_manifest(dataset).profile
        for template in TEMPLATES.get(profile, ()):
            print(measure(dataset, template), flush=True)
            for variant in VARIANTS.get((profile, template), ()):
                kwargs = {k: v for k, v in variant.items() if k != "model_template"}
                print(measure(dataset, template, kwargs or None, model_template=variant.get("model_template", True)),
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
