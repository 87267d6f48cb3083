"""Tenant scope has one place (formsapi.tenancy), and the check the suite runs
on every statement (tests/conftest.py) catches a query that forgets it."""

import re
from pathlib import Path

from sqlalchemy import delete, select, update

from formsapi import tenancy
from formsapi.models import APIKey, Form, Membership, Organization, Submission

SRC = Path(tenancy.__file__).parent


def test_no_module_but_tenancy_writes_an_organization_filter_by_hand() -> None:
    by_hand = re.compile(r"\.organization_id\s*==")
    offenders = [
        f"{path.relative_to(SRC)}:{number}"
        for path in SRC.rglob("*.py")
        if path.name != "tenancy.py" and "migrations" not in path.parts
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if by_hand.search(line)
    ]
    assert offenders == []


def test_a_query_that_forgets_its_organization_is_caught() -> None:
    forgotten = [
        select(Form).where(Form.id == "frm_1"),
        update(Submission).where(Submission.id == "sub_1").values(form_version=2),
        delete(APIKey).where(APIKey.id == "key_1"),
        # Joined to organizations by id is not limited to one.
        select(Membership).join(Organization, Organization.id == Membership.organization_id),
    ]
    kept = [
        select(Form).where(tenancy.scoped(Form, "org_1"), Form.id == "frm_1"),
        select(APIKey, Membership.role)
        .join(Membership, tenancy.same_organization(Membership, APIKey))
        .where(tenancy.scoped(APIKey, "org_1")),
        tenancy.unscoped(select(Form).where(Form.id == "frm_1"), "a public page"),
        select(Organization).where(Organization.id == "org_1"),  # not tenant data
    ]

    assert [tenancy.violations(statement) for statement in forgotten] == [
        ["forms"],
        ["submissions"],
        ["api_keys"],
        ["memberships"],
    ]
    assert [tenancy.violations(statement) for statement in kept] == [[], [], [], []]
