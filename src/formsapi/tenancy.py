"""Tenant scope: the one place a query on tenant data is limited to an
organization.

Every row of a tenant table belongs to one organization. Repositories filter
those tables with `scoped(Model, organization_id)` (or join one to another with
`same_organization`) and never write the predicate by hand; the few lookups
that find an organization instead of filtering by one (a key by its hash, an
invitation by its token, a public form by its id, a person's own memberships)
say so with `unscoped(statement, why)`.

Two checks hold this, and fail the build: a lint that no module but this one
writes an `organization_id ==` predicate, and a check the test suite runs on
every statement executed (`violations`): each tenant table a SELECT, UPDATE or
DELETE touches is filtered by organization, directly or through a join to one
that is, unless the statement is marked unscoped.
"""

from typing import Any, TypeVar

from sqlalchemy import Column, ColumnElement, CompoundSelect, Delete, Insert, Select, Table, Update
from sqlalchemy.sql import operators, visitors
from sqlalchemy.sql.base import Executable
from sqlalchemy.sql.elements import BinaryExpression, BindParameter

# Tables whose rows belong to an organization. (Users, their web sessions and
# password resets belong to people, who may be in several organizations.)
TENANT_TABLES = frozenset(
    {
        "answer_counts",
        "api_keys",
        "audit_entries",
        "events",
        "files",
        "form_drafts",
        "form_invitations",
        "form_versions",
        "forms",
        "funnel_counts",
        "idempotency_keys",
        "invitations",
        "mail_outbox",
        "memberships",
        "notification_recipients",
        "partial_responses",
        "report_links",
        "respondent_copies",
        "respondent_marks",
        "spam_refusals",
        "submission_counts",
        "submission_day_counts",
        "submission_tombstones",
        "submissions",
        "webhook_attempts",
        "webhook_deliveries",
        "webhook_endpoints",
        "webhook_subscriptions",
    }
)
UNSCOPED = "formsapi_unscoped"  # the execution option that says why a statement is not

S = TypeVar("S", bound=Executable)


# A mapped class of a tenant table (its organization_id attribute), or a Table.
Tenant = Any


def scoped(model: Tenant, organization_id: object) -> ColumnElement[bool]:
    """The filter of `model`'s rows to one organization (a value or a bindparam)."""
    column: ColumnElement[str] = model.organization_id
    return column == organization_id


def same_organization(one: Tenant, other: Tenant) -> ColumnElement[bool]:
    """A join condition: rows of the same organization."""
    column: ColumnElement[str] = one.organization_id
    theirs: ColumnElement[str] = other.organization_id
    return column == theirs


def unscoped(statement: S, why: str) -> S:
    """Mark a statement on tenant data that is not limited to one organization,
    saying why it need not be."""
    return statement.execution_options(**{UNSCOPED: why})


def _organization_column(side: Any) -> Table | None:
    """The tenant table whose organization_id `side` is, if it is one."""
    if isinstance(side, Column) and side.name == "organization_id":
        table = side.table
        if isinstance(table, Table) and table.name in TENANT_TABLES:
            return table
    return None


def violations(statement: Any, options: dict[str, Any] | None = None) -> list[str]:
    """The tenant tables `statement` touches without limiting them to one
    organization; empty when it does (or is marked unscoped, or is the ORM
    writing back objects it loaded, or is no SQLAlchemy construct to read)."""
    options = options or {}
    if UNSCOPED in options or "compiled_cache" in options:  # the latter: a flush
        return []
    if not isinstance(statement, Select | CompoundSelect | Update | Delete | Insert):
        return []
    if UNSCOPED in statement.get_execution_options():
        return []
    touched: set[Table] = set()
    inserted: set[Table] = set()  # rows written, each with its organization_id
    anchored: set[Table] = set()  # filtered by a value: organization_id = :param
    links: list[tuple[Table, Table]] = []  # joined: a.organization_id = b.organization_id
    for element in visitors.iterate(statement):
        if isinstance(element, Insert) and isinstance(element.table, Table):
            inserted.add(element.table)  # an upsert's DO UPDATE acts on the conflicting row
        elif isinstance(element, Table):
            touched.add(element)  # read from, or the target of an UPDATE or DELETE
        elif isinstance(element, BinaryExpression) and element.operator is operators.eq:
            left, right = _organization_column(element.left), _organization_column(element.right)
            if left is not None and right is not None:
                links.append((left, right))
            for table, value in ((left, element.right), (right, element.left)):
                if table is not None and isinstance(value, BindParameter):
                    anchored.add(table)
    limited = set(anchored)  # and every table joined to one of them on organization
    changed = True
    while changed:
        changed = False
        for one, two in links:
            for a, b in ((one, two), (two, one)):
                if a in limited and b not in limited:
                    limited.add(b)
                    changed = True
    return sorted(
        table.name
        for table in touched - inserted
        # Ours have no schema: a table of the same name in another (a data
        # loader's, say) is not one of them.
        if table.name in TENANT_TABLES and table.schema is None and table not in limited
    )
