"""The packages' layering: no import cycles between domains, kit and config
import no domain, services import no HTTP framework."""

import ast
from pathlib import Path

import formsapi

SRC = Path(formsapi.__file__).parent
DOMAINS = {path.name for path in SRC.iterdir() if (path / "__init__.py").exists()} - {"migrations"}


def _imports(path: Path) -> set[str]:
    """The formsapi packages (or top-level modules) a file imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = (
            [node.module]
            if isinstance(node, ast.ImportFrom) and node.module
            else [alias.name for alias in node.names]
            if isinstance(node, ast.Import)
            else []
        )
        for name in names:
            parts = name.split(".")
            if parts[0] == "formsapi" and len(parts) > 1:
                found.add(parts[1])
    return found


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        if "migrations" in path.parts:
            continue
        relative = path.relative_to(SRC).parts
        package = relative[0].removesuffix(".py")
        graph.setdefault(package, set()).update(_imports(path) - {package})
    return graph


def test_no_two_packages_import_each_other_through_any_path() -> None:
    graph = _graph()
    cycles = []

    def visit(node: str, path: list[str]) -> None:
        for target in sorted(graph.get(node, ())):
            if target in path:
                cycles.append([*path[path.index(target) :], target])
            elif target in DOMAINS:
                visit(target, [*path, target])

    for domain in sorted(DOMAINS):
        visit(domain, [domain])
    assert cycles == []


def test_kit_and_config_depend_on_no_domain() -> None:
    graph = _graph()
    assert graph["kit"] == set()  # generic pieces: nothing of the service
    assert graph["config"] <= {"kit"}


def test_services_and_repositories_import_no_web_framework() -> None:
    offenders = [
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if path.name in ("service.py", "repository.py") or "repository" in path.parts
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom)
        and (node.module or "").split(".")[0] in ("fastapi", "starlette")
    ]
    assert offenders == []
