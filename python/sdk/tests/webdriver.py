"""A small W3C WebDriver client over HTTP (urllib), for the viewer's browser tests.

Why not Selenium: the tests need five commands (new session, navigate, execute script,
screenshot, delete), and Selenium would bring its driver manager, which tries to download
drivers; here the driver is Debian's ``chromedriver`` next to Debian's ``chromium``, found on
``PATH``. Everything the browser writes (profile, caches, crash reports) goes to a temporary
folder the caller gives: ``HOME`` and the XDG folders of the driver point there too.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional


def find_browser() -> Optional[str]:
    """Why the browser tests cannot run here, or None when chromium and chromedriver are both on PATH."""
    missing = [name for name in ("chromium", "chromedriver") if shutil.which(name) is None]
    if missing:
        return f"{' and '.join(missing)} not on PATH (Debian: apt-get install chromium chromium-driver)"
    return None


class WebDriver:
    """One headless chromium, driven through chromedriver; close() ends both."""

    def __init__(self, temp: Path, width: int = 1280, height: int = 900) -> None:
        temp.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, HOME=str(temp), XDG_CONFIG_HOME=str(temp / "config"), XDG_CACHE_HOME=str(temp / "cache"))
        self._log = open(temp / "chromedriver.log", "w+b")
        self._driver = subprocess.Popen([shutil.which("chromedriver") or "chromedriver", "--port=0"], stdout=self._log,
                                        stderr=subprocess.STDOUT, env=env)
        self._base = f"http://127.0.0.1:{self._port()}"
        args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                f"--user-data-dir={temp / 'profile'}", f"--window-size={width},{height}", "--hide-scrollbars"]
        caps = {"browserName": "chrome", "goog:chromeOptions": {"binary": shutil.which("chromium"), "args": args}}
        self.session = self._call("POST", "/session", {"capabilities": {"alwaysMatch": caps}})["sessionId"]

    def _port(self) -> int:
        """The port chromedriver says it took (it was given 0: any free one)."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            self._log.seek(0)
            found = re.search(rb"started successfully on port (\d+)", self._log.read())
            if found:
                return int(found.group(1))
            if self._driver.poll() is not None:
                break
            time.sleep(0.05)
        self._log.seek(0)
        raise RuntimeError(f"chromedriver did not start: {self._log.read().decode(errors='replace')[-2000:]}")

    def _call(self, method: str, path: str, body: Optional[Dict[str, Any]] = None) -> Any:
        data = json.dumps(body if body is not None else {}).encode() if method == "POST" else None
        request = urllib.request.Request(self._base + path, data=data, method=method, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return json.loads(response.read())["value"]
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"WebDriver {method} {path}: {exc.code} {exc.read().decode(errors='replace')[:2000]}") from None

    def get(self, url: str) -> None:
        self._call("POST", f"/session/{self.session}/url", {"url": url})

    def js(self, script: str, *args: Any) -> Any:
        """Runs ``script`` (a function body: ``return …``) in the page; its result."""
        return self._call("POST", f"/session/{self.session}/execute/sync", {"script": script, "args": list(args)})

    def wait_for(self, script: str, what: str, seconds: float = 30) -> Any:
        """Polls ``script`` until it returns something truthy; fails naming ``what`` after
        ``seconds`` (a hang guard: nothing is asserted about how long it took)."""
        deadline = time.monotonic() + seconds
        while True:
            value = self.js(script)
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"the page never showed {what}; its text: {self.text()[:3000]!r}")
            time.sleep(0.1)

    def text(self) -> str:
        return self.js("return document.body.innerText")

    def screenshot(self, path: Path) -> None:
        path.write_bytes(base64.b64decode(self._call("GET", f"/session/{self.session}/screenshot")))

    def close(self) -> None:
        try:
            self._call("DELETE", f"/session/{self.session}")
        except Exception:  # noqa: BLE001 - the driver goes below either way
            pass
        self._driver.terminate()
        try:
            self._driver.wait(10)
        except subprocess.TimeoutExpired:
            self._driver.kill()
            self._driver.wait()
        self._log.close()


def until(check: Callable[[], Any], what: str, seconds: float = 30) -> Any:
    """Polls ``check`` until truthy (a hang guard, as in :meth:`WebDriver.wait_for`)."""
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"never: {what}")
        time.sleep(0.05)


__all__: List[str] = ["WebDriver", "find_browser", "until"]
