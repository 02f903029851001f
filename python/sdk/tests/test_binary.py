"""Finding the binary, and the version's single source."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

import deepseek_harness
from deepseek_harness import BridgeNotFoundError, DeepSeekHarness, find_bridge_binary
from deepseek_harness import _binary, _meta

from conftest import FAKE_BRIDGE, REPO_ROOT


def make_exe(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """No bundled binary, no development checkout, empty PATH, cwd a temporary folder."""
    monkeypatch.setattr(_binary, "bundled_binary_path", lambda: tmp_path / "pkg" / "_bin" / "harness-bridge")
    monkeypatch.setattr(_binary, "dev_checkout_root", lambda: None)
    monkeypatch.delenv("HARNESS_BRIDGE_BIN", raising=False)
    monkeypatch.delenv("HARNESS_BRIDGE_DEV_CHECKOUT", raising=False)
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    return {"PATH": str(tmp_path / "empty-path")}


def test_not_found_lists_every_place_tried(isolated):
    with pytest.raises(BridgeNotFoundError) as info:
        find_bridge_binary(env=isolated)
    msg = str(info.value)
    for needle in ("bridge_bin", "HARNESS_BRIDGE_BIN", "bundled", "_bin/harness-bridge", "PATH",
                   "development checkout", "npm run build", "wheel", "HARNESS_BRIDGE_DEV_CHECKOUT=1"):
        assert needle in msg, needle
    places = [p for p, _ in info.value.tried]
    assert places == ["bridge_bin", "$HARNESS_BRIDGE_BIN", "bundled in the package", "PATH", "development checkout"]
    assert "not opted in" in msg


def test_explicit_bridge_bin_that_does_not_exist(isolated, tmp_path):
    missing = tmp_path / "nope" / "harness-bridge"
    with pytest.raises(BridgeNotFoundError, match=str(missing)):
        find_bridge_binary(missing, env=isolated)
    # the harness reports it when starting
    h = DeepSeekHarness(provider="scripted", model="demo", bridge_bin=missing)
    with pytest.raises(BridgeNotFoundError, match="does not exist"):
        h.start()
    h.close()


def test_env_var_that_does_not_exist(isolated, tmp_path):
    env = dict(isolated, HARNESS_BRIDGE_BIN=str(tmp_path / "missing"))
    with pytest.raises(BridgeNotFoundError, match="HARNESS_BRIDGE_BIN"):
        find_bridge_binary(env=env)


def test_not_executable(isolated, tmp_path):
    f = tmp_path / "harness-bridge"
    f.write_text("")
    with pytest.raises(BridgeNotFoundError, match="not executable"):
        find_bridge_binary(f, env=isolated)


def test_resolution_order(isolated, tmp_path, monkeypatch):
    explicit = make_exe(tmp_path / "a" / "harness-bridge")
    from_env = make_exe(tmp_path / "b" / "harness-bridge")
    bundled = make_exe(tmp_path / "pkg" / "_bin" / "harness-bridge")
    on_path = make_exe(tmp_path / "path" / "harness-bridge")
    checkout = tmp_path / "checkout"
    make_exe(checkout / "bin" / "harness-bridge")
    env = {"PATH": str(on_path.parent), "HARNESS_BRIDGE_BIN": str(from_env)}

    assert find_bridge_binary(explicit, env=env) == explicit.resolve()
    assert find_bridge_binary(env=env) == from_env.resolve()
    del env["HARNESS_BRIDGE_BIN"]
    assert find_bridge_binary(env=env) == bundled
    bundled.unlink()
    assert find_bridge_binary(env=env) == on_path.resolve()
    env["PATH"] = str(tmp_path / "empty-path")
    monkeypatch.setattr(_binary, "dev_checkout_root", lambda: checkout)
    with pytest.raises(BridgeNotFoundError, match="not opted in"):
        find_bridge_binary(env=env)
    assert find_bridge_binary(env=env, dev_checkout=True) == (checkout / "bin" / "harness-bridge").resolve()
    assert find_bridge_binary(env=dict(env, HARNESS_BRIDGE_DEV_CHECKOUT="1")) == (checkout / "bin" / "harness-bridge").resolve()


def test_bundled_binary_gets_its_executable_bit_back(isolated, tmp_path):
    bundled = make_exe(tmp_path / "pkg" / "_bin" / "harness-bridge")
    bundled.chmod(0o644)
    assert find_bridge_binary(env=isolated) == bundled
    assert bundled.stat().st_mode & stat.S_IXUSR


def plant_checkout(root: Path) -> Path:
    """What an untrusted repository can hold: a package.json named harness-bridge and a
    bin/harness-bridge that leaves a mark when run."""
    (root / "sub" / "dir").mkdir(parents=True)
    (root / "package.json").write_text(json.dumps({"name": "harness-bridge", "version": "6.6.6"}))
    mark = root / "PLANTED-BINARY-RAN"
    exe = root / "bin" / "harness-bridge"
    exe.parent.mkdir()
    exe.write_text(f"#!/bin/sh\ntouch '{mark}'\nexit 0\n")
    exe.chmod(0o755)
    return exe


def test_a_checkout_planted_in_the_working_directory_is_not_run(isolated, tmp_path, monkeypatch):
    planted = plant_checkout(tmp_path / "repo")
    monkeypatch.chdir(tmp_path / "repo" / "sub" / "dir")
    for kwargs in ({}, {"cwd": tmp_path / "repo"}, {"dev_checkout": True}):
        with pytest.raises(BridgeNotFoundError) as info:
            find_bridge_binary(env=isolated, **kwargs)
        assert str(planted) not in str(info.value.tried)
    # The harness does not start it either (the real one is found only when it is elsewhere).
    h = DeepSeekHarness(provider="scripted", model="demo", cwd=tmp_path / "repo", env={"PATH": isolated["PATH"]})
    with pytest.raises(BridgeNotFoundError, match="HARNESS_BRIDGE_DEV_CHECKOUT"):
        h.start()
    h.close()
    assert not (tmp_path / "repo" / "PLANTED-BINARY-RAN").exists()


def test_relative_path_entries_and_entries_inside_the_cwd_are_skipped(isolated, tmp_path, monkeypatch):
    planted = plant_checkout(tmp_path / "repo")
    monkeypatch.chdir(tmp_path / "repo")
    elsewhere = make_exe(tmp_path / "tools" / "harness-bridge")
    for path in ("bin", "./bin", "", ".", f"{tmp_path / 'repo' / 'bin'}", f"bin{os.pathsep}{tmp_path / 'repo' / 'bin'}"):
        with pytest.raises(BridgeNotFoundError, match="skipped") as info:
            find_bridge_binary(env={"PATH": path})
        assert "no harness-bridge on PATH" in str(info.value)
        # An absolute entry outside the working directory still counts, after the skipped ones.
        found = find_bridge_binary(env={"PATH": f"{path}{os.pathsep}{elsewhere.parent}"})
        assert found == elsewhere.resolve() and found != planted.resolve()
    # The bridge's own working directory is not searched either.
    monkeypatch.chdir(tmp_path / "cwd")
    with pytest.raises(BridgeNotFoundError, match="inside the working directory"):
        find_bridge_binary(env={"PATH": str(tmp_path / "repo" / "bin")}, cwd=tmp_path / "repo")


def test_the_dev_checkout_is_the_one_this_package_lives_in():
    assert _binary.dev_checkout_root() == REPO_ROOT.resolve()


def test_version_comes_from_package_json():
    pkg = json.loads((REPO_ROOT / "package.json").read_text())
    assert deepseek_harness.__version__ == pkg["version"]
