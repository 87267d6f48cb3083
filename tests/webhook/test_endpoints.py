"""Managing webhook endpoints over the API: owners' and admins' keys only,
the secret shown once and stored sealed, another organization's endpoint
answering like a missing one."""

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from formsapi.config import Settings
from formsapi.kit.time import shift
from formsapi.member import service as member_service
from formsapi.models import Role, WebhookSubscription
from formsapi.tenancy import unscoped
from formsapi.webhook.retention import purge_periods
from tests.conftest import Api
from tests.support.factories import create_form, create_key, create_org, create_user

MANAGE = ["forms:read", "submissions:read", "webhooks:manage"]
URL = "http://127.0.0.1:9/hook"


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(
        database_url=database_url,
        rate_limit_standard=100_000,
        secret_key=["s" * 32],
        webhook_allow_private_networks=True,
        webhook_worker="off",
    )


async def _key(session: AsyncSession, role: str = Role.owner) -> tuple[str, str]:
    org = await create_org(session)
    form = await create_form(session, org)
    _, secret = await create_key(session, org, role=role, scopes=MANAGE)
    await session.commit()
    return secret, form.id


async def test_the_secret_is_shown_once_and_stored_sealed(
    api: Api, session: AsyncSession, engine: AsyncEngine
) -> None:
    key, form_id = await _key(session)
    created = await api.post(
        "/v1/webhook-endpoints",
        key,
        json={"url": URL, "eventTypes": ["submission.created"], "formIds": [form_id]},
    )
    assert created.status_code == 201, created.text
    body: dict[str, Any] = created.json()
    secret = body["secret"]
    assert secret.startswith("whsec_")
    assert (body["eventTypes"], body["formIds"], body["enabled"]) == (
        ["submission.created"],
        [form_id],
        True,
    )

    listed = (await api.get("/v1/webhook-endpoints", key)).json()["data"]
    one = (await api.get(f"/v1/webhook-endpoints/{body['id']}", key)).json()
    assert "secret" not in listed[0]
    assert "secret" not in one
    async with engine.connect() as connection:
        stored = (await connection.execute(text("SELECT secret FROM webhook_endpoints"))).scalar()
    assert secret not in str(stored)
    assert secret.removeprefix("whsec_") not in str(stored)


async def test_only_owners_and_admins_keys_manage_endpoints(
    api: Api, session: AsyncSession
) -> None:
    admin, _ = await _key(session, Role.admin)
    org = await create_org(session)
    user = await create_user(session)
    _, demoted = await create_key(session, org, role=Role.admin, scopes=MANAGE, user=user)
    await member_service.change_role(session, org.id, Role.owner, user.id, Role.editor)
    await session.commit()

    assert (await api.post("/v1/webhook-endpoints", admin, json={"url": URL})).status_code == 201
    refused = await api.post("/v1/webhook-endpoints", demoted, json={"url": URL})
    assert refused.status_code == 403
    assert (await api.get("/v1/webhook-endpoints", demoted)).status_code == 403


async def test_an_endpoint_is_never_sent_what_the_key_that_points_it_cannot_read(
    api: Api, session: AsyncSession
) -> None:
    org = await create_org(session)
    _, manage_only = await create_key(session, org, scopes=["webhooks:manage"])
    _, with_forms = await create_key(session, org, scopes=["forms:read", "webhooks:manage"])
    _, everything = await create_key(session, org, scopes=MANAGE)
    await session.commit()

    def create(key: str, types: list[str]) -> Any:
        return api.post("/v1/webhook-endpoints", key, json={"url": URL, "eventTypes": types})

    refused = {
        (manage_only, ()): "forms:read",  # every type
        (manage_only, ("submission.created",)): "submissions:read",
        (manage_only, ("form.created",)): "forms:read",
        (with_forms, ()): "submissions:read",
        (with_forms, ("submission.deleted", "form.updated")): "submissions:read",
    }
    for (key, types), scope in refused.items():
        answer = await create(key, list(types))
        assert answer.status_code == 403, (types, answer.text)
        assert answer.json()["requiredScope"] == scope
    assert (await create(manage_only, ["webhook_endpoint.disabled"])).status_code == 201
    narrow = (await create(with_forms, ["form.created"])).json()
    wide = (await create(everything, [])).json()

    widen = f"/v1/webhook-endpoints/{narrow['id']}"
    moved = f"/v1/webhook-endpoints/{wide['id']}"
    changes = [
        (with_forms, widen, {"eventTypes": []}, 403),
        (with_forms, widen, {"eventTypes": ["form.created", "submission.created"]}, 403),
        (with_forms, widen, {"eventTypes": ["form.created", "form.deleted"]}, 200),
        (with_forms, moved, {"url": "http://127.0.0.1:9/elsewhere"}, 403),
        (with_forms, moved, {"eventTypes": ["submission.created"]}, 200),  # narrower
        (with_forms, moved, {"description": "ours", "enabled": False}, 200),
        (with_forms, moved, {"formIds": []}, 200),  # as it was: every form
        (everything, moved, {"url": "http://127.0.0.1:9/elsewhere"}, 200),
    ]
    for key, path, body, status in changes:
        answer = await api.patch(path, key, json=body)
        assert answer.status_code == status, (body, answer.text)
    kept = (await api.get(moved, everything)).json()
    assert (kept["url"], kept["eventTypes"]) == (
        "http://127.0.0.1:9/elsewhere",
        ["submission.created"],
    )

    # Narrowing it in the same breath does not make a move cheaper: what it
    # had (retries, resends, recoveries) would follow it to the new URL.
    sneaky = {"url": "http://127.0.0.1:9/mine", "eventTypes": ["form.created"]}
    refused_move = await api.patch(moved, with_forms, json=sneaky)
    assert refused_move.status_code == 403
    assert refused_move.json()["requiredScope"] == "submissions:read"
    await api.patch(moved, everything, json={"enabled": True})
    recovered = await api.post(
        f"{moved}/recover", with_forms, json={"since": "2026-01-01T00:00:00Z"}
    )
    assert recovered.status_code == 403
    assert recovered.json()["requiredScope"] == "submissions:read"


async def test_another_organizations_endpoint_answers_like_a_missing_one(
    api: Api, session: AsyncSession
) -> None:
    ours, _ = await _key(session)
    theirs, _ = await _key(session)
    their_endpoint = (await api.post("/v1/webhook-endpoints", theirs, json={"url": URL})).json()
    path = f"/v1/webhook-endpoints/{their_endpoint['id']}"
    missing = "/v1/webhook-endpoints/whe_01jd2xa1b2c3d4e5f6g7h8j9k0"

    for method in ("GET", "DELETE"):
        foreign = await api.request(method, path, ours)
        absent = await api.request(method, missing, ours)
        assert foreign.status_code == absent.status_code == 404
    changed = await api.patch(path, ours, json={"description": "mine now"})
    assert changed.status_code == 404
    assert (await api.post(f"{path}/rotate-secret", ours)).status_code == 404
    assert (await api.get(path, theirs)).json()["description"] == ""


async def test_bad_endpoints_are_refused_with_a_pointer(api: Api, session: AsyncSession) -> None:
    key, _ = await _key(session)
    cases = {
        "/url": {"url": "ftp://example.com/hook"},
        "/formIds/0": {"url": URL, "formIds": ["frm_missing"]},
    }
    for pointer, body in cases.items():
        response = await api.post("/v1/webhook-endpoints", key, json=body)
        assert response.status_code == 422, response.text
        assert response.json()["errors"][0]["pointer"] == pointer
    unknown_type = await api.post(
        "/v1/webhook-endpoints", key, json={"url": URL, "eventTypes": ["form.exploded"]}
    )
    assert unknown_type.status_code == 422


async def test_editing_disabling_and_deleting_an_endpoint(api: Api, session: AsyncSession) -> None:
    key, _ = await _key(session)
    endpoint = (await api.post("/v1/webhook-endpoints", key, json={"url": URL})).json()
    path = f"/v1/webhook-endpoints/{endpoint['id']}"

    paused = (await api.patch(path, key, json={"enabled": False, "description": "x"})).json()
    assert (paused["enabled"], paused["description"]) == (False, "x")
    assert paused["disabledReason"]
    resumed = (await api.patch(path, key, json={"enabled": True})).json()
    assert (resumed["enabled"], resumed["disabledReason"]) == (True, None)
    assert (await api.delete(path, key)).status_code == 204
    assert (await api.get(path, key)).status_code == 404


async def test_a_disabled_endpoint_refuses_test_resend_and_recover_until_enabled(
    api: Api, session: AsyncSession
) -> None:
    key, _ = await _key(session)
    endpoint = (await api.post("/v1/webhook-endpoints", key, json={"url": URL})).json()
    path = f"/v1/webhook-endpoints/{endpoint['id']}"
    sent = (await api.post(f"{path}/test", key)).json()
    await api.patch(path, key, json={"enabled": False})

    refused = [
        await api.post(f"{path}/test", key),
        await api.post(f"{path}/deliveries/{sent['deliveryId']}/resend", key),
        await api.post(f"{path}/recover", key, json={"since": "2026-01-01T00:00:00Z"}),
    ]
    for response in refused:
        assert response.status_code == 409, response.text
        assert response.json()["detail"].startswith("Enable the endpoint first")
    await api.patch(path, key, json={"enabled": True})
    assert (await api.post(f"{path}/test", key)).status_code == 202


async def test_without_a_secret_key_postgresql_deployments_say_how_to_enable_webhooks(
    api: Api, session: AsyncSession, engine: AsyncEngine, settings: Settings
) -> None:
    from formsapi.webhook.service import secret_box

    bare = settings.model_copy(update={"secret_key": []})
    box = secret_box(bare)
    if engine.dialect.name == "postgresql":
        assert box is None
    else:  # a key file beside the database, the same for every process on it
        assert box is not None
        assert secret_box(bare) is not None
        assert box.open(secret_box(bare).seal("x")) == "x"  # type: ignore[union-attr]


async def test_subscription_periods_are_kept_as_long_as_the_events_they_concern(
    api: Api, session: AsyncSession, engine: AsyncEngine
) -> None:
    key, _ = await _key(session)
    endpoint = (await api.post("/v1/webhook-endpoints", key, json={"url": URL})).json()
    path = f"/v1/webhook-endpoints/{endpoint['id']}"
    for types in (["form.created"], ["form.deleted"], []):
        assert (await api.patch(path, key, json={"eventTypes": types})).status_code == 200
    sessionmaker = async_sessionmaker(engine)

    async def periods() -> list[tuple[list[str], bool]]:
        async with sessionmaker() as reader:
            every = unscoped(
                select(WebhookSubscription),
                "the test's one endpoint",
            )
            rows = (await reader.scalars(every)).all()
            return [(row.event_types, row.ended_at is None) for row in rows]

    assert sorted(await periods()) == [
        ([], False),  # from its creation
        ([], True),  # from the last change on: current
        (["form.created"], False),
        (["form.deleted"], False),
    ]
    with shift(timedelta(days=29)):
        assert await purge_periods(sessionmaker, 30) == 0
    with shift(timedelta(days=31)):
        assert await purge_periods(sessionmaker, 30) == 3
    assert await periods() == [([], True)]  # what it wants now stays
