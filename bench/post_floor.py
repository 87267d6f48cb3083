"""The database's floor for posting to one form on PostgreSQL: pgbench
running the transaction the service runs for posts, built from the
service's own statements (compiled for PostgreSQL, parameters inlined),
with fresh ids and the numbers the lock returns.

- `per_post`: one post, one transaction (lock, row with its event and
  outbox row, counts, answer counts, commit). What every post paid before group commit,
  and what a post with an Idempotency-Key still pays (less its claim).
- `batch`: `size` posts in one transaction, as the intake writes them: the
  rows pipelined, as asyncpg's executemany sends them. What a batch of
  posts with Idempotency-Keys (or partials, or files) still pays.
- `at_once`: `size` posts in one statement and its commit, as the intake
  writes plain posts (submission/repository/created.py).

Posts per second of a script = its transactions per second x its posts.
"""

import re
from collections import Counter
from typing import Any

import orjson
from sqlalchemy.dialects import postgresql

from formsapi.event import repository as event_repository
from formsapi.form import repository as form_repository
from formsapi.language.compiled import Counted
from formsapi.submission import repository as submission_repository
from formsapi.submission.repository import counts, tallies

# The service's driver's dialect: its SQL, with its casts.
_DIALECT = postgresql.asyncpg.dialect()  # type: ignore[no-untyped-call]


def _compiled(statement: Any, values: dict[str, str]) -> str:
    """`statement` as pgbench runs it: each parameter replaced by the SQL
    expression `values` gives for its name (pgbench variables allowed)."""
    compiled = statement.compile(dialect=_DIALECT)
    sql = compiled.string
    names = list(compiled.positiontup or ())
    for index in range(len(names), 0, -1):  # $10 before $1
        name = names[index - 1]
        # A value the statement carries itself (a status, a version of 1).
        value = values[name] if name in values else _literal(compiled.params[name])
        sql = sql.replace(f"${index}", value)
    return " ".join(sql.split())


def _literal(value: Any) -> str:
    if value is None:
        return "NULL"
    return str(value) if isinstance(value, int) else _text(str(value))


def _text(value: str) -> str:
    quoted = "'" + value.replace("'", "''") + "'"
    # pgbench reads ":name" as its variable, inside a string too: cut the string there.
    return re.sub(r":(?=[A-Za-z_])", "' || ':' || '", quoted)


def script(organization_id: str, form_id: str, answers: dict[str, Any], size: int) -> str:
    """One transaction writing `size` posts to the form."""
    lock = form_repository.submission_lock_statement(True)
    row = event_repository.write_statements(True, submission_repository.new_row(True))[0]
    counting = counts.counting_statements(True)[0]
    stored = orjson.dumps(answers).decode()
    data = orjson.dumps({"id": "sub_x", "formId": form_id, "answers": answers}).decode()
    lines = [
        "BEGIN;",
        _compiled(
            lock,
            {
                "org": _text(organization_id),
                "form": _text(form_id),
                "n": str(size),
                "offset": "interval '0'",
            },
        )
        + " \\gset",
    ]
    inserts = []
    for offset in range(size - 1, -1, -1):
        fresh = "replace(gen_random_uuid()::text, '-', '')"
        values = {
            "event_id": f"('evt_' || {fresh})",
            "id": f"('sub_' || {fresh})",
            "organization_id": _text(organization_id),
            "form_id": _text(form_id),
            "event_type": "'submission.created'",
            "occurred_at": "now()",
            "submitted_at": "now()",
            "subject_id": f"('sub_' || {fresh})",
            "event_data": _text(data),
            "form_version": ":version",
            "change_seq": f"(:change_seq - {offset})",
            "answers": _text(stored),
            "ending": "NULL",
        }
        inserts.append(_compiled(row, values) + ";")
    if size > 1:
        inserts = ["\\startpipeline", *inserts, "\\endpipeline"]
    lines += inserts
    lines.append(
        _compiled(
            counting,
            {
                "organization_id": _text(organization_id),
                "form_id": _text(form_id),
                "hour": "date_trunc('hour', now())",
                "day": "date_trunc('day', now())",
                "count": str(size),
            },
        )
        + ";"
    )
    upsert = tallies.upsert_statement(True)
    for (key, value), n in _tally(answers, size).items():
        for period, start in (("h", "hour"), ("d", "day"), ("t", "epoch")):
            moment = (
                "'1970-01-01 00:00:00+00'::timestamptz"
                if start == "epoch"
                else (f"date_trunc('{start}', now())")
            )
            answer_counts = {
                "organization_id": _text(organization_id),
                "form_id": _text(form_id),
                "period": _text(period),
                "start": moment,
                "form_version": ":version",
                "key": _text(key),
                "value": _text(value),
                "count": str(n),
            }
            lines.append(_compiled(upsert, answer_counts) + ";")
    lines.append("COMMIT;")
    return "\n".join(lines) + "\n"


def _tally(answers: dict[str, Any], size: int) -> tallies.Tally:
    """What `size` posts of `answers` add to the answer counts, every key's
    value counted (as many rows as the bench form's own counting writes:
    the posts' answers are all the same)."""
    counted = Counted(frozenset(answers), {})
    one = tallies.tally(counted, answers, None)
    return Counter({pair: n * size for pair, n in one.items()})


def at_once(organization_id: str, form_id: str, answers: dict[str, Any], size: int) -> str:
    """One transaction writing `size` posts to the form in the one
    statement the intake runs for plain posts, then its commit."""
    stored = _text(orjson.dumps(answers).decode())
    body = {"id": "sub_x", "formId": form_id, "submittedAt": "@", "updatedAt": "@"}
    encoded = orjson.dumps({**body, "changeSeq": 0, "answers": answers}).decode()
    head, between, before, tail = _around(encoded)

    def each(expression: str) -> str:
        return f"ARRAY(SELECT {expression} FROM generate_series(1, {size}))"  # noqa: S608 - ours

    fresh = "replace(gen_random_uuid()::text, '-', '')"
    values = {
        "org": _text(organization_id),
        "form": _text(form_id),
        "n": str(size),
        "offset": "interval '0'",
        "checked_version": f"(SELECT version FROM forms WHERE id = {_text(form_id)})",  # noqa: S608
        "thin_over": "20000",
        "sub_ids": each(f"'sub_' || {fresh}"),
        "event_ids": each(f"'evt_' || {fresh}"),
        "answers_texts": each(stored),
        "endings": each("NULL::text"),
        "languages": each("'en'"),
        "body_heads": each(_text(head)),
        "body_betweens": each(_text(between)),
        "body_befores": each(_text(before)),
        "body_tails": each(_text(tail)),
        "thin_heads": each(_text(before)),
        "thin_tails": each(_text(tail)),
        **_arrays(_tally(answers, size)),
        # Posts over the API count in no funnel.
        "funnel_periods": "ARRAY[]::text[]",
        "funnel_starts": "ARRAY[]::timestamptz[]",
        "funnel_steps": "ARRAY[]::text[]",
        "funnel_counts": "ARRAY[]::int[]",
    }
    statement = submission_repository.created_statement(keyed=False)
    return "BEGIN;\n" + _compiled(statement, values) + ";\nCOMMIT;\n"


def _arrays(tally: tallies.Tally) -> dict[str, str]:
    arrays = tallies.tally_arrays(tally)
    return {
        "tally_keys": "ARRAY[" + ", ".join(map(_text, arrays["tally_keys"])) + "]::text[]",
        "tally_values": "ARRAY[" + ", ".join(map(_text, arrays["tally_values"])) + "]::text[]",
        "tally_counts": "ARRAY[" + ", ".join(map(str, arrays["tally_counts"])) + "]::int[]",
    }


def _around(body: str) -> tuple[str, str, str, str]:
    """The body's parts around its two times and its change number."""
    first = body.index('"submittedAt":"@') + len('"submittedAt":"')
    second = body.index('"updatedAt":"@') + len('"updatedAt":"')
    number = body.index('"changeSeq":0') + len('"changeSeq":')
    return body[:first], body[first + 1 : second], body[second + 1 : number], body[number + 1 :]
