"""Provider keys reach the bridge on a pipe (``--secrets-fd``), never in its environment: a
process's start-up environment stays readable in ``/proc/<pid>/environ`` whatever it deletes."""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path


import pytest

from deepseek_harness._internal.process import MAX_SECRETS_BYTES, PROVIDER_KEY_VARIABLES, spawn
from deepseek_harness import DeepSeekHarness
from deepseek_harness.errors import ProviderUnavailableError, TransportClosedError

from conftest import REPO_ROOT, call_within

KEY = "sk-canary-python-pipe"

CHILD = r"""
import json, os, sys
fd = int(sys.argv[sys.argv.index("--secrets-fd") + 1])
with os.fdopen(fd, "rb") as f:
    secrets = json.loads(f.read())
print(json.dumps({"secrets": secrets, "env_has_key": any(k in os.environ for k in ("DEEPSEEK_API_KEY", "OPENAI_API_KEY")),
                  "environ": open("/proc/self/environ", "rb").read().decode(errors="replace")}))
"""


def test_spawn_moves_keys_from_the_environment_to_a_pipe() -> None:
    env = dict(os.environ, DEEPSEEK_API_KEY=KEY, OPENAI_API_KEY="", KEEP="yes")
    proc = spawn([sys.executable, "-c", CHILD], env, None)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    seen = json.loads(out)
    assert seen["secrets"] == {"DEEPSEEK_API_KEY": KEY}  # an empty value is not a key
    assert seen["env_has_key"] is False
    assert KEY not in seen["environ"] and "KEEP=yes" in seen["environ"]
    assert env["DEEPSEEK_API_KEY"] == KEY  # the caller's mapping is left alone


def test_the_key_names_are_the_bridges() -> None:
    """The bridge refuses any other name on the descriptor: both lists must stay one."""
    source = (REPO_ROOT / "src" / "providers" / "types.ts").read_text()
    declared = re.search(r"PROVIDER_KEY_VARIABLES: readonly string\[\] = \[([^\]]*)\]", source)
    assert declared is not None
    assert tuple(re.findall(r'"([A-Z_]+)"', declared.group(1))) == PROVIDER_KEY_VARIABLES


def test_keys_too_long_for_the_pipe_are_refused_not_hung_on() -> None:
    env = dict(os.environ, DEEPSEEK_API_KEY="k" * (MAX_SECRETS_BYTES + 1))
    with pytest.raises(TransportClosedError, match="at most 65536"):
        call_within(30, spawn, [sys.executable, "-c", "pass"], env, None)


def test_without_keys_no_descriptor_is_passed() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DEEPSEEK_API_KEY", "OPENAI_API_KEY")}
    proc = spawn([sys.executable, "-c", "import sys; print(sys.argv[1:])"], env, None)
    out, _ = proc.communicate(timeout=30)
    assert out.strip() == b"[]"


def test_the_real_bridge_gets_the_key_and_its_environment_does_not(real) -> None:
    client = real.client(env={"DEEPSEEK_API_KEY": KEY}).start()
    # The deepseek provider refuses to start without a key (-32004): this answering proves it arrived.
    client.initialize(real.workspace, "deepseek", "deepseek-chat")
    environ = Path(f"/proc/{client.process.pid}/environ").read_bytes()
    assert KEY.encode() not in environ
    assert b"--secrets-fd" in Path(f"/proc/{client.process.pid}/cmdline").read_bytes()


@pytest.mark.parametrize("provider,variable", [("deepseek", "DEEPSEEK_API_KEY"), ("openai", "OPENAI_API_KEY")])
def test_no_key_says_how_to_pass_it_from_python_not_the_bridge_flag(real, monkeypatch, provider, variable) -> None:
    # A new user's first run without a key: the message is read by a Python programmer, who
    # never sees the bridge's command line.
    for name in ("DEEPSEEK_API_KEY", "OPENAI_API_KEY", "DEEPSEEK_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    harness = DeepSeekHarness(provider=provider, model="some-model", cwd=real.workspace, session_root=real.session_root,
                              bridge_bin=real.bridge, shutdown_timeout_seconds=5.0)
    real.opened.append(harness)
    with pytest.raises(ProviderUnavailableError) as caught:
        harness.start()
    message = str(caught.value)
    assert "--secrets-fd" not in message and "the bridge's environment;" not in message
    assert f'needs {variable}: pass it from Python with env={{"{variable}": "sk-..."}}' in message, message
    assert "DeepSeekHarness(env=...)" in message and f"set {variable} in this Python process's environment" in message
    assert caught.value.code == -32004 and caught.value.data == {"kind": "provider-unavailable", "provider": provider}
