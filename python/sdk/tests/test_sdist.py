"""The sdist: it holds the tests whole (conftest, the fake bridge, every test file), the
LICENSE and the metadata, builds and installs, and a test suite run from it passes."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

import package_metadata
from conftest import REPO_ROOT, TESTS

SDK = TESTS.parent


@pytest.fixture(scope="module")
def sdist(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sdist")
    proc = subprocess.run([sys.executable, str(SDK / "scripts" / "build_wheel.py"), "--sdist", "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    path = Path(proc.stdout.strip().splitlines()[-1])
    assert path.is_file() and path.name.endswith(".tar.gz"), path
    return path


@pytest.fixture(scope="module")
def unpacked(sdist, tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("unpacked")
    with tarfile.open(sdist) as tar:
        tar.extractall(where, filter="data")
    (top,) = where.iterdir()
    return top


def test_the_license_in_the_sdk_is_the_repository_license():
    assert (SDK / "LICENSE").read_bytes() == (REPO_ROOT / "LICENSE").read_bytes()
    assert "MIT License" in (REPO_ROOT / "LICENSE").read_text()


def test_the_sdist_holds_the_tests_their_fakes_and_the_license(unpacked):
    tests = {p.name for p in (unpacked / "tests").iterdir()}
    expected = {p.name for p in TESTS.glob("*.py")}
    assert {"conftest.py", "fake_bridge.py"} <= expected
    assert tests >= expected, expected - tests
    assert (unpacked / "scripts" / "manylinux.py").is_file()  # test_manylinux.py imports it
    assert (unpacked / "LICENSE").read_bytes() == (REPO_ROOT / "LICENSE").read_bytes()
    assert not (unpacked / "src" / "deepseek_harness" / "_bin").exists()
    assert (unpacked / "CHANGELOG.md").read_bytes() == (REPO_ROOT / "CHANGELOG.md").read_bytes()
    info = (unpacked / "PKG-INFO").read_text()
    package_metadata.check(info, REPO_ROOT)
    assert "License-Expression: MIT" in info.splitlines()
    assert "License-File: LICENSE" in info.splitlines()
    urls = [line for line in info.splitlines() if line.startswith("Project-URL: ")]
    assert {u.split(",")[0] for u in urls} == {f"Project-URL: {n}" for n in ("Homepage", "Source", "Issues", "Changelog", "Documentation")}


def test_a_suite_runs_from_the_unpacked_sdist(unpacked, tmp_path):
    # Install what the sdist builds (pip builds its wheel), then run its own tests against it.
    target = tmp_path / "site"
    install = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(unpacked)],
                             capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stderr[-4000:]
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "HARNESS_BRIDGE_BIN", "PYTHONPATH")}
    env["PYTHONPATH"] = str(target)
    where = subprocess.run([sys.executable, "-c", "import deepseek_harness as d; print(d.__file__); print(d.__version__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    path, version = where.stdout.split()
    assert Path(path).is_relative_to(target), path
    assert version == unpacked.name.rsplit("-", 1)[1]
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_api.py", "tests/test_options.py"],
                         cwd=unpacked, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    summary = run.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "error" not in summary, summary
