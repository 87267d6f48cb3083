"""The busiest reads run on the driver; elsewhere they must read the same."""

from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from formsapi.db import create_sessionmaker
from formsapi.submission import repository
from tests.factories import create_form, create_org, create_submission


async def test_a_page_reads_the_same_inside_a_transaction_as_on_a_borrowed_connection(
    engine: AsyncEngine, session: AsyncSession
) -> None:
    org = await create_org(session)
    form = await create_form(session, org)
    start = datetime(2026, 3, 1, 12, 0, 0, 123000, tzinfo=UTC)
    for minutes in range(3):
        await create_submission(
            session, form, submitted_at=start + timedelta(minutes=minutes), answers={"n": minutes}
        )
    await session.commit()

    reads = create_sessionmaker(engine.execution_options(isolation_level="AUTOCOMMIT"))
    async with reads() as read:
        borrowed = await repository.list_page(read, org.id, form.id, None, 0, 50)
    await session.connection()  # a transaction under way: the ordinary execution path
    assert session.in_transaction()
    inside = await repository.list_page(session, org.id, form.id, None, 0, 50)

    assert [tuple(row) for row in inside] == [tuple(row) for row in borrowed]
    assert [row[3] for row in inside] == [
        "2026-03-01T12:02:00.123Z",
        "2026-03-01T12:01:00.123Z",
        "2026-03-01T12:00:00.123Z",
    ]
