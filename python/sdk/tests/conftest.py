"""Shared fixtures: the fake bridge (always), the real binary (when built; required in CI)."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Optional

import pytest

from deepseek_harness import AsyncDeepSeekHarness, DeepSeekHarness, HarnessClient

TESTS = Path(__file__).resolve().parent
FAKE_BRIDGE = TESTS / "fake_bridge.py"
REPO_ROOT = TESTS.parents[2]
REAL_BRIDGE = REPO_ROOT / "bin" / "harness-bridge"


SUBAGENT_SCRIPT = {
    "turns": [
        {
            "steps": [
                {"text": "delegating", "toolCalls": [{"id": "t1", "name": "task", "arguments": {"prompt": "look around", "description": "child"}}]},
                {"text": "parent done"},
            ]
        }
    ],
    "subagent": {"turns": [{"steps": [{"text": "child says hi"}]}]},
}


@pytest.fixture(autouse=True, scope="session")
def _isolated_state_home(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Every bridge a test starts without ``session_root`` keeps its logs in a temporary state
    folder, never the user's ``~/.local/state/harness-bridge`` (the SDK adds its ``env`` to this
    process's environment, and scripts a test runs inherit it too). ``HARNESS_SESSION_ROOT``
    would win over it, and a user's own root is not the tests' either. scripts/test.sh checks
    that a whole run wrote nothing under the (temporary) HOME it gives the suites."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
        patch.delenv("HARNESS_SESSION_ROOT", raising=False)
        yield


def real_bridge_or_skip() -> Path:
    """The real binary; skipped when absent, except in CI, where it must exist."""
    if REAL_BRIDGE.is_file() and os.access(REAL_BRIDGE, os.X_OK):
        return REAL_BRIDGE
    message = f"{REAL_BRIDGE} is missing: run `npm run build` at the repository root"
    if os.environ.get("CI"):
        pytest.fail(f"CI must build the binary first: {message}")
    pytest.skip(message)


def call_within(seconds: float, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Runs ``fn`` on a helper thread; fails the test if it has not returned after ``seconds``
    (a hang guard, not a performance assertion). Re-raises what ``fn`` raised."""
    box: Dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001
            box["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        pytest.fail(f"{getattr(fn, '__name__', fn)} did not finish within {seconds} s (hang)")
    if "error" in box:
        raise box["error"]
    return box.get("value")


def wait_until(cond: Callable[[], Any], seconds: float = 30.0) -> bool:
    """Polls ``cond`` every 50 ms until it holds or ``seconds`` pass; returns its last value (a
    generous bound for "promptly", never a timing assertion)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return bool(cond())


def run_async(coro: Any, seconds: float = 120) -> Any:
    """``asyncio.run(coro)`` with a hang guard (see :func:`call_within`): a test whose loop is
    stuck fails instead of hanging the suite."""
    import asyncio

    return call_within(seconds, asyncio.run, coro)


class Backend:
    """Builds clients and harnesses against one bridge (fake or real), in a tmp workspace."""

    def __init__(self, name: str, bridge: Path, tmp_path: Path) -> None:
        self.name = name
        self.bridge = bridge
        self.workspace = tmp_path / "workspace"
        self.workspace.mkdir()
        (self.workspace / "README.md").write_text("# Test workspace\nHello from the README.\n")
        self.session_root = tmp_path / "sessions"
        self.tmp_path = tmp_path
        self._n = 0
        self.opened: list = []

    @property
    def is_real(self) -> bool:
        return self.name == "real"

    def script(self, script: Optional[Dict[str, Any]]) -> str:
        if script is None:
            return "demo"
        self._n += 1
        path = self.tmp_path / f"script-{self._n}.json"
        path.write_text(json.dumps(script))
        return str(path)

    def client(self, env: Optional[Dict[str, str]] = None, **kwargs: Any) -> HarnessClient:
        kwargs.setdefault("shutdown_timeout_seconds", 5.0)
        c = HarnessClient(self.bridge, session_root=self.session_root, env=env, **kwargs)
        self.opened.append(c)
        return c

    def initialized_client(self, script: Optional[Dict[str, Any]] = None, env: Optional[Dict[str, str]] = None,
                           **kwargs: Any) -> HarnessClient:
        c = self.client(env=env, **kwargs).start()
        c.initialize(self.workspace, "scripted", self.script(script))
        return c

    def harness(self, script: Optional[Dict[str, Any]] = None, **kwargs: Any) -> DeepSeekHarness:
        kwargs.setdefault("shutdown_timeout_seconds", 5.0)
        h = DeepSeekHarness(
            provider="scripted",
            model=self.script(script),
            cwd=self.workspace,
            session_root=self.session_root,
            bridge_bin=self.bridge,
            **kwargs,
        )
        self.opened.append(h)
        return h

    def async_harness(self, script: Optional[Dict[str, Any]] = None, **kwargs: Any) -> AsyncDeepSeekHarness:
        kwargs.setdefault("shutdown_timeout_seconds", 5.0)
        h = AsyncDeepSeekHarness(
            provider="scripted",
            model=self.script(script),
            cwd=self.workspace,
            session_root=self.session_root,
            bridge_bin=self.bridge,
            **kwargs,
        )
        # close_all runs outside any event loop: the blocking harness underneath closes the same way.
        self.opened.append(h._harness)
        return h

    def close_all(self) -> None:
        for o in self.opened:
            o.close()


@pytest.fixture
def fake(tmp_path: Path):
    b = Backend("fake", FAKE_BRIDGE, tmp_path)
    yield b
    b.close_all()


@pytest.fixture
def real(tmp_path: Path):
    b = Backend("real", real_bridge_or_skip(), tmp_path)
    yield b
    b.close_all()


@pytest.fixture(params=["fake", "real"])
def backend(request: pytest.FixtureRequest, tmp_path: Path):
    """Normal behaviour runs against both the fake and the real binary."""
    bridge = FAKE_BRIDGE if request.param == "fake" else real_bridge_or_skip()
    b = Backend(request.param, bridge, tmp_path)
    yield b
    b.close_all()


@pytest.fixture
def fake_log(tmp_path: Path) -> Path:
    """A file the fake bridge appends every received frame to (its argv first)."""
    return tmp_path / "fake-bridge.log"


def read_fake_log(path: Path) -> list:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
