"""Conversation summaries (spec 000's episodic memory, issue 15): what a conversation was about, searchable by
similarity, so the top past conversations like the current one can go into a prompt.

A summary holds the text, the **key decisions**, the **entities mentioned** (the entities extraction linked to the
conversation with ``MENTIONS``) and the **tools called** (in call order, each once). With an LLM configured
(``llm.query_model``) it writes the text and the decisions (one structured call over the transcript, cut to
``SUMMARY_INPUT_CHARS``); otherwise they are extractive: the most representative sentences
(:mod:`agentx_memory.extractive`) and the sentences that say something was decided. The text is embedded with the
memory's embedder and stored in PostgreSQL (``episodic_summaries``, one row per conversation, replaced when the
conversation is summarized again). The consolidation job summarizes each conversation it consolidates.

Summarizing also sets the graph's ``Conversation.title`` (spec 003): a short title derived from the summary, its first
sentence cut at a word to 80 characters (:attr:`EpisodicSummary.title`). :func:`conversation_title` reads it back;
``get_conversation_summary(...).title`` is the same text.
"""

from __future__ import annotations

import re
from typing import Any, Final

from pydantic import BaseModel, Field

from .episodic import EpisodicMemory
from .errors import NotFoundError
from .extractive import sentences, top_sentences
from .graph import cypher
from .models import EpisodicSummary, Turn
from .providers.llm import LLM
from .semantic import SemanticMemory
from .validation import check_id

__all__ = ["SummaryOutput", "conversation_title", "similar_conversations", "summarize_conversation",
           "summary_text"]

#: Tokens of an extractive summary's text.
SUMMARY_TOKENS: Final = 120
#: Characters of the transcript an LLM summary reads: a longer conversation is summarized from its beginning.
SUMMARY_INPUT_CHARS: Final = 24_000
MAX_DECISIONS: Final = 5

_DECISION: Final = re.compile(
    r"\b(decided|decide to|agreed|we'll|we will|i'll|i will|let's|going to|chose|choose|settled on|booked|"
    r"will go with|plan is|the plan)\b", re.IGNORECASE)

SYSTEM: Final = ("Summarize the conversation for a memory system: two to four sentences on what it was about and "
                 "its outcome, and the key decisions made (each a short sentence). Use only what the conversation "
                 "says.")


class SummaryOutput(BaseModel):
    """What the LLM returns for a conversation."""

    summary: str = Field(description="two to four sentences: what the conversation was about and its outcome")
    key_decisions: list[str] = Field(default_factory=list, description="the decisions made, one short sentence each")


def _transcript(turns: list[Turn]) -> str:
    return "\n".join(f"{t.role}: {t.content}" for t in turns)[:SUMMARY_INPUT_CHARS]


async def summarize_conversation(episodic: EpisodicMemory, semantic: SemanticMemory, llm: LLM | None,
                                 conversation_id: str, user_id: str, *, agent_id: str | None = None
                                 ) -> EpisodicSummary:
    """Summarize the user's conversation, store the summary (replacing an earlier one) and return it. An agent
    (``agent_id``) may not summarize a conversation that holds another agent's private turn (the summary is made of
    every turn): :class:`NotFoundError`, as when it reads that summary."""
    turns = await episodic.get_conversation(conversation_id, user_id)
    if not turns or (agent_id is not None and any(t.scope == "agent" and t.agent_id != agent_id for t in turns)):
        raise NotFoundError("conversation", conversation_id)
    graph = semantic.ctx.graph
    mentioned = await graph.read(cypher.CONVERSATION_ENTITIES, {"conversation_id": conversation_id,
                                                                "user_id": user_id})
    calls = await graph.read(cypher.CONVERSATION_TOOLS, {"conversation_id": conversation_id, "user_id": user_id})
    tools = list(dict.fromkeys(r["tool"] for r in calls))
    if llm is not None:
        answer = await llm.structured(SYSTEM, _transcript(turns), SummaryOutput, name="conversation_summary",
                                      max_tokens=600)
        text, decisions, method = answer.value.summary, answer.value.key_decisions[:MAX_DECISIONS], "llm"
    else:
        contents = [t.content for t in turns]
        text = top_sentences(contents, SUMMARY_TOKENS)
        decisions = [s for s in sentences(contents) if _DECISION.search(s)][:MAX_DECISIONS]
        method = "extractive"
    summary = EpisodicSummary(
        user_id=user_id, conversation_id=conversation_id, channel=turns[0].channel, summary=text or turns[0].content,
        key_decisions=decisions, entities_mentioned=[dict(r) for r in mentioned], tools_called=tools,
        turn_count=len(turns), method=method)
    embedding = (await semantic.ctx.embedder.embed_documents([summary_text(summary)]))[0]
    stored = await semantic.ctx.sql.summaries.upsert(summary, embedding)
    await graph.write(cypher.SET_CONVERSATION_TITLE, {"conversation_id": conversation_id, "user_id": user_id,
                                                      "title": stored.title})
    await semantic.ctx.audit.log_write("summarize", "episodic", stored.channel, [conversation_id],
                                       {"method": method, "turns": len(turns)}, user_id=user_id,
                                       conversation_id=conversation_id)
    return stored


async def conversation_title(semantic: SemanticMemory, conversation_id: str, user_id: str) -> str:
    """The title of the user's conversation in the graph (``Conversation.title``): derived from its summary when it
    was summarized, ``""`` before; :class:`~agentx_memory.errors.NotFoundError` when the graph has no such
    conversation of the user."""
    check_id(conversation_id, "conversation_id", max_len=200)
    rows = await semantic.ctx.graph.read(cypher.GET_CONVERSATION_TITLE, {"conversation_id": conversation_id,
                                                                         "user_id": user_id})
    if not rows:
        raise NotFoundError("conversation", conversation_id)
    return str(rows[0]["title"])


def summary_text(summary: EpisodicSummary) -> str:
    """The text a summary's vector is made of: the summary, its key decisions and the entities it mentions."""
    names = ", ".join(str(e.get("name")) for e in summary.entities_mentioned if e.get("name"))
    return " ".join(part for part in (summary.summary, " ".join(summary.key_decisions), names) if part)


async def similar_conversations(semantic: SemanticMemory, user_id: str, channels: list[str], query: str, k: int,
                                exclude: list[str], *, agent_id: str | None = None) -> list[dict[str, Any]]:
    """The ``k`` conversation summaries most similar to ``query`` (among those ``agent_id`` may read, if given):
    ``summary`` (an :class:`EpisodicSummary`) and ``similarity`` each, best first."""
    vector = (await semantic.ctx.embedder.embed([query], is_query=True))[0]
    found = await semantic.ctx.sql.summaries.search(user_id, channels, vector, k, exclude, agent_id=agent_id)
    return [{"summary": s, "similarity": similarity} for s, similarity in found]
