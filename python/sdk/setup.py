"""Build hooks: the version from the root package.json, and a platform tag when the wheel
bundles the harness-bridge binary (``src/deepseek_harness/_bin/harness-bridge``).

``scripts/build_wheel.py`` builds the platform wheel; a plain ``pip install python/sdk``
builds a pure wheel that finds the binary elsewhere (see README.md).
"""

from __future__ import annotations

import json
import os
import re
import sysconfig
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
PACKAGE_DIR = HERE / "src" / "deepseek_harness"
VERSION_ENV = "DEEPSEEK_HARNESS_BUILD_VERSION"
PLAT_ENV = "DEEPSEEK_HARNESS_PLAT_NAME"


def read_version() -> str:
    explicit = os.environ.get(VERSION_ENV)
    if explicit:
        return explicit
    for directory in [HERE, *HERE.parents]:
        pkg = directory / "package.json"
        if pkg.is_file():
            data = json.loads(pkg.read_text(encoding="utf-8"))
            if data.get("name") == "harness-bridge":
                return data["version"]
    pkg_info = HERE / "PKG-INFO"  # building from an sdist
    if pkg_info.is_file():
        match = re.search(r"^Version: (.+)$", pkg_info.read_text(encoding="utf-8"), re.M)
        if match:
            return match.group(1).strip()
    raise SystemExit(
        f"deepseek-harness: cannot find the version: no harness-bridge package.json above {HERE} "
        f"and {VERSION_ENV} is not set"
    )


VERSION = read_version()


def long_description() -> str:
    """README.md, then the CHANGELOG (what `pip show`/a package index shows as the description).
    The CHANGELOG is the repository's: beside setup.py in an sdist or a build_wheel.py copy, else
    at the repository root (``pip install python/sdk``). It stays self-contained on an index:
    neither file links to a relative path (tests/package_metadata.py checks the built metadata);
    a path such as docs/providers.md is plain text naming a file of the repository."""
    parts = [(HERE / "README.md").read_text(encoding="utf-8")]
    root = HERE.parents[1]
    for changelog in (HERE / "CHANGELOG.md", root / "CHANGELOG.md"):
        if changelog.is_file() and (changelog.parent == HERE or (root / "python" / "sdk" / "setup.py").is_file()):
            parts.append(changelog.read_text(encoding="utf-8"))
            break
    return "\n\n".join(part.rstrip("\n") for part in parts) + "\n"


DESCRIPTION = {"long_description": long_description(), "long_description_content_type": "text/markdown"}


class BuildPyWithVersion(build_py):
    """Writes ``_version.py`` into the built package (not into the source tree)."""

    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "deepseek_harness" / "_version.py"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f'__version__ = "{VERSION}"\n', encoding="utf-8")


cmdclass = {"build_py": BuildPyWithVersion}

BUNDLED = PACKAGE_DIR / "_bin" / ("harness-bridge.exe" if os.name == "nt" else "harness-bridge")

if BUNDLED.is_file():
    try:
        from setuptools.command.bdist_wheel import bdist_wheel  # setuptools >= 70.1
    except ImportError:  # pragma: no cover
        from wheel.bdist_wheel import bdist_wheel  # type: ignore[no-redef]

    class PlatformWheel(bdist_wheel):
        """The wheel holds a native executable: any Python 3, no ABI, this platform."""

        def get_tag(self):  # type: ignore[no-untyped-def]
            plat = os.environ.get(PLAT_ENV) or sysconfig.get_platform().replace("-", "_").replace(".", "_")
            return "py3", "none", plat

    class BinaryDistribution(Distribution):
        """Built and installed as platform-specific (platlib, not purelib)."""

        def has_ext_modules(self) -> bool:
            return True

    cmdclass["bdist_wheel"] = PlatformWheel
    # The `harness-bridge` command only where the binary is bundled: in a pure install it would
    # be a `harness-bridge` on PATH that cannot run the bridge, and the SDK's PATH lookup could
    # pick it up.
    entry_points = {"console_scripts": ["harness-bridge = deepseek_harness._console:main"]}
    setup(version=VERSION, cmdclass=cmdclass, distclass=BinaryDistribution, entry_points=entry_points, **DESCRIPTION)
else:
    setup(version=VERSION, cmdclass=cmdclass, **DESCRIPTION)
