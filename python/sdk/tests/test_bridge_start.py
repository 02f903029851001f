"""A ``bridge_bin`` that exists but does not start the bridge (a wrapper script whose command is
missing, a script whose ``#!`` interpreter is missing): the error names what was not found, not
the file that is there, nor the open-file limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from deepseek_harness import DeepSeekHarness, OpenFileLimitError, TransportClosedError

from conftest import call_within


def _run(bridge: Path, tmp_path: Path) -> TransportClosedError:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    try:
        h = DeepSeekHarness(provider="scripted", model="demo", cwd=workspace, session_root=tmp_path / "sessions",
                            bridge_bin=bridge, shutdown_timeout_seconds=5)
        try:
            call_within(60, h.run, "hello")
        finally:
            h.close()
    except TransportClosedError as exc:
        assert not isinstance(exc, OpenFileLimitError)
        return exc
    raise AssertionError("a bridge that never started answered")


def test_a_wrapper_script_whose_command_is_missing_names_exit_127(tmp_path: Path) -> None:
    wrapper = tmp_path / "wrapper"
    wrapper.write_text(f"#!/bin/sh\nexec {tmp_path / 'no-such-bridge'} \"$@\"\n")
    wrapper.chmod(0o755)
    exc = _run(wrapper, tmp_path)
    assert exc.exit_code == 127
    message = str(exc)
    assert f"{wrapper} exited with 127" in message and "not found" in message, message
    assert "no-such-bridge" in message  # the shell's own line, from the stderr tail


@pytest.mark.parametrize("interpreter", ["/no/such/interpreter", "/no/such/env python3"])
def test_a_script_whose_interpreter_is_missing_names_the_interpreter(tmp_path: Path, interpreter: str) -> None:
    script = tmp_path / "bridge-script"
    script.write_text(f"#!{interpreter}\n")
    script.chmod(0o755)
    exc = _run(script, tmp_path)
    message = str(exc)
    assert f"could not start {script}" in message, message
    assert f"its interpreter ({interpreter!r}, from its #! line) was not found" in message, message
