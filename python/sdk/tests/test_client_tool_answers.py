"""Every client tool call and approval gets exactly one answer the bridge takes, whatever the
user's function gives back: text that is not UTF-8, a result past the bridge's line limit, an
exception whose str() raises, allowed arguments that are not JSON, sys.exit() in an async tool.
Before, each of these lost the answer and the turn waited out the client-tool timeout (600 s by
default): here the timeout is far longer than the guard, so a lost answer fails the test."""

from __future__ import annotations

import math
import pickle
from pathlib import Path
from typing import Any, Dict

from deepseek_harness import Allow, PermissionRequestEvent, tool
from deepseek_harness.client_tools import split_tools

from conftest import call_within, run_async
from test_client_tools import GUARD, async_harness, call, calls, harness, results, text_of

NO_TIMEOUT = 3600.0  # the bridge's wait for an answer: never what ends these tests


def one_call(tmp_path: Path, fn: Any, chunk_size: int = 16, **arguments: Any) -> Dict[str, Any]:
    step = {**calls(call("c1", fn.name, **arguments)), "chunkSize": chunk_size}
    h = harness(tmp_path, [step, {"text": "done"}], tools=[fn], client_tool_timeout_seconds=NO_TIMEOUT)
    with h:
        result = call_within(GUARD, h.run, "go")
    assert result.ok, result
    return results(result.events)["c1"]


def test_a_result_with_bytes_that_are_not_utf8_is_sent_with_replacement_characters(tmp_path: Path) -> None:
    @tool
    def listing() -> str:
        """Lists files."""
        return "caf\udce9.txt\nnotes.md"  # os.listdir's decoding of a file name with byte 0xE9

    data = one_call(tmp_path, listing)
    assert data["isError"] is False and text_of(data) == "caf\ufffd.txt\nnotes.md"


def test_a_result_past_the_bridges_line_limit_is_cut_with_a_note(tmp_path: Path) -> None:
    @tool
    def dump() -> str:
        """Dumps a lot."""
        return '"' * 5_000_000  # 5 M characters, 10 MB as JSON

    text = text_of(one_call(tmp_path, dump))
    assert "[cut by the SDK: this result was 5000000 characters" in text
    assert text.startswith('"' * 1000) and len(text) < 5_000_000


def test_an_exception_whose_str_raises_is_still_an_error_result(tmp_path: Path) -> None:
    class Odd(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no text")

    @tool
    def odd() -> str:
        """Fails oddly."""
        raise Odd()

    data = one_call(tmp_path, odd)
    assert data["isError"] is True and "gave nothing that can be sent back" in text_of(data)


def test_a_validation_error_repeats_only_the_start_of_a_huge_input(tmp_path: Path) -> None:
    @tool
    def count(n: int) -> str:
        """Counts."""
        return str(n)

    # Streamed in 1 MB pieces: at the scripted model's default 16 characters that is 1.25 million
    # deltas, over a minute on a busy machine, and the test is about the answer, not the stream.
    text = text_of(one_call(tmp_path, count, chunk_size=1_000_000, n="9" * 20_000_000 + "x"))
    assert text.startswith("invalid arguments for count") and "(20000003 characters)" in text and len(text) < 2_000


def test_allowed_arguments_that_are_not_json_are_a_deny_the_model_reads(tmp_path: Path) -> None:
    def allow_nan(request: PermissionRequestEvent) -> Allow:
        return Allow(arguments={"path": "a.txt", "content": math.nan})  # type: ignore[dict-item]

    h = harness(tmp_path, [calls(call("w1", "write_file", path="a.txt", content="x")), {"text": "done"}],
                approvals="writes", can_use_tool=allow_nan, client_tool_timeout_seconds=NO_TIMEOUT)
    with h:
        result = call_within(GUARD, h.run, "go")
    data = results(result.events)["w1"]
    assert data["isError"] is True and "not JSON" in text_of(data)
    assert not (tmp_path / "a.txt").exists()


def test_sys_exit_in_an_async_tool_is_its_error_result_not_the_callers_exit(tmp_path: Path) -> None:
    @tool
    async def quits() -> str:
        """Exits."""
        raise SystemExit(3)

    async def main() -> Dict[str, Any]:
        async with async_harness(tmp_path, [calls(call("c1", "quits")), {"text": "done"}], tools=[quits],
                                 client_tool_timeout_seconds=NO_TIMEOUT) as h:
            result = await h.run("go")
            return results(result.events)["c1"]

    data = run_async(main(), GUARD)
    assert data["isError"] is True and text_of(data) == "SystemExit: 3"


def test_the_same_tool_listed_twice_is_offered_once() -> None:
    @tool
    def once() -> str:
        """Once."""
        return "x"

    assert split_tools([once, once], None) == (None, [once])


SCRIPT_TOOL = """
import pickle, sys
from deepseek_harness import HarnessOptions, tool

@tool
def lookup(word: str) -> str:
    \"\"\"Looks a word up.\"\"\"
    return word.upper()

options = HarnessOptions(tools=[lookup])
try:
    pickle.dumps(options)
    print("plain pickle: pickled")
except Exception as exc:
    print("plain pickle:", type(exc).__name__)
try:
    import ray.cloudpickle as cloudpickle  # what Ray ships tasks with
except ImportError:
    print("cloudpickle: missing")
else:
    data = cloudpickle.dumps(options)
    print("cloudpickle:", len(data) > 0)
    sys.stdout.buffer.write(b"DATA" + data)
"""

UNPICKLE = """
import pickle, sys
options = pickle.loads(sys.stdin.buffer.read())
[t] = options.tools
print(type(t).__name__, t.name, t.fn("hi"))
"""


def test_a_tool_of_the_running_script_travels_by_value_with_cloudpickle_and_never_unpickles_as_none(tmp_path: Path) -> None:
    # Before: pickled as a reference to __main__.lookup, which another process (a Ray worker) has
    # not got: it unpickled as None. Now the tool is rebuilt from its function, which cloudpickle
    # carries by value; plain pickle refuses at pickling time.
    import subprocess
    import sys
    script = tmp_path / "script_tool.py"
    script.write_text(SCRIPT_TOOL)
    made = subprocess.run([sys.executable, str(script)], capture_output=True, timeout=GUARD, cwd=tmp_path)
    out, _, data = made.stdout.partition(b"DATA")
    assert made.returncode == 0, made.stderr.decode()[-2000:]
    assert b"plain pickle: PicklingError" in out
    if b"cloudpickle: missing" in out:
        return  # no Ray here (tests of the base package): plain pickle's refusal is the check
    loaded = subprocess.run([sys.executable, "-c", UNPICKLE], input=data, capture_output=True, timeout=GUARD, cwd=tmp_path)
    assert loaded.returncode == 0, loaded.stderr.decode()[-2000:]
    assert loaded.stdout.decode().strip() == "ClientTool lookup HI"
