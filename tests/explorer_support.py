"""What the explorer's tests share: seed data for two users, a minimal FastAPI app mounting the explorer with an open
dependency, a uvicorn server on a loopback port in a thread, and a headless Chromium driven by Selenium."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI, Request

from agentx_memory import AsyncAgentMemory, Entity, Fact, Goal, Turn
from agentx_memory.demo import DEMO_USER, seed_demo
from agentx_memory.explorer import explorer_router
from agentx_memory.settings import Settings

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
REQUIRE_BROWSER = "AGENTX_TEST_REQUIRE_BROWSER"
INSTALL_HINT = "apt-get install chromium chromium-driver"

#: The second user: everything of theirs carries this marker, which no page of the demo user may show.
OTHER_USER = "bob"
SECRET = "zanzibar-secret"


async def seed_explorer(memory: AsyncAgentMemory) -> dict[str, Any]:
    """The demo user's memory (conversations, entities, facts with provenance, a goal, a strategy, a profile) plus
    a corrected fact, a plan (a goal tree), tool calls; and a second user with data of their own. Returns ids the
    tests look for."""
    await seed_demo(memory)
    # Sam says where he lives twice; extraction (the offline rules here) supersedes the older fact by the newer
    for conversation, when, line in (("demo-move-1", datetime(2026, 9, 8, 9, 0, tzinfo=UTC),
                                      "I just moved to Porto for a new job at Lumen Labs."),
                                     ("demo-move-2", datetime(2026, 11, 16, 9, 0, tzinfo=UTC),
                                      "Big news: I moved from Porto to Lisbon last week.")):
        await memory.store_turn(Turn(conversation_id=conversation, user_id=DEMO_USER, role="user", content=line,
                                     timestamp=when, metadata={"speaker": "Sam"}))
        await memory.extract_conversation(conversation, DEMO_USER)
    plan = await memory.goals_from_plan(
        ["Freeze the planner API", "Record a backup video of the demo", "Rehearse the talk with Maya"],
        parent_description="Ship the fair demo", user_id=DEMO_USER)
    await memory.complete_goals_from_run({plan[1].id: "API frozen at v0.3"}, user_id=DEMO_USER)
    start = datetime(2026, 10, 2, 9, 0, tzinfo=UTC)
    for i, (tool, ok, ms) in enumerate([("cargo-flamegraph", True, 4200), ("criterion", True, 9100),
                                        ("criterion", False, 15000), ("web-search", True, 650),
                                        ("web-search", True, 720)]):
        await memory.record_invocation("demo-s3", None, tool, {"run": i}, {"ok": ok}, ok, ms, user_id=DEMO_USER,
                                       task_type="profiling", invocation_id=f"demo-call-{i}",
                                       timestamp=start + timedelta(minutes=7 * i),
                                       error_message=None if ok else "benchmark timed out")
    bob_turn = await memory.store_turn(Turn(conversation_id="bob-c1", user_id=OTHER_USER, role="user",
                                            content=f"My locker code is {SECRET} and I live in Porto"))
    bob_entity = await memory.upsert_entity(Entity(user_id=OTHER_USER, name="Zanzibar Locker", type="thing",
                                                   description=SECRET))
    bob_fact = await memory.learn_fact(Fact(user_id=OTHER_USER, claim=f"Bob's locker code is {SECRET}",
                                            source_turn_id=bob_turn.id, entity_ids=[bob_entity.id]))
    bob_goal = await memory.add_goal(Goal(user_id=OTHER_USER, description=f"Change the {SECRET} code"))
    return {"plan": [g.id for g in plan],
            "bob_turn": bob_turn.id, "bob_entity": bob_entity.id, "bob_fact": bob_fact.id, "bob_goal": bob_goal.id}


def explorer_app(memory: AsyncAgentMemory | None = None, *, settings: Settings | None = None,
                 seed: bool = False, agent_id: str | None = None) -> FastAPI:
    """A FastAPI app with the explorer mounted at ``/explorer`` and an open ``memory_for`` (no authentication): the
    given memory, or one opened on ``settings`` in the app's own event loop (seeded when ``seed``); with
    ``agent_id``, every page reads through that agent's view of it, as an agent's API key does."""

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if memory is not None:
            app.state.memory = memory
            yield
            return
        opened = await AsyncAgentMemory.open(settings, user_id=DEMO_USER)  # seed_demo reads its default user
        try:
            app.state.seeded = await seed_explorer(opened) if seed else {}
            app.state.memory = opened
            yield
        finally:
            await opened.close()

    app = FastAPI(lifespan=lifespan)
    if memory is not None:
        app.state.memory = memory

    async def memory_for(request: Request, user_id: str | None) -> AsyncAgentMemory:
        memory: AsyncAgentMemory = request.app.state.memory
        return memory.for_agent(agent_id) if agent_id else memory

    app.include_router(explorer_router(memory_for))
    return app


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def served(app: FastAPI, *, timeout: float = 120) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free loopback port in a thread (its lifespan runs there); yield its URL."""
    import uvicorn

    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, name="explorer-uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError("the explorer test server did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def browser_missing() -> str | None:
    """Why the browser tests cannot run here (None: they can)."""
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not os.access(path, os.X_OK)]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("the selenium package (pip install 'agentx-memory[dev]')")
    if missing:
        return f"{', '.join(missing)} missing: {INSTALL_HINT}"
    return None


def require_browser() -> None:
    """Skip when Chromium or its driver is missing -- or fail where the browser is required (CI)."""
    problem = browser_missing()
    if problem is None:
        return
    if os.environ.get(REQUIRE_BROWSER) == "1":
        pytest.fail(f"{REQUIRE_BROWSER}=1 and the browser is unavailable: {problem}", pytrace=False)
    pytest.skip(problem)


@contextlib.contextmanager
def chromium(width: int = 1280, height: int = 900) -> Iterator[Any]:
    """A headless Debian Chromium under its chromedriver, with a fresh profile, nothing fetched from the network
    (Selenium Manager is never asked to download a driver or a browser)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault("SE_OFFLINE", "true")
    os.environ.setdefault("TZ", "UTC")  # times on the page (and in screenshots) do not depend on the machine
    profile = tempfile.mkdtemp(prefix="agentx-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                 "--no-first-run", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", f"--user-data-dir={profile}", f"--window-size={width},{height}",
                 "--force-device-scale-factor=1", "--hide-scrollbars", "--lang=en-GB"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def save_screenshot(driver: Any, path: Path) -> None:
    """A screenshot of the window as a small PNG (a 256-colour palette when Pillow is installed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    png = driver.get_screenshot_as_png()
    try:
        import io

        from PIL import Image
    except ImportError:
        path.write_bytes(png)
        return
    image = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=256)
    image.save(path, optimize=True)
