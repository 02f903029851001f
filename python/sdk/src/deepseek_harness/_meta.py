"""The SDK's version, from one source: the root ``package.json`` of harness-bridge.

A built wheel carries a generated ``_version.py`` (written by ``setup.py`` at build time from
``package.json``); an editable install or a plain checkout reads ``package.json`` of the
checkout it lives in.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator, Optional

PACKAGE_JSON_NAME = "harness-bridge"
UNKNOWN_VERSION = "0+unknown"


def _parents(start: Path) -> Iterator[Path]:
    start = start.resolve()
    yield start
    yield from start.parents


def find_checkout(start: Path) -> Optional[Path]:
    """The nearest directory at or above ``start`` whose package.json names harness-bridge."""
    for directory in _parents(start):
        pkg = directory / "package.json"
        if pkg.is_file():
            try:
                data = json.loads(pkg.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(data, dict) and data.get("name") == PACKAGE_JSON_NAME:
                return directory
    return None


def checkout_version(start: Path) -> Optional[str]:
    root = find_checkout(start)
    if root is None:
        return None
    try:
        version = json.loads((root / "package.json").read_text(encoding="utf-8")).get("version")
    except (OSError, ValueError):
        return None
    return version if isinstance(version, str) else None


def read_version() -> str:
    try:
        from ._version import __version__  # type: ignore[import-not-found]

        return str(__version__)
    except ImportError:
        pass
    return checkout_version(Path(__file__).parent) or UNKNOWN_VERSION


__version__ = read_version()
