"""A real HTTP server for tests, on 127.0.0.1 and a free port, with faults injected on demand.

``FaultyServer(answer)`` calls ``answer(path, body) -> (status, obj)`` for each POST and sends ``obj``
as JSON (or as it is, when it is ``bytes``); ``headers`` lists each request's headers. Faults queued with ``server.faults.extend([...])`` are used one per request, before any
answer: ``"429"`` (Retry-After header from ``retry_after``), ``"500"``, ``"timeout"`` (sleep
``hang_seconds`` then close), ``"malformed"`` (200 with broken JSON), ``"truncated"`` (200, half a
JSON body with an honest Content-Length), ``"cut"`` (Content-Length of the full body, half sent, then
the connection closed), ``"reset"`` (TCP RST before any reply), ``"trickle"`` (200 with the Content-Length
of the full body, then one byte every ``trickle_every`` seconds, for at most ``hang_seconds``). ``requests`` lists ``(path, body)``
for every request received, faulted or not; ``len(server.requests)`` is the request count. A GET answers
``gets[path]`` as JSON where the test put one (``/version``, ``/v1/models``).
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = Callable[[str, dict], tuple[int, Any]]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "_Server"

    def log_message(self, *args):  # quiet
        pass

    def do_GET(self):
        gets = self.server.owner.gets
        if self.path in gets:
            self._send(200, json.dumps(gets[self.path]).encode())
        elif self.path == "/health":
            self._send(200, b'{"status":"ok"}')
        else:
            self._send(404, b'{"error":"not found"}')

    def do_POST(self):
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            body = {"_raw": raw.decode(errors="replace")}
        with owner.lock:
            owner.requests.append((self.path, body))
            owner.headers.append(dict(self.headers))
            fault = owner.faults.popleft() if owner.faults else None
            held = owner.hold_after is not None and len(owner.requests) > owner.hold_after
        if held:  # a request after the first hold_after waits until the test releases it (a run caught mid-request)
            owner.released.wait(120)
        if owner.delay:
            time.sleep(owner.delay)
        if fault == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
            return
        if fault == "timeout":
            time.sleep(owner.hang_seconds)
            self.close_connection = True
            return
        if fault == "429":
            self._send(429, b'{"error":{"code":429,"message":"rate limited"}}', {"Retry-After": owner.retry_after})
            return
        if fault == "500":
            self._send(500, b'{"error":{"code":500,"message":"upstream exploded"}}')
            return
        status, obj = owner.answer(self.path, body)
        data = obj if isinstance(obj, bytes) else json.dumps(obj).encode()  # bytes: a raw body, sent as given
        if fault == "malformed":
            self._send(200, b'{"choices": [ {"message": nope')
        elif fault == "truncated":
            self._send(200, data[: len(data) // 2])
        elif fault == "trickle":
            self._trickle(data, owner)
        elif fault == "cut":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
        else:
            self._send(status, data)

    def _trickle(self, data: bytes, owner: "FaultyServer") -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True
        end = time.monotonic() + owner.hang_seconds  # bounded: the test's server thread always ends
        for byte in data[:-1]:
            if time.monotonic() > end:
                return
            try:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
            except OSError:  # the client gave up
                return
            time.sleep(owner.trickle_every)

    def _send(self, status: int, data: bytes, headers: dict | None = None):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128
    owner: "FaultyServer"


class FaultyServer:
    def __init__(self, answer: Answer, *, delay: float = 0.0, retry_after: str = "0", hang_seconds: float = 2.0,
                 trickle_every: float = 0.05, hold_after: int | None = None):
        self.answer = answer
        self.hold_after = hold_after  # requests after this many wait for `released` (set by the test)
        self.released = threading.Event()
        self.delay = delay
        self.retry_after = retry_after
        self.hang_seconds = hang_seconds
        self.trickle_every = trickle_every
        self.faults: deque[str] = deque()
        self.requests: list[tuple[str, dict]] = []
        self.gets: dict[str, Any] = {}  # GET path -> the JSON it answers (others: 404, /health ok)
        self.headers: list[dict] = []
        self.lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self.port = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> "FaultyServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def paths(self) -> list[str]:
        return [p for p, _ in self.requests]
