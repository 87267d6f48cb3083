"""`formsapi docs serve`: the site served from the repository, with the API
reference generated from the service's own OpenAPI document. (`.ci/run`
builds it with `--strict`, where a broken link or anchor fails.)"""

import subprocess
import time

import httpx

from tests.support.forks import FORMSAPI
from tests.support.servers import TLS, clean_env, free_port

SECONDS = 120  # the first build imports the service; a busy machine is slow


def test_docs_serve_serves_the_site_with_its_generated_reference() -> None:
    port = free_port()
    process = subprocess.Popen(
        [str(FORMSAPI), "docs", "serve", "--address", f"127.0.0.1:{port}"],
        env={**clean_env(), "NO_MKDOCS_2_WARNING": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + SECONDS
        with httpx.Client(timeout=5, verify=TLS) as client:
            while True:
                assert process.poll() is None, process.stderr.read() if process.stderr else ""
                try:
                    page = client.get(f"http://127.0.0.1:{port}/reference/api/")
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline, "the site was not served in time"
                    time.sleep(0.2)
            assert page.status_code == 200
            assert "GET /v1/forms/{formId}/submissions/changes" in page.text
            events = client.get(f"http://127.0.0.1:{port}/reference/events/")
            assert "submission.created" in events.text
    finally:
        process.terminate()
        process.wait(timeout=10)
