"""No request the SDK sends is dropped for its size. The bridge discards a line longer than its
``--max-line-bytes`` (16 MiB by default) with an error of ``id: null``, which no waiter hears:
before, such a prompt, ``initialize`` or answer waited for ever. Now the SDK knows the limit of
the command line it started the bridge with, refuses a longer request before writing it
(:class:`RequestTooLargeError`, nothing registered, the bridge still serving), and cuts the
answers it makes itself (client tools, approvals) to fit."""

from __future__ import annotations

from pathlib import Path
from typing import Any, List

import pytest

from deepseek_harness import (
    Allow, Deny, HarnessClient, HookRequestEvent, Hooks, PermissionRequestEvent, PromptSubmitAnswer, RequestTooLargeError,
    UnsendableRequestError, tool,
)
from deepseek_harness._internal.outgoing import DEFAULT_MAX_LINE_BYTES, max_line_bytes

from conftest import Backend, call_within, run_async
from test_client_tools import GUARD, call, calls, harness, results, text_of

NO_TIMEOUT = 3600.0  # the bridge's wait for an answer: never what ends these tests
SMALL = ["--max-line-bytes", "20000"]


def assert_refused(exc: RequestTooLargeError, limit: int, param: str) -> None:
    assert isinstance(exc, UnsendableRequestError) and isinstance(exc, ValueError)
    assert exc.limit == limit and exc.size > limit and exc.param == param
    assert "--max-line-bytes" in str(exc) and "not sent" in str(exc)


def test_a_prompt_past_the_default_limit_is_refused_and_the_bridge_serves_on(backend: Backend) -> None:
    h = backend.harness()
    with h:
        with pytest.raises(RequestTooLargeError) as info:
            call_within(GUARD, h.run, "x" * 17_000_000)
        assert_refused(info.value, DEFAULT_MAX_LINE_BYTES, "contentBlocks[0].text")
        assert h.client._router.pending == {} and h.client._router.routes == {}, "a waiter was left registered"
        assert call_within(GUARD, h.run, "small").ok


def test_the_limit_of_extra_args_holds_for_every_front(backend: Backend) -> None:
    prompt = "y" * 4000
    h = backend.harness(extra_args=["--max-line-bytes", "2000"])
    with h:
        with pytest.raises(RequestTooLargeError) as info:
            call_within(GUARD, h.run, prompt)
        assert_refused(info.value, 2000, "contentBlocks[0].text")
        with pytest.raises(RequestTooLargeError):
            call_within(GUARD, lambda: list(h.stream(prompt)))
        with pytest.raises(RequestTooLargeError):
            call_within(GUARD, h.start_session().steer, prompt)
        assert call_within(GUARD, h.run, "small").ok

    async def main() -> None:
        async with backend.async_harness(extra_args=["--max-line-bytes=2000"]) as a:
            with pytest.raises(RequestTooLargeError):
                await a.run(prompt)
            with pytest.raises(RequestTooLargeError):
                async with a.stream(prompt) as events:
                    async for _ in events:
                        pass
            assert (await a.run("small")).ok

    run_async(main(), GUARD)


def test_instructions_past_the_limit_fail_the_start_instead_of_hanging_initialize(backend: Backend) -> None:
    h = backend.harness(instructions="z" * 17_000_000)
    with pytest.raises(RequestTooLargeError) as info:
        call_within(GUARD, h.start)
    assert_refused(info.value, DEFAULT_MAX_LINE_BYTES, "instructions")
    assert h.client.closed, "a failed start closes its bridge"

    async def main() -> None:
        a = backend.async_harness(instructions="z" * 5000, extra_args=["--max-line-bytes", "4096"])
        with pytest.raises(RequestTooLargeError):
            await a.start()

    run_async(main(), GUARD)


def test_a_raw_answer_past_the_limit_is_refused(real: Backend) -> None:
    c = real.initialized_client(extra_args=SMALL)
    with pytest.raises(RequestTooLargeError) as info:
        call_within(GUARD, c.session_tool_result, "s1", "c1", "r" * 30_000)
    assert info.value.param == "content[0].text" and info.value.method == "session/tool_result"
    assert c._router.pending == {}


def test_a_client_tools_result_is_cut_to_the_bridges_own_limit(tmp_path: Path) -> None:
    """Before, only results past 8 MiB were cut: under a lower --max-line-bytes the answer was
    dropped and the turn waited out the client-tool timeout."""
    @tool
    def dump() -> str:
        """Dumps a lot."""
        return "\x01" * 10_000 + "a" * 40_000  # the start is the densest part: 6 bytes a character

    h = harness(tmp_path, [calls(call("c1", "dump")), {"text": "done"}], tools=[dump],
                client_tool_timeout_seconds=NO_TIMEOUT, extra_args=SMALL)
    with h:
        result = call_within(GUARD, h.run, "go")
    assert result.ok, result
    text = text_of(results(result.events)["c1"])
    assert "[cut by the SDK: this result was 50000 characters" in text and text.startswith("\x01")


def test_a_deny_message_and_allowed_arguments_past_the_limit_still_answer(tmp_path: Path) -> None:
    asked: List[Any] = []

    def review(request: PermissionRequestEvent) -> Any:
        asked.append(request.call_id)
        if request.call_id == "w1":
            return Deny("no: " + "n" * 30_000)
        return Allow(arguments={"path": "b.txt", "content": "c" * 19_900})

    steps = [calls(call("w1", "write_file", path="a.txt", content="x")),
             calls(call("w2", "write_file", path="b.txt", content="x")), {"text": "done"}]
    h = harness(tmp_path, steps, approvals="writes", can_use_tool=review, client_tool_timeout_seconds=NO_TIMEOUT,
                extra_args=SMALL)
    with h:
        result = call_within(GUARD, h.run, "go")
    assert result.ok and asked == ["w1", "w2"], result
    denied, too_big = results(result.events)["w1"], results(result.events)["w2"]
    assert denied["isError"] and "no: nnn" in text_of(denied) and "[cut by the SDK: this message" in text_of(denied)
    assert too_big["isError"] and "too large" in text_of(too_big)
    assert not (tmp_path / "a.txt").exists() and not (tmp_path / "b.txt").exists()


def test_a_hooks_answer_past_the_limit_fails_closed_instead_of_waiting(tmp_path: Path) -> None:
    def context(event: HookRequestEvent) -> PromptSubmitAnswer:
        return PromptSubmitAnswer(context="k" * 30_000)

    h = harness(tmp_path, [{"text": "never"}], hooks=Hooks(prompt_submit=context), client_tool_timeout_seconds=NO_TIMEOUT,
                extra_args=SMALL)
    with h:
        blocked = call_within(GUARD, h.run, "go")
    assert blocked.reason.kind == "blocked" and "too large to send" in str(blocked.reason.message)


@pytest.mark.parametrize("args,limit", [
    ([], DEFAULT_MAX_LINE_BYTES),
    (["--max-line-bytes", "2000"], 2000),
    (["--max-line-bytes=2000"], 2000),
    (["--max-line-bytes", "5", "--max-line-bytes", "3000"], 3000),   # the last wins, as in the bridge
    (["--max-line-bytes", " 0x800\n"], 2048),                         # as JavaScript's Number() reads it
    (["--max-line-bytes", "2e3"], 2000),
    (["--max-line-bytes", "2000.0"], 2000),
    (["--session-root", "/s", "--max-line-bytes", "700", "--log-level", "warn"], 700),
    (["--max-line-bytes", "1.5"], DEFAULT_MAX_LINE_BYTES),           # refused by the bridge: it never serves
    (["--max-line-bytes"], DEFAULT_MAX_LINE_BYTES),
    (["--", "--max-line-bytes", "9"], DEFAULT_MAX_LINE_BYTES),
], ids=str)
def test_the_line_limit_is_read_off_the_command_line_as_the_bridge_reads_it(args: List[str], limit: int) -> None:
    assert max_line_bytes(["harness-bridge", "--stdio", *args]) == limit


def test_a_client_started_with_a_limit_knows_it(real: Backend) -> None:
    c = HarnessClient(real.bridge, extra_args=["--max-line-bytes", "4096"], shutdown_timeout_seconds=5.0)
    real.opened.append(c)
    c.start()
    assert c._link is not None and c._link.max_line_bytes == 4096
