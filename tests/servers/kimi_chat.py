"""A chat-completions answerer in Kimi K2.5's API shape, built with the real Kimi tokenizer.

Each answer's ``usage.completion_tokens`` is the true length of the ids the text stands for (the
reconstruction of the answer itself), as an SGLang upstream reports it, so the client's check must
pass; a user message containing ``[bad-usage]`` gets a count one too high, ``[no-usage]`` none.

``usage.prompt_tokens`` is counted as a server loading the model counts it: the model's own
``chat_template.jinja`` rendered by transformers' ``render_jinja_template`` (not by tokfidelity's renderer),
encoded with every special token allowed. With tools the template's own JSON fallback is counted (no
``tools_ts_str``). ``[bad-prompt-usage]`` makes it one too high; ``[no-prompt-usage]`` leaves it out.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.core.binding import bind_dataset
from pipeline.core.reconstruct import reconstruct_output_ids


class KimiChat:
    def __init__(self, profile: str = "kimi-k2.5", tokenizer: str = "kimi-k2.5"):
        self.tokenizer, self.profile = bind_dataset(profile, tokenizer)
        self.chat_template = (Path(self.tokenizer.files[0]).parent / "chat_template.jinja").read_text(encoding="utf-8")

    def prompt_tokens(self, body: dict) -> int:
        from transformers.utils.chat_template_utils import render_jinja_template

        rendered, _ = render_jinja_template([body["messages"]], tools=body.get("tools"), chat_template=self.chat_template,
                                            add_generation_prompt=True)
        return len(self.tokenizer.encode(rendered[0]))

    def message(self, body: dict) -> tuple[dict, str]:
        last = body["messages"][-1].get("content") or ""
        message = {"role": "assistant", "reasoning": f"The user said: {last}. Answer briefly.", "content": f"You said «{last}» 🙂"}
        finish = "stop"
        if body.get("tools"):
            name = body["tools"][0]["function"]["name"]
            message["tool_calls"] = [
                {"id": f"call_{len(last)}", "type": "function", "function": {"name": name, "arguments": '{"q": "%s"}' % len(last)}}
            ]
            finish = "tool_calls"
        return message, finish

    def __call__(self, path: str, body: dict) -> tuple[int, dict]:
        message, finish = self.message(body)
        ids = reconstruct_output_ids({**message, "finish_reason": finish}, self.profile, self.tokenizer)
        last = body["messages"][-1].get("content") or ""
        usage = {"prompt_tokens": self.prompt_tokens(body) + (1 if "[bad-prompt-usage]" in last else 0),
                 "completion_tokens": len(ids) + (1 if "[bad-usage]" in last else 0),
                 "completion_tokens_details": {"reasoning_tokens": 5}, "cost": 0.001}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        if "[no-prompt-usage]" in last:
            del usage["prompt_tokens"]
        answer = {"id": "gen-1", "model": body.get("model"), "provider": "TestProvider", "object": "chat.completion",
                  "choices": [{"index": 0, "message": message, "finish_reason": finish}]}
        if "[no-usage]" not in last:
            answer["usage"] = usage
        return 200, answer
