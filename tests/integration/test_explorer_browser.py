"""The memory explorer end to end in a real headless Chromium (Debian's, under its chromedriver, through Selenium),
served by uvicorn on a loopback port, on both graph backends: pick a user, open a conversation, choose an entity in
the graph (by mouse and by keyboard), follow a fact to its source turn, run a search and read a score breakdown.

Without Chromium the test skips saying what to install; with ``AGENTX_TEST_REQUIRE_BROWSER=1`` (CI) it fails instead.
``AGENTX_EXPLORER_SCREENSHOTS=<dir>`` saves the screenshots of the main views there (``python
scripts/explorer_screenshots.py`` regenerates those in ``docs/explorer/``).
"""

from __future__ import annotations

import os
from pathlib import Path

from agentx_memory.demo import DEMO_USER
from tests.explorer_support import SECRET, chromium, explorer_app, require_browser, save_screenshot, served

SCREENSHOTS = "AGENTX_EXPLORER_SCREENSHOTS"


def test_explorer_in_chromium(settings, backend):
    require_browser()
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    shots = Path(os.environ[SCREENSHOTS]) if os.environ.get(SCREENSHOTS) and backend == "falkordb" else None

    def shoot(name: str, *, top: bool = True) -> None:
        if shots is not None:
            if top:
                driver.execute_script("window.scrollTo(0, 0)")
            save_screenshot(driver, shots / f"{name}.png")

    def heading(text: str) -> None:
        wait.until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, "main h2"), text))

    def section(name: str) -> None:
        driver.find_element(By.CSS_SELECTOR, f'nav a[data-section="{name}"]').click()

    app = explorer_app(settings=settings(extraction={"extractor": "offline"}), seed=True)
    with served(app) as url, chromium() as driver:
        wait = WebDriverWait(driver, 30)
        driver.get(url + "/explorer/")

        # pick a user from the list of users with memory
        wait.until(ec.element_to_be_clickable((By.LINK_TEXT, DEMO_USER))).click()
        heading(f"Overview of {DEMO_USER}")
        counts = {dt.text: dt.find_element(By.XPATH, "following-sibling::dd").text
                  for dt in driver.find_elements(By.CSS_SELECTOR, "dl.counts dt")}
        assert counts["Conversations"] == "7" and counts["Turns"] == "26" and counts["Tool calls"] == "5"
        assert driver.find_element(By.CSS_SELECTOR, 'nav a[aria-current="page"]').text == "Overview"
        shoot("overview")

        # open a conversation and read its turns
        section("conversations")
        wait.until(ec.element_to_be_clickable((By.LINK_TEXT, "demo-s1"))).click()
        heading("Conversation demo-s1")
        turns = wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "li.turn") or False)
        assert len(turns) == 6 and "I just moved to Porto" in turns[0].text

        # the entity graph: click a node, see its facts and relationships
        section("entities")
        sam = wait.until(ec.element_to_be_clickable((By.CSS_SELECTOR, 'svg.graph g.node[aria-label="Sam (person)"]')))
        assert len(driver.find_elements(By.CSS_SELECTOR, "svg.graph g.node")) == 6
        assert len(driver.find_elements(By.CSS_SELECTOR, "svg.graph line")) >= 7
        sam.click()
        wait.until(ec.text_to_be_present_in_element((By.ID, "entity-title"), "Sam"))
        panel = driver.find_element(By.ID, "entity-panel")
        assert "Sam is vegetarian" in panel.text and "WORKS_FOR" in panel.text
        selected = driver.find_element(By.CSS_SELECTOR, "svg.graph g.node.selected")
        assert selected.get_attribute("aria-label") == "Sam (person)"
        shoot("entity-graph")

        # ... and by keyboard: focus another node, press Enter
        lena = driver.find_element(By.CSS_SELECTOR, 'svg.graph g.node[aria-label="Lena (person)"]')
        driver.execute_script("arguments[0].focus()", lena)
        assert driver.switch_to.active_element == lena
        lena.send_keys(Keys.ENTER)
        wait.until(ec.text_to_be_present_in_element((By.ID, "entity-title"), "Lena"))
        driver.back()
        wait.until(ec.text_to_be_present_in_element((By.ID, "entity-title"), "Sam"))

        # a fact's source turn: the conversation opens at the turn the fact was learned from, highlighted
        fact = next(li for li in driver.find_elements(By.CSS_SELECTOR, "#entity-panel ul.entity-facts li")
                    if li.text.startswith("Sam is vegetarian"))
        fact.find_element(By.CSS_SELECTOR, "a.source-turn").click()
        source = wait.until(ec.visibility_of_element_located((By.CSS_SELECTOR, "li.turn.highlight")))
        assert "vegetarian" in source.text and source.get_attribute("aria-current") == "true"
        assert "demo-s1" in driver.find_element(By.CSS_SELECTOR, "main h2").text
        shoot("conversation", top=False)

        # the superseded fact names what superseded it
        driver.get(url + f"/explorer/#/u/{DEMO_USER}/facts?status=superseded")
        porto = wait.until(ec.element_to_be_clickable((By.LINK_TEXT, "Sam lives in Porto.")))
        porto.click()
        heading("Sam lives in Porto.")
        wait.until(lambda d: "Sam lives in Lisbon" in d.find_element(By.CSS_SELECTOR, "main").text)
        assert "I just moved to Porto" in driver.find_element(By.CSS_SELECTOR, "main ol.turns").text
        shoot("fact")

        # search: remember() with the score breakdown of every item
        section("search")
        box = wait.until(ec.element_to_be_clickable((By.ID, "search-input")))
        box.send_keys("Where does Sam live now?", Keys.ENTER)
        tables = wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "li.result table.breakdown") or False)
        first = tables[0]
        assert first.find_element(By.TAG_NAME, "caption").text == "Score breakdown"
        signals = [th.text for th in first.find_elements(By.CSS_SELECTOR, "tbody th")]
        assert signals, "every recalled item shows the signals of its score"
        results = driver.find_elements(By.CSS_SELECTOR, "li.result")
        assert any("Lisbon" in r.text for r in results)
        shoot("search")

        # the demo user's pages never show the other user's memory
        for view in ("facts", "entities", "goals", "audit"):
            driver.get(url + f"/explorer/#/u/{DEMO_USER}/{view}")
            wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "main h2") or False)
            wait.until(lambda d: not d.find_element(By.ID, "status").text)
            assert SECRET not in driver.find_element(By.TAG_NAME, "body").text

        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert not errors, errors


def test_an_agents_key_is_not_offered_the_audit_trail_in_chromium(settings, backend):
    """An agent's view reads the user's memory it may see but not the audit trail: the page leaves the section out of
    its navigation and, opened by its address, says why, instead of failing on the refused request."""
    require_browser()
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    app = explorer_app(settings=settings(), agent_id="planner")
    with served(app) as url, chromium() as driver:
        wait = WebDriverWait(driver, 30)
        driver.get(url + f"/explorer/#/u/{DEMO_USER}/overview")
        wait.until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, "main h2"), f"Overview of {DEMO_USER}"))
        shown = [a.get_attribute("data-section") for a in driver.find_elements(By.CSS_SELECTOR, "nav a[data-section]")
                 if a.is_displayed()]
        assert shown == ["overview", "conversations", "entities", "facts", "goals", "tools", "search"]

        driver.get(url + f"/explorer/#/u/{DEMO_USER}/audit")
        wait.until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, "main h2"), "Audit trail"))
        main = driver.find_element(By.CSS_SELECTOR, "main").text
        assert "agent's" in main and "Could not load" not in main
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert not errors, errors
