"""An answerer in SGLang 0.5.23's shapes (native ``/generate``; ``/v1/chat/completions`` with
``return_token_ids``, which puts ``prompt_token_ids`` and ``response_token_ids`` on each choice, as
``ChatCompletionResponseChoice`` in sglang's ``entrypoints/openai/protocol.py`` does), built with the
real Kimi tokenizer.

Its output ids are deliberately NOT what re-encoding the text gives: the word "hello" is emitted as
the two tokens of "hel" + "lo", as a sampling model may do. A capture must keep them verbatim.
"""

from __future__ import annotations

from pipeline.core.binding import bind_dataset
from pipeline.core.prompt_renderers import render_prompt


class SGLangAnswers:
    def __init__(self):
        self.tok, self.profile = bind_dataset("kimi-k2.5", "kimi-k2.5")

    def output_ids(self, prompt_text: str, max_new: int) -> tuple[list[int], dict]:
        enc = self.tok.encode_ordinary
        ids = enc("Think of ") + enc("hel") + enc("lo") + [self.profile.ids["think_end"]] + enc(f"You wrote {len(prompt_text)} chars.")
        ids.append(self.profile.stop_id)
        if len(ids) > max_new:
            return ids[:max_new], {"type": "length", "length": max_new}
        return ids, {"type": "stop", "matched": self.profile.stop_id}

    def __call__(self, path: str, body: dict):
        if path == "/generate":
            prompt_ids = body["input_ids"]
            ids, finish = self.output_ids(self.tok.decode(prompt_ids), body["sampling_params"]["max_new_tokens"])
            text_ids = ids[:-1] if finish["type"] == "stop" else ids  # the stop token is trimmed from text only
            return 200, {"text": self.tok.decode(text_ids), "output_ids": ids,
                         "meta_info": {"id": "req-1", "finish_reason": finish, "prompt_tokens": len(prompt_ids),
                                       "completion_tokens": len(ids), "cached_tokens": 0, "e2e_latency": 0.01}}
        if path == "/v1/chat/completions":
            prompt_ids = render_prompt(body["messages"], body.get("tools"), self.profile, self.tok)
            if body["messages"][0].get("content") == "[server-template-differs]":
                prompt_ids = prompt_ids[:3] + [198] + prompt_ids[3:]
            ids, finish = self.output_ids(self.tok.decode(prompt_ids), body["max_tokens"])
            choice = {"index": 0, "message": {"role": "assistant", "content": "(parsed text)"},
                      "finish_reason": finish["type"], "matched_stop": finish.get("matched")}
            if body.get("return_token_ids"):  # SGLang 0.5.23: both lists on the choice (ChatCompletionResponseChoice)
                choice["prompt_token_ids"] = prompt_ids
                choice["response_token_ids"] = ids
            answer = {"id": "c-1", "object": "chat.completion", "choices": [choice],
                      "usage": {"prompt_tokens": len(prompt_ids), "completion_tokens": len(ids)}}
            return 200, answer
        return 404, {"error": f"no route {path}"}
