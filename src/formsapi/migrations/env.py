import asyncio

from alembic import context
from sqlalchemy.engine import Connection

from formsapi.db.engine import create_engine
from formsapi.models import Base
from formsapi.tenancy import UNSCOPED

target_metadata = Base.metadata


def _run(connection: Connection) -> None:
    # A migration works on every organization's rows at once.
    connection.execution_options(**{UNSCOPED: "a migration"})
    sqlite = connection.dialect.name == "sqlite"
    if sqlite:
        # Batch migrations rebuild a SQLite table (copy, drop, rename): with
        # foreign keys enforced, dropping a parent table would cascade-delete
        # its children's rows. The pragma only takes effect outside a
        # transaction, so it goes to the driver before anything begins one.
        _pragma(connection, "foreign_keys=OFF")
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()
    if sqlite:
        _pragma(connection, "foreign_keys=ON")


def _pragma(connection: Connection, setting: str) -> None:
    cursor = connection.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    cursor.execute(f"PRAGMA {setting}")
    cursor.close()


async def _run_async() -> None:
    engine = create_engine(context.config.get_main_option("sqlalchemy.url") or "")
    async with engine.connect() as connection:
        await connection.run_sync(_run)
        await connection.commit()
    await engine.dispose()


if context.is_offline_mode():
    raise SystemExit("offline migrations are not supported; run `formsapi migrate`")
asyncio.run(_run_async())
