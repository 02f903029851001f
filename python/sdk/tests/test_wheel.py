"""The platform wheel: built by scripts/build_wheel.py, installed into a fresh venv, runs a
turn with no other configuration (no HARNESS_BRIDGE_BIN, nothing on PATH, outside the
checkout). Skipped only when bin/harness-bridge is absent, and never in CI."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import venv
from pathlib import Path

import pytest

import package_metadata
from conftest import REPO_ROOT, real_bridge_or_skip

SDK = Path(__file__).resolve().parents[1]

SCRIPT = r"""
import json, sys
from deepseek_harness import DeepSeekHarness, __version__
with DeepSeekHarness(provider="scripted", model="demo", session_root=sys.argv[1]) as h:
    r = h.run("What is in README.md?")
    print(json.dumps({"status": r.status, "final": r.final_response, "bridge": str(h.client.bridge_path),
                      "version": __version__, "server": h.initialize_response.server_info.version,
                      "events": [e.type for e in r.events]}))
"""


def build_wheel(out: Path) -> Path:
    """scripts/build_wheel.py as a user runs it: without SOURCE_DATE_EPOCH (the script sets it)."""
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    proc = subprocess.run(
        [sys.executable, str(SDK / "scripts" / "build_wheel.py"), "--bin", str(real_bridge_or_skip()), "--out", str(out)],
        capture_output=True, text=True, timeout=600, env=env,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    path = Path(proc.stdout.strip().splitlines()[-1])
    assert path.is_file()
    return path


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    real_bridge_or_skip()
    return build_wheel(tmp_path_factory.mktemp("wheel"))


def test_two_builds_of_one_commit_give_one_sha256(wheel, tmp_path):
    import hashlib
    import time
    import zipfile

    commit = subprocess.run(["git", "-C", str(REPO_ROOT), "log", "-1", "--format=%ct"], capture_output=True, text=True)
    if commit.returncode != 0:
        pytest.skip(f"not a git checkout: {commit.stderr.strip()}")
    # Every entry is dated the last commit, not the files' or the build's time (which would
    # differ between two builds made seconds apart, or on two machines).
    y, mo, d, h, mi, sec = time.gmtime(int(commit.stdout))[0:6]
    expected = (y, mo, d, h, mi, sec - sec % 2)  # a zip stores seconds in steps of 2
    with zipfile.ZipFile(wheel) as z:
        dates = {info.filename: info.date_time for info in z.infolist()}
    assert {name: date for name, date in dates.items() if date != expected} == {}
    again = build_wheel(tmp_path)
    assert hashlib.sha256(again.read_bytes()).hexdigest() == hashlib.sha256(wheel.read_bytes()).hexdigest()


def test_wheel_is_a_platform_wheel_with_the_binary(wheel):
    import zipfile

    assert wheel.name.startswith("deepseek_harness-")
    # A tag PyPI accepts (linux_x86_64 it refuses), the one the binary's needs fit (test_manylinux.py).
    assert wheel.name.endswith(f"-py3-none-manylinux_2_28_{platform.machine()}.whl"), wheel.name
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        info = z.getinfo("deepseek_harness/_bin/harness-bridge")
        assert info.external_attr >> 16 & 0o111, "the binary must be executable in the wheel"
        assert "deepseek_harness/py.typed" in names
        version_py = z.read("deepseek_harness/_version.py").decode()
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        meta_text = z.read(metadata).decode()
        meta = meta_text.splitlines()
        assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), names
        assert any(n.endswith(".dist-info/entry_points.txt") for n in names)
    assert "License-Expression: MIT" in meta
    package_metadata.check(meta_text, REPO_ROOT)
    assert "Project-URL: Source, https://github.com/harness-bridge/harness-bridge" in meta
    version = json.loads((REPO_ROOT / "package.json").read_text())["version"]
    assert f'"{version}"' in version_py
    assert f"-{version}-" in wheel.name


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """A fresh venv with the wheel installed; returns the venv."""
    env_dir = tmp_path_factory.mktemp("installed") / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    install = subprocess.run([str(py), "-m", "pip", "install", "-q", str(wheel)], capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stderr[-4000:]
    return env_dir


def clean_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("HARNESS_BRIDGE_BIN", "PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join(["/usr/bin", "/bin"])
    return env


def test_wheel_installs_and_runs_a_turn_in_a_fresh_venv(installed, tmp_path):
    env_dir = installed
    py = env_dir / "bin" / "python"
    work = tmp_path / "elsewhere"
    work.mkdir()
    (work / "README.md").write_text("# A project\n")
    run = subprocess.run([str(py), "-c", SCRIPT, str(tmp_path / "sessions")], cwd=work, env=clean_env(),
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-4000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["status"] == "ok" and out["final"]
    assert out["events"][0] == "user/message" and out["events"][-1] == "turn/end"
    assert Path(out["bridge"]).is_relative_to(env_dir.resolve()), out["bridge"]
    version = json.loads((REPO_ROOT / "package.json").read_text())["version"]
    assert out["version"] == out["server"] == version
    bundled_version = subprocess.run([out["bridge"], "--version"], capture_output=True, text=True, timeout=60)
    assert bundled_version.stdout.strip() == version


def bundled_in(env_dir: Path) -> Path:
    found = list((env_dir / "lib").glob("python*/site-packages/deepseek_harness/_bin/harness-bridge"))
    assert len(found) == 1, found
    return found[0].resolve()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/<pid>/exe")
def test_the_console_script_is_the_bundled_binary(installed, tmp_path):
    script = installed / "bin" / "harness-bridge"
    bundled = bundled_in(installed)
    version = json.loads((REPO_ROOT / "package.json").read_text())["version"]
    # clean_env(): a PYTHONPATH pointing at the source tree would make the script import the
    # SDK from there, which bundles no binary.
    run = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60, env=clean_env())
    assert (run.returncode, run.stdout) == (0, f"{version}\n"), run.stderr
    # Exit codes and stderr pass through: the same as the binary's own for a bad flag.
    own = subprocess.run([str(bundled), "--no-such-flag"], capture_output=True, text=True, timeout=60, env=clean_env())
    via = subprocess.run([str(script), "--no-such-flag"], capture_output=True, text=True, timeout=60, env=clean_env())
    assert own.returncode != 0 and (via.returncode, via.stderr, via.stdout) == (own.returncode, own.stderr, own.stdout)
    # exec: the script's process becomes the binary (no Python left in between), speaking on its stdio.
    proc = subprocess.Popen([str(script), "--stdio", "--session-root", str(tmp_path / "s")], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(), cwd=tmp_path)
    try:
        request = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"cwd": str(tmp_path), "provider": "scripted", "model": "demo"}}
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write((json.dumps(request) + "\n").encode())
        proc.stdin.flush()
        response = json.loads(proc.stdout.readline())
        assert response["id"] == 1 and response["result"]["serverInfo"]["version"] == version
        assert Path(f"/proc/{proc.pid}/exe").resolve() == bundled
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_the_doctor_of_the_installed_wheel_finds_the_bundled_binary(installed, tmp_path):
    run = subprocess.run([str(installed / "bin" / "python"), "-m", "deepseek_harness", "--json"], cwd=tmp_path,
                         env=clean_env(), capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr + run.stdout
    data = json.loads(run.stdout)
    assert data["binary"]["source"] == "bundled in the package"
    assert Path(data["binary"]["path"]) == bundled_in(installed)
    assert data["binary"]["triedBefore"] == [["bridge_bin", "not given"], ["$HARNESS_BRIDGE_BIN", "not set"]]
    assert data["sandbox"]["bashCall"]["ran"] is (data["sandbox"]["initialize"]["bash"] in ("bubblewrap", "landlock"))
