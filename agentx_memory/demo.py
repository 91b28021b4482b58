"""``agentx-memory demo``: a guided tour on the embedded default.

Ingests a small multi-session conversation that ships with the package (Sam moves to Porto for a robotics job, his
sister visits, he moves again to Lisbon, and works towards a demo at a robotics fair), records what an extraction
step would have learned from it (entities, relationships, facts — one of them changed —, a goal, a strategy, a
profile), then asks a handful of questions — a temporal one and an entity-centric one among them — and prints each
bundle with its explanation and the prompt block. Re-running it is idempotent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources

from rich.console import Console

from .console import print_bundle
from .extraction.contradictions import resolve_contradictions
from .ingest import ingest_file
from .memory import AsyncAgentMemory
from .models import Entity, Fact, Goal
from .settings import Settings

__all__ = ["DEMO_NOW", "DEMO_USER", "DemoQuestion", "demo_questions", "run_demo", "seed_demo"]

DEMO_USER = "sam"


#: The demo's "now": fixed, so "last month" is always October 2026.
DEMO_NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


@dataclass(frozen=True)
class DemoQuestion:
    """A question of the demo and the turn that answers it (its conversation id and index)."""

    question: str
    conversation_id: str
    index: int


def demo_questions() -> list[DemoQuestion]:
    """The demo's questions, each with the turn that should come first."""
    knowledge = json.loads((resources.files("agentx_memory") / "data" / "demo_knowledge.json").read_text())
    return [DemoQuestion(q, *answer) for q, answer in knowledge["questions"]]


async def seed_demo(memory: AsyncAgentMemory) -> str:
    """Store the demo's conversation and what an extraction step would have learned from it (idempotent); return
    a one-line summary of what was stored."""
    data = resources.files("agentx_memory") / "data"
    knowledge = json.loads((data / "demo_knowledge.json").read_text())
    with resources.as_file(data / "demo_conversation.jsonl") as path:
        report = await ingest_file(memory, path)
    turns = {(t.conversation_id, t.index): t for t in await memory.get_recent_turns(hours=24 * 365 * 10, limit=1000)}
    entities = {}
    for spec in knowledge["entities"]:
        entity = await memory.upsert_entity(
            Entity(
                user_id=DEMO_USER,
                name=spec["name"],
                type=spec["type"],
                aliases=spec.get("aliases", []),
                description=spec["description"],
            )
        )
        entities[spec["key"]] = entity.id
    for source, rel, target in knowledge["relationships"]:
        await memory.create_relationship(entities[source], entities[target], rel)
    facts = []
    for i, spec in enumerate(knowledge["facts"]):
        said_in = turns[tuple(spec["turn"])]
        facts.append(await memory.learn_fact(Fact(
            id=f"demo-fact-{i}", user_id=DEMO_USER, claim=spec["claim"], confidence=spec["confidence"],
            temporal=spec["temporal"], entity_ids=[entities[k] for k in spec["entities"]],
            source_turn_id=said_in.id, created_at=said_in.timestamp, source="demo extraction")))
    # as extraction does: a fact said later replaces the one it contradicts ("Sam lives in Porto" → "... Lisbon")
    extraction = memory.settings.extraction
    await resolve_contradictions(memory.semantic, facts, extraction.contradiction_policy,
                                 extraction.contradiction_window_days)
    for i, spec in enumerate(knowledge["goals"]):
        await memory.add_goal(Goal(id=f"demo-goal-{i}", user_id=DEMO_USER, description=spec["description"],
                                   priority=spec["priority"]))
    for spec in knowledge["strategies"]:
        await memory.learn_strategy(
            spec["description"], tool_sequence=spec["tools"], from_conversation_id="demo-s3"
        )
    await memory.update_profile(**knowledge["profile"])
    return (f"stored {report.stored} turns of 5 sessions (Sept-Nov 2026) for user {DEMO_USER!r}; learned "
            f"{len(entities)} entities, {len(knowledge['facts'])} facts (one of them changed: Porto → Lisbon), a goal, "
            "a strategy and a profile")


async def run_demo(settings: Settings, console: Console, *, explain: bool = True, prompt_tokens: int = 400) -> None:
    """Seed the demo, ask its questions, print the answers."""
    memory = await AsyncAgentMemory.open(settings, user_id=DEMO_USER)
    try:
        console.print(f"[green]{await seed_demo(memory)}[/green]")
        for question in demo_questions():
            bundle = await memory.remember(question.question, top_k=5, reference_time=DEMO_NOW)
            console.rule(f"[bold]{question.question}")
            print_bundle(console, bundle, explain=explain, prompt_tokens=prompt_tokens)
        await memory.drain()
    finally:
        await memory.close()
