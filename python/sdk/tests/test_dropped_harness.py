"""A harness a program drops without closing it (an exception path, a forgotten ``close``) does
not leave its bridge process and threads behind for the life of the interpreter: once it is
garbage collected, its bridge is shut down as :meth:`close` would (exit 0)."""

from __future__ import annotations

import asyncio
import gc
import subprocess
import threading
from typing import Any, List

import pytest

from deepseek_harness import AsyncDeepSeekHarness, DeepSeekHarness, tool

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
            pytest.fail("the dropped harness's bridge is still running 30 s after it was collected")
        assert proc.returncode == 0
    for _ in range(300):
        if not [t for t in threading.enumerate() if t.name.startswith("harness-bridge")]:
            return
        threading.Event().wait(0.1)
    pytest.fail(f"threads left: {[t.name for t in threading.enumerate()]}")


@pytest.mark.parametrize("with_tools", [False, True])
def test_a_dropped_harness_shuts_its_bridge_down(backend, with_tools):
    def use() -> Any:
        kwargs = {"tools": [double]} if with_tools else {}
        h = DeepSeekHarness(provider="scripted", model="demo", cwd=backend.workspace,
                            session_root=backend.session_root, bridge_bin=backend.bridge, **kwargs)
        assert call_within(60, h.run, "hi").ok
        return h.client.process

    _bridge_exits_once_dropped([use()])


def test_a_dropped_async_harness_shuts_its_bridge_down(backend):
    async def use() -> Any:
        h = AsyncDeepSeekHarness(provider="scripted", model="demo", cwd=backend.workspace,
                                 session_root=backend.session_root, bridge_bin=backend.bridge)
        assert (await h.run("hi")).ok
        return h.client.process

    _bridge_exits_once_dropped([asyncio.run(use())])


def test_a_closed_harness_is_not_closed_again_when_collected(backend):
    h = DeepSeekHarness(provider="scripted", model="demo", cwd=backend.workspace,
                        session_root=backend.session_root, bridge_bin=backend.bridge)
    h.start()
    h.close()
    del h
    gc.collect()
    assert not [t for t in threading.enumerate() if t.name == "harness-bridge-dropped"]
