"""Root conftest: point tests at the real tokenizers in ../shared/tokenizers when present."""

import os
from pathlib import Path

pytest_plugins = ["pytester"]

_shared = Path(__file__).resolve().parent.parent / "shared" / "tokenizers"
if not os.environ.get("TOKFIDELITY_TOKENIZERS") and _shared.is_dir():
    os.environ["TOKFIDELITY_TOKENIZERS"] = str(_shared)
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _chat_template_overlay() -> None:
    """DeepSeek-V3.1's chat template lives beside, not inside, its tokenizer folder in ../shared/tokenizers
    (deepseek-v3.1/chat_template.xinference.jinja: the copy that renders tools, as vLLM's example template does):
    offer it as that folder's template through $TOKFIDELITY_CHAT_TEMPLATES (pipeline.core.render), with the
    bos and eos tokens of the model's tokenizer_config.json. Built in .tokfidelity/ (never committed)."""
    tokenizers = os.environ.get("TOKFIDELITY_TOKENIZERS", "").split(os.pathsep)[0]
    source = Path(tokenizers or _shared) / "deepseek-v3.1" / "chat_template.xinference.jinja"
    if os.environ.get("TOKFIDELITY_CHAT_TEMPLATES") or not source.is_file():
        return
    root = Path(__file__).resolve().parent / ".tokfidelity" / "chat-templates"
    folder = root / "deepseek-v3.1"
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / "chat_template.jinja"
    if not link.is_symlink():
        link.symlink_to(source)
    config = folder / "tokenizer_config.json"
    if not config.is_file():
        config.write_text('{"bos_token": "<\uff5cbegin\u2581of\u2581sentence\uff5c>", '
                          '"eos_token": "<\uff5cend\u2581of\u2581sentence\uff5c>"}\n', encoding="utf-8")
    os.environ["TOKFIDELITY_CHAT_TEMPLATES"] = str(root)


_chat_template_overlay()
