"""``python -m deepseek_harness`` (the doctor) and the ``harness-bridge`` console script's
behaviour without a bundled binary; with one, test_wheel.py runs both from an installed wheel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import pytest

from conftest import REPO_ROOT, real_bridge_or_skip
from deepseek_harness import _console
from deepseek_harness._binary import bundled_binary_path


def doctor(tmp_path: Path, env: Dict[str, str], *args: str) -> "subprocess.CompletedProcess[str]":
    base = {k: v for k, v in os.environ.items() if not k.startswith(("HARNESS_", "DEEPSEEK_"))}
    base["PATH"] = os.pathsep.join(["/usr/bin", "/bin"])
    return subprocess.run([sys.executable, "-m", "deepseek_harness", *args], cwd=tmp_path, env={**base, **env},
                          capture_output=True, text=True, timeout=120)


def report(tmp_path: Path, env: Dict[str, str]) -> Dict[str, Any]:
    run = doctor(tmp_path, env, "--json")
    assert run.returncode == 0, run.stderr + run.stdout
    data: Dict[str, Any] = json.loads(run.stdout)
    return data


def version() -> str:
    return str(json.loads((REPO_ROOT / "package.json").read_text())["version"])


def pinned_node() -> str:
    """The Node the binary embeds: package.json ``config.embeddedNode``."""
    return str(json.loads((REPO_ROOT / "package.json").read_text())["config"]["embeddedNode"])


def test_doctor_names_the_binary_the_step_that_chose_it_and_the_sandbox(tmp_path):
    binary = real_bridge_or_skip()
    data = report(tmp_path, {"HARNESS_BRIDGE_BIN": str(binary)})
    assert data["sdk"]["version"] == version()
    assert data["binary"] == {"found": True, "path": str(binary.resolve()), "source": "$HARNESS_BRIDGE_BIN",
                              "triedBefore": [["bridge_bin", "not given"]]}
    runtime = {"node": pinned_node(), "platform": "linux", "arch": data["bridge"]["runtime"]["arch"]}
    assert data["bridge"] == {"version": version(), "protocolVersion": 1, "runtime": runtime, "warnings": []}
    assert runtime["arch"] in ("x64", "arm64")
    sandbox = data["sandbox"]
    assert sandbox["mode"] == "workspace-write"
    # The real bash call agrees with what initialize announced, on whatever machine this runs.
    assert sandbox["bashCall"]["ran"] is (sandbox["initialize"]["bash"] in ("bubblewrap", "landlock")), sandbox
    if sandbox["bashCall"]["ran"]:
        assert sandbox["bashCall"]["output"] == "sandbox-probe-ok\n[exit code 0]"


def test_doctor_says_bash_is_confined_by_landlock_without_bubblewrap(tmp_path):
    binary = real_bridge_or_skip()
    env = {"HARNESS_BRIDGE_BIN": str(binary), "HARNESS_BWRAP": "off"}
    data = report(tmp_path, env)
    init = data["sandbox"]["initialize"]
    assert init["bash"] == "landlock" and isinstance(init["landlockAbi"], int) and init["landlockAbi"] >= 1, init
    assert data["sandbox"]["bashCall"] == {"ran": True, "output": "sandbox-probe-ok\n[exit code 0]"}
    lines = doctor(tmp_path, env).stdout.splitlines()
    abi = init["landlockAbi"]
    assert f"bash sandboxed here (workspace-write): yes, confined by Landlock (ABI {abi}) and seccomp" in lines
    assert f"  initialize: bash=landlock (Landlock ABI {abi})" in lines


def test_doctor_says_bash_is_not_sandboxed_and_why(tmp_path):
    binary = real_bridge_or_skip()
    off = {"HARNESS_BRIDGE_BIN": str(binary), "HARNESS_BWRAP": str(tmp_path / "no-bwrap"), "HARNESS_LANDLOCK": "off"}
    data = report(tmp_path, off)
    assert data["sandbox"]["initialize"]["bash"] == "none"
    assert str(tmp_path / "no-bwrap") in data["sandbox"]["initialize"]["reason"]
    assert "HARNESS_LANDLOCK=off" in data["sandbox"]["initialize"]["reason"]
    assert data["sandbox"]["bashCall"]["ran"] is False
    assert data["sandbox"]["bashCall"]["output"].startswith("bash was not run: permission mode 'workspace-write'")
    text = doctor(tmp_path, off)
    assert text.returncode == 0
    lines = text.stdout.splitlines()
    assert lines[0] == f"deepseek-harness {version()} ({Path(_console.__file__).resolve().parent})"
    assert f"binary: {binary.resolve()}" in lines
    assert "  chosen by: $HARNESS_BRIDGE_BIN" in lines
    assert f"  version: {version()} (same as the SDK), protocol 1" in lines
    assert any(line.startswith(f"  runtime: node {pinned_node()} (linux-") for line in lines), lines
    assert "bash sandboxed here (workspace-write): no" in lines
    assert any(line.startswith("  a bash call: refused: bash was not run") for line in lines)


def test_doctor_without_a_binary_lists_every_place_tried_and_fails(tmp_path):
    if bundled_binary_path().is_file():
        pytest.skip("this install bundles the binary: the lookup cannot come up empty")
    planted = tmp_path / "bin" / "harness-bridge"  # in the working directory: never run
    planted.parent.mkdir()
    planted.write_text("#!/bin/sh\necho planted\n")
    planted.chmod(0o755)
    run = doctor(tmp_path, {"PATH": os.pathsep.join([str(planted.parent), "/usr/bin", "/bin"])})
    assert run.returncode == 1
    lines = run.stdout.splitlines()
    assert "binary: not found" in lines
    assert "  - $HARNESS_BRIDGE_BIN: not set" in lines
    assert any(line.startswith("  - PATH: no harness-bridge on PATH; skipped ") and "inside the working directory" in line
               for line in lines), lines
    assert "planted" not in run.stdout


def test_doctor_reports_a_binary_that_does_not_answer(tmp_path):
    broken = tmp_path / "harness-bridge"
    broken.write_text("#!/bin/sh\nexit 3\n")
    broken.chmod(0o755)
    run = doctor(tmp_path, {"HARNESS_BRIDGE_BIN": str(broken)})
    assert run.returncode == 1
    assert f"binary: {broken}" in run.stdout.splitlines()
    assert "  did not answer: " in run.stdout


def test_console_script_without_a_bundled_binary_says_so(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(_console, "bundled_binary_path", lambda: tmp_path / "_bin" / "harness-bridge")
    monkeypatch.setattr(_console, "bundled_binary_problem", lambda: "does not exist")
    assert _console.main(["--version"]) == 127
    err = capsys.readouterr().err
    assert err.startswith(f"harness-bridge: this install of deepseek-harness has no bundled binary ({tmp_path / '_bin' / 'harness-bridge'} does not exist).")


def test_an_install_without_the_binary_has_no_harness_bridge_command():
    # Else that command would be a `harness-bridge` on PATH that cannot run the bridge, and the
    # SDK's own PATH lookup could choose it.
    if bundled_binary_path().is_file():
        pytest.skip("this install bundles the binary (test_wheel.py checks its command)")
    assert not (Path(sys.executable).parent / "harness-bridge").exists()


@pytest.mark.parametrize("args", [["--json"], []], ids=["json", "text"])
def test_doctor_whose_reader_left_early_ends_without_a_traceback(tmp_path, args):
    # `python -m deepseek_harness --json | head -1`: the pipe is closed before the doctor writes
    # (here: before it even starts, so that the write surely meets a closed pipe).
    base = {k: v for k, v in os.environ.items() if not k.startswith(("HARNESS_", "DEEPSEEK_"))}
    env = {**base, "HARNESS_BRIDGE_BIN": str(real_bridge_or_skip())}
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        run = subprocess.run([sys.executable, "-m", "deepseek_harness", *args], cwd=tmp_path, env=env,
                             stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert "Traceback" not in run.stderr and "BrokenPipeError" not in run.stderr, run.stderr
    assert run.stderr == ""
    assert run.returncode == 141  # 128 + SIGPIPE, as a shell shows for `cat` whose reader left
