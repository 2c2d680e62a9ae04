"""API views: what a server's response looks like for given golden output ids.

(Being written: see issue 2. ``VIEWS`` lists the view names the manifest may use.)
"""

VIEWS = ("sglang", "sglang-legacy", "vllm-spaces")


def api_view(output_ids, finish_reason, profile, tokenizer, view="sglang"):
    raise NotImplementedError("api views are being written")
