"""A virtual environment holding what ``pip install deepseek-harness`` installs — the SDK and its
runtime dependencies, none of its extras — plus what a program says it needs, made of links to
the packages of the environment the tests run in (no network, a fraction of a second).

Why: the documents' examples are run by tests/test_examples.py as a reader runs them after the
README's Install section. Run with the tests' own Python, an example that needs a package the
Install section does not install (pytest, from the ``test`` extra) passed here and failed for
the reader. In this environment such an example fails as it does for the reader, its
subprocesses (``sys.executable -m ...``) included.

A program names what it needs beyond the Install section on a line of its own,
``# needs DIST[, DIST...]: how to install it`` (``# needs mcp: pip install mcp``); the links then
hold those distributions and their dependencies too.
"""

from __future__ import annotations

import importlib.metadata as metadata
import os
import re
import venv
from pathlib import Path
from typing import Dict, FrozenSet, Iterable, Set

from packaging.requirements import Requirement

import deepseek_harness

__all__ = ["NEEDS", "needs_of", "RuntimeVenvs"]

NEEDS = re.compile(r"^\s*#\s*needs\s+([A-Za-z0-9_.\-]+(?:\s*,\s*[A-Za-z0-9_.\-]+)*)\s*:", re.M)
SDK = "deepseek-harness"


def needs_of(code: str) -> FrozenSet[str]:
    """The distributions a program says it needs beyond the Install section."""
    return frozenset(name.strip() for found in NEEDS.findall(code) for name in found.split(","))


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(names: Iterable[str]) -> Set[str]:
    """The distributions ``names`` install: each, and its requirements, recursively, with the
    extras a requirement asks of its distribution (``pyjwt[crypto]``) but none of the SDK's."""
    extras: Dict[str, Set[str]] = {}
    todo = [(_normal(n), "") for n in names]
    while todo:
        name, extra = todo.pop()
        if extra in extras.setdefault(name, set()):
            continue
        extras[name].add(extra)
        for line in metadata.distribution(name).requires or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": extra}):
                todo += [(_normal(req.name), wanted) for wanted in ("", *req.extras)]
    return set(extras)


class RuntimeVenvs:
    """One such environment per set of needs, made on first use under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._made: Dict[FrozenSet[str], Path] = {}

    def python(self, needs: FrozenSet[str] = frozenset()) -> Path:
        if needs not in self._made:
            self._made[needs] = self._make(needs, self.root / f"venv-{len(self._made)}")
        return self._made[needs]

    @staticmethod
    def _make(needs: FrozenSet[str], env_dir: Path) -> Path:
        venv.EnvBuilder(with_pip=False, symlinks=os.name != "nt").create(env_dir)
        py = env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
        [site] = list(env_dir.glob("lib/python*/site-packages")) or [env_dir / "Lib" / "site-packages"]
        for name in sorted(closure({SDK, *needs})):
            dist = metadata.distribution(name)
            for part in {f.parts[0] for f in dist.files or [] if f.parts}:
                # Scripts (../../bin), caches and .pth files (an editable install's path) stay out.
                if part in ("..", "__pycache__") or part.endswith(".pth") or (site / part).exists():
                    continue
                target = Path(str(dist.locate_file(part)))
                if target.exists():
                    (site / part).symlink_to(target)
        # The SDK as the tests import it (an editable install lists only its .pth).
        package = Path(deepseek_harness.__file__).resolve().parent
        if not (site / package.name).exists():
            (site / package.name).symlink_to(package)
        return py
