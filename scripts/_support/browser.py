"""Headless Chromium (Debian's ``chromium`` package, installed by scripts/setup) driven by its own
flags: ``--dump-dom`` (the DOM after the page's script ran) and ``--screenshot``.

Requests: every request goes to a proxy on 127.0.0.1 that answers nothing (so nothing leaves the
machine), and Chromium's NetLog (``--log-net-log``) says which requests a page made: those carry the
page's origin as initiator, while Chromium's own service traffic (network time, sign-in, spelling
dictionaries), which no flag fully silences, has none."""

from __future__ import annotations

import json
import os
import shutil
import socketserver
import subprocess
import tempfile
import threading
import time
from html.parser import HTMLParser
from pathlib import Path


def chromium_path() -> str | None:
    """The browser binary itself: Debian's /usr/bin/chromium wrapper exports Google API keys, with
    which Chromium talks to Google's sign-in servers on its own."""
    for binary in ("/usr/lib/chromium/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if binary and os.access(binary, os.X_OK):
            return binary
    return None


# Chromium's own traffic (network time, sign-in, variations, safe browsing, ...), switched off so that
# anything the proxy sees came from the page.
QUIET = (
    "--disable-field-trial-config", "--disable-client-side-phishing-detection", "--disable-domain-reliability",
    "--disable-breakpad", "--no-pings", "--metrics-recording-only", "--no-service-autorun", "--password-store=basic",
    "--disable-search-engine-choice-screen", "--disable-features=NetworkTimeServiceQuerying,OptimizationHints,"
    "Translate,MediaRouter,DialMediaRouteProvider,CertificateTransparencyComponentUpdater,AutofillServerCommunication,"
    "InterestFeedContentSuggestions,SafeBrowsing,PrivacySandboxSettings4,LensOverlay,HttpsUpgrades,PreconnectToSearch,"
    "AccountConsistency,MirrorAccountConsistency,SigninInterception", "--dns-prefetch-disable", "--disable-sync",
)


class RecordingProxy(socketserver.ThreadingTCPServer):
    """An HTTP proxy that answers nothing and records the first line of every request."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self):
        self.requests: list[str] = []

        class Handler(socketserver.StreamRequestHandler):
            def handle(handler):
                line = handler.rfile.readline(4096).decode("latin-1").strip()
                self.requests.append(line or "(connection without a request line)")

        super().__init__(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def close(self) -> None:
        self.shutdown()
        self.server_close()


def page_requests(netlog: Path) -> list[str]:
    """URLs of the network requests that a page made (initiator: an origin), from a NetLog file."""
    log = json.loads(netlog.read_text(encoding="utf-8"))
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    out = []
    for event in log["events"]:
        params = event.get("params") or {}
        url = params.get("url", "")
        if event["type"] == start and url.startswith(("http:", "https:", "ws:", "wss:")) and params.get("initiator") != "not an origin":
            out.append(url)
    return out


class Browser:
    """One headless Chromium run per call, every request through ``proxy``."""

    def __init__(self, proxy: RecordingProxy):
        self.binary = chromium_path()
        self.proxy = proxy
        self.profile = tempfile.mkdtemp(prefix="tokfidelity-chromium-")
        self.page_requests: list[str] = []  # URLs requested by pages, over every run

    def _run(self, url: str, *extra: str, width: int = 1400, height: int = 2400) -> tuple[str, float]:
        netlog = Path(self.profile) / "netlog.json"
        cmd = [
            self.binary, "--headless", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
            "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
            "--disable-default-apps", "--hide-scrollbars", f"--user-data-dir={self.profile}", *QUIET,
            f"--proxy-server={self.proxy.url}", "--proxy-bypass-list=<-loopback>", f"--window-size={width},{height}",
            f"--log-net-log={netlog}",
            # no sandbox (root, or containers without user namespaces, refuse it; the page is our own file), and
            # no /dev/shm (small in containers)
            "--no-sandbox", "--disable-dev-shm-usage", *extra, url,
        ]
        start = time.perf_counter()
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
        wall = time.perf_counter() - start
        if result.returncode != 0:
            raise AssertionError(f"chromium exited {result.returncode}: {result.stderr[-2000:]}")
        self.page_requests += page_requests(netlog)
        return result.stdout, wall

    def dump_dom(self, url: str) -> tuple[str, float]:
        """(the DOM after load, wall seconds of the whole browser run)."""
        return self._run(url, "--dump-dom")

    def screenshot(self, url: str, path: Path, width: int = 1400, height: int = 2400) -> None:
        self._run(url, f"--screenshot={path}", width=width, height=height)
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"

    def close(self) -> None:
        shutil.rmtree(self.profile, ignore_errors=True)


class Dom(HTMLParser):
    """The elements of a dumped DOM as (tag, attributes) in order, and the text of elements by id."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self._text: dict[str, list[str]] = {}
        self._open: list[str | None] = []
        self.feed(html)
        self.text = {k: "".join(v) for k, v in self._text.items()}

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.elements.append((tag, attrs))
        if tag not in ("meta", "input", "br", "img", "link", "rect", "line"):
            self._open.append(attrs.get("id"))
            if attrs.get("id"):
                self._text[attrs["id"]] = []

    def handle_endtag(self, tag):
        if self._open and tag not in ("meta", "input", "br", "img", "link", "rect", "line"):
            self._open.pop()

    def handle_data(self, data):
        for element_id in self._open:
            if element_id:
                self._text[element_id].append(data)

    def find(self, tag: str, **attrs: str) -> list[dict[str, str | None]]:
        """Elements with that tag whose attributes include ``attrs`` (attribute names with - as _)."""
        want = {k.replace("_", "-"): v for k, v in attrs.items()}
        return [a for t, a in self.elements if t == tag and all(a.get(k) == v for k, v in want.items())]

    def body(self) -> dict[str, str | None]:
        return self.find("body")[0]
