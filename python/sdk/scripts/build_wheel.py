#!/usr/bin/env python3
"""Builds the platform wheel of deepseek-harness with the harness-bridge binary inside.

    python python/sdk/scripts/build_wheel.py [--bin bin/harness-bridge] [--out python/sdk/dist]
                                             [--plat-name linux_x86_64] [--no-build-isolation]
    python python/sdk/scripts/build_wheel.py --sdist [--out python/sdk/dist]

The SDK sources are copied to a temporary directory, the binary is copied into
``deepseek_harness/_bin/``, and ``pip wheel`` builds it there: the source tree is left
untouched. The version is the root ``package.json``'s (the same that ``harness-bridge
--version`` prints); ``setup.py`` writes it into ``deepseek_harness/_version.py``. The tag is
``py3-none-<platform>``; on Linux the platform is read from the binary (``manylinux.py``):
``manylinux_2_28_x86_64`` or ``manylinux_2_28_aarch64`` when its libraries and symbol
versions fit that policy (Node 20's do), else the build stops and says why. ``--plat-name``
overrides it (e.g. ``linux_x86_64`` for a wheel that stays on this machine).

Reproducible: the zip entries' timestamps are ``SOURCE_DATE_EPOCH`` (setuptools' wheel writer
reads it), which this script sets to the last commit's time (``git log -1 --format=%ct``) when
it is not set already, so two builds of one commit give one sha256 (the bundled binary is
reproducible too, docs/distribution.md). Outside a git checkout it says so and builds with file
times.

Prints the path of the wheel on the last line of stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import manylinux  # noqa: E402  (beside this script)

SDK = Path(__file__).resolve().parents[1]
REPO = SDK.parents[1]
EXE = "harness-bridge.exe" if os.name == "nt" else "harness-bridge"


SKIP = ("build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", "_bin", "_version.py")


def source_date_epoch(env: dict[str, str]) -> dict[str, str]:
    """``env`` with ``SOURCE_DATE_EPOCH`` set: as given, else the last commit's time. Without it
    the wheel's entries carry file times and the build time (``_version.py``, the metadata), and
    no two builds agree."""
    if env.get("SOURCE_DATE_EPOCH"):
        return env
    try:
        commit_time = subprocess.run(["git", "-C", str(REPO), "log", "-1", "--format=%ct"], capture_output=True,
                                     text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"build_wheel: not a git checkout ({exc}): SOURCE_DATE_EPOCH not set, the wheel will not be "
              "reproducible; set it to pin the zip timestamps", file=sys.stderr)
        return env
    return dict(env, SOURCE_DATE_EPOCH=commit_time)


def build_sdist(out: Path, version: str) -> Path:
    """The sdist, built from a copy of the SDK by setuptools' own hook (installed for the build
    only, like pip's build isolation). MANIFEST.in puts the tests, their conftest and fakes in."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="deepseek-harness-sdist-") as tmp:
        src = Path(tmp) / "sdk"
        shutil.copytree(SDK, src, ignore=shutil.ignore_patterns(*SKIP))
        shutil.copy2(REPO / "CHANGELOG.md", src / "CHANGELOG.md")  # the long description's end (setup.py)
        tools = Path(tmp) / "build-tools"
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--target", str(tools), "setuptools>=77"],
                       check=True, stdout=sys.stderr)
        hook = "import sys; sys.path.insert(0, sys.argv[1]); from setuptools import build_meta; print(build_meta.build_sdist(sys.argv[2]))"
        env = source_date_epoch(dict(os.environ, DEEPSEEK_HARNESS_BUILD_VERSION=version))
        done = subprocess.run([sys.executable, "-c", hook, str(tools), str(out)], cwd=src, env=env, check=True,
                              stdout=subprocess.PIPE, text=True)
    return out / done.stdout.strip().splitlines()[-1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", type=Path, default=REPO / "bin" / EXE, help="the binary to bundle (default: bin/harness-bridge)")
    parser.add_argument("--out", type=Path, default=SDK / "dist", help="output directory (default: python/sdk/dist)")
    parser.add_argument("--plat-name", default=None, help="platform tag (default on Linux: the binary's manylinux tag)")
    parser.add_argument("--no-build-isolation", action="store_true", help="build with the current environment's setuptools")
    parser.add_argument("--sdist", action="store_true", help="build the source distribution instead (no binary; tests included)")
    args = parser.parse_args(argv)
    version = json.loads((REPO / "package.json").read_text(encoding="utf-8"))["version"]
    if args.sdist:
        print(build_sdist(args.out.resolve(), version))
        return 0

    binary: Path = args.bin.resolve()
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        print(f"build_wheel: {binary} is missing or not executable; run `npm run build` at the repository root first",
              file=sys.stderr)
        return 1
    plat = args.plat_name
    if plat is None and sys.platform.startswith("linux"):
        try:
            plat = manylinux.platform_tag(binary)
        except ValueError as exc:
            print(f"build_wheel: {exc}; pass --plat-name to tag it otherwise", file=sys.stderr)
            return 1
    plat = plat or sysconfig.get_platform().replace("-", "_").replace(".", "_")
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)

    with tempfile.TemporaryDirectory(prefix="deepseek-harness-wheel-") as tmp:
        src = Path(tmp) / "sdk"
        shutil.copytree(
            SDK,
            src,
            ignore=shutil.ignore_patterns(*SKIP, "tests"),
        )
        shutil.copy2(REPO / "CHANGELOG.md", src / "CHANGELOG.md")  # the long description's end (setup.py)
        bundled = src / "src" / "deepseek_harness" / "_bin" / EXE
        bundled.parent.mkdir(parents=True)
        shutil.copy2(binary, bundled)
        bundled.chmod(0o755)
        env = source_date_epoch(dict(os.environ, DEEPSEEK_HARNESS_BUILD_VERSION=version, DEEPSEEK_HARNESS_PLAT_NAME=plat))
        wheel_dir = Path(tmp) / "wheels"
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(wheel_dir), str(src)]
        if args.no_build_isolation:
            cmd.insert(4, "--no-build-isolation")
        subprocess.run(cmd, check=True, env=env, stdout=sys.stderr)
        wheels = list(wheel_dir.glob("*.whl"))
        if len(wheels) != 1:
            print(f"build_wheel: expected one wheel, got {wheels}", file=sys.stderr)
            return 1
        target = out / wheels[0].name
        shutil.copy2(wheels[0], target)
    print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
