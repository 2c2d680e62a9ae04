"""tokfidelity render: conversations (JSONL on stdin or in a file) -> prompt ids (JSONL on stdout).

The prompt-side twin of ``tokfidelity reconstruct``: each line's generation prompt exactly as an engine
running the model's own tokenizer feeds it (``pipeline.core.prompt_renderers.render_prompt``: the profile's
own prompt renderer).
"""

from __future__ import annotations

import sys

from .jsonl_filter import filter_lines
from ..core.names import names_help
from ..cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE

HELP = "Render prompt token ids from conversations, one {\"messages\", \"tools\"} JSON object a line, as the model's own tokenizer does."


def add_arguments(p):
    p.add_argument("--profile", help=f"model turn format: one of {names_help()} (default: the --dataset's)")
    p.add_argument("--tokenizer", help="tokenizer path, folder name or hub id (its folder holds the chat template; default: the --dataset's)")
    p.add_argument("--dataset", metavar="FOLDER", help="a golden dataset folder: render as its manifest says (profile, tokenizer, "
                   "and the chat template file it names, checked against its sha256)")
    p.add_argument("input", nargs="?", help="JSONL file of conversations (default: stdin)")


def _conversation(item):
    """(messages, tools, chat_template_kwargs) of one line, or ValueError naming the field."""
    if not isinstance(item, dict):
        raise ValueError(f"expected a JSON object with 'messages', got {type(item).__name__}")
    if "messages" not in item:
        raise ValueError("field 'messages' missing")
    return item["messages"], item.get("tools"), item.get("chat_template_kwargs")


def _render_lines(stream, name, profile, tokenizer, out) -> int:
    from ..core.prompt_renderers import render_prompt
    from ..core.render import RenderError

    def convert(item) -> dict:
        messages, tools, kwargs = _conversation(item)
        return {"prompt_ids": render_prompt(messages, tools, profile, tokenizer, chat_template_kwargs=kwargs)}

    # ValueError: the line's shape (_conversation)
    return filter_lines(stream, name, convert, (RenderError, ValueError), out, ensure_ascii=False)


def run(args) -> int:
    from ..core.profiles import ProfileError
    from ..core.golden import load_manifest
    from ..core.render import RenderError, chat_template
    from ..core.binding import bind_dataset
    from ..core.tokenizer import TokenizerNotFound
    from ..core.files import open_input
    from ..core.prompt_renderers import prompt_renderer, use_manifest_template

    try:
        manifest = load_manifest(args.dataset) if args.dataset else None
        if not (args.profile or manifest) or not (args.tokenizer or manifest):
            raise ValueError("give --profile and --tokenizer, or --dataset FOLDER")
        tokenizer, profile = bind_dataset(args.profile or manifest.profile, args.tokenizer or manifest.tokenizer)
        if manifest is not None:
            use_manifest_template(manifest, profile, tokenizer)  # TemplateMismatch: a ValueError naming the field
        if prompt_renderer(profile.spec).uses_template:
            chat_template(tokenizer)  # a tokenizer without a template is a usage error, before any line
    except (TokenizerNotFound, ProfileError, RenderError, ValueError) as e:
        print(f"tokfidelity render: {e}", file=sys.stderr)
        return EXIT_USAGE
    if args.input is None:
        return EXIT_FAILED if _render_lines(sys.stdin.buffer, "<stdin>", profile, tokenizer, sys.stdout) else EXIT_OK
    try:
        stream = open_input(args.input)  # a FIFO or a device is refused, not waited on
    except OSError as e:
        print(f"tokfidelity render: cannot read {args.input}: {e.strerror}", file=sys.stderr)
        return EXIT_USAGE
    with stream:
        return EXIT_FAILED if _render_lines(stream, args.input, profile, tokenizer, sys.stdout) else EXIT_OK
