"""OpenTelemetry spans and metrics (issue 18), on both graph backends, read with the SDK's in-memory exporter and
reader: a span per public operation (every public coroutine is traced: the list is taken from the class, so a new
operation cannot be missed), recall's technique timings on its span, errors on spans with our error type, the
memory-size gauges following writes, the recall histogram counting recalls, working-memory hits and misses, decay
counts, consolidation lag, the Prometheus endpoint, and -- with the setting off -- no span and no OpenTelemetry."""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from prometheus_client.parser import text_string_to_metric_families

from agentx_memory import AgentMemory, AsyncAgentMemory, Entity, Fact, Goal, Turn
from agentx_memory.errors import ClosedError, NotFoundError, ValidationError
from agentx_memory.graph import cypher
from agentx_memory.observability import PrometheusReader, configure, is_instrumented, metrics_app
from agentx_memory.observability.gauges import store_of
from agentx_memory.polling import wait_until
from agentx_memory.router import MemoryRouter
from agentx_memory.working import WorkingMemory
from tests.conftest import cli_env, gread

ROOT = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


class Telemetry:
    """This test's providers: spans kept in memory, metrics read in memory and by a Prometheus reader."""

    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.tracer = tracer_provider.get_tracer("tests")
        self.reader = InMemoryMetricReader()
        self.prometheus = PrometheusReader()
        configure(tracer_provider, MeterProvider(metric_readers=[self.reader, self.prometheus]))

    def finished(self, name: str | None = None) -> list:
        return [s for s in self.spans.get_finished_spans() if name is None or s.name == name]

    def names(self) -> Counter:
        return Counter(s.name for s in self.spans.get_finished_spans())

    def points(self, metric: str) -> list:
        """The data points of ``metric`` in a collection made now."""
        data = self.reader.get_metrics_data()
        return [point for resource in (data.resource_metrics if data else ()) for scope in resource.scope_metrics
                for m in scope.metrics if m.name == metric for point in m.data.data_points]

    def value(self, metric: str, **attributes) -> float | None:
        """The value (a sum, a gauge's value, a histogram's count) of the point with these attributes."""
        for point in self.points(metric):
            if all(point.attributes.get(k) == v for k, v in attributes.items()):
                return getattr(point, "value", None) if hasattr(point, "value") else point.count
        return None


@pytest.fixture
def otel():
    telemetry = Telemetry()
    yield telemetry
    configure()  # back to the global providers


def _on(settings, **sections):
    return settings(observability={"enabled": True, **sections.pop("observability", {})}, **sections)


def _turns(conversation: str, *lines: str, when: datetime | None = None, channel: str = "_global") -> list[Turn]:
    start = when or datetime.now(UTC)
    return [Turn(conversation_id=conversation, user_id="alice", role="user", content=line, channel=channel,
                 timestamp=start + timedelta(seconds=i)) for i, line in enumerate(lines)]


def _public_coroutines(cls: type) -> set[str]:
    # taken here from the class itself, not from the observability package, so the two cannot drift together
    return {name for name, member in inspect.getmembers(cls)
            if not name.startswith("_") and inspect.iscoroutinefunction(member)
            and not isinstance(inspect.getattr_static(cls, name), classmethod)}


# --- spans -----------------------------------------------------------------------------------------------------------

def test_every_public_coroutine_is_traced_with_its_own_span_name(settings, otel):
    with AgentMemory(_on(settings), user_id="alice") as memory:
        core = memory.core
        assert is_instrumented(core) and isinstance(core, AsyncAgentMemory)
        for obj, cls, prefix in ((core, AsyncAgentMemory, "agentx_memory."),
                                 (core.working("alice", "c1"), WorkingMemory, "agentx_memory.working."),
                                 (core.tiers("s1"), MemoryRouter, "agentx_memory.tiers.")):
            operations = _public_coroutines(cls)
            assert len(operations) >= (80 if cls is AsyncAgentMemory else 3)
            untraced = sorted(name for name in operations
                              if getattr(getattr(type(obj), name), "__agentx_span__", None) != prefix + name)
            assert untraced == [], f"{cls.__name__}: not traced: {untraced}"
        # ``open`` makes the memory, so nothing can trace it; every other public coroutine is traced
        assert _public_coroutines(AsyncAgentMemory) | {"open"} == {
            name for name, member in inspect.getmembers(AsyncAgentMemory)
            if not name.startswith("_") and inspect.iscoroutinefunction(member)}
        # a view made by for_agent is traced too, and acts as its agent
        view = core.for_agent("planner")
        assert is_instrumented(view) and view.agent_id == "planner" and core.agent_id is None


def test_each_call_makes_one_span_with_who_and_what(settings, otel):
    with AgentMemory(_on(settings), user_id="alice") as memory:
        stored = memory.store_turns(_turns("trip", "I moved to Lisbon.", "I work at Lumen Labs.", channel="travel"))
        memory.store_turn(_turns("trip", "Book a table in Alfama.", channel="travel")[0])
        assert len(memory.get_conversation("trip")) == 3
        memory.get_recent_turns(channels=["travel"])
        lisbon = memory.upsert_entity(Entity(user_id="alice", name="Lisbon", type="place"))
        lumen = memory.upsert_entity(Entity(user_id="alice", name="Lumen Labs", type="organization"))
        memory.create_relationship(lumen.id, lisbon.id, "LOCATED_IN")
        fact = memory.learn_fact(Fact(user_id="alice", claim="Alice lives in Lisbon", entity_ids=[lisbon.id],
                                      source_turn_id=stored[0].id))
        memory.get_fact(fact.id)
        memory.get_entity_graph([lisbon.id])
        memory.add_goal(Goal(user_id="alice", description="find a flat"))
        memory.list_goals()
        memory.set_preference("tone", "brief")
        memory.get_profile()
        memory.remember("where does alice live?")
        session = memory.working(None, "trip")
        session.set("city", "Lisbon")
        session.get("city")
        memory.tiers("trip").read("city")
        memory.for_agent("planner").store_turn(_turns("plan", "Step 1: search flats.")[0])

        names = otel.names()
        expected = {"store_turns": 1, "store_turn": 2, "get_conversation": 1, "get_recent_turns": 1,
                    "upsert_entity": 2, "create_relationship": 1, "learn_fact": 1, "get_fact": 1,
                    "get_entity_graph": 1, "add_goal": 1, "list_goals": 1, "set_preference": 1, "get_profile": 1,
                    "remember": 1, "working.set": 1, "working.get": 2, "tiers.read": 1}
        assert {name: names["agentx_memory." + name] for name in expected} == expected

        (turns_span,) = otel.finished("agentx_memory.store_turns")
        assert turns_span.attributes["agentx_memory.user_id"] == "alice"
        assert turns_span.attributes["agentx_memory.result.count"] == 2
        (conversation,) = otel.finished("agentx_memory.get_conversation")
        assert conversation.attributes["agentx_memory.conversation_id"] == "trip"
        assert conversation.attributes["agentx_memory.result.count"] == 3
        assert otel.finished("agentx_memory.get_recent_turns")[0].attributes["agentx_memory.channels"] == ("travel",)
        by_agent = [s for s in otel.finished("agentx_memory.store_turn")
                    if s.attributes.get("agentx_memory.agent_id") == "planner"]
        assert len(by_agent) == 1 and by_agent[0].attributes["agentx_memory.conversation_id"] == "plan"
        first = next(s for s in otel.finished("agentx_memory.store_turn") if s not in by_agent)
        assert first.attributes["agentx_memory.channel"] == "travel"  # from the turn written
        (get_span,) = [s for s in otel.finished("agentx_memory.working.get")
                       if s.parent is not None and s.parent.span_id == otel.finished("agentx_memory.tiers.read")[0]
                       .context.span_id]
        assert get_span.attributes["agentx_memory.conversation_id"] == "trip"  # the router's read, a child span
        assert all(s.status.status_code is StatusCode.UNSET for s in otel.finished())
        durations = {p.attributes["operation"]: p.count for p in otel.points("agentx_memory.operation.duration")}
        assert durations["upsert_entity"] == 2 and durations["working.get"] == 2


def test_spans_are_children_of_the_callers_span_through_both_facades(settings, otel):
    with AgentMemory(_on(settings), user_id="alice") as memory:
        with otel.tracer.start_as_current_span("request (sync)") as request:
            memory.store_turn(_turns("c1", "hello")[0])  # awaited on the facade's own thread and loop

        async def in_a_task() -> None:
            with otel.tracer.start_as_current_span("request (async)"):
                await asyncio.gather(memory.core.get_profile(), memory.core.list_goals())

        # the async API on the sync facade's loop, as an application running on that loop would call it
        memory._portal.run(in_a_task())
    (stored,) = otel.finished("agentx_memory.store_turn")
    assert stored.parent is not None and stored.parent.span_id == request.get_span_context().span_id
    (outer,) = otel.finished("request (async)")
    for name in ("agentx_memory.get_profile", "agentx_memory.list_goals"):
        (span,) = otel.finished(name)
        assert span.parent is not None and span.parent.span_id == outer.context.span_id
    (closed,) = otel.finished("agentx_memory.close")
    assert closed.parent is None


def test_recall_spans_carry_each_technique_timing_and_the_histogram_counts_recalls(settings, otel):
    with AgentMemory(_on(settings), user_id="alice") as memory:
        memory.store_turns(_turns("trip", "I moved to Lisbon in May.", "My sister Ana lives in Porto."))
        bundles = [memory.remember(q) for q in ("where does alice live?", "who is Ana?", "Porto")]
        spans = otel.finished("agentx_memory.remember")
        assert len(spans) == 3
        for span, bundle in zip(spans, bundles, strict=True):
            attrs = span.attributes
            assert attrs["agentx_memory.recall.total_ms"] == bundle.metrics.total_ms > 0
            assert attrs["agentx_memory.recall.embed_ms"] == bundle.metrics.embed_ms
            techniques = {key.split(".")[3] for key in attrs if key.startswith("agentx_memory.recall.technique.")}
            assert techniques == set(bundle.metrics.techniques) and len(techniques) >= 2
            for name, metric in bundle.metrics.techniques.items():
                assert attrs[f"agentx_memory.recall.technique.{name}.latency_ms"] == metric.latency_ms
                assert attrs[f"agentx_memory.recall.technique.{name}.results"] == metric.results
            assert attrs["agentx_memory.recall.turns"] == len(bundle.turns)
        assert otel.value("agentx_memory.recall.duration") == 3
        technique_counts = {p.attributes["technique"]: p.count
                            for p in otel.points("agentx_memory.recall.technique.duration")}
        ran = Counter(name for b in bundles for name, m in b.metrics.techniques.items() if not m.skipped)
        assert technique_counts == dict(ran)


def test_errors_are_recorded_on_spans_with_our_error_type(settings, otel):
    with AgentMemory(_on(settings), user_id="alice") as memory:
        with pytest.raises(NotFoundError):
            memory.get_fact("no-such-fact")
        with pytest.raises(ValidationError):
            memory.remember("anything", top_k=0)
        (missing,) = otel.finished("agentx_memory.get_fact")
        assert missing.status.status_code is StatusCode.ERROR
        assert missing.attributes["error.type"] == "NotFoundError"
        assert missing.status.description.startswith("NotFoundError: fact 'no-such-fact' not found")
        assert [e.attributes["exception.type"] for e in missing.events if e.name == "exception"] == [
            "agentx_memory.errors.NotFoundError"]
        (bad,) = otel.finished("agentx_memory.remember")
        assert bad.attributes["error.type"] == "ValidationError" and bad.attributes["agentx_memory.error.field"] == \
            "top_k"
        assert otel.value("agentx_memory.operation.duration", operation="get_fact", **{"error.type": "NotFoundError"}) \
            == 1
        assert otel.value("agentx_memory.recall.duration") is None  # a failed recall is not a retrieval latency
        core = memory.core
    with pytest.raises(ClosedError):
        asyncio.run(core.get_profile())
    assert otel.finished("agentx_memory.get_profile")[-1].attributes["error.type"] == "ClosedError"


# --- metrics ---------------------------------------------------------------------------------------------------------

def test_size_gauges_follow_writes_and_cover_every_label_and_type_written(settings, otel):
    with AgentMemory(_on(settings), user_id="alice") as memory:
        store = store_of(memory.settings)
        memory.memory_stats()
        before = otel.value("agentx_memory.graph.nodes", store=store, label="Turn")
        assert before == 0
        stored = memory.store_turns(_turns("trip", "I moved to Lisbon.", "I work at Lumen Labs.", "Hi"))
        lisbon = memory.upsert_entity(Entity(user_id="alice", name="Lisbon", type="place"))
        lumen = memory.upsert_entity(Entity(user_id="alice", name="Lumen Labs", type="organization"))
        memory.create_relationship(lumen.id, lisbon.id, "LOCATED_IN")
        memory.learn_fact(Fact(user_id="alice", claim="Alice lives in Lisbon", entity_ids=[lisbon.id],
                               source_turn_id=stored[0].id))
        parent = memory.add_goal(Goal(user_id="alice", description="move abroad"))
        memory.add_goal(Goal(user_id="alice", description="find a flat", parent_id=parent.id))
        memory.record_invocation("trip", stored[1].id, "search", {"q": "flats"}, {"n": 3}, True, 120)
        memory.learn_strategy("search flats by district", tool_sequence=["search"])

        # each pooled connection publishes its counters on its own clock (a second, or ten when it published less
        # than a second before), so wait for every table asserted, not just one
        def counted():
            s = memory.memory_stats()
            rows = s.postgres_rows
            return (rows.get("conversation_logs", 0) >= 3 and rows.get("tool_invocations", 0) >= 1
                    and rows.get("memory_audit_log", 0) > 0 and s)
        stats = wait_until(counted, timeout=30, what="PostgreSQL's live-row counters to follow the writes")
        assert otel.value("agentx_memory.graph.nodes", store=store, label="Turn") == 3
        assert otel.value("agentx_memory.graph.nodes", store=store, label="Entity") == 2
        assert otel.value("agentx_memory.graph.relationships", store=store, type="LOCATED_IN") == 1
        assert otel.value("agentx_memory.graph.relationships", store=store, type="HAS_TURN") == 3
        assert otel.value("agentx_memory.postgres.rows", store=store, table="conversation_logs") == 3
        assert otel.value("agentx_memory.postgres.rows", store=store, table="tool_invocations") == 1
        assert otel.value("agentx_memory.redis.used_memory", store=store) > 0
        # every node and relationship written is under a label / type the statistics count
        nodes = gread(memory, "MATCH (n) WHERE NOT n:AgentxMeta RETURN count(n) AS n")[0]["n"]
        relationships = gread(memory, "MATCH ()-[r]->() RETURN count(r) AS n")[0]["n"]
        assert sum(stats.graph_nodes.values()) == nodes > 10
        assert sum(stats.graph_relationships.values()) == relationships > 8
        assert set(stats.graph_nodes) == set(cypher.STATS_NODE_LABELS)
        assert stats.postgres_rows["memory_audit_log"] > 0  # partitions summed under their table


def test_consolidation_lag_and_delay(settings, otel):
    with AgentMemory(_on(settings, extraction={"extractor": "offline"}), user_id="alice") as memory:
        store = store_of(memory.settings)
        memory.store_turns(_turns("old", "I live in Porto.", when=datetime.now(UTC) - timedelta(hours=2)))
        memory.store_turns(_turns("new", "I like tea."))
        stats = memory.memory_stats()
        assert stats.unconsolidated_conversations == 2
        assert 7190 < stats.consolidation_lag_seconds < 7300
        assert otel.value("agentx_memory.consolidation.pending", store=store) == 2
        assert 7190 < otel.value("agentx_memory.consolidation.lag", store=store) < 7300
        report = memory.consolidate()  # the old one is quiet; the new one is not yet
        assert [c["conversation_id"] for c in report.conversations] == ["old"]
        assert otel.value("agentx_memory.consolidation.delay") == 1
        (point,) = otel.points("agentx_memory.consolidation.delay")
        assert point.sum == pytest.approx(report.conversations[0]["lag_seconds"])
        memory.memory_stats()
        assert otel.value("agentx_memory.consolidation.pending", store=store) == 1
        assert otel.value("agentx_memory.consolidation.lag", store=store) < 60
        (span,) = otel.finished("agentx_memory.consolidate")
        assert span.attributes["agentx_memory.job.consolidated"] == 1


def test_working_memory_reads_count_hits_and_misses(settings, otel):
    with AgentMemory(_on(settings), user_id="alice") as memory:
        session = memory.working(None, "c1")
        assert session.get("city") is None
        session.set("city", "Lisbon")
        assert session.get("city") == "Lisbon"
        assert session.get_active_goal() is None
        session.memory_size()  # not a lookup: neither a hit nor a miss
        assert memory.tiers("c1").read("city") == "Lisbon"  # found in working memory: a hit
        assert otel.value("agentx_memory.working.hits", operation="get") == 2
        assert otel.value("agentx_memory.working.misses", operation="get") == 1
        assert otel.value("agentx_memory.working.misses", operation="get_active_goal") == 1
        assert otel.value("agentx_memory.working.hits", operation="memory_size") is None


def test_decay_runs_are_counted(settings, otel):
    with AgentMemory(_on(settings), user_id="alice") as memory:
        for name in ("Porto", "Braga"):
            memory.upsert_entity(Entity(user_id="alice", name=name, type="place", salience=0.8))
        memory.apply_decay(now=datetime.now(UTC) + timedelta(days=10), dry_run=True)
        assert otel.value("agentx_memory.decay.changed", kind="entity") is None  # a dry run changes nothing
        report = memory.apply_decay(now=datetime.now(UTC) + timedelta(days=10))
        assert report.entities_changed == 2
        assert otel.value("agentx_memory.decay.changed", kind="entity") == 2
        assert otel.value("agentx_memory.decay.changed", kind="fact") == 0
        assert otel.finished("agentx_memory.apply_decay")[-1].attributes["agentx_memory.job.entities_changed"] == 2


def test_gauges_refresh_in_the_background_when_collected(settings, otel):
    async def scenario() -> None:
        memory = await AsyncAgentMemory.open(_on(settings, observability={"stats_refresh_seconds": 0}),
                                             user_id="alice")
        async with memory:
            store = store_of(memory.settings)
            await memory.store_turns(_turns("c1", "one", "two"))
            # nobody called memory_stats(): the first collection has no figures yet and starts a refresh
            assert otel.value("agentx_memory.graph.nodes", store=store, label="Turn") is None
            for _ in range(200):
                await asyncio.sleep(0.02)
                if otel.value("agentx_memory.graph.nodes", store=store, label="Turn") == 2:
                    break
            assert otel.value("agentx_memory.graph.nodes", store=store, label="Turn") == 2
            assert len(otel.finished("agentx_memory.memory_stats")) >= 1
        # a closed memory's gauges stop
        assert otel.value("agentx_memory.graph.nodes", store=store, label="Turn") is None

    asyncio.run(scenario())


# --- Prometheus ------------------------------------------------------------------------------------------------------

def test_prometheus_endpoint_serves_the_same_measurements(settings, otel):
    with AgentMemory(_on(settings), user_id="alice") as memory:
        store = store_of(memory.settings)
        memory.store_turns(_turns("c1", "I moved to Lisbon.", "I work at Lumen Labs."))
        for query in ("Lisbon", "work"):
            memory.remember(query)
        memory.working(None, "c1").get("missing")
        memory.memory_stats()

        async def scrape() -> httpx.Response:
            transport = httpx.ASGITransport(app=metrics_app(otel.prometheus))
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
                return await client.get("/metrics")

        response = asyncio.run(scrape())
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
        samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
                   for family in text_string_to_metric_families(response.text) for s in family.samples}
        assert samples[("agentx_memory_recall_duration_seconds_count", ())] == 2
        assert samples[("agentx_memory_recall_duration_seconds_bucket", (("le", "+Inf"),))] == 2
        assert samples[("agentx_memory_graph_nodes", (("label", "Turn"), ("store", store)))] == 2
        assert samples[("agentx_memory_working_misses_total", (("operation", "get"),))] == 1
        assert samples[("agentx_memory_operation_duration_seconds_count", (("operation", "store_turns"),))] == 1
        buckets = sorted((float(dict(labels)["le"]), value) for (name, labels), value in samples.items()
                         if name == "agentx_memory_recall_duration_seconds_bucket")
        assert [v for _, v in buckets] == sorted(v for _, v in buckets)  # cumulative, as histogram_quantile needs


# --- off -------------------------------------------------------------------------------------------------------------

def test_disabled_memory_makes_no_span(settings, otel):
    with AgentMemory(settings(), user_id="alice") as memory:
        memory.store_turn(_turns("c1", "hello")[0])
        memory.remember("hello")
        assert not is_instrumented(memory.core) and type(memory.core) is AsyncAgentMemory
    assert otel.finished() == []


#: Runs with OpenTelemetry and prometheus-client impossible to import, as without the extra (redis-py imports
#: OpenTelemetry by itself when it is installed, so merely looking at sys.modules would prove nothing).
WITHOUT_EXTRA_PROBE = """
import json, sys

class NoOtel:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("opentelemetry", "prometheus_client"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

sys.meta_path.insert(0, NoOtel())
from agentx_memory import AgentMemory, ConfigurationError, Turn, load_settings

with AgentMemory(user_id="alice") as memory:
    memory.store_turn(Turn(conversation_id="c1", user_id="alice", content="hello"))
    memory.remember("hello")
    memory.memory_stats()
loaded = sorted(m for m in sys.modules if m.startswith(("opentelemetry", "prometheus_client",
                                                         "agentx_memory.observability")))
try:
    AgentMemory(load_settings(observability={"enabled": True}), user_id="alice")
    refused = ""
except ConfigurationError as exc:
    refused = str(exc)
print(json.dumps({"loaded": loaded, "refused": refused}))
"""


def test_without_the_extra_a_disabled_memory_works_and_enabling_names_the_extra(settings):
    env = cli_env(settings())
    done = subprocess.run([sys.executable, "-c", WITHOUT_EXTRA_PROBE], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["loaded"] == []
    assert "pip install 'agentx-memory[otel]'" in result["refused"]


# --- the docs --------------------------------------------------------------------------------------------------------

DOC = ROOT / "docs" / "observability.md"


@pytest.mark.parametrize("block", re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S),
                         ids=lambda block: block.splitlines()[0][:40])
def test_the_docs_example_runs(block, settings):
    # in a process of its own: the example sets OpenTelemetry's global providers, which can be set once per process
    done = subprocess.run([sys.executable, "-c", block], env=cli_env(settings()), cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "agentx_memory_graph_nodes" in done.stdout
