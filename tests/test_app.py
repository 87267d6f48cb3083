from tests.conftest import Api


async def test_health_and_readiness_need_no_key(api: Api) -> None:
    assert (await api.get("/healthz")).json() == {"status": "ok"}
    assert (await api.get("/readyz")).json() == {
        "status": "ready",
        "components": {"database": "ok", "redis": "not configured"},
    }


async def test_readiness_fails_cleanly_when_the_database_is_unreachable(
    database_url: str,
) -> None:
    import httpx

    from formsapi.app import create_app
    from formsapi.config import Settings

    broken = (
        "postgresql://nobody@127.0.0.1:1/none"
        if "postgresql" in database_url
        else "sqlite:////nonexistent-dir/forms.db"
    )
    app = create_app(Settings(database_url=broken))
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://t"
    ) as client:
        response = await client.get("/readyz")
    assert response.status_code == 503
    assert response.headers["content-type"] == "application/problem+json"


async def test_openapi_31_describes_the_three_endpoints(api: Api) -> None:
    spec = (await api.get("/v1/openapi.json")).json()

    assert spec["openapi"].startswith("3.1")
    assert {"/v1/forms", "/v1/forms/{formId}", "/v1/forms/{formId}/submissions"} <= set(
        spec["paths"]
    )
    params = {
        p["name"] for p in spec["paths"]["/v1/forms/{formId}/submissions"]["get"]["parameters"]
    }
    assert {"formId", "page", "limit", "since"} <= params
    # The docs' Authorize button needs the scheme, and every endpoint needs the key.
    assert spec["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    # Each operation names the one scope its key needs (OpenAPI 3.1's roles).
    scopes = {
        (method, path): operation["security"]
        for path, item in spec["paths"].items()
        for method, operation in item.items()
        if path.startswith("/v1/")
    }
    # Outside /v1, only a signed link's download, which says it takes no key.
    assert [path for path in spec["paths"] if not path.startswith("/v1/")] == ["/files/{fileId}"]
    assert spec["paths"]["/files/{fileId}"]["get"]["security"] == []
    assert all(
        len(security) == 1 and len(security[0]["HTTPBearer"]) == 1 for security in scopes.values()
    )
    assert scopes["get", "/v1/forms"] == [{"HTTPBearer": ["forms:read"]}]
    assert scopes["post", "/v1/forms/{formId}/submissions"] == [
        {"HTTPBearer": ["submissions:write"]}
    ]
    # Bad parameters are 400 problem documents; no 422 is ever sent for a GET.
    for operation in spec["paths"].values():
        if "get" not in operation:
            continue
        assert "422" not in operation["get"]["responses"]
        assert "400" in operation["get"]["responses"]
        keyless = operation["get"].get("security") == []
        assert operation["get"]["responses"]["403" if keyless else "401"]["content"] == {
            "application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}
        }


async def test_docs_page_uses_only_assets_served_here(api: Api) -> None:
    page = await api.get("/v1/docs")

    assert page.status_code == 200
    assert "cdn" not in page.text.lower()
    for asset in ("/v1/docs/static/swagger-ui-bundle.js", "/v1/docs/static/swagger-ui.css"):
        assert asset in page.text
        assert (await api.get(asset)).status_code == 200
