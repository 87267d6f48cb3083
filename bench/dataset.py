"""Build the benchmark data set: 20 forms and 1,000,000 submissions, one form
holding half of them and one 10,000, answers of 8 keys mixing strings and numbers, times
spread over two years. Loaded with COPY into PostgreSQL and with batched
inserts into SQLite, both through the service's own schema and migrations.

    python -m bench.dataset --postgres postgresql://postgres@127.0.0.1/bench \
                            --sqlite bench/data/bench.db
"""

import argparse
import asyncio
import json
import random
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn
from sqlalchemy import insert, text, update
from sqlalchemy.ext.asyncio import AsyncEngine
from ulid import ULID

from formsapi.db.engine import create_engine
from formsapi.db.migrations import migrate
from formsapi.db.session import create_sessionmaker
from formsapi.demo import answers_for
from formsapi.form import service as form_service
from formsapi.language.blocks import BlockList
from formsapi.models import Base, Form, Membership, Organization, Submission, User
from formsapi.submission import repository as submission_repository
from formsapi.submission import service as submission_service
from formsapi.tenancy import scoped

ORG_ID = "org_bench"
USER_ID = "usr_bench"
END = datetime(2026, 11, 1, tzinfo=UTC)
START = END - timedelta(days=730)
CHUNK = 20_000

BLOCKS = BlockList.validate_python(
    [
        {"type": "short_text", "key": "full_name", "title": "Full name", "required": True},
        {"type": "email", "key": "email", "title": "Email", "required": True},
        {
            "type": "single_choice",
            "key": "plan",
            "title": "Plan",
            "required": True,
            "options": [{"value": v, "label": v.title()} for v in ("free", "team", "business")],
        },
        {"type": "rating", "key": "satisfaction", "title": "Satisfaction", "required": True},
        {
            "type": "number",
            "key": "seats",
            "title": "Seats",
            "required": True,
            "min": 1,
            "max": 500,
            "integer": True,
        },
        {
            "type": "multiple_choice",
            "key": "features",
            "title": "Features",
            "required": True,
            "options": [{"value": v, "label": v.title()} for v in ("api", "exports", "alerts")],
        },
        {"type": "date", "key": "renewal", "title": "Renewal date", "required": True},
        {"type": "long_text", "key": "comments", "title": "Comments", "required": True},
    ]
)


SMALL = 10_000  # the second form's share: the export's memory is compared with it


def shares(total: int, forms: int) -> list[int]:
    """Half to the first form, SMALL (when it is under a tenth of the total)
    to the second, the rest evenly."""
    big = total // 2
    small = [SMALL] if forms > 2 and total >= SMALL * 10 else []
    rest = total - big - sum(small)
    others = forms - 1 - len(small)
    each, extra = divmod(rest, others)
    return [big, *small] + [each + (1 if i < extra else 0) for i in range(others)]


def submission_rows(
    form_id: str, count: int, rng: random.Random, pool: list[bytes], first_seq: int = 1
) -> list[tuple[Any, ...]]:
    span = (END - START).total_seconds()
    rows = []
    for seq in range(first_seq, first_seq + count):
        moment = START + timedelta(seconds=rng.random() * span)
        moment = moment.replace(microsecond=moment.microsecond // 1000 * 1000)
        rows.append(
            (
                "sub_" + str(ULID.from_datetime(moment)).lower(),
                ORG_ID,
                form_id,
                1,
                moment,
                rng.choice(pool),
                seq,
            )
        )
    return rows


async def reset(engine: AsyncEngine, url: str) -> None:
    async with engine.begin() as connection:
        await connection.run_sync(Base.metadata.drop_all)
        await connection.execute(text("DROP TABLE IF EXISTS alembic_version"))
    await engine.dispose()
    await asyncio.to_thread(migrate, url)


async def load(url: str, total: int, forms: int, seed: int) -> float:
    started = time.perf_counter()
    engine = create_engine(url)
    await reset(engine, url)
    rng = random.Random(seed)
    pool = [orjson.dumps(answers_for(BLOCKS, rng)) for _ in range(5000)]
    form_ids = [f"frm_bench{index:02d}" for index in range(forms)]
    counts = shares(total, forms)
    async with create_sessionmaker(engine)() as session:
        session.add(Organization(id=ORG_ID, name="Bench", plan="pro", created_at=START))
        session.add(User(id=USER_ID, email="bench@example.com", password_hash=None))
        await session.flush()
        session.add(Membership(organization_id=ORG_ID, user_id=USER_ID, role="owner"))
        for index, form_id in enumerate(form_ids):
            await form_service.create(
                session,
                ORG_ID,
                f"Bench form {index}",
                BLOCKS,
                slug=f"bench-{index}",
                status="published",
                created_at=START - timedelta(days=1, minutes=index),
                form_id=form_id,
            )
        await session.commit()

    columns = (
        "id",
        "organization_id",
        "form_id",
        "form_version",
        "submitted_at",
        "answers",
        "change_seq",
    )
    bar = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
    )
    with bar:
        task = bar.add_task(f"{engine.dialect.name}", total=total)
        async with engine.begin() as connection:
            raw = (await connection.get_raw_connection()).driver_connection
            for form_id, count in zip(form_ids, counts, strict=True):
                done = 0
                while done < count:
                    size = min(CHUNK, count - done)
                    rows = submission_rows(form_id, size, rng, pool, done + 1)
                    if engine.dialect.name == "postgresql":
                        # COPY is an order of magnitude faster than INSERT here.
                        assert raw is not None
                        await raw.copy_records_to_table(
                            "submissions",
                            columns=columns,
                            records=[(*r[:5], r[5].decode(), r[6]) for r in rows],
                        )
                    else:
                        await connection.execute(
                            insert(Submission),
                            [
                                dict(zip(columns, (*r[:5], orjson.loads(r[5]), r[6]), strict=True))
                                for r in rows
                            ],
                        )
                    done += size
                    bar.advance(task, size)
    async with create_sessionmaker(engine)() as session:
        # The rows went in by COPY; the counts are derived from them here.
        await submission_repository.rebuild_counts(session, ORG_ID)
        await submission_service.recount_answers(session, ORG_ID)
        for form_id, count in zip(form_ids, counts, strict=True):
            await session.execute(
                update(Form)
                .where(scoped(Form, ORG_ID), Form.id == form_id)
                .values(change_seq=count)
            )
        await session.commit()
    async with engine.connect() as connection:
        if engine.dialect.name == "postgresql":
            await connection.execution_options(isolation_level="AUTOCOMMIT")
            # Sets the visibility map, so counts can be index-only as in a settled table.
            await connection.execute(text("VACUUM (ANALYZE) submissions"))
            await connection.execute(text("VACUUM (ANALYZE) submission_counts"))
            await connection.execute(text("VACUUM (ANALYZE) submission_day_counts"))
        else:
            await connection.execute(text("ANALYZE"))
            await connection.commit()
    await engine.dispose()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres", help="PostgreSQL URL (its tables are replaced)")
    parser.add_argument("--sqlite", help="SQLite file (replaced)")
    parser.add_argument("--submissions", type=int, default=1_000_000)
    parser.add_argument("--forms", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    timings = {}
    if args.postgres:
        timings["postgresql"] = asyncio.run(
            load(args.postgres, args.submissions, args.forms, args.seed)
        )
    if args.sqlite:
        path = Path(args.sqlite)
        path.parent.mkdir(parents=True, exist_ok=True)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        timings["sqlite"] = asyncio.run(
            load(f"sqlite:///{path}", args.submissions, args.forms, args.seed)
        )
    print(
        json.dumps(
            {
                "loaded_seconds": {k: round(v, 1) for k, v in timings.items()},
                "submissions": args.submissions,
                "forms": args.forms,
            }
        )
    )


if __name__ == "__main__":
    main()
