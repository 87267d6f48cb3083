"""Retries done right, against a real server behind a real proxy on loopback
that loses answers or cuts them short: a POST the service deduplicates is
sent again with the same Idempotency-Key and creates once; writes it does
not deduplicate are never sent twice; reads are; an export cut short says so."""

import logging
import time
from collections.abc import Iterator

import pytest

from formsapi_client import (
    Client,
    ConnectionFailed,
    ExportIncomplete,
    NotFound,
    ServerError,
    UnreadableResponse,
)
from formsapi_client.models import SubmissionDetail
from tests.client.conftest import ANSWERS, Live, published_form
from tests.client.proxy import Answer, Proxy, busy
from tests.support.servers import free_port


@pytest.fixture
def proxy(live: Live) -> Iterator[Proxy]:
    with Proxy(live.base_url).running() as running:
        yield running


def retries(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "formsapi_client"]


@pytest.fixture(autouse=True)
def _log_retries(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="formsapi_client")


def test_a_submission_whose_answer_was_lost_is_sent_again_and_created_once(
    client: Client, live: Live, proxy: Proxy, caplog: pytest.LogCaptureFixture
) -> None:
    form = published_form(client)
    proxy.plans = ["lose"]
    with Client(proxy.url, live.secret, max_retry_wait=0.01) as lossy:
        created = lossy.submissions.create(form.id, ANSWERS)

    assert proxy.connections == 2  # the first answer was lost after the server acted
    assert len(retries(caplog)) == 1
    # The retry carried the first attempt's key: the service answered with
    # the submission it had made, and made no other.
    listed = client.submissions.list(form.id)
    assert [s.id for s in listed.data] == [created.id]
    assert client.forms.get(form.id).response_count == 1


def test_a_new_form_whose_answer_was_lost_is_created_once(
    client: Client, live: Live, proxy: Proxy
) -> None:
    before = client.forms.list().pagination.total
    proxy.plans = ["lose"]
    with Client(proxy.url, live.secret, max_retry_wait=0.01) as lossy:
        form = lossy.forms.create("Once")
    assert proxy.connections == 2
    assert client.forms.list().pagination.total == before + 1
    assert client.forms.get(form.id).title == "Once"


def test_an_edit_whose_answer_was_lost_is_sent_again_and_applied_once(
    client: Client, live: Live, proxy: Proxy
) -> None:
    form = published_form(client)
    submission = client.submissions.create(form.id, ANSWERS)
    proxy.plans = ["lose"]
    with Client(proxy.url, live.secret, max_retry_wait=0.01) as lossy:
        edited = lossy.submissions.edit(form.id, submission.id, {"name": "Grace"}, if_match=1)
    # Replayed, not applied twice: a second edit against If-Match 1 would be a 412.
    assert edited.version == 2
    assert client.submissions.get(form.id, submission.id).version == 2


def test_writes_the_service_does_not_deduplicate_are_never_sent_twice(
    client: Client, live: Live, proxy: Proxy, caplog: pytest.LogCaptureFixture
) -> None:
    form = published_form(client)
    endpoints = len(client.webhook_endpoints.list().data)
    proxy.plans = ["lose", "lose", "lose"]
    with Client(proxy.url, live.secret, max_retry_wait=0.01) as lossy:
        with pytest.raises(ConnectionFailed):
            lossy.forms.update(form.id, title="Changed")
        with pytest.raises(ConnectionFailed):
            lossy.webhook_endpoints.create("http://127.0.0.1:9/hook", event_types=["ping"])
        with pytest.raises(ConnectionFailed):
            lossy.forms.delete(form.id, delete_submissions=True)

    assert proxy.connections == 3
    assert retries(caplog) == []
    # Each was applied once, as the client could not know.
    assert len(client.webhook_endpoints.list().data) == endpoints + 1
    with pytest.raises(NotFound):
        client.forms.get(form.id)


def test_a_read_is_sent_again_after_a_lost_answer(client: Client, live: Live, proxy: Proxy) -> None:
    proxy.plans = ["lose", "lose"]
    with Client(proxy.url, live.secret, max_retry_wait=0.01) as lossy:
        assert lossy.forms.list(limit=1).pagination.limit == 1
    assert proxy.connections == 3


def test_a_refused_connection_is_retried_then_raised(
    live: Live, caplog: pytest.LogCaptureFixture
) -> None:
    nobody = f"http://127.0.0.1:{free_port()}"
    with Client(nobody, live.secret, max_retries=3, max_retry_wait=0.01) as client:
        started = time.monotonic()
        with pytest.raises(ConnectionFailed) as failed:
            # Not sent at all, so even a write that is not deduplicated is retried.
            client.forms.update("frm_x", title="x")
    assert "ConnectError" in repr(failed.value.__cause__)
    assert len(retries(caplog)) == 3
    assert time.monotonic() - started < 2  # backoff capped by max_retry_wait


def test_an_export_cut_short_raises_where_the_feed_can_go_on(
    client: Client, live: Live, proxy: Proxy
) -> None:
    form = published_form(client)
    for i in range(20):
        client.submissions.create(form.id, {**ANSWERS, "name": f"respondent {i:02}"})
    proxy.plans = [("cut", 700)]
    rows: list[SubmissionDetail] = []
    with (
        Client(proxy.url, live.secret) as lossy,
        lossy.submissions.export(form.id) as export,
        pytest.raises(ExportIncomplete) as cut,
    ):
        rows.extend(export)
    assert 0 < len(rows) < 20
    assert cut.value.last_change_seq == rows[-1].change_seq
    # The feed after the last row read has the rest.
    rest = client.submissions.changes(form.id, after=rows[-1].change_seq)
    assert len(rows) + len(rest.data) == 20


def test_a_page_that_is_not_the_apis_is_one_clear_error_and_not_retried(
    live: Live, proxy: Proxy, caplog: pytest.LogCaptureFixture
) -> None:
    proxy.plans = [Answer("text/html", b"<html>Sign in to the hotel Wi-Fi</html>")]
    with (
        Client(proxy.url, live.secret, max_retry_wait=0.01) as misrouted,
        pytest.raises(UnreadableResponse, match=r"answered 200 \(text/html\)"),
    ):
        misrouted.forms.list()
    assert proxy.connections == 1
    assert retries(caplog) == []


def test_a_503_is_waited_out_as_retry_after_says_even_for_a_write_never_deduplicated(
    client: Client, live: Live, proxy: Proxy, caplog: pytest.LogCaptureFixture
) -> None:
    # A 503 with Retry-After says the service did nothing: safe to send again.
    form = published_form(client)
    proxy.plans = [busy("503 Service Unavailable", "Retry-After: 1")]
    with Client(proxy.url, live.secret, max_retry_wait=5) as behind:
        started = time.monotonic()
        behind.forms.update(form.id, title="Renamed once")
        waited = time.monotonic() - started
    assert waited >= 1
    assert proxy.connections == 2
    assert len(retries(caplog)) == 1
    assert client.forms.get(form.id).title == "Renamed once"


def test_a_read_is_retried_after_a_503_or_504_without_retry_after(
    live: Live, proxy: Proxy, caplog: pytest.LogCaptureFixture
) -> None:
    proxy.plans = [busy("503 Service Unavailable"), busy("504 Gateway Timeout")]
    with Client(proxy.url, live.secret, max_retry_wait=0.01) as behind:
        assert behind.forms.list(limit=1).pagination.limit == 1
    assert proxy.connections == 3
    assert len(retries(caplog)) == 2


def test_a_502_to_a_write_never_deduplicated_is_raised_not_sent_again(
    client: Client, live: Live, proxy: Proxy, caplog: pytest.LogCaptureFixture
) -> None:
    # Whether the service acted is unknown behind a 502: sending it again blindly
    # could apply it twice, so the caller decides.
    form = published_form(client)
    proxy.plans = [busy("502 Bad Gateway"), busy("502 Bad Gateway")]
    with (
        Client(proxy.url, live.secret, max_retry_wait=0.01) as behind,
        pytest.raises(ServerError) as failed,
    ):
        behind.forms.update(form.id, title="Maybe")
    assert failed.value.status == 502
    assert proxy.connections == 1
    assert retries(caplog) == []
