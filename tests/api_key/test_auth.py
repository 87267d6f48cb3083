from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from formsapi.api_key import service as api_key_service
from formsapi.kit import crypto
from formsapi.models import APIKey, Membership
from formsapi.tenancy import scoped
from tests.conftest import Api
from tests.support.factories import create_key, create_org


def assert_unauthorized(
    response_status: int, headers: dict[str, str], body: dict[str, Any]
) -> None:
    assert response_status == 401
    assert headers["www-authenticate"].startswith("Bearer")
    assert headers["content-type"] == "application/problem+json"
    assert body["status"] == 401
    assert body["type"] == "/problems/unauthorized"


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "",
        "Bearer",
        "Bearer ",
        "Basic dXNlcjpwYXNz",
        "Token fapi_abc",
        "Bearer not-a-key",
        "Bearer fapi_" + "a" * 46,  # right shape, wrong checksum
    ],
)
async def test_missing_or_malformed_keys_are_401(api: Api, authorization: str | None) -> None:
    headers = {"Authorization": authorization} if authorization is not None else {}

    response = await api.get("/v1/forms", headers=headers)

    assert_unauthorized(response.status_code, dict(response.headers), response.json())


async def test_unknown_well_formed_key_is_401(api: Api) -> None:
    response = await api.get("/v1/forms", crypto.generate_secret())

    assert_unauthorized(response.status_code, dict(response.headers), response.json())


async def test_scheme_word_is_case_insensitive(api: Api, session: AsyncSession) -> None:
    org = await create_org(session)
    _, secret = await create_key(session, org)
    await session.commit()

    response = await api.get("/v1/forms", headers={"Authorization": f"bearer {secret}"})

    assert response.status_code == 200


async def test_revoked_key_fails_on_the_next_request(api: Api, session: AsyncSession) -> None:
    org = await create_org(session)
    key_id, secret = await create_key(session, org)
    await session.commit()
    assert (await api.get("/v1/forms", secret)).status_code == 200

    await api_key_service.revoke(session, key_id)
    await session.commit()
    response = await api.get("/v1/forms", secret)

    assert_unauthorized(response.status_code, dict(response.headers), response.json())
    assert "revoked" in response.json()["detail"]


async def test_keys_of_a_removed_member_stop_working(api: Api, session: AsyncSession) -> None:
    org = await create_org(session)
    _, secret = await create_key(session, org)
    await session.commit()
    membership = await session.scalar(select(Membership).where(scoped(Membership, org.id)))
    assert membership is not None

    await session.delete(membership)
    await session.commit()

    assert (await api.get("/v1/forms", secret)).status_code == 401


async def test_only_a_hash_of_the_secret_is_stored(api: Api, session: AsyncSession) -> None:
    org = await create_org(session)
    key_id, secret = await create_key(session, org)
    await session.commit()

    key = await session.scalar(select(APIKey).where(scoped(APIKey, org.id), APIKey.id == key_id))

    assert key is not None
    assert secret not in {key.secret_hash, key.prefix, key.name, key.id}
    assert key.secret_hash == crypto.hash_secret(secret)
    assert secret.startswith(key.prefix)
    assert len(key.prefix) < 15


def test_secrets_are_unique_checksummed_and_recognizable() -> None:
    secrets = {crypto.generate_secret() for _ in range(200)}

    assert len(secrets) == 200
    for secret in secrets:
        assert secret.startswith("fapi_")
        assert secret.isascii()
        assert len(secret) == 51
        assert crypto.is_well_formed(secret)
        tampered = secret[:10] + ("A" if secret[10] != "A" else "B") + secret[11:]
        assert not crypto.is_well_formed(tampered)
