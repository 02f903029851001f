"""The package's layering: public modules share code through ``deepseek_harness._internal``,
never through each other's private names; the internal package never imports the public
fronts (``client``, ``api``, ``async_api``, ``subscriptions``) it serves; and the wire's types
live in ``deepseek_harness.wire``, which imports nothing from the rest of the SDK."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator, Tuple

import pytest

import deepseek_harness
import deepseek_harness.wire as wire

PACKAGE = Path(deepseek_harness.__file__).resolve().parent
FRONTS = {"client", "api", "async_api", "subscriptions"}


def relative_imports(path: Path) -> Iterator[Tuple[str, str, int]]:
    """(module, imported name, line) of every ``from .x import y`` in ``path``, the module
    resolved to a dotted path inside the package."""
    here = path.relative_to(PACKAGE).with_suffix("").parts[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            base = here[: len(here) - (node.level - 1)] if node.level > 1 else here
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            for alias in node.names:
                yield module, alias.name, node.lineno


def public_modules() -> Iterator[Path]:
    for path in sorted(PACKAGE.glob("*.py")):
        if not path.name.startswith("_"):
            yield path


def test_public_modules_import_no_private_name_of_another_public_module() -> None:
    offences = []
    for path in public_modules():
        for module, name, line in relative_imports(path):
            if not module.startswith("_") and name.startswith("_") and name != "__version__":
                offences.append(f"{path.name}:{line}: {name} from {module}")
    assert offences == []


def test_internal_package_does_not_import_the_fronts() -> None:
    offences = []
    for path in sorted((PACKAGE / "_internal").glob("*.py")):
        for module, name, line in relative_imports(path):
            if module in FRONTS:
                offences.append(f"_internal/{path.name}:{line}: {name} from {module}")
    assert offences == []


def test_the_check_sees_relative_imports() -> None:
    # The tests above pass vacuously if the walk finds nothing: the fronts do import from _internal.
    found = {(module, name) for path in public_modules() for module, name, _ in relative_imports(path)}
    assert ("_internal.connection", "Connection") in found
    internal = {module for path in (PACKAGE / "_internal").glob("*.py") for module, _, _ in relative_imports(path)}
    assert "results" in internal


def _private_names_of(path: Path) -> set:
    """The single-underscore names a module's classes define: methods and ``self._x`` attributes."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("_"):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            names.add(node.attr)
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def test_only_the_connection_module_reaches_into_a_connection() -> None:
    # The rest of the package uses connection.py's functions (send, request, outcome, forget,
    # answer_requests, ...): a Connection's and a Router's private names are theirs alone.
    # HarnessClient, a Connection, uses its own through ``self``.
    private = _private_names_of(PACKAGE / "_internal" / "connection.py") | _private_names_of(PACKAGE / "_internal" / "router.py")
    assert {"_send", "_outcome", "_forget", "_router"} <= private
    owners = {PACKAGE / "_internal" / "connection.py", PACKAGE / "_internal" / "router.py"}
    offences = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path in owners:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in private and not (
                    isinstance(node.value, ast.Name) and node.value.id == "self"):
                offences.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: .{node.attr}")
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Attribute) and target.attr in {"interceptor", "on_settled"}:
                        offences.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: sets .{target.attr}")
    assert offences == []


def _absolute_imports(path: Path) -> Iterator[Tuple[str, int]]:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module, node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno


def test_the_wire_package_imports_nothing_from_the_rest_of_the_sdk() -> None:
    # Behaviour (decoding, requests, callbacks) builds on the wire's types, never the other way.
    offences = []
    for path in sorted((PACKAGE / "wire").glob("*.py")):
        for module, name, line in relative_imports(path):
            if module != "wire" and not module.startswith("wire."):
                offences.append(f"wire/{path.name}:{line}: {name} from {module or 'deepseek_harness'}")
        for module, line in _absolute_imports(path):
            if module.split(".")[0] == "deepseek_harness":
                offences.append(f"wire/{path.name}:{line}: {module}")
    assert offences == []
    # base.py is the leaf every other module of the package builds on.
    assert list(relative_imports(PACKAGE / "wire" / "base.py")) == []


def test_the_wire_check_sees_the_packages_imports() -> None:
    # The check above passes vacuously if it resolves nothing: the package's modules import each other.
    found = {module for path in (PACKAGE / "wire").glob("*.py") for module, _, _ in relative_imports(path)}
    assert {"wire.base", "wire.usage", "wire.turn_events"} <= found
    assert "pydantic" in {module for module, _ in _absolute_imports(PACKAGE / "wire" / "base.py")}


def _model_bases(path: Path) -> Iterator[Tuple[str, int]]:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else ""
                if name in {"BaseModel", "WireModel", "TypedDict"}:
                    yield node.name, node.lineno


def test_every_wire_model_is_defined_in_the_wire_package() -> None:
    offences = [f"{path.relative_to(PACKAGE)}:{line}: {name}"
                for path in sorted(PACKAGE.rglob("*.py")) if "wire" not in path.relative_to(PACKAGE).parts
                for name, line in _model_bases(path)]
    assert offences == []
    assert any(True for path in (PACKAGE / "wire").glob("*.py") for _ in _model_bases(path))


#: The modules that exported wire types before the wire package held them all, kept as
#: compatibility aliases: each name they export that the wire package defines is its object.
COMPATIBILITY_ALIASES = ["models", "events", "sessions", "checkpoints", "hooks", "turn_control", "mcp_servers"]


@pytest.mark.parametrize("name", COMPATIBILITY_ALIASES)
def test_old_module_paths_give_the_wire_packages_objects(name: str) -> None:
    import importlib

    module = importlib.import_module(f"deepseek_harness.{name}")
    shared = [n for n in module.__all__ if n in wire.__all__]
    assert shared, f"deepseek_harness.{name} re-exports no wire type"
    assert [n for n in shared if getattr(module, n) is not getattr(wire, n)] == []


def test_the_root_exports_the_wire_packages_objects() -> None:
    shared = [n for n in deepseek_harness.__all__ if n in wire.__all__]
    assert len(shared) > 40
    assert [n for n in shared if getattr(deepseek_harness, n) is not getattr(wire, n)] == []
    from deepseek_harness import models

    assert models.TurnEndReason is wire.TurnEndReason
