"""The database, one job a module: `engine` (SQLite and PostgreSQL engines,
SQLite's pragmas and write gate, autocommit for reads), `session` (a
writing request's session committed once at its boundary, a reading one's
in autocommit, units of work in batches), `migrations` (Alembic's, run and
checked), `errors` (what a driver's error means) and `hot` (a read's
busiest statements on a pooled connection of their own).

It imports only `kit`; every other package may import it.
"""
