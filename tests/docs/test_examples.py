"""The documentation's examples, run as a reader would run them: against a
real `formsapi serve --demo` on loopback, with the key it prints.

A fenced block is run when the line before it is `<!-- run -->` (an HTML
comment: the site does not show it). A page's runnable blocks run in order,
so a variable one sets (`FORM=...`) is there for the next. Each gets what
Getting started has a reader set: `BASE` (the API's address), `KEY` (the
demo key) and `FORM` (a published form of the demo's), and also
`FORMSAPI_URL` and `FORMSAPI_API_KEY`, which the Python client reads. `sh`
blocks run under `bash -euo pipefail`, with `curl` failing on an HTTP error
unless the example shows or reads the status itself (`-i`, `-w`, `-o`).
One server for the module, on SQLite: the examples show the API,
which every API test already runs on both engines."""

import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.support.servers import TLS, clean_env, start_server, stop_servers

DOCS = Path(__file__).resolve().parents[2] / "docs"
RUNNABLE = re.compile(r"^<!-- run -->\n```(\w+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
CURL_LINE = re.compile(r"curl -H 'Authorization: Bearer (fapi_[0-9A-Za-z]+)' (\S+)/v1/forms")
ASSIGNED = re.compile(r"^\s*(?:export\s+)?([A-Z][A-Z0-9_]*)=", re.MULTILINE)
SECONDS = 60  # one block at most: a busy machine is slow, a healthy one far quicker

# Before each shell block: strict mode, and curl failing on an HTTP error
# unless the example reads the status itself.
PRELUDE = """set -euo pipefail
curl() {
  local arg
  for arg in "$@"; do
    case $arg in -i|--include|-w|--write-out|-o|--output) command curl -sS "$@"; return;; esac
  done
  command curl -sS --fail-with-body "$@"
}
"""


@dataclass(frozen=True)
class Example:
    language: str
    code: str
    line: int


def examples(page: Path) -> list[Example]:
    text = page.read_text()
    return [
        Example(match[1], match[2], text.count("\n", 0, match.start()) + 2)
        for match in RUNNABLE.finditer(text)
    ]


PAGES = sorted(str(page.relative_to(DOCS)) for page in DOCS.rglob("*.md") if examples(page))


@dataclass(frozen=True)
class Demo:
    base_url: str
    key: str
    form: str


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    """`formsapi serve --demo`, as Getting started runs it. Its rate limit
    raised: the pages' examples run back to back, faster than a reader."""
    directory = tmp_path_factory.mktemp("docs")
    server = start_server(directory, clean_env(rate_limit_standard="100000"), "server", ("--demo",))
    try:
        server.wait_until_healthy()
        [(key, base_url)] = CURL_LINE.findall(server.stderr)
        forms = httpx.get(
            f"{base_url}/v1/forms", headers={"Authorization": f"Bearer {key}"}, verify=TLS
        ).json()["data"]
        yield Demo(base_url, key, next(f["id"] for f in forms if f["status"] == "published"))
    finally:
        stop_servers([server])


def run(example: Example, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    if example.language == "python":
        argv = [sys.executable, "-c", example.code]
    elif example.language in ("sh", "bash"):
        names = sorted(set(ASSIGNED.findall(example.code)))
        # What the block assigns goes on to the page's next blocks.
        keep = "".join(f'printf "%s\\0%s\\0" {n} "${{{n}:-}}" >> .vars\n' for n in names)
        argv = ["bash", "-c", f"{PRELUDE}{example.code}\n: > .vars\n{keep}"]
    else:
        raise AssertionError(f"no way to run a {example.language} block")
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=SECONDS, check=False
    )


def test_the_site_has_runnable_examples() -> None:
    assert "getting-started.md" in PAGES


@pytest.mark.parametrize("page", PAGES)
def test_a_pages_examples_run(demo: Demo, page: str, tmp_path: Path) -> None:
    env = {
        **clean_env(),
        "BASE": f"{demo.base_url}/v1",
        "KEY": demo.key,
        "FORM": demo.form,
        "FORMSAPI_URL": demo.base_url,
        "FORMSAPI_API_KEY": demo.key,
    }
    for example in examples(DOCS / page):
        done = run(example, env, tmp_path)
        assert done.returncode == 0, (
            f"docs/{page}, line {example.line}: exit {done.returncode}\n"
            f"--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
        )
        variables = (
            (tmp_path / ".vars").read_bytes().split(b"\0")[:-1]
            if (tmp_path / ".vars").exists()
            else []
        )
        env.update(
            {
                name.decode(): value.decode()
                for name, value in zip(variables[::2], variables[1::2], strict=True)
            }
        )
        (tmp_path / ".vars").unlink(missing_ok=True)
