"""An async chat-completions client for bulk generation: bounded concurrency and patient retries.

One ``ChatClient`` per run. ``await client.chat(body)`` sends one ``POST {base_url}/chat/completions``
and returns the decoded JSON body. Transient failures are retried with exponential backoff and
jitter: HTTP 429, 408 and 5xx (``Retry-After`` honoured, in seconds or as an HTTP date),
timeouts, refused or dropped connections, and bodies that are not complete JSON (a proxy cutting
the stream). Anything else (400, 401, 404, ...) raises ``ApiError`` at once.

The API key travels only in the ``Authorization`` header: it is never part of an exception
message, a log line or a returned object: any echo of it by the server, in an error or in a 200
body, raw or JSON-escaped, is masked (``pipeline.stages.secrets.KeyMask``).
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time
from dataclasses import dataclass
from typing import Any

import httpx

from ..core.errors import TokfidelityError
from .secrets import KeyMask

__all__ = ["ChatClient", "ApiError", "RetryPolicy", "ChatResult", "OPENROUTER_BASE_URL"]

OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"
LANE_SIZE = 8  # connections per httpx pool
RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})


class ApiError(TokfidelityError, RuntimeError):
    """A request failed for good: a non-retryable status, or retries exhausted.
    ``status`` is the last HTTP status (None for a transport failure); ``attempts`` how many were made."""

    def __init__(self, message: str, *, status: int | None = None, attempts: int = 1, retryable: bool = False):
        super().__init__(message)
        self.status = status
        self.attempts = attempts
        self.retryable = retryable


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 8  # retries after the first attempt
    base_delay: float = 0.5  # seconds; doubled each retry
    max_delay: float = 60.0  # cap on one wait, Retry-After included

    def backoff(self, retry: int) -> float:
        """Wait before retry number ``retry`` (1-based): exponential with 'equal jitter'."""
        ceiling = min(self.max_delay, self.base_delay * (2 ** (retry - 1)))
        return ceiling / 2 + random.uniform(0, ceiling / 2)


@dataclass(frozen=True)
class ChatResult:
    body: dict[str, Any]  # the decoded response
    attempts: int  # 1 when the first try succeeded
    seconds: float  # wall time including retries


class _Transient(Exception):
    def __init__(self, message: str, status: int | None = None, wait: float | None = None):
        super().__init__(message)
        self.status = status
        self.wait = wait


def public_url(url: str) -> str:
    """The URL without any user:password part, for records, logs and messages."""
    try:
        parsed = httpx.URL(url)
    except Exception:  # noqa: BLE001 - an unparsable URL has no credentials we can cut out safely
        return "(unparsable URL)" if "@" in url else url
    return str(parsed.copy_with(username=None, password=None)) if parsed.userinfo else url


def check_base_url(base_url: str) -> None:
    """ValueError unless ``base_url`` is an http(s) URL with a host and a valid port (checked once, before any request)."""
    try:
        url = httpx.URL(base_url)
        port_ok = url.port is None or 0 < url.port < 65536
    except (httpx.InvalidURL, ValueError):
        raise ValueError(f"base URL {public_url(base_url)!r} is not a valid URL; expected e.g. {OPENROUTER_BASE_URL}") from None
    if url.scheme not in ("http", "https") or not url.host or not port_ok:
        raise ValueError(f"base URL {public_url(base_url)!r} needs http:// or https://, a host and a port from 1 to 65535; expected e.g. {OPENROUTER_BASE_URL}")


def retry_after_seconds(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: a number of seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class ChatClient:
    """``async with ChatClient(base_url, api_key, concurrency=64) as c: body = (await c.chat(req)).body``"""

    def __init__(
        self,
        base_url: str = OPENROUTER_BASE_URL,
        api_key: str | None = None,
        *,
        concurrency: int = 32,
        timeout: float = 600.0,
        connect_timeout: float = 10.0,
        retry: RetryPolicy = RetryPolicy(),
        headers: dict[str, str] | None = None,
        path: str = "/chat/completions",
    ):
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        check_base_url(base_url)
        self.url = base_url.rstrip("/") + path
        self.public_url = public_url(self.url)  # what messages show: no user:password
        self.retry = retry
        self.timeout = timeout  # seconds for one whole attempt, the body included
        api_key = (api_key or "").strip() or None  # a trailing newline from a secrets file is not part of the key
        if api_key and not (api_key.isascii() and api_key.isprintable()):
            # httpx would put the whole header, key included, into its error message
            raise ValueError(
                "the API key holds a character that cannot travel in an HTTP header (a control character, "
                "line break or non-ASCII letter); check the key (it is not shown here)"
            )
        self._key_mask = KeyMask(api_key)
        all_headers = {"Content-Type": "application/json", **(headers or {})}
        if api_key:
            all_headers["Authorization"] = f"Bearer {api_key}"
        # httpcore's pool scans every connection for every queued request, which is quadratic at
        # hundreds of connections; so the connections are split over small pools ("lanes") and a
        # request first takes a slot: one slot per allowed request in flight, bound to one lane.
        lanes = [
            httpx.AsyncClient(
                headers=all_headers,
                timeout=httpx.Timeout(timeout, connect=connect_timeout),
                limits=httpx.Limits(max_connections=LANE_SIZE, max_keepalive_connections=LANE_SIZE),
            )
            for _ in range(-(-concurrency // LANE_SIZE))
        ]
        self._lanes = lanes
        self._slots: asyncio.Queue[httpx.AsyncClient] = asyncio.Queue()
        for i in range(concurrency):
            self._slots.put_nowait(lanes[i % len(lanes)])

    async def __aenter__(self) -> "ChatClient":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        for lane in self._lanes:
            await lane.aclose()

    def _mask(self, text: str) -> str:
        return self._key_mask.text(text)

    async def chat(self, body: dict[str, Any]) -> ChatResult:
        """POST one chat-completions request, retrying transient failures; raise ApiError for good."""
        try:
            payload = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
        except UnicodeEncodeError:  # a lone surrogate ("\ud800" in a prompts file): send it escaped, as it was written
            payload = json.dumps(body, separators=(",", ":")).encode()
        start = time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            lane = await self._slots.get()  # waits while `concurrency` requests are in flight
            try:
                result = await self._attempt(lane, payload)
            except _Transient as e:
                error = e
            else:
                return ChatResult(result, attempt, time.monotonic() - start)
            finally:
                self._slots.put_nowait(lane)  # free the slot before any backoff sleep
            if attempt > self.retry.max_retries:
                raise ApiError(
                    f"POST {self.public_url} failed after {attempt} attempts; last error: {self._mask(str(error))}. "
                    "Raise --max-retries or check the server, then run the same command again to resume.",
                    status=error.status,
                    attempts=attempt,
                    retryable=True,
                )
            wait = self.retry.backoff(attempt)
            if error.wait is not None:
                wait = max(wait, min(error.wait, self.retry.max_delay))
            await asyncio.sleep(wait)

    async def _attempt(self, http: httpx.AsyncClient, payload: bytes) -> dict[str, Any]:
        try:
            async with asyncio.timeout(self.timeout):  # the whole request: httpx's own timeouts limit each read
                response = await http.post(self.url, content=payload)
        except httpx.TimeoutException as e:
            raise _Transient(f"timeout ({type(e).__name__})") from None
        except TimeoutError:
            raise _Transient(f"no complete answer within {self.timeout:g} s (--timeout)") from None
        except httpx.TransportError as e:  # refused, reset, closed mid-response
            raise _Transient(f"connection error ({type(e).__name__}: {e})") from None
        status = response.status_code
        if status in RETRY_STATUS or 500 <= status < 600:
            raise _Transient(
                f"HTTP {status}: {_snippet(self._mask(response.text))}", status, retry_after_seconds(response.headers.get("retry-after"))
            )
        if status >= 400:
            raise ApiError(
                f"POST {self.public_url} answered HTTP {status}: {_snippet(self._mask(response.text))}",
                status=status,
            )
        try:
            body = response.json()
        except (ValueError, RecursionError) as e:  # not JSON, not UTF-8, nested too deeply, an integer too long to read
            raise _Transient(f"HTTP {status} with a body that is not complete JSON ({e}): {_snippet(self._mask(response.text))}", status) from None
        if not isinstance(body, dict):
            raise _Transient(f"HTTP {status} with a JSON {type(body).__name__}, not an object", status)
        body = self._key_mask.obj(body)  # a server echoing the Authorization header never puts the key in a record
        error = body.get("error")
        if error and "choices" not in body:  # OpenRouter reports upstream failures inside a 200 body
            code = error.get("code") if isinstance(error, dict) else None
            text = _snippet(self._mask(json.dumps(error, ensure_ascii=False)))
            if isinstance(code, int) and (code in RETRY_STATUS or 500 <= code < 600):
                raise _Transient(f"error in body (code {code}): {text}", code)
            raise ApiError(f"POST {self.public_url} answered an error: {text}", status=code if isinstance(code, int) else status)
        return body


def _snippet(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."
