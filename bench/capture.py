"""Capture the SQL the service runs for one request, with its parameters, so
the floors can run exactly that: the bare handler through the same driver, and
pgbench as a script with the parameters inlined."""

import asyncio
import re
import uuid
from datetime import datetime
from typing import Any

import httpx
from sqlalchemy import event

from formsapi.app import create_app, release
from formsapi.config import Settings
from formsapi.db.hot import HotStatement
from formsapi.services import services_of


async def capture(
    database_url: str, redis_url: str, secret: str, paths: dict[str, str]
) -> dict[str, list[dict[str, Any]]]:
    # With Redis, as the service runs: the key lookup is cached after the warm-up
    # request, so only the scenario's own SQL is captured for the floors.
    app = create_app(
        Settings(
            database_url=database_url,
            redis_url=redis_url,
            redis_prefix=f"capture-{uuid.uuid4()}",
            rate_limit_enabled=False,
        )
    )
    engine = services_of(app).engine.sync_engine
    seen: list[dict[str, Any]] = []

    def on_execute(conn: Any, cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        seen.append(
            {
                "sql": statement,
                "parameters": list(parameters) if isinstance(parameters, tuple) else parameters,
            }
        )

    event.listen(engine, "before_cursor_execute", on_execute)
    # The hot reads of a read session skip SQLAlchemy's execution (and its events).
    run_hot = HotStatement.all

    async def recorded(hot: HotStatement, session: Any, parameters: Any) -> Any:
        if not session.in_transaction():
            sql, values = hot.driver_sql(session.bind.dialect, parameters)
            seen.append({"sql": sql, "parameters": values, "hot": True})
        return await run_hot(hot, session, parameters)

    HotStatement.all = recorded  # type: ignore[method-assign,assignment]
    plans: dict[str, list[dict[str, Any]]] = {}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
        for name, path in paths.items():
            await client.get(path, headers={"Authorization": f"Bearer {secret}"})  # warm
            seen.clear()
            response = await client.get(path, headers={"Authorization": f"Bearer {secret}"})
            plans[name] = [dict(s) for s in seen]
            plans[name][0]["status"] = response.status_code
    HotStatement.all = run_hot  # type: ignore[method-assign]
    await release(app)
    return plans


def _literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, datetime):
        return f"'{value.isoformat()}'::timestamptz"
    return "'" + str(value).replace("'", "''") + "'"


_STRING = re.compile(r"'(?:[^']|'')*'")
_VARIABLE = re.compile(r":(?=[A-Za-z_])")


def _no_variables(sql: str) -> str:
    """pgbench reads ':name' as one of its variables even inside a string (the
    timestamp format 'HH24:MI:SS'): split such strings around chr(58), which
    the planner folds back into the same constant."""

    def split(match: re.Match[str]) -> str:
        text = match.group(0)
        if not _VARIABLE.search(text):
            return text
        return "(" + _VARIABLE.sub("' || chr(58) || '", text) + ")"

    return _STRING.sub(split, sql)


def pgbench_script(statements: list[dict[str, Any]]) -> str:
    """The statements as pgbench runs them, parameters inlined. No BEGIN/COMMIT:
    the service runs its reads in autocommit."""
    lines: list[str] = []
    for statement in statements:
        sql = statement["sql"]
        params = statement["parameters"] or []
        for index in range(len(params), 0, -1):  # $10 before $1
            sql = sql.replace(f"${index}", _literal(params[index - 1]))
        lines.append(_no_variables(" ".join(sql.split())) + ";")
    return "\n".join(lines) + "\n"


def capture_sync(
    database_url: str, redis_url: str, secret: str, paths: dict[str, str]
) -> dict[str, list[dict[str, Any]]]:
    return asyncio.run(capture(database_url, redis_url, secret, paths))
