"""Headless Chromium driven over the DevTools protocol, for the browser check and the screenshots.

:class:`Browser` lays a page out at any window width (a phone's included, which ``--window-size`` cannot do
in headless Chromium) and screenshots it whole; :mod:`resnet_theory.book.browser` uses it.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import subprocess
import tempfile
import time
from pathlib import Path

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--allow-file-access-from-files",
)


class Browser:
    """One headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``: commands
    on its file descriptor 3, answers on 4, each a JSON message ended by a NUL byte). Unlike ``--window-size``
    (at least 500 px wide in headless Chromium), it lays a page out at any width, a phone's included
    (``Emulation.setDeviceMetricsOverride``), and screenshots the whole page in a window as tall as it.
    A context manager: ``with Browser(chromium) as browser: tab = browser.open(url, 390) ...``."""

    def __init__(self, chromium: str, timeout: float = 60.0):
        self.chromium, self.timeout = chromium, timeout
        self._next_id, self._buffer, self._events = 0, b"", []

    def __enter__(self) -> Browser:
        self._profile = tempfile.TemporaryDirectory()

        def high(fd: int) -> int:  # a copy numbered 10 or more, so dup2 onto 3 and 4 cannot clobber it
            copy = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
            os.close(fd)
            return copy

        to_chromium, self._commands = map(high, os.pipe())
        self._answers, from_chromium = map(high, os.pipe())

        def on_3_and_4():
            os.dup2(to_chromium, 3)
            os.dup2(from_chromium, 4)

        self.proc = subprocess.Popen(
            [
                self.chromium,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={self._profile.name}",
                "--hide-scrollbars",
                "--remote-debugging-pipe",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=False,
            preexec_fn=on_3_and_4,
        )
        os.close(to_chromium)
        os.close(from_chromium)
        return self

    def __exit__(self, *exc):
        try:
            self.send("Browser.close")
        except (RuntimeError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._commands)
        os.close(self._answers)
        self._profile.cleanup()

    def _message(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._answers], [], [], left)[0]:
                raise RuntimeError(f"chromium did not answer within {self.timeout:.0f} s")
            chunk = os.read(self._answers, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed its DevTools pipe (it exited)")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        """Send one command and return its result; events that arrive meanwhile are kept for :meth:`wait_for`."""
        self._next_id += 1
        command = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            command["sessionId"] = session
        os.write(self._commands, json.dumps(command).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            message = self._message(deadline)
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise RuntimeError(f"chromium: {method}: {message['error'].get('message')}")
                return message.get("result", {})
            self._events.append(message)

    def wait_for(self, event: str, session: str) -> dict:
        deadline = time.monotonic() + self.timeout
        while True:
            for i, message in enumerate(self._events):
                if message.get("method") == event and message.get("sessionId") == session:
                    return self._events.pop(i)
            self._events.append(self._message(deadline))

    def open(self, url: str, width: int, height: int = 1000) -> str:
        """Load ``url`` in a new tab laid out ``width`` CSS pixels wide; return the tab's session once the page has
        loaded and MathJax has typeset it. The layout is a desktop browser's at that width (the theme's phone
        layout below its breakpoints): Chromium's mobile emulation would also enlarge text (text autosizing)
        once the window is as tall as the page, for the screenshot."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session,
        )
        self.send("Page.enable", session=session)
        self.send("Page.navigate", {"url": url}, session)
        self.wait_for("Page.loadEventFired", session)
        self.evaluate(
            session,
            "(window.MathJax && MathJax.startup && MathJax.startup.promise"
            " ? MathJax.startup.promise : Promise.resolve()).then(function () {"
            " return document.fonts.ready; }).then(function () { return true; })",
        )
        return session

    def evaluate(self, session: str, expression: str):
        result = self.send(
            "Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True}, session
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"chromium: script failed: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def screenshot(self, session: str, output: Path, width: int, max_height: int) -> tuple[int, int]:
        """A PNG of the whole page (up to ``max_height`` pixels tall), taken with the window as tall as the page,
        as a reader scrolling down sees it (``captureBeyondViewport`` instead lays fixed and sticky parts of the
        theme out again and can drop the sidebars); returns its height and the page's."""
        height = full = 0
        for _ in range(3):  # the page's height can change with the window's (elements sized in vh)
            full = self.evaluate(session, "document.documentElement.scrollHeight")
            wanted = max(1, min(full, max_height))
            if wanted == height:
                break
            height = wanted
            self.send(
                "Emulation.setDeviceMetricsOverride",
                {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
                session,
            )
            self.evaluate(
                session,
                "window.scrollTo(0, 0); new Promise(function (done) {"
                " requestAnimationFrame(function () { requestAnimationFrame(done); }); })",
            )
        shot = self.send(
            "Page.captureScreenshot",
            {"format": "png", "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}},
            session,
        )
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_bytes(base64.b64decode(shot["data"]))
        return height, full

    def close(self, session: str) -> None:
        self.send("Page.close", session=session)
