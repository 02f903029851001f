"""A string that is not valid UTF-8 — a lone surrogate, as ``os.fsdecode`` and ``os.getcwd``
make of a file name's bytes that are not UTF-8 — cannot travel in JSON. Before, any such string
in a request (a workspace path, a prompt, an answer) raised a raw ``UnicodeEncodeError`` from
the SDK's encoder; now it is :class:`NotUtf8Error` naming the field, nothing is written, no
waiter is left, and the client serves on."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from deepseek_harness import AsyncDeepSeekHarness, DeepSeekHarness, NotUtf8Error, UnsendableRequestError

from conftest import Backend, call_within, run_async

GUARD = 30.0


def bad_folder(tmp_path: Path) -> str:
    """A folder whose name holds the byte 0xE9 (Latin-1 "é"), as Python names it."""
    raw = os.fsencode(tmp_path) + b"/w\xe9s"
    os.mkdir(raw)
    return os.fsdecode(raw)


def harness(backend: Backend, cwd: object, cls: type = DeepSeekHarness) -> object:
    return cls(provider="scripted", model="demo", cwd=cwd, bridge_bin=backend.bridge,
               session_root=backend.session_root, shutdown_timeout_seconds=5.0)


def test_a_workspace_whose_name_is_not_utf8_is_refused_naming_cwd(backend: Backend, tmp_path: Path) -> None:
    folder = bad_folder(tmp_path)
    h = harness(backend, folder)
    with pytest.raises(NotUtf8Error) as info:
        call_within(GUARD, h.start)
    exc = info.value
    assert isinstance(exc, UnsendableRequestError) and isinstance(exc, ValueError)
    assert exc.method == "initialize" and exc.param == "cwd" and exc.value == folder
    assert "cwd is not valid UTF-8" in str(exc) and "byte 0xe9" in str(exc) and "valid UTF-8" in str(exc)


def test_running_from_such_a_folder_is_refused_the_same_way(backend: Backend, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(bad_folder(tmp_path))
    with pytest.raises(NotUtf8Error) as info:
        call_within(GUARD, harness(backend, None).start)
    assert info.value.param == "cwd"

    async def main() -> None:
        with pytest.raises(NotUtf8Error):
            await harness(backend, None, AsyncDeepSeekHarness).start()

    run_async(main(), GUARD)


def test_a_prompt_or_answer_with_a_lone_surrogate_is_refused_and_the_client_serves_on(backend: Backend) -> None:
    h = backend.harness()
    with h:
        for prompt, param in [("list caf\udce9.txt", "contentBlocks[0].text"),
                              ([{"type": "text", "text": "ok"}, {"type": "text", "text": "half \ud83d"}],
                               "contentBlocks[1].text")]:
            with pytest.raises(NotUtf8Error) as info:
                call_within(GUARD, h.run, prompt)
            assert info.value.method == "session/prompt" and info.value.param == param
        with pytest.raises(NotUtf8Error) as info:
            call_within(GUARD, h.run, "hi", session_id="s\udcff")
        assert info.value.param == "sessionId"
        with pytest.raises(NotUtf8Error) as info:
            call_within(GUARD, h.client.session_tool_result, "s1", "c1", "caf\udce9")
        assert info.value.param == "content[0].text"
        assert h.client._router.pending == {} and h.client._router.routes == {}, "a waiter was left registered"
        assert call_within(GUARD, h.run, "fine").ok

    async def main() -> None:
        async with backend.async_harness() as a:
            with pytest.raises(NotUtf8Error):
                await a.run("caf\udce9")
            assert (await a.run("fine")).ok

    run_async(main(), GUARD)
