"""The RecallLayer: the channel-aware entry point of retrieval (``AgentMemory.remember``).

It reads the question (self-query time phrases, names, "tell me about X"), decides what to search with — each
technique a setting, overridable per call — runs the base :class:`~agentx_memory.retrieval.retriever.MemoryRetriever`,
and assembles the :class:`~agentx_memory.retrieval.bundle.MemoryBundle`:

===================  ==========================================================================================
hybrid               PostgreSQL full text (lexical leg) fused with the vector leg (weighted RRF)
entity_centric       names in the question resolved to entities (name/alias match + vector) and traversed; the
                     turns' lexical match also searches the resolved entities' names and aliases the question does
                     not say
query_expansion      the question rewritten as a statement and searched as a second vector
hyde                 a hypothetical answer written by the LLM, embedded and searched (needs ``llm.query_model``)
self_query           time phrases ("last week", "in May 2023") read relative to ``reference_time``; with an LLM,
                     channel / entity / memory-type filters too
===================  ==========================================================================================

Retrieval always searches the active channel **and** ``_global``; items found in a channel other than the active
one are cross-channel matches and are logged to the audit trail (level ``reads`` and above). Every returned fact and
entity is reinforced (access_count + 1, last_accessed = now) in one batched write that runs after the result is
built, without delaying it; its ``memory_timeline`` row counts the same access (one UPDATE per recall, in that same
background task).

While the graph is unreachable, recall answers from PostgreSQL (turns by full text and vector; facts and entities
are left out, as are goals) and ``metrics.skipped`` names each part left out and why; ``bundle.complete`` is False.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import numpy as np

from ..context import MemoryContext
from ..control import SEVERITY_WEIGHT, ControlStore
from ..errors import StorageUnavailableError, ValidationError
from ..gathering import gather
from ..goals import GoalMemory
from ..models import GLOBAL_CHANNEL, ControlMemory
from ..procedural import ProceduralMemory
from ..profiles import ProfileStore
from ..providers.llm import LLM, make_llm
from ..reinforcement import ReinforcementBuffer
from ..semantic import SemanticMemory
from ..serial_tasks import SerialTasks
from ..settings import RecallSettings
from ..timeutil import to_ms
from ..validation import check_channel, check_channels, check_datetime, check_id, check_int, check_text
from .bundle import MemoryBundle, RecallMetrics, ScoredControl, TechniqueMetric
from .legs import resolve_names
from .plan import SearchPlan, utc, window_from_hours
from .query import QueryAnalysis, analyze, unsaid_names
from .retriever import MemoryRetriever

__all__ = ["CONTROLS_SHOWN", "MEMORY_TYPES", "RecallLayer"]

#: The memory kinds ``remember(memory_types=...)`` filters by (seed 001's four types).
MEMORY_TYPES: Final = ("episodic", "semantic", "procedural", "control")
#: Rules (control memories) a recall returns at most: the closest to the question, most severe first among equals.
CONTROLS_SHOWN: Final = 5

log = logging.getLogger(__name__)

#: The background key the timed writes of access counts run under (recalls run under their user's id).
_ACCESS_COUNTS_KEY: Final = ("access counts",)

#: The reference times recall accepts: time phrases ("100 years ago", "next year") are resolved around it, and must
#: stay inside the years Python and PostgreSQL represent.
_REFERENCE_RANGE = (datetime(1000, 1, 1, tzinfo=UTC), datetime(9000, 1, 1, tzinfo=UTC))

_HYDE_SYSTEM = (
    "You write a short, plausible passage from a past conversation that would answer the user's question. "
    "Write it as the conversation would have said it, one or two sentences, no preamble."
)
_SELF_QUERY_SYSTEM = (
    "Extract search filters from the user's question. Answer with JSON only: "
    '{"entities": [names], "memory_types": subset of ["episodic","semantic","procedural","control"] (empty: all), '
    '"channel": null or a name}'
)


class RecallLayer:
    """Question in, :class:`MemoryBundle` out."""

    def __init__(self, ctx: MemoryContext, semantic: SemanticMemory, procedural: ProceduralMemory, goals: GoalMemory,
                 profiles: ProfileStore, controls: ControlStore, llm: LLM | None = None):
        self.ctx = ctx
        self.semantic = semantic
        self.controls = controls
        self.goals = goals
        self.profiles = profiles
        self.retriever = MemoryRetriever(ctx, semantic, procedural, goals, profiles)
        self.llm = llm if llm is not None else make_llm(ctx.settings.llm.query_model, ctx.settings.llm)
        self._background = SerialTasks()
        self._access_counts = ReinforcementBuffer(ctx.settings.retrieval.reinforcement_flush_seconds)
        self._flush_timer: asyncio.TimerHandle | None = None

    def _recall_settings(self, recall: RecallSettings | dict[str, Any] | None) -> RecallSettings:
        base = self.ctx.settings.recall
        if recall is None:
            return base
        if isinstance(recall, RecallSettings):
            return recall
        try:
            return RecallSettings(**{**base.model_dump(), **recall})
        except Exception as exc:
            raise ValidationError("recall", f"invalid RecallLayer override: {exc}") from exc

    async def remember(self, query: str, user_id: str, channel: str = GLOBAL_CHANNEL, top_k: int = 10,
                       time_window_hours: float | None = None, include_episodic: bool = True,
                       include_semantic: bool = True, include_procedural: bool = True,
                       reference_time: datetime | None = None,
                       recall: RecallSettings | dict[str, Any] | None = None,
                       memory_types: Sequence[str] | None = None, agent_id: str | None = None,
                       session_id: str | None = None) -> MemoryBundle:
        """Recall what is relevant to ``query`` for ``user_id`` in ``channel`` (and ``_global``); ``memory_types``
        (of :data:`MEMORY_TYPES`) keeps only those kinds (the LLM self-query's types when not given); with
        ``agent_id``, only what that agent may read (:mod:`agentx_memory.agents`). ``session_id`` (checked by the
        caller) is the session the audit entry of the recall names."""
        started = time.perf_counter()
        self._check(query, user_id, channel, top_k, time_window_hours)
        kinds = _memory_types(memory_types, "memory_types")
        if reference_time is not None:  # time phrases reach years around it ("last year"): keep a margin
            check_datetime(reference_time, "reference_time", low=_REFERENCE_RANGE[0], high=_REFERENCE_RANGE[1])
        settings = self._recall_settings(recall)
        reference = utc(reference_time)
        channels = check_channels([channel])
        metrics = RecallMetrics()

        analysis = analyze(query, reference)
        filters = await self._self_query(query, analysis, settings, metrics)
        texts = _texts_to_embed(query, analysis, settings, metrics)
        hyde_text = await self._hyde(query, settings, metrics)
        names = list(analysis.names) + list(filters.get("entities", []))
        if analysis.about:
            names.append(analysis.about)
        entity_names = names if settings.entity_centric else []
        if kinds is None and filters.get("memory_types"):
            kinds = set(filters["memory_types"])
        if kinds is not None:
            include_episodic = include_episodic and "episodic" in kinds
            include_semantic = include_semantic and "semantic" in kinds
            include_procedural = include_procedural and "procedural" in kinds
        # the resolved entities widen the turns' search and seed the entities': no use to a recall of neither
        to_resolve = entity_names if include_episodic or include_semantic else []
        vectors, resolved = await gather(self._embed(texts, hyde_text, metrics),
                                         self._resolve_names(user_id, channels, to_resolve, top_k, metrics))
        other_names = unsaid_names(query, [row["entity"] for row in resolved])
        if other_names:  # "Maya" also searches "Maya Costa", "Bob" also "Robert"
            metrics.techniques["entity_centric"].detail["also_searched"] = other_names
        plan = SearchPlan(
            query=query, user_id=user_id, channels=channels, top_k=top_k,
            lexical_texts=[_keywords(query, analysis, settings)] + ([hyde_text] if hyde_text else []),
            vectors=vectors, reference_time=reference, window=window_from_hours(time_window_hours, reference),
            time_ranges=analysis.time_ranges if settings.self_query else [],
            entity_names=entity_names, resolved_entities=resolved, other_names=other_names,
            speaker_role=analysis.speaker_role if settings.entity_centric else None,
            newest_wins=settings.newest_wins and analysis.about_now and not analysis.time_ranges,
            standing=bool(settings.standing_weight) and analysis.for_help,
            include_episodic=include_episodic, include_semantic=include_semantic,
            include_procedural=include_procedural, recall=settings,
            archive_horizon=datetime.now(UTC) - timedelta(days=self.ctx.settings.retention.conversation_days),
            agent_id=agent_id,
        )
        # the rules, goals and profile depend on the plan only: they are read while the memories are searched
        (turns, facts, entities, strategies), (controls, goals, profile) = await gather(
            self.retriever.search_and_rank(plan, metrics),
            gather(
                self._controls(plan, metrics) if kinds is None or "control" in kinds else _nothing(),
                self.retriever.graph_or_skip("goals", self.goals.list_goals(user_id, "active", channels, limit=top_k),
                                             [], metrics),
                self.profiles.get_profile(user_id)))
        metrics.total_ms = (time.perf_counter() - started) * 1000
        bundle = MemoryBundle(query=query, user_id=user_id, channels=channels, turns=turns, facts=facts,
                              entities=entities, strategies=strategies, controls=controls, goals=goals,
                              user_context=profile, metrics=metrics, filters=filters)
        self._after(bundle, channel, session_id)
        return bundle

    async def _controls(self, plan: SearchPlan, metrics: RecallMetrics) -> list[ScoredControl]:
        """The rules closest to the question (at most :data:`CONTROLS_SHOWN`), as scored items."""
        found = await self.retriever.graph_or_skip("controls", self.controls.search(
            plan.user_id, plan.channels, plan.query_vector().tolist(), CONTROLS_SHOWN, agent_id=plan.agent_id), [],
            metrics)
        out = []
        for match in found:
            scored = ScoredControl(item=ControlMemory(**match.model_dump(exclude={"similarity"})),
                                   cosine=match.similarity)
            scored.add("vector", match.similarity, 1.0, "cosine similarity to the question")
            scored.add("severity", SEVERITY_WEIGHT[match.severity], 1.0, f"severity {match.severity}")
            out.append(scored)
        return out

    def _check(self, query: str, user_id: str, channel: str, top_k: int, time_window_hours: float | None) -> None:
        """Refuse invalid arguments (:class:`ValidationError`) before any work."""
        check_text(query, "query", max_bytes=self.ctx.settings.limits.max_text_bytes)
        check_id(user_id, "user_id")
        check_channel(channel)
        check_int(top_k, "top_k", low=1, high=200)  # top_k=2.5 passed the range check, top_k="5" raised TypeError
        if time_window_hours is not None and (
                isinstance(time_window_hours, bool) or not isinstance(time_window_hours, (int, float))
                or not (0 < time_window_hours <= 24 * 365 * 100)):
            raise ValidationError("time_window_hours", f"must be > 0 (hours), got {time_window_hours!r}")

    async def _self_query(self, query: str, analysis: QueryAnalysis, settings: RecallSettings,
                          metrics: RecallMetrics) -> dict[str, Any]:
        """The filters read from the question: its time ranges and, with an LLM, the entities it names."""
        filters: dict[str, Any] = {}
        if not settings.self_query:
            return filters
        metric = metrics.techniques.setdefault("self_query", TechniqueMetric())
        filters["time_ranges"] = [{"phrase": r.phrase, "start": r.start.isoformat(), "end": r.end.isoformat()}
                                  for r in analysis.time_ranges]
        metric.results = len(analysis.time_ranges)
        if self.llm is not None:
            filters.update(await self._llm_self_query(self.llm, query, metrics))
        return filters

    async def _embed(self, texts_to_embed: list[str], hyde_text: str | None, metrics: RecallMetrics
                     ) -> list[tuple[str, np.ndarray]]:
        """The query vectors by name: the question, its statement (query expansion) and the hypothesis (HyDE)."""
        embed_started = time.perf_counter()
        vectors = await self.ctx.embedder.embed(texts_to_embed, is_query=True)
        named = [("question", vectors[0])] + ([("statement", vectors[1])] if len(texts_to_embed) > 1 else [])
        if hyde_text:
            named.append(("hyde", (await self.ctx.embedder.embed_documents([hyde_text]))[0]))
        metrics.embed_ms = (time.perf_counter() - embed_started) * 1000
        return named

    async def _resolve_names(self, user_id: str, channels: list[str], names: list[str], top_k: int,
                             metrics: RecallMetrics) -> list[dict[str, Any]]:
        """The entities the question's names resolve to (by name or alias; none while the graph is unreachable),
        read before the search so the turns' lexical match also searches their other names."""
        if not names:
            return []
        metric = metrics.techniques.setdefault("entity_centric", TechniqueMetric())
        started = time.perf_counter()
        k = self.ctx.settings.retrieval.candidate_pool(top_k)
        try:
            return await self.retriever.graph_or_skip(
                "entities:resolved", resolve_names(self.ctx.graph, user_id, channels, names, k), [], metrics)
        finally:
            metric.latency_ms += (time.perf_counter() - started) * 1000

    async def _hyde(self, query: str, settings: RecallSettings, metrics: RecallMetrics) -> str | None:
        if not settings.hyde:
            return None
        metric = metrics.techniques.setdefault("hyde", TechniqueMetric())
        if self.llm is None:
            metric.skipped = "no LLM configured (set llm.query_model, e.g. anthropic:claude-haiku-4-5)"
            return None
        started = time.perf_counter()
        try:
            completion = await self.llm.complete(_HYDE_SYSTEM, query, max_tokens=150)
        except Exception as exc:  # a flaky LLM must not fail recall
            metric.skipped = f"LLM call failed: {exc}"
            return None
        finally:
            metric.latency_ms = (time.perf_counter() - started) * 1000
        text = completion.text.strip()
        metric.results = 1 if text else 0
        metric.detail["hypothesis"] = text
        metric.detail["usage"] = completion.usage.as_dict()
        return text or None

    async def _llm_self_query(self, llm: LLM, query: str, metrics: RecallMetrics) -> dict[str, Any]:
        metric = metrics.techniques["self_query"]
        started = time.perf_counter()
        try:
            completion = await llm.complete(_SELF_QUERY_SYSTEM, query, max_tokens=150)
            metric.detail["llm_usage"] = completion.usage.as_dict()
            raw = completion.text
            parsed = json.loads(raw[raw.index("{"): raw.rindex("}") + 1])
        except Exception as exc:
            metric.detail["llm_skipped"] = f"LLM self-query failed: {exc}"
            return {}
        finally:
            metric.latency_ms += (time.perf_counter() - started) * 1000
        entities = [str(e) for e in parsed.get("entities") or [] if str(e).strip()][:10]
        kinds = [str(k) for k in parsed.get("memory_types") or [] if str(k) in MEMORY_TYPES]
        metric.detail["llm"] = parsed
        return {"entities": entities, "memory_types": kinds} if kinds else {"entities": entities}

    def _after(self, bundle: MemoryBundle, active_channel: str, session_id: str | None = None) -> None:
        """Reinforce and audit after the result is built, without delaying the caller: one user's recalls in the
        order of the calls, the entry dated when the recall answered (not when it is written)."""
        answered = datetime.now(UTC)
        self._background.start(bundle.user_id,
                               lambda: self._reinforce_and_audit(bundle, active_channel, answered, session_id))

    async def _reinforce_and_audit(self, bundle: MemoryBundle, active_channel: str, answered: datetime,
                                   session_id: str | None = None) -> None:
        self._access_counts.add(bundle.user_id, fact_ids=[f.id for f in bundle.facts],
                                entity_ids=[e.id for e in bundle.entities], now_ms=to_ms(answered))
        if self._access_counts.due():
            await self._write_access_counts()
        elif self._access_counts and self._flush_timer is None:
            self._flush_timer = asyncio.get_running_loop().call_later(
                self._access_counts.flush_seconds,
                lambda: self._background.start(_ACCESS_COUNTS_KEY, self._write_access_counts))
        try:  # the timeline rows count the same access: one UPDATE, whether or not the graph answered
            await self.ctx.sql.timeline.reinforce(bundle.user_id, fact_ids=[f.id for f in bundle.facts],
                                                  entity_ids=[e.id for e in bundle.entities], now=datetime.now(UTC))
        except StorageUnavailableError as exc:
            log.info("timeline reinforcement after recall skipped for user %s: %s", bundle.user_id, exc)
        except Exception:
            log.exception("timeline reinforcement after recall failed for user %s", bundle.user_id)
        cross = [{"id": s.id, "kind": type(s.item).__name__.lower(), "channel": s.channel}
                 for s in bundle.all_scored() if s.channel != active_channel]
        metadata = {
            "active_channel": active_channel,
            "cross_channel_matches": len(cross),
            "cross_channel_items": cross[:50],
            "metrics": {k: v.model_dump() for k, v in bundle.metrics.techniques.items()},
            "counts": {"turns": len(bundle.turns), "facts": len(bundle.facts), "entities": len(bundle.entities),
                       "strategies": len(bundle.strategies)},
        }
        await self.ctx.audit.log_read(
            bundle.query, bundle.channels, len(bundle.all_scored()), int(bundle.metrics.total_ms),
            user_id=bundle.user_id, source_channel=active_channel, metadata=metadata, session_id=session_id,
            trace=bundle.explain(), timestamp=answered,
        )

    async def _write_access_counts(self) -> None:
        """Write the access counts gathered so far to the graph (see :mod:`~agentx_memory.reinforcement`)."""
        if self._flush_timer is not None:
            self._flush_timer.cancel()
            self._flush_timer = None
        counts = self._access_counts.take()
        if not counts:
            return
        try:
            await self.ctx.graph_health.call(self.semantic.add_access_counts(counts))
        except StorageUnavailableError as exc:  # recall said what it skipped; the counts are dropped with it
            log.info("access counts of %d facts and %d entities not written: %s", len(counts.facts),
                     len(counts.entities), exc)
        except Exception:
            log.exception("writing the access counts of %d facts and %d entities failed", len(counts.facts),
                          len(counts.entities))

    async def drain(self) -> None:
        """Wait for pending reinforcement/audit writes, and write the access counts gathered so far (close() and
        tests call it)."""
        await self._background.drain()
        await self._write_access_counts()


def _texts_to_embed(query: str, analysis: QueryAnalysis, settings: RecallSettings, metrics: RecallMetrics
                    ) -> list[str]:
    """The question, and its statement when query expansion is on and the statement differs."""
    texts = [query]
    if settings.query_expansion and analysis.statement.casefold() != query.strip().casefold():
        texts.append(analysis.statement)
        metrics.techniques.setdefault("query_expansion", TechniqueMetric()).detail["statement"] = analysis.statement
    return texts


def _keywords(query: str, analysis: QueryAnalysis, settings: RecallSettings) -> str:
    """The question as keywords for the lexical legs: with self-query on, its time phrases are taken out (they are a
    filter: "last" must not match "last week")."""
    if not settings.self_query:
        return query
    for time_range in analysis.time_ranges:
        query = query.replace(time_range.phrase, " ")
    return query


def _memory_types(value: Sequence[str] | None, field: str) -> set[str] | None:
    """The memory kinds asked for, checked against :data:`MEMORY_TYPES` (None: every kind)."""
    if value is None:
        return None
    if isinstance(value, str) or not all(isinstance(v, str) for v in value):
        raise ValidationError(field, f"must be a list of memory types ({', '.join(MEMORY_TYPES)})")
    unknown = sorted(set(value) - set(MEMORY_TYPES))
    if unknown or not value:
        raise ValidationError(field, f"unknown memory types {unknown}; choose from {', '.join(MEMORY_TYPES)}")
    return set(value)


async def _nothing() -> list[ScoredControl]:
    return []
