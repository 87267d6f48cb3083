"""Each browser test file has its `browser` (a Chromium of its own, which
clears the file's old screenshots) and its windows in that browser."""

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser

from tests.e2e.windows import Windows


@pytest.fixture(scope="module")
def file_windows(browser: Browser) -> Windows:
    return Windows(browser)


@pytest.fixture
def windows(file_windows: Windows) -> Iterator[Windows]:
    """The file's windows; those a test leaves open are closed after it."""
    yield file_windows
    file_windows.close_all()
