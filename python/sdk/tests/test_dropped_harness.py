"""A harness or a client a program drops without closing it (an exception path, a forgotten
``close``) does not leave its bridge process and threads behind for the life of the interpreter:
once it is garbage collected, its bridge is shut down as ``close()`` would (exit 0). A dropped
harness or client says so with a ``ResourceWarning``, as an unclosed file does (shown only where
warnings are enabled), and is shut down even where warnings are errors."""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
import threading
import warnings
from pathlib import Path
from typing import Any, List

import pytest

from deepseek_harness import AsyncDeepSeekHarness, DeepSeekHarness, HarnessClient, tool

from conftest import call_within


@tool
def double(n: int) -> int:
    """Doubles a number."""
    return 2 * n


def _bridge_exits_once_dropped(procs: List[Any]) -> None:
    gc.collect()
    for proc in procs:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail("the dropped harness's (or client's) bridge is still running 30 s after it was collected")
        assert proc.returncode == 0
    for _ in range(300):
        if not [t for t in threading.enumerate() if t.name.startswith("harness-bridge")]:
            return
        threading.Event().wait(0.1)
    pytest.fail(f"threads left: {[t.name for t in threading.enumerate()]}")


def _harness_warnings(caught: List[warnings.WarningMessage]) -> List[str]:
    messages = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    return [m for m in messages if m.startswith("unclosed harness (bridge pid ")]


@pytest.mark.parametrize("with_tools", [False, True])
def test_a_dropped_harness_shuts_its_bridge_down(backend, with_tools):
    def use() -> Any:
        kwargs = {"tools": [double]} if with_tools else {}
        h = DeepSeekHarness(provider="scripted", model="demo", cwd=backend.workspace,
                            session_root=backend.session_root, bridge_bin=backend.bridge, **kwargs)
        assert call_within(60, h.run, "hi").ok
        return h.client.process

    # Like a dropped client (and an unclosed file), it says so: a test that forgot to close
    # its harness is told, where ResourceWarnings are shown (pytest -W default, python -X dev).
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        proc = use()
        _bridge_exits_once_dropped([proc])
    assert _harness_warnings(caught) == [f"unclosed harness (bridge pid {proc.pid}, workspace {backend.workspace}): "
                                         "shutting its bridge down; call close() or use `with` / `async with`"]
    assert _unclosed_warnings(caught) == []  # one warning, not the client's too


def test_a_dropped_async_harness_shuts_its_bridge_down(backend):
    async def use() -> Any:
        h = AsyncDeepSeekHarness(provider="scripted", model="demo", cwd=backend.workspace,
                                 session_root=backend.session_root, bridge_bin=backend.bridge)
        assert (await h.run("hi")).ok
        return h.client.process

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _bridge_exits_once_dropped([asyncio.run(use())])
    assert len(_harness_warnings(caught)) == 1


def test_a_dropped_harness_never_started_says_nothing(backend):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        DeepSeekHarness(provider="scripted", model="demo", cwd=backend.workspace, bridge_bin=backend.bridge)
        gc.collect()
    assert _harness_warnings(caught) == []


def test_a_closed_harness_is_not_closed_again_when_collected(backend):
    h = DeepSeekHarness(provider="scripted", model="demo", cwd=backend.workspace,
                        session_root=backend.session_root, bridge_bin=backend.bridge)
    h.start()
    h.close()
    del h
    gc.collect()
    assert not [t for t in threading.enumerate() if t.name == "harness-bridge-dropped"]


def _client(backend: Any) -> HarnessClient:
    return HarnessClient(backend.bridge, session_root=backend.session_root, shutdown_timeout_seconds=5.0)


def _unclosed_warnings(caught: List[warnings.WarningMessage]) -> List[str]:
    messages = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    return [m for m in messages if m.startswith("unclosed <deepseek_harness.client.HarnessClient")]


def test_a_dropped_client_shuts_its_bridge_down(backend):
    def use() -> Any:
        c = _client(backend).start()
        c.initialize(backend.workspace, "scripted", backend.script(None))
        subscription = c.subscribe_notifications()
        assert call_within(60, c.session_prompt, "s1", "hi").status == "ok"
        assert subscription.get(timeout=30) is not None
        return c.process

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _bridge_exits_once_dropped([use()])
    assert len(_unclosed_warnings(caught)) == 1


def test_a_closed_client_is_not_closed_again_when_collected(backend):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        c = _client(backend).start()
        c.close()
        del c
        gc.collect()
    assert _unclosed_warnings(caught) == []
    assert not [t for t in threading.enumerate() if t.name == "harness-bridge-dropped"]


DROP_A_CLIENT = """
import gc, sys
from deepseek_harness import HarnessClient
def use():
    c = HarnessClient(sys.argv[1], session_root=sys.argv[2]).start()
    c.initialize(sys.argv[3], "scripted", "demo")
    return c.process
proc = use()
gc.collect()
print(proc.wait(30))
"""


def test_a_dropped_client_says_so_only_where_warnings_are_enabled(backend):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONWARNINGS", "PYTHONDEVMODE")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1] / "src")

    def run(*flags: str) -> "subprocess.CompletedProcess[str]":
        return subprocess.run([sys.executable, *flags, "-c", DROP_A_CLIENT, str(backend.bridge), str(backend.session_root),
                               str(backend.workspace)], capture_output=True, text=True, timeout=120, env=env)

    quiet = run()
    assert (quiet.returncode, quiet.stdout.strip(), quiet.stderr) == (0, "0", "")
    shown = run("-W", "default::ResourceWarning")
    assert (shown.returncode, shown.stdout.strip()) == (0, "0"), shown.stderr
    assert "ResourceWarning: unclosed <deepseek_harness.client.HarnessClient" in shown.stderr


def test_a_dropped_client_is_shut_down_where_warnings_are_errors(backend):
    # `-W error` (pytest's `filterwarnings = error`): the ResourceWarning raises out of the
    # finalizer. The bridge must be shut down all the same, and the warning still reported.
    done = _run_under_warnings_as_errors(DROP_A_CLIENT, backend)
    assert "ResourceWarning: unclosed <deepseek_harness.client.HarnessClient" in done.stderr


def _run_under_warnings_as_errors(code: str, backend) -> "subprocess.CompletedProcess[str]":
    """Runs ``code`` (which prints the dropped bridge's exit status) under ``-W error``; it must print 0."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONWARNINGS", "PYTHONDEVMODE")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1] / "src")
    done = subprocess.run([sys.executable, "-W", "error", "-c", code, str(backend.bridge),
                           str(backend.session_root), str(backend.workspace)],
                          capture_output=True, text=True, timeout=120, env=env)
    assert (done.returncode, done.stdout.strip()) == (0, "0"), done.stderr
    return done


DROP_A_HARNESS = """
import gc, sys
from deepseek_harness import DeepSeekHarness
def use():
    h = DeepSeekHarness(provider="scripted", model="demo", bridge_bin=sys.argv[1], session_root=sys.argv[2], cwd=sys.argv[3])
    h.start()
    return h.client.process
proc = use()
gc.collect()
print(proc.wait(30))
"""


def test_a_dropped_harness_is_shut_down_where_warnings_are_errors(backend):
    done = _run_under_warnings_as_errors(DROP_A_HARNESS, backend)
    assert "ResourceWarning: unclosed harness (bridge pid" in done.stderr
