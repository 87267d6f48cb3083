"""What a form's cost units mean in CPU time (language/cost.py): forms of each
kind the bound allows, near it, and the CPU a request to each takes.

    python -m bench.form_cost                 # recorded in RESULTS.md
    python -m bench.form_cost --requests 5 --no-record

Each form is made and published over the API of an app in this process (on
SQLite in a scratch directory, rate limits raised), then read N times on its
hosted page (drawing its costliest page) and posted to N times over the API
(one walk of its rules): the CPU of each request is this process's
(time.process_time, the driver's thread included), its median reported
beside the units counted. The costly ones are worked out on the fair-share
thread, as a server does.
"""

import argparse
import asyncio
import gc
import tempfile
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from statistics import median
from typing import Any

import httpx

from bench.isolation import HEAVY_ANSWERS, _page_form, _rules_form
from bench.report import publish, section
from formsapi.api_key import service as api_key_service
from formsapi.api_key.scopes import Scope
from formsapi.app import create_app, release
from formsapi.config import Settings
from formsapi.db.migrations import migrate
from formsapi.db.session import create_write_sessionmaker
from formsapi.kit.ids import new_id
from formsapi.language.blocks import BlockList
from formsapi.language.cost import MAX_UNITS, Cost, cost_of
from formsapi.language.definition import Definition, Layout
from formsapi.member import service as member_service
from formsapi.models import Plan, Role
from formsapi.organization import service as organization_service
from formsapi.services import services_of
from formsapi.user import service as user_service


def _variables_form(pages: int, variables: int, terms: int) -> dict[str, Any]:
    """A number on each page, a paragraph on each shown by a variable, and
    variables summing every page's number: computed again on every page."""
    blocks: list[dict[str, Any]] = []
    for page in range(pages):
        if page:
            blocks.append({"type": "page_break", "key": f"p{page}"})
        blocks.append({"type": "number", "key": f"n{page}", "title": f"N{page}"})
        blocks.append(
            {"type": "paragraph", "text": "Hi", "visibleIf": {">": [{"var": "vars.v0"}, -1]}}
        )
    value = {"+": [*({"var": f"n{page}"} for page in range(pages)), *[1] * terms]}
    return {
        "title": f"Variables on {pages} pages",
        "blocks": blocks,
        "variables": [
            {"name": f"v{j}", "type": "number", "value": value} for j in range(variables)
        ],
    }


def _options(kind: str, count: int, each: int) -> dict[str, Any]:
    options = [{"value": f"o{j}", "label": f"Option number {j}"} for j in range(each)]
    return {
        "title": f"{count} {kind} of {each}",
        "blocks": [
            {"type": kind, "key": f"c{i}", "title": f"Choose {i}", "options": options}
            for i in range(count)
        ],
    }


def _matrices(count: int) -> dict[str, Any]:
    rows = [{"value": f"r{j}", "label": f"Statement {j}"} for j in range(50)]
    columns = [{"value": f"c{j}", "label": f"Point {j}"} for j in range(10)]
    return {
        "title": f"{count} matrices of 50 x 10",
        "blocks": [
            {"type": "matrix", "key": f"m{i}", "title": f"M{i}", "rows": rows, "columns": columns}
            for i in range(count)
        ],
    }


def _texts(count: int) -> dict[str, Any]:
    return {
        "title": f"{count} short texts",
        "blocks": [{"type": "short_text", "key": f"t{i}", "title": f"T{i}"} for i in range(count)],
    }


def _recalled(count: int) -> dict[str, Any]:
    """A long answer recalled in `count` titles of the second page."""
    return {
        "title": f"{count} titles recalling a long answer",
        "blocks": [
            {"type": "long_text", "key": "story", "title": "Story"},
            {"type": "page_break"},
            *(
                {"type": "short_text", "key": f"t{i}", "title": "About {{story}}"}
                for i in range(count)
            ),
        ],
    }


FORMS: list[tuple[dict[str, Any], dict[str, Any], str]] = [
    # (form, answers posted, query of the page read)
    (_rules_form(115), HEAVY_ANSWERS, ""),
    (_variables_form(40, 10, 60), {f"n{p}": p for p in range(40)}, ""),
    (_page_form(16, recall=False), {}, ""),
    (_options("single_choice", 60, 200), {}, ""),
    (_options("ranking", 1, 129), {}, ""),
    (_matrices(24), {}, ""),
    (_texts(500), {}, ""),
    (_recalled(400), {"story": "s" * 5000}, "?story=" + "s" * 2000),
]


def _cost(body: dict[str, Any]) -> Cost:
    fields = {k: v for k, v in body.items() if k not in ("title", "blocks")}
    return cost_of(Layout(BlockList.validate_python(body["blocks"]), Definition(**fields)))


async def _cpu(request: Callable[[], Awaitable[httpx.Response]], times: int) -> tuple[float, int]:
    """The median CPU (ms) of `times` requests, and the last one's status."""
    spent, status = [], 0
    for _ in range(times):
        started = time.process_time()
        answer = await request()
        spent.append((time.process_time() - started) * 1000)
        status = answer.status_code
    return median(spent), status


async def measure(times: int) -> list[str]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-form-cost-") as scratch:
        url = f"sqlite:///{Path(scratch) / 'cost.db'}"
        await asyncio.to_thread(migrate, url)
        settings = Settings(database_url=url, redis_url=None, rate_limit_standard=10**9)
        app = create_app(settings)
        async with create_write_sessionmaker(services_of(app).engine)() as session:
            owner = await user_service.create(session, f"{new_id('u')}@example.com", "bench pw 1")
            org = await organization_service.create(session, "Form cost", Plan.pro)
            await member_service.add_directly(session, org.id, owner, Role.owner)
            key = await api_key_service.create(session, org, owner, "bench", list(map(str, Scope)))
            await session.commit()
        headers = {"Authorization": f"Bearer {key.secret}"}
        # As the app's lifespan does in a server: what startup built is left
        # out of the collector's walks.
        gc.collect()
        gc.freeze()
        transport = httpx.ASGITransport(app=app)
        try:
            async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
                for body, answers, query in FORMS:
                    cost = _cost(body)
                    made = await client.post("/v1/forms", json=body, headers=headers)
                    assert made.status_code == 201, made.text[:300]
                    form = made.json()["id"]
                    published = {"status": "published"}
                    await client.patch(f"/v1/forms/{form}", json=published, headers=headers)
                    page_ms, page_status = await _cpu(
                        partial(client.get, f"/f/{form}{query}"), times
                    )
                    post = partial(
                        client.post,
                        f"/v1/forms/{form}/submissions",
                        json={"answers": answers},
                        headers=headers,
                    )
                    post_ms, post_status = await _cpu(post, times)
                    assert (page_status, post_status) == (200, 201), (page_status, post_status)
                    rows.append(
                        f"| {body['title']} | {cost.walk:,} | {cost.page:,} | {cost.units:,} "
                        f"| {post_ms:,.1f} | {page_ms:,.1f} "
                        f"| {1000 * post_ms / max(cost.walk, 1):.2f} "
                        f"| {1000 * page_ms / max(cost.page, 1):.2f} |"
                    )
        finally:
            await release(app)
    return rows


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=15, help="of each kind, to each form")
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    rows = await measure(args.requests)
    note = (
        f"Forms of each kind near the bound ({MAX_UNITS:,} units), on SQLite in this "
        f"process; the median CPU of {args.requests} API posts (one walk of the rules, the "
        f"answers checked, the row written) and {args.requests} reads of the hosted page (its "
        "costliest page drawn), with what each costs in units and the µs a unit took."
    )
    header = [
        "form",
        "walk units",
        "page units",
        "units",
        "post CPU ms",
        "page CPU ms",
        "µs a walk unit",
        "µs a page unit",
    ]
    publish(
        section("what a form's cost units take (issue 62)", note, header, rows), not args.no_record
    )


if __name__ == "__main__":
    asyncio.run(main())
