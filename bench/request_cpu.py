"""CPU per request of the app itself, in one process, no socket: requests that
stop early (a missing key's 401, a settings page's redirect to sign-in, a
404) cost what every request pays before its handler, routing first; then the
read API's three GETs with a valid key (a form of the demo data and its
submissions), which pay for the key's lookup and their own statements too.
Prints this process's CPU microseconds per request, the best of five rounds.

    .venv/bin/python -m bench.request_cpu
    .venv/bin/python -m bench.request_cpu --database-url postgresql://postgres@127.0.0.1/bench_cpu

(an empty PostgreSQL database: it is migrated and filled here.)

Run it on each of two checkouts to compare them; run on a quiet machine.
"""

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

import httpx
from fastapi import FastAPI

from formsapi import demo
from formsapi.api_key import service as api_key_service
from formsapi.app import create_app
from formsapi.config import Settings
from formsapi.db.migrations import migrate
from formsapi.db.session import session_scope
from formsapi.member import service as member_service
from formsapi.models import Plan, Role
from formsapi.organization import service as organization_service
from formsapi.services import services_of
from formsapi.user import service as user_service

PATHS = [
    "/v1/forms",
    "/v1/webhook-endpoints",
    "/settings/keys",
    "/settings/webhooks",
    "/f/frm_missing",
    "/nothing",
]


async def _read_key(app: FastAPI) -> tuple[str, str]:
    """A read key of a new organization holding demo forms, and one of its forms."""
    async with session_scope(services_of(app).sessionmaker) as session:
        organization = await organization_service.create(session, "Bench", Plan.standard)
        user = await user_service.create(session, "bench@example.com", "correct horse battery")
        await member_service.add_directly(session, organization.id, user, Role.owner)
        created = await api_key_service.create(session, organization, user, "bench")
        forms = await demo.fill(session, organization.id, forms=2, submissions=200, seed=1)
    return created.secret, forms[0].id


async def measure(url: str, paths: list[str], requests: int) -> None:
    app = create_app(Settings(database_url=url, redis_url=None, rate_limit_enabled=False))
    async with app.router.lifespan_context(app):
        secret, form_id = await _read_key(app)
        signed = {"Authorization": f"Bearer {secret}"}
        with_key = [f"/v1/forms/{form_id}", f"/v1/forms/{form_id}/submissions"]
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            for path, headers in [
                *((path, {}) for path in paths),
                *((path, signed) for path in ["/v1/forms", *with_key]),
            ]:
                for _ in range(requests // 10):  # warm
                    await client.get(path, headers=headers)
                rounds = []
                for _ in range(5):
                    started = time.process_time()
                    for _ in range(requests):
                        answer = await client.get(path, headers=headers)
                    rounds.append((time.process_time() - started) / requests * 1e6)
                shown = f"{path.replace(form_id, '{id}')}{' (key)' if headers else ''}"
                print(f"{shown:34} {answer.status_code}  {min(rounds):6.0f} µs CPU a request")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=400, help="per round and path")
    parser.add_argument("--database-url", help="an empty database (default: a new SQLite file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        url = args.database_url or f"sqlite:///{Path(directory) / 'bench.db'}"
        migrate(url)
        asyncio.run(measure(url, PATHS, args.requests))


if __name__ == "__main__":
    main()
