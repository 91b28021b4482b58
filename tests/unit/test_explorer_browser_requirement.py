"""Where Chromium is missing, the explorer's browser test says what to install: it skips, or fails where the browser
is required (``AGENTX_TEST_REQUIRE_BROWSER=1``, CI)."""

from __future__ import annotations

import pytest

from tests import explorer_support


def test_missing_browser_fails_when_required(monkeypatch):
    monkeypatch.setattr(explorer_support, "CHROMIUM", "/nonexistent/chromium")
    monkeypatch.setenv(explorer_support.REQUIRE_BROWSER, "1")
    with pytest.raises(pytest.fail.Exception, match="apt-get install chromium chromium-driver"):
        explorer_support.require_browser()


def test_missing_browser_skips_otherwise(monkeypatch):
    monkeypatch.setattr(explorer_support, "CHROMEDRIVER", "/nonexistent/chromedriver")
    monkeypatch.delenv(explorer_support.REQUIRE_BROWSER, raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"chromedriver.*apt-get install chromium chromium-driver"):
        explorer_support.require_browser()


def test_this_machine_has_the_browser():
    explorer_support.require_browser()  # skips (or fails where required) on a machine without it
    assert explorer_support.browser_missing() is None
