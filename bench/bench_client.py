"""Benchmark: requests/s of pipeline.stages.client.ChatClient against a local instant server.

The server is a raw asyncio HTTP/1.1 server (keep-alive, one canned chat-completion body) in its own
process, so the figure is the client's: JSON encode, httpx, the semaphore, JSON decode.

    .venv/bin/python bench/bench_client.py [--requests 5000] [--concurrency 256] [--min-rps 500]

Prints requests/s; exits 1 when below --min-rps.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import socket
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

BODY = json.dumps({
    "id": "gen-1", "model": "bench", "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok", "reasoning": "r"},
                                                  "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
}).encode()
RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(BODY), BODY)


class InstantHTTP(asyncio.Protocol):
    """Answers every request on a keep-alive connection with the canned body at once."""

    def connection_made(self, transport):
        self.transport = transport
        self.buffer = b""

    def data_received(self, data):
        self.buffer += data
        while True:
            head_end = self.buffer.find(b"\r\n\r\n")
            if head_end < 0:
                return
            head = self.buffer[:head_end].lower()
            length = 0
            at = head.find(b"content-length:")
            if at >= 0:
                length = int(head[at + 15: head.find(b"\r\n", at) if head.find(b"\r\n", at) > 0 else None].strip())
            total = head_end + 4 + length
            if len(self.buffer) < total:
                return
            self.buffer = self.buffer[total:]
            self.transport.write(RESPONSE)


def serve(sock: socket.socket) -> None:
    async def main():
        server = await asyncio.get_running_loop().create_server(InstantHTTP, sock=sock, backlog=1024)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


async def drive(url: str, requests: int, concurrency: int) -> float:
    from pipeline.stages.client import ChatClient, RetryPolicy

    body = {"model": "bench", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}
    async with ChatClient(url, "sk-bench", concurrency=concurrency, retry=RetryPolicy(max_retries=0)) as client:
        await asyncio.gather(*(client.chat(body) for _ in range(min(concurrency, requests))))  # warm connections
        start = time.perf_counter()
        results = await asyncio.gather(*(client.chat(body) for _ in range(requests)))
        elapsed = time.perf_counter() - start
    assert all(r.body["choices"][0]["message"]["content"] == "ok" for r in results)
    return requests / elapsed


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=5000)
    p.add_argument("--concurrency", type=int, default=256)
    p.add_argument("--min-rps", type=float, default=500.0)
    args = p.parse_args()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    port = sock.getsockname()[1]
    server = multiprocessing.get_context("spawn").Process(target=serve, args=(sock,), daemon=True)
    server.start()
    try:
        rps = asyncio.run(drive(f"http://127.0.0.1:{port}", args.requests, args.concurrency))
    finally:
        server.terminate()
        server.join(5)
    print(f"client: {rps:.0f} requests/s ({args.requests} requests, concurrency {args.concurrency}; needs >= {args.min_rps:.0f})")
    return 0 if rps >= args.min_rps else 1


if __name__ == "__main__":
    sys.exit(main())
