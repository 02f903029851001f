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
    """No bundled binary, no checkout above the package or cwd, empty PATH."""
    monkeypatch.setattr(_binary, "bundled_binary_path", lambda: tmp_path / "pkg" / "_bin" / "harness-bridge")
    monkeypatch.setattr(_binary, "find_checkout", lambda start: None)
    monkeypatch.delenv("HARNESS_BRIDGE_BIN", raising=False)
    monkeypatch.chdir(tmp_path)
    return {"PATH": str(tmp_path / "empty-path")}


def test_not_found_lists_every_place_tried(isolated):
    with pytest.raises(BridgeNotFoundError) as info:
        find_bridge_binary(env=isolated)
    msg = str(info.value)
    for needle in ("bridge_bin", "HARNESS_BRIDGE_BIN", "bundled", "_bin/harness-bridge", "PATH",
                   "development checkout", "npm run build", "wheel"):
        assert needle in msg, needle
    places = [p for p, _ in info.value.tried]
    assert places[:4] == ["bridge_bin", "$HARNESS_BRIDGE_BIN", "bundled in the package", "PATH"]
    assert any("development checkout" in p for p in places)


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
    monkeypatch.setattr(_binary, "find_checkout", lambda start: checkout)
    assert find_bridge_binary(env=env) == (checkout / "bin" / "harness-bridge").resolve()


def test_bundled_binary_gets_its_executable_bit_back(isolated, tmp_path):
    bundled = make_exe(tmp_path / "pkg" / "_bin" / "harness-bridge")
    bundled.chmod(0o644)
    assert find_bridge_binary(env=isolated) == bundled
    assert bundled.stat().st_mode & stat.S_IXUSR


def test_development_checkout_is_found_from_cwd(tmp_path, monkeypatch):
    checkout = tmp_path / "checkout"
    (checkout / "sub" / "dir").mkdir(parents=True)
    (checkout / "package.json").write_text(json.dumps({"name": "harness-bridge", "version": "1.2.3"}))
    exe = make_exe(checkout / "bin" / "harness-bridge")
    assert _meta.find_checkout(checkout / "sub" / "dir") == checkout.resolve()
    assert _meta.checkout_version(checkout / "sub") == "1.2.3"
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "package.json").write_text(json.dumps({"name": "something-else"}))
    assert _meta.find_checkout(tmp_path / "other") is None
    monkeypatch.setattr(_binary, "bundled_binary_path", lambda: tmp_path / "none" / "harness-bridge")
    # The package itself lives in this repository, so pretend it does not.
    real_find = _meta.find_checkout
    monkeypatch.setattr(_binary, "find_checkout",
                        lambda start: None if REPO_ROOT in [start, *start.parents] else real_find(start))
    monkeypatch.delenv("HARNESS_BRIDGE_BIN", raising=False)
    assert find_bridge_binary(env={"PATH": ""}, cwd=checkout / "sub" / "dir") == exe.resolve()


def test_version_comes_from_package_json():
    pkg = json.loads((REPO_ROOT / "package.json").read_text())
    assert deepseek_harness.__version__ == pkg["version"]
