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


def test_the_form_language_imports_only_kit() -> None:
    # What a form is and checks (formsapi.language) knows nothing of the
    # database, HTTP or the service's settings: every reader can use it.
    assert _graph()["language"] <= {"kit"}


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


def _imported_modules(path: Path) -> set[str]:
    """The formsapi modules a file imports by name, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.startswith("formsapi.")}


def test_no_module_but_the_app_imports_another_packages_endpoints() -> None:
    # Endpoints are a front door: what two of them share lives in
    # formsapi.routing (the API's HTTP kit) or in the package's service.
    offenders = []
    for path in SRC.rglob("*.py"):
        relative = path.relative_to(SRC).parts
        if relative == ("app.py",) or "migrations" in relative:
            continue
        for name in _imported_modules(path):
            parts = name.split(".")
            if len(parts) >= 3 and parts[2] in ("endpoints", "routes") and parts[1] != relative[0]:
                offenders.append(f"{'/'.join(relative)} imports {name}")
    # The builder's preview walks a draft through the hosted page's own
    # routes, until the respondent's journey is a service both call.
    assert offenders == ["web/builder.py imports formsapi.hosted.routes"]


def test_the_api_kit_imports_no_domain_but_the_idempotency_store() -> None:
    assert _imports(SRC / "routing.py") <= {"kit", "errors", "idempotency"}


def test_the_database_package_imports_only_kit() -> None:
    assert _graph()["db"] <= {"kit"}


def test_handlers_reach_what_the_app_built_through_its_typed_services() -> None:
    # formsapi.services, not untyped app.state attributes: a reader and mypy
    # can follow each use to where it was made.
    offenders = [
        f"{path.relative_to(SRC)}:{number}"
        for path in SRC.rglob("*.py")
        if path.name != "services.py"
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if "app.state." in line and "app.state.services" not in line
    ]
    assert offenders == []


def test_the_tests_helpers_live_in_tests_support() -> None:
    tests = Path(__file__).parent
    loose = [
        path.name
        for path in tests.glob("*.py")
        if not path.name.startswith("test_") and path.name not in ("conftest.py", "__init__.py")
    ]
    assert loose == []
