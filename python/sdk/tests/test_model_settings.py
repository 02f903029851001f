"""The model settings of :class:`HarnessOptions` reach the model server through the real binary,
in DeepSeek's field names, and the bridge refuses the ones DeepSeek cannot take."""

from __future__ import annotations

import sys

import pytest

from deepseek_harness import DeepSeekHarness, HarnessOptions, JsonRpcError

from conftest import REPO_ROOT, call_within, real_bridge_or_skip

sys.path.insert(0, str(REPO_ROOT / "scripts"))
from fake_deepseek import FakeDeepSeek  # noqa: E402


def harness(base_url: str, tmp_path, **settings) -> DeepSeekHarness:
    return DeepSeekHarness(
        provider="deepseek",
        cwd=tmp_path,
        bridge_bin=real_bridge_or_skip(),
        env={"DEEPSEEK_API_KEY": "sk-test-not-a-real-key", "DEEPSEEK_BASE_URL": base_url,
             "HARNESS_MAX_RETRIES": "0", "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"},
        **settings,
    )


def say(text: str) -> list:
    return [{"events": [{"delta": {"role": "assistant", "content": text}}, {"delta": {}, "finish_reason": "stop"}]}]


def test_the_default_model_is_the_name_deepseek_recommends():
    assert HarnessOptions().model == "deepseek-flash"


def test_settings_reach_the_server_as_deepseek_names_them(tmp_path):
    with FakeDeepSeek() as server:
        server.table = {"Hello.": say("Hi.")}
        with harness(server.base_url, tmp_path, thinking="enabled", reasoning_effort="high", user="tenant-9",
                     tool_choice="auto", first_token_timeout_seconds=30, model_request_timeout_seconds=60) as h:
            result = call_within(30, h.run, "Hello.")
        assert result.status == "ok", result
        assert server.problems == []
        body = server.requests[0]["body"]
        assert body["model"] == "deepseek-flash"
        assert (body["thinking"], body["reasoning_effort"], body["user_id"], body["tool_choice"]) == (
            {"type": "enabled"}, "high", "tenant-9", "auto")


def test_a_named_tool_choice_forces_only_the_first_step(tmp_path):
    call = {"index": 0, "id": "c1", "type": "function", "function": {"name": "glob", "arguments": '{"pattern": "*.none"}'}}
    with FakeDeepSeek() as server:
        server.table = {"Find.": [
            {"events": [{"delta": {"reasoning_content": "", "tool_calls": [call]}}, {"delta": {}, "finish_reason": "tool_calls"}]},
            *say("Nothing."),
        ]}
        with harness(server.base_url, tmp_path, tool_choice="glob") as h:
            result = call_within(30, h.run, "Find.")
        assert result.status == "ok", result
        choices = [r["body"].get("tool_choice") for r in server.requests]
        assert choices == [{"type": "function", "function": {"name": "glob"}}, None]


@pytest.mark.parametrize("settings, field", [
    ({"reasoning_effort": "medium"}, "params.reasoningEffort"),
    ({"thinking": "maybe"}, "params.thinking"),
    ({"user": "x" * 513}, "params.user"),
    ({"first_token_timeout_seconds": -1}, "params.firstTokenTimeoutMs"),
])
def test_settings_deepseek_cannot_take_fail_start_with_the_field_named(tmp_path, settings, field):
    with FakeDeepSeek() as server:
        h = harness(server.base_url, tmp_path, **settings)
        with pytest.raises(JsonRpcError) as caught:
            call_within(30, h.start)
        h.close()
        assert caught.value.code == -32602 and field in str(caught.value)
        assert server.requests == []
