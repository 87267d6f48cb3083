"""Calibration: the smallest FastAPI handler running page 1's query with a
plain asyncpg pool and orjson, no auth, no rate limit, no validation. It tells
what this machine's stack can do at all (issue 3 quotes ~2,700 req/s for it on
its machine). Run by hand:

    .venv/bin/python -m uvicorn --factory bench.minimal_app:create --port 8833 \\
        --workers 2 --no-access-log
    wrk -t2 -c32 -d8s --latency http://127.0.0.1:8833/p
"""

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import orjson
from fastapi import FastAPI
from fastapi.responses import Response

SQL = """SELECT id, form_id, form_version, submitted_at, answers::text,
(SELECT response_count FROM forms WHERE organization_id = $1 AND id = $2)
FROM submissions WHERE organization_id = $1 AND form_id = $2
ORDER BY submitted_at DESC, id DESC LIMIT $3 OFFSET $4"""


def create() -> FastAPI:
    pool: Any = None
    url = os.environ.get("BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1/bench")

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        # At startup: a pool made lazily by the first requests was made by
        # each of the concurrent first requests.
        nonlocal pool
        pool = await asyncpg.create_pool(url, min_size=4, max_size=10)
        yield
        await pool.close()

    app = FastAPI(lifespan=lifespan)

    @app.get("/p")
    async def page() -> Response:
        async with pool.acquire() as connection:
            rows = await connection.fetch(SQL, "org_bench", "frm_bench00", 50, 0)
        body = {
            "data": [
                {
                    "id": r[0],
                    "formId": r[1],
                    "formVersion": r[2],
                    "submittedAt": r[3].isoformat(timespec="milliseconds"),
                    "answers": orjson.Fragment(r[4]),
                }
                for r in rows
            ],
            "pagination": {"page": 1, "limit": 50, "total": rows[0][5] if rows else 0},
        }
        return Response(orjson.dumps(body), media_type="application/json")

    return app
