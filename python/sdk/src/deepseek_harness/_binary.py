"""Finding the ``harness-bridge`` executable.

Order: the explicit ``bridge_bin`` argument, the ``HARNESS_BRIDGE_BIN`` environment variable,
the binary bundled in this package (``deepseek_harness/_bin/harness-bridge``, present in the
platform wheel), ``harness-bridge`` on ``PATH``, and ``bin/harness-bridge`` of a development
checkout (found by walking up from this package's file and from the working directory to a
``package.json`` named harness-bridge).
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
from pathlib import Path
from typing import List, Mapping, Optional, Tuple, Union

from ._meta import find_checkout
from .errors import BridgeNotFoundError

__all__ = ["BINARY_NAME", "ENV_VAR", "bundled_binary_path", "find_bridge_binary"]

BINARY_NAME = "harness-bridge" + (".exe" if sys.platform == "win32" else "")
ENV_VAR = "HARNESS_BRIDGE_BIN"

HOW_TO_GET_IT = (
    "To get the binary: in a harness-bridge checkout run `npm run build` (it writes "
    "bin/harness-bridge); or install the platform wheel of deepseek-harness, which bundles it; "
    f"or point {ENV_VAR} (or bridge_bin=...) at an existing harness-bridge executable."
)


def bundled_binary_path() -> Path:
    """Where the platform wheel puts the binary."""
    return Path(__file__).resolve().parent / "_bin" / BINARY_NAME


def _usable(path: Path) -> Optional[str]:
    """None when ``path`` is an executable file, else why not."""
    if not path.exists():
        return "does not exist"
    if not path.is_file():
        return "is not a file"
    if not os.access(path, os.X_OK):
        return "is not executable"
    return None


def _explicit(path: Union[str, "os.PathLike[str]"], where: str) -> Path:
    candidate = Path(path).expanduser()
    why = _usable(candidate)
    if why is not None:
        raise BridgeNotFoundError(
            f"harness-bridge not found: {where} {str(candidate)!r} {why}.\n{HOW_TO_GET_IT}",
            [(where, f"{candidate}: {why}")],
        )
    return candidate.resolve()


def find_bridge_binary(
    bridge_bin: Optional[Union[str, "os.PathLike[str]"]] = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[Union[str, "os.PathLike[str]"]] = None,
) -> Path:
    """Returns the path of the harness-bridge executable to run.

    ``env`` is the environment to consult for ``HARNESS_BRIDGE_BIN`` and ``PATH`` (default:
    ``os.environ``). An explicit ``bridge_bin`` or ``HARNESS_BRIDGE_BIN`` that does not point
    at an executable is an error naming that path (nothing else is tried then).

    Raises :class:`BridgeNotFoundError` listing every place tried and how to get the binary.
    """
    environ = os.environ if env is None else env
    if bridge_bin is not None:
        return _explicit(bridge_bin, "bridge_bin")
    from_env = environ.get(ENV_VAR)
    if from_env:
        return _explicit(from_env, f"${ENV_VAR}")

    tried: List[Tuple[str, str]] = [
        ("bridge_bin", "not given"),
        (f"${ENV_VAR}", "not set"),
    ]

    bundled = bundled_binary_path()
    why = _usable(bundled)
    if why == "is not executable":
        # A wheel installer may have dropped the executable bit; restore it if we can.
        try:
            bundled.chmod(bundled.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
            why = _usable(bundled)
        except OSError:
            pass
    if why is None:
        return bundled
    tried.append(("bundled in the package", f"{bundled}: {why}"))

    on_path = shutil.which(BINARY_NAME, path=environ.get("PATH"))
    if on_path:
        return Path(on_path).resolve()
    tried.append(("PATH", f"no {BINARY_NAME} on PATH"))

    starts = [("package location", Path(__file__).resolve().parent), ("working directory", Path(cwd or os.getcwd()))]
    seen = set()
    for label, start in starts:
        root = find_checkout(start)
        if root is None:
            tried.append((f"development checkout above the {label}", f"no harness-bridge package.json above {start}"))
            continue
        if root in seen:
            continue
        seen.add(root)
        candidate = root / "bin" / BINARY_NAME
        why = _usable(candidate)
        if why is None:
            return candidate.resolve()
        tried.append((f"development checkout above the {label}", f"{candidate}: {why}"))

    lines = "\n".join(f"  - {place}: {detail}" for place, detail in tried)
    raise BridgeNotFoundError(f"harness-bridge not found. Tried, in order:\n{lines}\n{HOW_TO_GET_IT}", tried)
