"""Under the C locale without UTF-8 mode (``LC_ALL=C python -X utf8=0``) Python's filesystem
encoding is ASCII, so a valid UTF-8 name such as ``wörk space`` reaches the SDK escaped
(``'w\\udcc3\\udcb6rk space'``). Before, the SDK refused it with NotUtf8Error saying the name
"is not valid UTF-8", which was false; now the name is sent as the UTF-8 text it is, in every
field of ``initialize`` that names a file. A name whose bytes are not UTF-8 is still refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, List

import pytest

from deepseek_harness import NotUtf8Error
from deepseek_harness._internal import link
from deepseek_harness._internal.fs_names import utf8_name

from conftest import Backend, call_within, real_bridge_or_skip

ESCAPED = "w\udcc3\udcb6rk space"  # "wörk space" as the C locale's Python names it
MARKER = "the README of the wörk space"

# Reads README.md, then answers: the workspace the bridge got is the one the child is in.
SCRIPT = {"turns": [{"steps": [
    {"text": "reading", "toolCalls": [{"id": "c1", "name": "read_file", "arguments": {"path": "README.md"}}]},
    {"text": "done"},
]}]}

CHILD = """
import json, os, sys
from deepseek_harness import DeepSeekHarness, HarnessError
assert sys.getfilesystemencoding() == "ascii" and not sys.flags.utf8_mode, (sys.getfilesystemencoding(), sys.flags.utf8_mode)
here = os.getcwd()
try:
    with DeepSeekHarness(provider="scripted", model=os.path.join(here, "script.json"), bridge_bin=sys.argv[1],
                         session_root=sys.argv[2], shutdown_timeout_seconds=5) as h:
        result = h.run("hello")
    print(json.dumps({"cwd": ascii(here), "status": result.status, "events": str(result.events)}))
except HarnessError as exc:
    print(json.dumps({"cwd": ascii(here), "raised": type(exc).__name__, "message": str(exc)}))
"""


def test_a_utf8_workspace_under_the_c_locale_reaches_the_real_bridge(tmp_path: Path) -> None:
    bridge = real_bridge_or_skip()
    workspace = tmp_path / "wörk space"
    workspace.mkdir()
    (workspace / "README.md").write_text(MARKER + "\n", encoding="utf-8")
    (workspace / "script.json").write_text(json.dumps(SCRIPT))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONUTF8", "LANG", "LC_CTYPE")}
    env.update(LC_ALL="C", PYTHONPATH=str(Path(__file__).resolve().parents[1] / "src"))
    run = subprocess.run([sys.executable, "-X", "utf8=0", "-c", CHILD, str(bridge), str(tmp_path / "sessions")],
                         cwd=workspace, env=env, capture_output=True, timeout=120)
    assert run.returncode == 0, run.stderr.decode("utf-8", "replace")
    answer = json.loads(run.stdout.decode("utf-8").strip().splitlines()[-1])
    assert "\\udcc3\\udcb6" in answer["cwd"], answer  # Python did escape the name
    assert answer.get("status") == "ok", answer
    assert MARKER in answer["events"], answer["events"][:2000]


def test_every_file_name_of_initialize_is_sent_as_its_utf8_text(fake: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    written: List[bytes] = []
    encode = link.encode_request

    def recording(frame: Any, limit: int) -> bytes:
        written.append(encode(frame, limit))
        return written[-1]

    monkeypatch.setattr(link, "encode_request", recording)
    c = fake.client().start()
    escaped = f"/tmp/{ESCAPED}"
    call_within(60, c.initialize, escaped, "scripted", "demo", mcp_servers={"srv": {
        "command": f"{escaped}/server", "args": ["--root", escaped, 7], "cwd": escaped, "env": {"ROOT": escaped}}})
    sent = next(f for f in map(json.loads, written) if f.get("method") == "initialize")["params"]
    name = "/tmp/wörk space"
    assert sent["cwd"] == name
    assert sent["mcpServers"]["srv"] == {"command": f"{name}/server", "args": ["--root", name, 7], "cwd": name,
                                         "env": {"ROOT": name}}


def test_a_name_whose_bytes_are_not_utf8_is_still_refused(fake: Backend) -> None:
    c = fake.client().start()
    latin1 = "/tmp/w\udce9s"  # the byte 0xE9 alone: "é" in Latin-1, not UTF-8
    with pytest.raises(NotUtf8Error) as info:
        call_within(60, c.initialize, latin1, "scripted", "demo")
    assert info.value.param == "cwd" and "byte 0xe9" in str(info.value)


@pytest.mark.parametrize("text, expected", [
    ("plain", "plain"),
    (ESCAPED, "wörk space"),
    ("w\udce9s", "w\udce9s"),              # not UTF-8: left for the encoder to refuse
    ("\ud800", "\ud800"),                  # a lone surrogate that is no byte's escape
    ("ö and w\udcc3\udcb6rk", "ö and wörk"),  # escapes beside text the C locale could not hold
])
def test_utf8_name(text: str, expected: str) -> None:
    assert utf8_name(text) == expected


@pytest.mark.parametrize("server", [
    {"command": "srv", "env": {"API_TOKEN": "sk-SECRET\udcff"}},
    {"command": "srv", "env": {"A.B": "sk-SECRET\udcff"}},  # a variable name with a dot
    {"url": "https://mcp.example/", "headers": {"Authorization": "Bearer sk-SECRET\udcff"}},
])
def test_a_secret_value_that_is_not_utf8_is_refused_without_being_shown(fake: Backend, server: dict) -> None:
    # An MCP server's env and headers values are tokens and passwords: the refusal's message
    # (tracebacks, logs) names the field and the byte, never the value.
    c = fake.client().start()
    with pytest.raises(NotUtf8Error) as info:
        call_within(60, c.initialize, "/tmp", "scripted", "demo", mcp_servers={"srv": server})
    assert "SECRET" not in str(info.value) and "SECRET" not in repr(info.value)
    assert "byte 0xff" in str(info.value) and info.value.param is not None and "srv" in info.value.param
