"""The chat-completions client against a real HTTP server on 127.0.0.1 with injected faults."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from pipeline.stages.client import ApiError, ChatClient, RetryPolicy, retry_after_seconds
from servers.http_server import FaultyServer

OK_BODY = {"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}], "usage": {"completion_tokens": 2}}


def ok(path, body):
    return 200, {**OK_BODY, "echo": body}


def chat(server, body=None, *, retries=3, timeout=5.0, concurrency=4, api_key=None):
    async def go():
        async with ChatClient(server.url, api_key, concurrency=concurrency, timeout=timeout,
                              retry=RetryPolicy(max_retries=retries, base_delay=0.01, max_delay=5)) as c:
            return await c.chat(body or {"model": "m", "messages": [{"role": "user", "content": "x"}]})

    return asyncio.run(go())


@pytest.mark.parametrize("fault", ["500", "malformed", "truncated", "cut", "reset", "timeout"])
def test_transient_fault_is_retried_then_succeeds(fault):
    with FaultyServer(ok, hang_seconds=1.0) as server:
        server.faults.extend([fault, fault])
        result = chat(server, timeout=0.4)
    assert result.attempts == 3
    assert result.body["choices"][0]["message"]["content"] == "hi"
    assert len(server.requests) == 3
    assert server.paths() == ["/chat/completions"] * 3


def test_retry_after_is_honoured():
    with FaultyServer(ok, retry_after="1") as server:
        server.faults.append("429")
        start = time.monotonic()
        result = chat(server)
        elapsed = time.monotonic() - start
    assert result.attempts == 2
    assert elapsed >= 0.95, f"waited only {elapsed:.2f}s despite Retry-After: 1"


def test_retry_after_http_date():
    assert retry_after_seconds("0") == 0
    assert retry_after_seconds("2.5") == 2.5
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0  # in the past
    assert retry_after_seconds("garbage") is None


def test_client_error_is_not_retried():
    with FaultyServer(lambda p, b: (400, {"error": {"message": "bad request: messages"}})) as server:
        with pytest.raises(ApiError) as info:
            chat(server)
    assert info.value.status == 400 and info.value.attempts == 1
    assert len(server.requests) == 1
    assert "bad request: messages" in str(info.value)


def test_retries_exhausted_names_the_last_error():
    with FaultyServer(ok) as server:
        server.faults.extend(["500"] * 10)
        with pytest.raises(ApiError) as info:
            chat(server, retries=2)
    assert len(server.requests) == 3
    assert info.value.attempts == 3 and info.value.retryable
    assert "HTTP 500" in str(info.value) and "run the same command again" in str(info.value)


def test_error_inside_a_200_body_is_retried_when_upstream():
    calls = []

    def answer(path, body):
        calls.append(1)
        if len(calls) == 1:
            return 200, {"error": {"code": 502, "message": "provider returned error"}}
        return ok(path, body)

    with FaultyServer(answer) as server:
        assert chat(server).attempts == 2


def test_api_key_is_sent_but_never_in_errors():
    secret = "sk-or-test-SECRET-123456"

    def echo_auth(path, body):
        return 401, {"error": {"message": f"invalid key {server.headers[-1].get('Authorization')}"}}

    with FaultyServer(echo_auth) as server:
        with pytest.raises(ApiError) as info:
            chat(server, api_key=secret)
    assert server.headers[0]["Authorization"] == f"Bearer {secret}"
    assert secret not in str(info.value) and "***" in str(info.value)


@pytest.mark.parametrize("status", [401, 500])
def test_api_key_cut_by_the_error_snippet_is_still_masked(status):
    secret = "sk-or-v1-" + "0123456789abcdef" * 4
    # the key straddles the 300-character cut of the error text: no prefix of it may show
    padding = "x" * (300 - len('{"error": {"message": "') - 20)

    def echo_auth(path, body):
        return status, {"error": {"message": padding + server.headers[-1].get("Authorization", "")[len("Bearer "):]}}

    with FaultyServer(echo_auth) as server:
        with pytest.raises(ApiError) as info:
            chat(server, api_key=secret, retries=1)
    assert secret[:12] not in str(info.value) and "***" in str(info.value)


def test_api_key_with_a_line_break_never_reaches_an_error():
    secret = "sk-or-v1-" + "0123456789abcdef" * 4
    with FaultyServer(ok) as server:
        result = chat(server, api_key=secret + "\n")  # as read from a secrets file
    assert result.attempts == 1 and server.headers[0]["Authorization"] == f"Bearer {secret}"
    for bad in (secret[:20] + "\n" + secret[20:], secret + "\x00", secret + "é"):
        with pytest.raises(ValueError) as info:
            ChatClient("http://127.0.0.1:1", bad)
        assert secret[:12] not in str(info.value) and "API key" in str(info.value)


def test_lone_surrogate_in_a_prompt_is_sent_escaped():
    body = {"model": "m", "messages": [{"role": "user", "content": "bad \ud800 x é"}]}
    with FaultyServer(ok) as server:
        result = chat(server, body)
    assert result.attempts == 1
    assert server.requests[0][1]["messages"][0]["content"] == "bad \ud800 x é"


def test_concurrency_is_bounded():
    lock = threading.Lock()
    state = {"now": 0, "max": 0}

    def slow(path, body):
        with lock:
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
        time.sleep(0.1)
        with lock:
            state["now"] -= 1
        return ok(path, body)

    async def go():
        async with ChatClient(server.url, concurrency=3, retry=RetryPolicy(max_retries=0)) as c:
            return await asyncio.gather(*(c.chat({"i": i}) for i in range(12)))

    with FaultyServer(slow) as server:
        results = asyncio.run(go())
    assert sorted(r.body["echo"]["i"] for r in results) == list(range(12))
    assert state["max"] == 3
