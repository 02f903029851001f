"""Finding the ``harness-bridge`` executable.

Order: the explicit ``bridge_bin`` argument, the ``HARNESS_BRIDGE_BIN`` environment variable,
the binary bundled in this package (``deepseek_harness/_bin/harness-bridge``, present in the
platform wheel), then ``harness-bridge`` on ``PATH``.

Invariant: nothing the working directory holds is ever run by default. The working directory
is usually a repository the caller did not write (and the model is steered by what it reads),
so a ``bin/harness-bridge`` planted there must not become the agent. ``PATH`` entries that are
relative (``.``, ``bin``, an empty entry) or lie inside the working directory are skipped for
the same reason. A development checkout is used only on explicit opt-in
(``HARNESS_BRIDGE_DEV_CHECKOUT=1`` or ``dev_checkout=True``), and then only the checkout this
package's own source file lives in (``python/sdk/src/deepseek_harness`` → the repository root),
never one found from the working directory.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import List, Mapping, NamedTuple, Optional, Tuple, Union

from ._meta import PACKAGE_JSON_NAME
from .errors import BridgeNotFoundError

__all__ = [
    "BINARY_NAME", "DEV_CHECKOUT_ENV_VAR", "ENV_VAR", "BridgeLocation", "bundled_binary_path", "dev_checkout_root",
    "find_bridge_binary", "locate_bridge_binary",
]

BINARY_NAME = "harness-bridge" + (".exe" if sys.platform == "win32" else "")
ENV_VAR = "HARNESS_BRIDGE_BIN"
DEV_CHECKOUT_ENV_VAR = "HARNESS_BRIDGE_DEV_CHECKOUT"

HOW_TO_GET_IT = (
    "To get the binary: in a harness-bridge checkout run `npm run build` (it writes "
    "bin/harness-bridge); or install the platform wheel of deepseek-harness, which bundles it; "
    f"or point {ENV_VAR} (or bridge_bin=...) at an existing harness-bridge executable; "
    f"or, to run bin/harness-bridge of the checkout this SDK is imported from, set "
    f"{DEV_CHECKOUT_ENV_VAR}=1 (or dev_checkout=True). A bin/harness-bridge in or above the "
    f"working directory is never run on its own."
)


def bundled_binary_path() -> Path:
    """Where the platform wheel puts the binary."""
    return Path(__file__).resolve().parent / "_bin" / BINARY_NAME


def bundled_binary_problem() -> Optional[str]:
    """None when the bundled binary is there and executable, else why not."""
    bundled = bundled_binary_path()
    why = _usable(bundled)
    if why == "is not executable":
        # A wheel installer may have dropped the executable bit; restore it if we can.
        try:
            bundled.chmod(bundled.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
            why = _usable(bundled)
        except OSError as exc:
            # A read-only install (a container image's site-packages, a Nix store, a read-only
            # bind mount), or one owned by another user: nothing this process can do about it,
            # so say what the caller can.
            why = (f"is not executable, and the SDK could not make it so (chmod: {exc.strerror or exc}; a read-only "
                   "install, or one owned by another user): reinstall deepseek-harness where it can be written "
                   "(pip install --force-reinstall deepseek-harness, which sets the executable bit), or point "
                   f"{ENV_VAR} at an executable copy (cp it somewhere writable and chmod +x it)")
    return why


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


def dev_checkout_root() -> Optional[Path]:
    """The harness-bridge checkout this package's source file lives in (an editable install
    from ``python/sdk/src``), or None when the package is installed elsewhere."""
    here = Path(__file__).resolve()
    # .../python/sdk/src/deepseek_harness/_binary.py: the root is four levels above the package.
    if len(here.parents) < 5 or here.parents[1].name != "src" or here.parents[2].name != "sdk":
        return None
    root = here.parents[4]
    try:
        data = json.loads((root / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return root if isinstance(data, dict) and data.get("name") == PACKAGE_JSON_NAME else None


def _inside(path: Path, directory: Path) -> bool:
    try:
        path.relative_to(directory)
        return True
    except ValueError:
        return False


def _search_path(path_var: Optional[str], cwds: List[Path], tried: List[Tuple[str, str]]) -> Optional[Path]:
    """``harness-bridge`` in the absolute ``PATH`` entries that are outside every ``cwds``."""
    skipped: List[str] = []
    for entry in (path_var or "").split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            skipped.append(f"{entry or '(empty)'} (relative)")
            continue
        directory = Path(entry).resolve()
        if any(_inside(directory, c) for c in cwds):
            skipped.append(f"{entry} (inside the working directory)")
            continue
        candidate = directory / BINARY_NAME
        if _usable(candidate) is None:
            return candidate
    detail = f"no {BINARY_NAME} on PATH"
    if skipped:
        detail += "; skipped " + ", ".join(skipped)
    tried.append(("PATH", detail))
    return None


class BridgeLocation(NamedTuple):
    """The executable :func:`locate_bridge_binary` chose, the step that chose it, and what the
    steps before it found (place, why not)."""

    path: Path
    source: str
    tried: List[Tuple[str, str]]


def find_bridge_binary(
    bridge_bin: Optional[Union[str, "os.PathLike[str]"]] = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[Union[str, "os.PathLike[str]"]] = None,
    *,
    dev_checkout: Optional[bool] = None,
) -> Path:
    """Returns the path of the harness-bridge executable to run (see :func:`locate_bridge_binary`)."""
    return locate_bridge_binary(bridge_bin, env, cwd, dev_checkout=dev_checkout).path


def locate_bridge_binary(
    bridge_bin: Optional[Union[str, "os.PathLike[str]"]] = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[Union[str, "os.PathLike[str]"]] = None,
    *,
    dev_checkout: Optional[bool] = None,
) -> BridgeLocation:
    """The harness-bridge executable to run, and which step of the lookup found it.

    ``env`` is the environment to consult for ``HARNESS_BRIDGE_BIN``, ``PATH`` and
    ``HARNESS_BRIDGE_DEV_CHECKOUT`` (default: ``os.environ``). An explicit ``bridge_bin`` or
    ``HARNESS_BRIDGE_BIN`` that does not point at an executable is an error naming that path
    (nothing else is tried then). ``cwd`` (the bridge's working directory, when it differs from
    this process's) is, like the current directory, never searched: ``PATH`` entries inside
    either are skipped. ``dev_checkout`` (default: ``HARNESS_BRIDGE_DEV_CHECKOUT=1``) adds, last,
    ``bin/harness-bridge`` of the checkout this package is imported from.

    Raises :class:`BridgeNotFoundError` listing every place tried and how to get the binary.
    """
    environ = os.environ if env is None else env
    if bridge_bin is not None:
        return BridgeLocation(_explicit(bridge_bin, "bridge_bin"), "bridge_bin", [])
    from_env = environ.get(ENV_VAR)
    if from_env:
        return BridgeLocation(_explicit(from_env, f"${ENV_VAR}"), f"${ENV_VAR}", [("bridge_bin", "not given")])

    tried: List[Tuple[str, str]] = [
        ("bridge_bin", "not given"),
        (f"${ENV_VAR}", "not set"),
    ]

    bundled = bundled_binary_path()
    why = bundled_binary_problem()
    if why is None:
        return BridgeLocation(bundled, "bundled in the package", tried)
    tried.append(("bundled in the package", f"{bundled}: {why}"))

    cwds = [Path(os.getcwd()).resolve()]
    if cwd is not None:
        cwds.append(Path(cwd).resolve())
    on_path = _search_path(environ.get("PATH"), cwds, tried)
    if on_path is not None:
        return BridgeLocation(on_path.resolve(), f"PATH ({on_path.parent})", tried)

    if dev_checkout is None:
        dev_checkout = environ.get(DEV_CHECKOUT_ENV_VAR, "") not in ("", "0")
    if not dev_checkout:
        tried.append(("development checkout", f"not opted in (set {DEV_CHECKOUT_ENV_VAR}=1 or dev_checkout=True)"))
    else:
        root = dev_checkout_root()
        if root is None:
            tried.append(("development checkout", f"this package ({Path(__file__).resolve().parent}) is not inside one"))
        else:
            candidate = root / "bin" / BINARY_NAME
            why = _usable(candidate)
            if why is None:
                return BridgeLocation(candidate.resolve(), f"development checkout ({root}, opted in)", tried)
            tried.append(("development checkout", f"{candidate}: {why}"))

    lines = "\n".join(f"  - {place}: {detail}" for place, detail in tried)
    raise BridgeNotFoundError(f"harness-bridge not found. Tried, in order:\n{lines}\n{HOW_TO_GET_IT}", tried)
