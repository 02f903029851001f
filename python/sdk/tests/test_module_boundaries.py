"""The package's layering: public modules share code through ``deepseek_harness._internal``,
never through each other's private names, and the internal package never imports the public
fronts (``client``, ``api``, ``async_api``, ``subscriptions``) it serves."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator, Tuple

import deepseek_harness

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
