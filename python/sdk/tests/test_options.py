"""HarnessOptions: one documented object for every setting, keyword arguments overriding its
fields, the same for the blocking and asyncio harnesses and (with its own three names) for
HarnessClient."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from deepseek_harness import AsyncDeepSeekHarness, DeepSeekHarness, HarnessClient, HarnessOptions

from conftest import call_within, read_fake_log, run_async

# A turn goes on after a step with a tool call, so this one takes three model requests.
THREE_STEPS = {"steps": [{"text": "one", "toolCalls": [{"name": "glob", "arguments": {"pattern": "*"}}]},
                         {"text": "two", "toolCalls": [{"name": "glob", "arguments": {"pattern": "*"}}]},
                         {"text": "three"}]}


def base_options(fake, script=None, **fields):
    return HarnessOptions(provider="scripted", model=fake.script(script), cwd=fake.workspace,
                          session_root=fake.session_root, bridge_bin=fake.bridge, **fields)


def test_keywords_override_the_options_which_stay_as_they_are():
    base = HarnessOptions(provider="scripted", model="demo", max_steps=3, tools=["read_file"])
    h = DeepSeekHarness(options=base, model="other", max_steps=None)
    assert (h.provider, h.model, h.max_steps, h.tools) == ("scripted", "other", None, ["read_file"])
    assert h.options == dataclasses.replace(base, model="other", max_steps=None)
    assert (base.model, base.max_steps) == ("demo", 3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        base.model = "changed"  # type: ignore[misc]


def test_the_defaults_are_those_of_the_keyword_arguments():
    h = DeepSeekHarness()
    assert h.options == HarnessOptions()
    assert (h.provider, h.model, h.cwd, h.tools) == ("deepseek", "deepseek-flash", None, None)
    assert h.client.request_timeout_seconds is None and h.client.shutdown_timeout_seconds == 5.0


def test_options_copy_what_the_caller_may_change_later():
    env = {"A": "1"}
    tools = ["read_file"]
    o = HarnessOptions(env=env, tools=tools, extra_args=["--no-session-log"])
    env["A"] = "2"
    tools.append("bash")
    assert o.env == {"A": "1"} and o.tools == ("read_file",) and o.extra_args == ("--no-session-log",)


@pytest.mark.parametrize("make", [DeepSeekHarness, AsyncDeepSeekHarness, HarnessClient])
def test_an_unknown_keyword_is_refused_by_name(make):
    with pytest.raises(TypeError, match="unexpected keyword argument 'modle'"):
        make(modle="demo")


@pytest.mark.parametrize("make", [DeepSeekHarness, AsyncDeepSeekHarness])
def test_options_must_be_harness_options(make):
    with pytest.raises(TypeError, match="HarnessOptions"):
        make("scripted")


def test_a_harness_runs_with_options_and_overrides(fake):
    h = DeepSeekHarness(options=base_options(fake, THREE_STEPS, shutdown_timeout_seconds=5.0), max_steps=2)
    fake.opened.append(h)
    result = call_within(60, h.run, "hi")
    assert result.status == "error" and result.reason.kind == "max-steps" and result.reason.limit == 2
    assert result.final_response == "two"


def test_an_async_harness_takes_the_same_options(fake):
    options = base_options(fake, THREE_STEPS, max_steps=1, shutdown_timeout_seconds=5.0)

    async def main():
        async with AsyncDeepSeekHarness(options=options) as h:
            return await h.run("hi")

    result = run_async(main())
    assert result.reason.kind == "max-steps" and result.reason.limit == 1 and result.final_response == "one"


def test_the_client_takes_the_process_fields_and_its_own_names(fake, fake_log, tmp_path):
    options = HarnessOptions(session_root=fake.session_root, log_level="debug", env={"FAKE_BRIDGE_LOG": str(fake_log)},
                             default_max_steps=7, max_permission_mode="workspace-write", extra_args=["--x"],
                             bridge_cwd=tmp_path, shutdown_timeout_seconds=5.0,
                             # initialize's settings: not the command line's
                             max_steps=99, permission_mode="full")
    c = HarnessClient(fake.bridge, options=options, permission_mode="read-only")
    fake.opened.append(c)
    assert (c.max_steps, c.permission_mode, c.cwd, c.extra_args) == (7, "read-only", tmp_path, ["--x"])
    c.start()
    c.initialize(fake.workspace, "scripted", "demo")
    assert read_fake_log(fake_log)[0]["argv"] == [
        "--stdio", "--session-root", str(fake.session_root), "--log-level", "debug",
        "--max-steps", "7", "--permission-mode", "read-only", "--x"]
    # The keyword names of before HarnessOptions mean the same as ever.
    old = HarnessClient(fake.bridge, max_steps=3, permission_mode="read-only", cwd=tmp_path)
    assert (old.options.default_max_steps, old.options.max_permission_mode, old.options.bridge_cwd) == (3, "read-only", tmp_path)
    assert old.command()[1:] == ["--stdio", "--max-steps", "3", "--permission-mode", "read-only"]


def test_a_script_files_path_may_be_a_path_object_wherever_a_model_is_taken(fake, tmp_path):
    """``model=Path(...)`` crashed inside the SDK (``Object of type PosixPath is not JSON
    serializable``) while ``cwd``, ``bridge_bin`` and ``session_root`` took a Path."""
    script = Path(fake.script({"turns": [{"steps": [{"text": "from the script"}]}]}))
    options = base_options(fake, shutdown_timeout_seconds=5.0)
    assert dataclasses.replace(options, model=script).model == str(script)
    assert HarnessOptions(model=script).model == str(script)

    h = DeepSeekHarness(options=options, model=script)
    fake.opened.append(h)
    assert h.model == str(script)
    assert call_within(60, h.run, "hi").final_response == "from the script"

    async def main():
        async with AsyncDeepSeekHarness(options=dataclasses.replace(options, model=script)) as a:
            return await a.run("hi")

    assert run_async(main()).final_response == "from the script"

    c = fake.client().start()
    c.initialize(fake.workspace, "scripted", script)  # the low-level client too
    assert c.session_prompt("s1", "hi").status == "ok"

    later = DeepSeekHarness(options=options)
    fake.opened.append(later)
    later.model = script  # an attribute changed before start
    assert call_within(60, later.run, "hi").final_response == "from the script"


def test_a_batch_task_takes_a_path_object_for_its_model(tmp_path):
    from batch_support import scripted_options, write_script
    from deepseek_harness.batch import BatchTask, run_local

    script = write_script(tmp_path / "script.json", "batch done")
    options = dataclasses.replace(scripted_options(tmp_path, script), model=script)
    (tmp_path / "repo").mkdir()
    [result] = call_within(60, run_local, [BatchTask(id="t", prompt="go", workspace=tmp_path / "repo", options=options)])
    assert result.ok and result.final_response == "batch done", result
