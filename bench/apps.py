"""The comparison servers, run on the same stack as the service (uvicorn,
FastAPI, SQLAlchemy async): each is an app factory for `uvicorn --factory`.

- http_floor: answers a constant body of the size the scenario answers
  (GET /size/{n}), with no database and no auth.
- bare_floor: runs the SQL the service runs for the scenario (captured by
  bench.capture) and returns its rows as JSON: no auth, no rate limit, no
  framework validation.
- service_without_auth: the real service with the caller fixed and the rate
  limit off, to price authentication and rate limiting.

Each factory imports what it serves, no more: the floors' processes start
without importing the whole service (seconds of CPU each).
"""

import os
import pickle
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from fastapi import FastAPI, Request
from fastapi.responses import Response

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection


def http_floor() -> FastAPI:
    """GET /size/{n}: a constant JSON body of n bytes."""
    app = FastAPI()
    bodies: dict[int, bytes] = {}

    @app.get("/size/{size}")
    @app.post("/size/{size}")
    async def constant(size: int) -> Response:
        body = bodies.get(size)
        if body is None:
            body = bodies[size] = orjson.dumps({"data": "x" * max(0, size - 12)})
        return Response(body, media_type="application/json")

    return app


def bare_floor() -> FastAPI:
    """GET /{scenario}: run that scenario's captured statements, return the rows."""
    from formsapi.db.engine import create_engine

    # Written by bench.run from bench.capture: trusted, and pickle keeps the
    # parameters' types (datetimes) exactly as the service passed them.
    plans: dict[str, list[dict[str, Any]]] = pickle.loads(  # noqa: S301
        Path(os.environ["BENCH_SQL_FILE"]).read_bytes()
    )
    # Autocommit, as the service's reads: the statement alone, no BEGIN/COMMIT.
    engine = create_engine(os.environ["FORMSAPI_DATABASE_URL"]).execution_options(
        isolation_level="AUTOCOMMIT"
    )
    app = FastAPI()

    async def run(connection: "AsyncConnection", statement: dict[str, Any]) -> list[Any]:
        params = statement["parameters"]
        # On the driver, as the service's hot reads run (every read, on PostgreSQL).
        postgres = connection.dialect.name == "postgresql"
        if postgres or statement.get("hot"):
            driver = (await connection.get_raw_connection()).driver_connection
            assert driver is not None
            fetched = (
                driver.fetch(statement["sql"], *params)
                if postgres
                else driver.execute_fetchall(statement["sql"], params)
            )
            return [list(row) for row in await fetched]
        result = await connection.exec_driver_sql(
            statement["sql"], tuple(params) if isinstance(params, list) else params
        )
        return [list(row) for row in result] if result.returns_rows else []

    @app.get("/{scenario}")
    async def handler(scenario: str, request: Request) -> Response:
        if scenario not in plans:
            return Response(status_code=404)  # the runner's readiness probe asks /healthz
        async with engine.connect() as connection:
            rows = [await run(connection, s) for s in plans[scenario]]
        return Response(orjson.dumps(rows, default=str), media_type="application/json")

    return app


def service_without_auth() -> FastAPI:
    """The service with the rate limit off and authentication answering a
    constant, to price authentication and rate limiting.

    Not `dependency_overrides`: with any override set, FastAPI rebuilds the
    dependency tree of every dependency on every request, which cost more than
    authentication and rate limiting together (bench/RESULTS.md). Instead the
    function every /v1 route calls before its handler (GuardedRoute looks it up
    at call time) answers the constant. This process serves nothing else."""
    from formsapi import dependencies
    from formsapi.api_key.principal import Principal
    from formsapi.api_key.scopes import Scope
    from formsapi.app import create_app
    from formsapi.config import Settings

    principal = Principal(
        key_id="key_bench",
        organization_id=os.environ["BENCH_ORG_ID"],
        plan="pro",
        scopes=frozenset(Scope),
    )

    async def fixed_principal(request: Request) -> Principal:
        return principal

    dependencies.get_principal = fixed_principal
    return create_app(Settings(rate_limit_enabled=False))
