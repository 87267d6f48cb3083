"""AsyncClient against a real server on each engine: the same calls as the
sync client, awaited, with `async for` iterators and the export."""

import pytest

from formsapi_client import AsyncClient, NotFound, ServerError, ValidationFailed
from formsapi_client.models import FormDetail, SubmissionDeleted
from tests.client.conftest import ANSWERS, Live
from tests.client.proxy import Proxy, busy
from tests.support.factories import BLOCKS
from tests.support.settled import events_settled


async def published(client: AsyncClient) -> FormDetail:
    form = await client.forms.create("Async", BLOCKS)
    return await client.forms.update(form.id, status="published")


async def test_the_async_client_pages_follows_the_feed_and_exports(live: Live) -> None:
    async with AsyncClient(live.base_url, live.secret) as client:
        form = await published(client)
        ids = [(await client.submissions.create(form.id, ANSWERS)).id for _ in range(5)]
        await client.submissions.delete(form.id, ids[0])

        assert [s.id async for s in client.submissions.iter(form.id, limit=2)] == ids[:0:-1]
        assert form.id in [f.id async for f in client.forms.iter(limit=1)]

        pages = [page async for page in client.submissions.iter_changes(form.id, limit=2)]
        assert [page.has_more for page in pages] == [True, True, False]
        items = [item for page in pages for item in page.data]
        assert [isinstance(item, SubmissionDeleted) for item in items] == [False] * 4 + [True]

        async with client.submissions.export(form.id) as export:
            rows = [row async for row in export]
        assert [row.id for row in rows] == ids[1:]
        assert export.change_seq == pages[-1].next

        await events_settled(live.database_url)
        events = [e.type async for e in client.events.iter(form_id=form.id)]
        assert events.count("submission.created") == 5


async def test_the_async_client_raises_typed_problems(live: Live) -> None:
    async with AsyncClient(live.base_url, live.secret) as client:
        with pytest.raises(NotFound) as missing:
            await client.submissions.get("frm_nope", "sub_nope")
        assert missing.value.detail == "No form with id 'frm_nope'."

        form = await published(client)
        with pytest.raises(ValidationFailed) as invalid:
            await client.submissions.create(form.id, {"name": "Ada"})
        assert [e.pointer for e in invalid.value.errors] == ["/answers/colors"]


async def test_the_async_client_retries_as_the_sync_one_does(live: Live) -> None:
    # Its own copy of the retry loop: a lost answer to a create is sent again
    # with the same key (created once); a 502 to an update is not.
    async with AsyncClient(live.base_url, live.secret) as client:
        form = await published(client)
        with Proxy(live.base_url).running() as proxy:
            proxy.plans = ["lose"]
            async with AsyncClient(proxy.url, live.secret, max_retry_wait=0.01) as lossy:
                created = await lossy.submissions.create(form.id, ANSWERS)
            proxy.plans = [busy("502 Bad Gateway")]
            async with AsyncClient(proxy.url, live.secret, max_retry_wait=0.01) as lossy:
                with pytest.raises(ServerError):
                    await lossy.forms.update(form.id, title="Maybe")
            assert proxy.connections == 3
        assert [s.id async for s in client.submissions.iter(form.id)] == [created.id]
        assert (await client.forms.get(form.id)).title == form.title
