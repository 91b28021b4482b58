"""The ``agentx-memory`` command line: run the embedded stack, migrate, and operate the memory.

``agentx-memory up | down | status | migrate | reconcile`` (more subcommands are registered by later modules in
:data:`COMMANDS`). Settings come from ``AGENTX_*`` environment variables, as everywhere.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from .errors import AgentXMemoryError, ConfigurationError, ValidationError
from .server.commands import cmd_keys, cmd_serve, keys_args, serve_args

# Only the standard library and .errors at import time: building the parser (and so --help) must not load the
# engine, pydantic, rich or a database driver (issue 17). Each command imports what it uses.
if TYPE_CHECKING:
    from rich.console import Console

    from .runtime import EmbeddedStack
    from .settings import Settings

T = TypeVar("T")

__all__ = ["COMMANDS", "ArgumentAdder", "Handler", "build_parser", "json_safe", "main", "status_report"]


@functools.cache
def _console() -> Console:
    """The console every command prints to, created on first use."""
    from rich.console import Console

    return Console()


def _run(work: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(work)``, with asyncio imported only by the commands that run something."""
    import asyncio

    return asyncio.run(work)


def _human(size: int | None) -> str:
    if size is None:
        return "-"
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.1f} {unit}" if unit != "B" else f"{int(value)} B"
        value /= 1024
    return str(size)


def _stack(settings: Settings) -> EmbeddedStack:
    from .runtime import EmbeddedStack

    return EmbeddedStack(settings.embedded)


async def _migrate(settings: Settings) -> tuple[list[int], int | None]:
    from .backends import locate_stores, make_graph_store, migrate_namespace

    stores = await locate_stores(settings)
    graph = make_graph_store(settings, falkordb_socket=stores.falkordb_socket)
    try:
        applied = await migrate_namespace(settings, stores, graph)
    finally:
        await graph.close()
    return applied, await _schema_version(settings, stores.postgres_dsn)


def cmd_up(args: argparse.Namespace, settings: Settings) -> int:
    """Start the embedded servers (if needed) and apply pending schema migrations."""
    if not settings.uses_embedded:
        _console().print("All stores are configured as services (AGENTX_GRAPH__URI, AGENTX_POSTGRES__DSN, "
                          "AGENTX_REDIS__URL); nothing to start.")
    applied, version = _run(_migrate(settings))
    _console().print(f"[green]up[/green]: data directory {settings.embedded.home.resolve()}; schema version {version}"
                      + (f" (applied {applied})" if applied else ""))
    return 0


def cmd_down(args: argparse.Namespace, settings: Settings) -> int:
    """Stop the embedded servers of the data directory (data is kept)."""
    _stack(settings).stop()
    _console().print(f"[green]down[/green]: embedded servers stopped; data kept in {settings.embedded.home.resolve()}")
    return 0


async def _schema_version(settings: Settings, dsn: str) -> int | None:
    from .sql.postgres import PostgresStore

    store = PostgresStore(dsn, db_schema=settings.postgres.db_schema, min_size=0, max_size=1)
    await store.open()
    try:
        return await store.schema_version()
    finally:
        await store.close()


def _embedded_schema_version(stack: EmbeddedStack, db_schema: str) -> int | None:
    """The schema version read by the embedded server's own psql (a few ms; psycopg's import alone took ~50 ms of
    ``status``, issue 17); :class:`RuntimeServerError` when the server does not take the connection."""
    from .errors import RuntimeServerError
    from .sql.schema_version import VERSION_SCRIPT, version_from_script

    printed = stack.run_postgres_script(VERSION_SCRIPT, {"schema": db_schema})
    if printed is None:
        raise RuntimeServerError("the embedded PostgreSQL did not take a connection to read the schema version")
    return version_from_script(printed)


def status_report(settings: Settings) -> dict[str, Any]:
    """Each embedded server's state, version, pid, socket and data size, and the schema version applied."""
    report: dict[str, Any] = {"home": str(settings.embedded.home.resolve()), "servers": {}, "schema_version": None}
    if settings.uses_embedded:
        stack = _stack(settings)
        report["servers"] = stack.status()
        if report["servers"].get("postgres", {}).get("running"):
            try:
                report["schema_version"] = (
                    _run(_schema_version(settings, settings.postgres.dsn)) if settings.postgres.dsn
                    else _embedded_schema_version(stack, settings.postgres.db_schema))
            except AgentXMemoryError as exc:
                report["schema_error"] = str(exc)
    else:
        report["schema_version"] = _run(_schema_version(settings, settings.postgres.dsn))
    return report


def cmd_status(args: argparse.Namespace, settings: Settings) -> int:
    """Show the embedded servers and the schema version; exit 1 when a server is down."""
    report = status_report(settings)
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        from rich.table import Table

        table = Table(title=f"agentx-memory · {report['home']}")
        for column in ("server", "state", "version", "pid", "socket", "data size"):
            table.add_column(column)
        for name, info in report["servers"].items():
            state = "[green]up[/green]" if info.get("running") else f"[red]{info.get('state', 'down')}[/red]"
            table.add_row(name, state, str(info.get("version") or "-"), str(info.get("pid") or "-"),
                          str(info.get("socket") or "-"), _human(info.get("data_size_bytes")))
        _console().print(table)
        version = report["schema_version"]
        _console().print(f"schema version: {version if version is not None else 'not migrated'}")
    servers = report["servers"].values()
    return 0 if all(s.get("running") for s in servers) else 1


def cmd_migrate(args: argparse.Namespace, settings: Settings) -> int:
    """Apply pending PostgreSQL migrations and the graph schema (running it twice is a no-op)."""
    applied, version = _run(_migrate(settings))
    _console().print(f"schema version {version}: " + (f"applied {applied}" if applied else "already up to date"))
    return 0


def cmd_reconcile(args: argparse.Namespace, settings: Settings) -> int:
    """Project every durable-log turn and tool invocation the graph is missing; exit 1 when this run quarantined a
    turn (a scheduler running the command sees it), 0 otherwise."""
    from .memory import AgentMemory

    with AgentMemory(settings) as memory:
        result = memory.reconcile(full=args.full)
    if args.full:
        _console().print(f"the graph was missing {result.requeued} logged turn(s) and {result.invocations_requeued} "
                         "tool invocation(s): queued again")
    _console().print(f"reconciled {result.projected} turn(s) and {result.invocations_projected} tool invocation(s)")
    for turn in result.quarantined:
        _console().print(f"quarantined turn {turn.turn_id}: {turn.error}", markup=False)
    if result.quarantined_total:
        _console().print(f"{result.quarantined_total} turn(s) in quarantine (conversation_logs.projection_error; "
                          "clear it to retry a turn)")
    return 1 if result.quarantined else 0


def _whole_number(text: str, low: int) -> int:
    """``text`` as a whole number of at least ``low`` (else an argparse usage error, exit 2)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
    return value


def _count(text: str) -> int:
    """An argparse type: a whole number of at least 1 (a count of 0 or less is a usage error, exit 2)."""
    return _whole_number(text, 1)


def _count_or_zero(text: str) -> int:
    """An argparse type: a whole number of at least 0 (a negative one is a usage error, exit 2)."""
    return _whole_number(text, 0)


def _share(text: str) -> float:
    """An argparse type: a number above 0 and at most 1 (``0.25``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be above 0 and at most 1, got {value}")
    return value


def _sizes(text: str) -> list[int]:
    """An argparse type: comma-separated counts (``10000,100000``)."""
    return [_count(part.strip()) for part in text.split(",")]


def _variant(text: str) -> tuple[str, dict[str, Any]]:
    """An argparse type: a named variant of the engine for a benchmark, ``NAME:key=value,key=value`` (``no vector:
    vector_weight=0``); keys are ``recall`` settings or ``retrieval.<setting>``, values JSON (else text), checked
    now, not after the ingest."""
    name, sep, pairs = text.partition(":")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME:key=value,...")
    override: dict[str, Any] = {}
    for pair in filter(None, (p.strip() for p in pairs.split(","))):
        key, eq, raw = pair.partition("=")
        if not eq:
            raise argparse.ArgumentTypeError(f"{pair!r} in {text!r} is not key=value")
        try:
            override[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            override[key.strip()] = raw.strip()
    from pydantic import ValidationError as PydanticValidationError

    from .bench import split_variant
    from .settings import RecallSettings, RetrievalSettings

    recall, retrieval = split_variant(override)
    unknown = [*(set(recall) - set(RecallSettings.model_fields)),
               *(f"retrieval.{k}" for k in set(retrieval) - set(RetrievalSettings.model_fields))]
    if unknown:
        raise argparse.ArgumentTypeError(f"{text!r}: not recall settings: {', '.join(sorted(unknown))}")
    try:
        RecallSettings.model_validate(recall)
        RetrievalSettings.model_validate(retrieval)
    except PydanticValidationError as exc:
        error = exc.errors()[0]
        raise argparse.ArgumentTypeError(f"{text!r}: {'.'.join(map(str, error['loc']))}: {error['msg']}") from None
    return name.strip(), override


_LOCOMO_DEFAULTS = ("../shared/data/locomo/locomo-dev.json", "../../shared/data/locomo/locomo-dev.json")


def _locomo_data(data: str | None) -> str:
    """The LoCoMo file ``bench locomo`` reads: ``--data``, else the first default that exists. A ValidationError
    naming ``--data`` (exit 2) when there is none or it is not a file, before any store is touched."""
    from pathlib import Path

    if data is None:
        for candidate in _LOCOMO_DEFAULTS:
            if Path(candidate).is_file():
                return candidate
        raise ValidationError("--data", "bench locomo needs a LoCoMo JSON file: pass --data PATH (none given, and "
                                        f"no {' or '.join(_LOCOMO_DEFAULTS)} from {Path.cwd()})")
    if not Path(data).is_file():
        problem = "is a directory" if Path(data).is_dir() else "does not exist"
        raise ValidationError("--data", f"{data} {problem}; pass the LoCoMo JSON file")
    from .bench.locomo import load_locomo

    try:
        load_locomo(Path(data))  # unreadable, not JSON or not LoCoMo: say so now (it takes well under a second)
    except ValidationError as exc:
        raise ValidationError("--data", str(exc).removeprefix("data: ")) from exc
    return data


def _bench_output_args(parser: argparse.ArgumentParser, name: str) -> None:
    """The options every benchmark has: where its report and its embedding cache go, and its namespace's fate."""
    parser.add_argument("--out", default="benchmarks/results", help=f"directory for {name}.json/.md/.png")
    parser.add_argument("--cache", default="benchmarks/.cache", help="directory for the persistent embedding cache")
    parser.add_argument("--keep", action="store_true", help="keep the benchmark's graph and schema afterwards")
    parser.add_argument("--wipe-neo4j", action="store_true",
                        help="on Neo4j: allow the benchmark to empty the whole database (Community has only one)")


def _variant_args(parser: argparse.ArgumentParser) -> None:
    """``--variant``: extra named runs of the engine with recall overrides, on the same ingest; ``--dump``: what each
    run returned for each question, in the JSON, to compare runs question by question."""
    parser.add_argument("--variant", type=_variant, action="append", default=[], metavar="NAME:key=value,...",
                        help="also run the engine with these recall settings (or retrieval.<setting> values) under "
                             "NAME (repeatable), e.g. 'no vector:vector_weight=0'")
    parser.add_argument("--dump", action="store_true",
                        help="also write each question with the ids every method returned (per_question in the JSON)")


def _bench_args(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="bench", required=True)
    locomo = sub.add_parser("locomo", help="LoCoMo evidence recall (ours, baselines, ablations)")
    locomo.add_argument("--data", default=None,
                        help="LoCoMo JSON (default: ../shared/data/locomo/locomo-dev.json if it exists)")
    locomo.add_argument("--samples", type=_count, default=None, help="only the first N samples")
    locomo.add_argument("--questions", type=_count, default=None, help="only the first N questions per sample")
    locomo.add_argument("--no-ablations", action="store_true", help="only the full method and the baselines")
    locomo.add_argument("--extract", action="store_true",
                        help="also extract every conversation (extraction.extractor) and run the engine with facts")
    locomo.add_argument("--observations", action="store_true",
                        help="also learn LoCoMo's own session observations as facts and run the engine with them")
    _variant_args(locomo)
    _bench_output_args(locomo, "locomo")
    beam = sub.add_parser("beam", help="BEAM evidence recall on long user-assistant chats (ours, BM25, vector)")
    beam.add_argument("--data", default=None,
                      help="BEAM folder with chats/<n>/ (default: ../shared/data/beam-dev if it exists)")
    beam.add_argument("--chats", type=_sizes, default=None, help="comma-separated chat numbers (default: all)")
    beam.add_argument("--limit", type=_count, default=None, help="only the first N questions with evidence per chat")
    beam.add_argument("--prefix", type=_share, default=None, metavar="SHARE",
                      help="cut each chat to this share of its messages (e.g. 0.25), asked from its last kept message "
                           "with the questions whose evidence lies there: shorter chats of the same kind")
    beam.add_argument("--embedding", default=None,
                      help="embedding model, e.g. local:minilm (default: the configured one, local:minilm)")
    beam.add_argument("--ablations", action="store_true", help="also the RecallLayer with each technique off")
    _variant_args(beam)
    _bench_output_args(beam, "beam")
    scale = sub.add_parser("scale", help="ingest throughput and remember() latency from 10k to 1M turns, with floors")
    scale.add_argument("--max", type=_count, default=100_000,
                       help="largest corpus in turns; the 10k/100k/1M steps below it are measured too "
                            "(default 100000)")
    scale.add_argument("--sizes", type=_sizes, default=None,
                       help="comma-separated sizes in turns instead of the steps up to --max")
    scale.add_argument("--queries", type=_count, default=500, help="questions per configuration and size (default 500)")
    scale.add_argument("--users", type=_count, default=50, help="users in the corpus (default 50)")
    scale.add_argument("--embed-sample", type=_count, default=200,
                       help="texts for each preset's throughput (default 200)")
    scale.add_argument("--batch", type=_count, default=500, help="turns per store_turns call (default 500)")
    scale.add_argument("--seed", type=int, default=7, help="corpus seed (default 7)")
    scale.add_argument("--profile", action="store_true", help="also cProfile 100 full recalls at the largest size")
    scale.add_argument("--warmup", type=_count_or_zero, default=300,
                       help="untimed recalls of other questions of the same user before each latency configuration "
                            "is timed (default 300: a JVM server's JIT needs them; 0: none)")
    scale.add_argument("--write-floor-max", type=_count, default=None, metavar="TURNS",
                       help="measure the write floor only for steps up to this many turns (default: every step; the "
                            "1M step's floor alone takes ~45 minutes, and the ingest ratios are those of the smaller "
                            "steps)")
    _bench_output_args(scale, "scale")
    serve = sub.add_parser("serve", help="load test of the REST service on loopback: requests/s and p50/p95/p99 of "
                                         "store_turn and remember (extra [server])")
    serve.add_argument("--requests", type=_count, default=500, help="requests per operation (default 500)")
    serve.add_argument("--concurrency", type=_count, default=8, help="requests in flight (default 8)")
    _bench_output_args(serve, "serve")
    extract = sub.add_parser("extract", help="extraction cost through a local wire-format server and the offline "
                                             "rules' coverage of LoCoMo's observations (no database, no paid call)")
    extract.add_argument("--data", default=None,
                         help="LoCoMo JSON (default: ../shared/data/locomo/locomo-dev.json if it exists)")
    extract.add_argument("--sample", type=_count, default=40, help="extracted facts listed to label by hand")
    extract.add_argument("--out", default="benchmarks/results", help="directory for extract.json")
    choose = sub.add_parser("choose", help="leave-one-conversation-out choice among the variants of bench locomo and "
                                           "bench beam reports written with --dump (no database)")
    choose.add_argument("reports", nargs="+", help="locomo.json and beam.json (or either), run with --dump and the "
                                                   "same --variant options")
    choose.add_argument("--k", type=_count, default=10, help="choose by R@K (default 10)")
    choose.add_argument("--out", default="benchmarks/results", help="directory for choose.json/.md")


def _read_report(path: str) -> dict[str, Any]:
    """A benchmark's JSON report; a missing or unreadable file is a :class:`ValidationError` naming it."""
    from pathlib import Path

    try:
        report = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ValidationError("reports", f"cannot read {path} as a benchmark's JSON report ({exc})") from exc
    if not isinstance(report, dict):
        raise ValidationError("reports", f"{path} is not a benchmark's JSON report")
    return report


def cmd_bench(args: argparse.Namespace, settings: Settings) -> int:
    """Run a benchmark on its own graph and schema (dropped first) of the configured stores."""
    from pathlib import Path

    if args.bench == "extract":  # stores nothing: no namespace, no Neo4j guard
        from .bench.extract import run_extract_bench

        extracted = run_extract_bench(settings, Path(_locomo_data(args.data)), Path(args.out),
                                      sample_size=args.sample)
        print(json.dumps({k: v for k, v in extracted["offline"].items() if k != "sample_to_label"}
                         | {"llm_cost": extracted["llm_cost"]}, indent=2))
        _console().print(f"written: {Path(args.out) / 'extract.json'}")
        return 0
    if args.bench == "choose":  # reads reports only
        from .bench import choose

        questions = choose.questions_of_reports([_read_report(path) for path in args.reports])
        result = choose.choose(questions, args.k)
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "choose.json").write_text(json.dumps(result, indent=2))
        markdown = choose.markdown_report(result)
        (out / "choose.md").write_text(markdown)
        print(markdown)
        _console().print(f"written: {out / 'choose.json'}, .md")
        return 0
    if settings.graph.backend == "neo4j" and not args.wipe_neo4j:
        # A benchmark resets its graph, and a Neo4j graph is the whole database: never empty it unasked.
        raise ConfigurationError("benchmarks drop their graph before and after, which on Neo4j is the whole database "
                                 f"({settings.graph.uri}): pass --wipe-neo4j if it holds nothing you keep")
    if args.bench == "locomo":
        args.data = _locomo_data(args.data)  # a bad --data fails before any store is touched

    if args.bench == "locomo":
        from .bench.locomo import run_locomo

        settings = _bench_settings(settings, "bench_locomo")
        Path(args.cache).mkdir(parents=True, exist_ok=True)
        settings = settings.model_copy(update={"embedding": settings.embedding.model_copy(
            update={"cache_path": str(Path(args.cache) / "embeddings.sqlite")})})
        _run(_reset_namespace(settings))
        try:
            report = _run(run_locomo(settings, Path(args.data), out_dir=Path(args.out),
                                            limit_samples=args.samples, limit_questions=args.questions,
                                            ablations=not args.no_ablations, variants=dict(args.variant),
                                            extract=args.extract, observations=args.observations,
                                            dump=args.dump, progress=_console().print))
        finally:
            if not args.keep:
                _run(_reset_namespace(settings))
        from .bench.locomo import markdown_report

        _console().print(markdown_report(report))
        _console().print(f"written: {Path(args.out) / 'locomo.json'}, .md, .png")
    elif args.bench == "beam":
        from .bench.beam import beam_data, beam_settings, run_beam
        from .bench.beam import markdown_report as beam_markdown
        from .bench.common import run_in_namespace

        data = beam_data(args.data, args.chats)  # a bad --data or --chats fails before any store is touched
        settings = beam_settings(_bench_settings(settings, "bench_beam"), Path(args.cache), args.embedding)
        beam_report = run_in_namespace(settings, args.keep, run_beam(
            settings, data, out_dir=Path(args.out), chats=args.chats, limit_questions=args.limit,
            ablations=args.ablations, variants=dict(args.variant), dump=args.dump, prefix=args.prefix,
            progress=_console().print))
        print(beam_markdown(beam_report))
        _console().print(f"written: {Path(args.out) / 'beam.json'}, .md, .png")
    elif args.bench == "serve":
        from .bench.common import run_in_namespace
        from .bench.serve import markdown_report as serve_markdown
        from .bench.serve import run_serve_bench

        settings = _bench_settings(settings, "bench_serve")
        serve_report = run_in_namespace(settings, args.keep, run_serve_bench(
            settings, requests=args.requests, concurrency=args.concurrency, out_dir=Path(args.out),
            progress=_console().print))
        print(serve_markdown(serve_report))
        _console().print(f"written: {Path(args.out) / 'serve.json'}, .md")
    elif args.bench == "scale":
        from .bench.scale import markdown_report as scale_markdown
        from .bench.scale import run_scale, scale_sizes

        sizes = args.sizes or scale_sizes(args.max)
        settings = _bench_settings(settings, "bench_scale")
        Path(args.cache).mkdir(parents=True, exist_ok=True)
        settings = settings.model_copy(update={"embedding": settings.embedding.model_copy(update={
            "model": "local:minilm", "dimension": 384, "cache_path": str(Path(args.cache) / "embeddings.sqlite")})})
        _run(_reset_namespace(settings))
        try:
            report = _run(run_scale(settings, sizes=sizes, out_dir=Path(args.out), queries=args.queries,
                                           users=args.users, seed=args.seed, batch=args.batch,
                                           embed_sample=args.embed_sample, profile=args.profile,
                                           warmup=args.warmup, write_floor_max=args.write_floor_max,
                                           progress=_console().print))
        finally:
            if not args.keep:
                _run(_reset_namespace(settings))
        print(scale_markdown(report))
        _console().print(f"written: {Path(args.out) / 'scale.json'}, .md, .png")
    return 0


def _bench_settings(settings: Settings, name: str) -> Settings:
    return settings.model_copy(update={
        "graph": settings.graph.model_copy(update={"name": name}),
        "postgres": settings.postgres.model_copy(update={"db_schema": name}),
        "redis": settings.redis.model_copy(update={"key_prefix": f"{name}:"}),
    })


async def _reset_namespace(settings: Settings) -> None:
    """Drop a benchmark's graph, schema and keys."""
    from .backends import drop_namespace

    await drop_namespace(settings)


def cmd_demo(args: argparse.Namespace, settings: Settings) -> int:
    """Bring the stack up, ingest the sample conversation, ask questions, print bundles and prompt blocks."""
    from .demo import run_demo

    if settings.uses_embedded:  # say which data directory: one started elsewhere would be a second ./.agentx
        _console().print(f"data directory {settings.embedded.home.resolve()}")
    _run(run_demo(settings, _console(), explain=not args.brief, prompt_tokens=args.prompt_tokens))
    return 0


def json_safe(value: Any) -> Any:
    """``value`` with every NaN or infinite float replaced by None, so ``json.dumps(allow_nan=False)`` prints valid
    JSON (``NaN`` and ``Infinity`` are not JSON; a stored zero vector gives a NaN cosine)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def cmd_remember(args: argparse.Namespace, settings: Settings) -> int:
    """Recall memories for a query and print them (table with scores, or JSON)."""
    from . import MemoryBundle
    from .console import print_bundle
    from .memory import AsyncAgentMemory

    async def run() -> MemoryBundle:
        memory = await AsyncAgentMemory.open(settings)
        try:
            bundle = await memory.remember(args.query, user_id=args.user, channel=args.channel, top_k=args.top_k,
                                           time_window_hours=args.hours)
            await memory.drain()
            return bundle
        finally:
            await memory.close()

    bundle = _run(run())
    if args.json:
        payload = bundle.model_dump(mode="json", exclude={"turns": {"__all__": {"item": {"embedding"}}}})
        payload["explain"] = bundle.explain()
        print(json.dumps(json_safe(payload), indent=2, default=str, allow_nan=False))
    else:
        print_bundle(_console(), bundle, explain=args.explain, prompt_tokens=args.prompt_tokens)
    return 0


def cmd_ingest(args: argparse.Namespace, settings: Settings) -> int:
    """Load turns from JSONL (one per line); bad lines are reported with their numbers and skipped."""
    from pathlib import Path

    from rich.markup import escape
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from .ingest import IngestReport, ingest_file
    from .memory import AsyncAgentMemory

    if not Path(args.file).is_file():  # say so before any server is started
        problem = "is a directory" if Path(args.file).is_dir() else "does not exist"
        raise ValidationError("file", f"{args.file} {problem}; pass a JSONL file of turns")

    async def run() -> IngestReport:
        memory = await AsyncAgentMemory.open(settings)
        columns = (SpinnerColumn(), TextColumn("ingest: {task.completed} turn(s)"), TimeElapsedColumn())
        try:
            with Progress(*columns, console=_console(), transient=True) as progress:
                task = progress.add_task("ingest", total=None)
                return await ingest_file(memory, Path(args.file), batch_size=args.batch,
                                         progress=lambda n: progress.advance(task, n))
        finally:
            await memory.close()

    report = _run(run())
    for number, reason in report.skipped:
        _console().print(f"[yellow]line {number} skipped[/yellow]: {escape(reason)}")
    _console().print(f"stored {report.stored} turn(s); skipped {len(report.skipped)} line(s)")
    return 0 if not report.skipped else 1


def _with_progress(settings: Settings, label: str,
                   work: Callable[[Any, Callable[[str, int], None]], Awaitable[T]]) -> T:
    """Open a memory, run ``work(memory, progress)`` under a live progress line, close the memory."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from .memory import AsyncAgentMemory

    async def run() -> T:
        memory = await AsyncAgentMemory.open(settings)
        columns = (SpinnerColumn(), TextColumn(label + ": {task.description} {task.completed}"), TimeElapsedColumn())
        try:
            with Progress(*columns, console=_console(), transient=True) as bar:
                task = bar.add_task("", total=None)
                return await work(memory, lambda stage, done: bar.update(task, description=stage, completed=done))
        finally:
            await memory.close()

    return _run(run())


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    """Write a user's memory to a portable snapshot file (JSON lines, gzip when the name ends in .gz)."""
    from pathlib import Path

    from rich.markup import escape

    out = Path(args.out or f"{args.user}.jsonl.gz")
    info = _with_progress(settings, "export", lambda memory, progress: memory.export_memory(
        out, user_id=args.user, progress=progress))
    _console().print(f"exported {escape(args.user)} to {escape(str(info.path))}: "
                      + ", ".join(f"{n} {what}" for what, n in info.counts.items() if what != "header"))
    return 0


def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    """Load a snapshot file into a user who has no memory yet (default: the file's user)."""
    from pathlib import Path

    if not Path(args.file).is_file():  # say so before any server is started
        raise ValidationError("file", f"{args.file} does not exist or is not a file; pass a snapshot file")
    counts = _with_progress(settings, "import", lambda memory, progress: memory.import_memory(
        Path(args.file), user_id=args.user, progress=progress))
    _console().print("imported " + ", ".join(f"{n} {what}" for what, n in counts.items()))
    return 0


def cmd_reembed(args: argparse.Namespace, settings: Settings) -> int:
    """Re-embed every stored vector with another model, online and resumable, then switch (docs/reembed.md)."""
    from rich.markup import escape

    from .memory import AsyncAgentMemory
    from .reembed import reembed_status

    console = _console()

    if args.status:
        async def status() -> dict[str, Any]:
            memory = await AsyncAgentMemory.open(settings)
            try:
                return await reembed_status(memory.ctx)
            finally:
                await memory.close()

        for store, state in _run(status()).items():
            active, record = state["active"], state["reembed"]
            line = f"{store}: serves {active.get('model')} ({active.get('dimension')} dimensions); "
            if record is None:
                line += "no re-embed in progress"
            else:
                cursors = ", ".join(f"{k} after {v}" for k, v in record["cursors"].items())
                line += (f"re-embedding to {record['model']} ({record['dimension']} dimensions), phase "
                         f"{record['phase']}, started {record['started_at']} ms" + (f"; {cursors}" if cursors else ""))
            console.print(escape(line), soft_wrap=True)
        return 0
    if not args.model or args.dimension is None:
        raise ValidationError("model", "pass --model and --dimension (the new embedding model), or --status")
    report = _with_progress(settings, "reembed", lambda memory, progress: memory.reembed(
        args.model, args.dimension, batch_size=args.batch, progress=progress))
    for name in sorted(set(report.embedded) | set(report.skipped)):
        console.print(f"{name}: {report.embedded.get(name, 0)} embedded, {report.skipped.get(name, 0)} already staged")
    console.print(f"switched to {escape(report.model)} ({report.dimension} dimensions) in {report.seconds:.1f} s; "
                  "set AGENTX_EMBEDDING__MODEL / AGENTX_EMBEDDING__DIMENSION to it", soft_wrap=True)
    return 0


def cmd_extract(args: argparse.Namespace, settings: Settings) -> int:
    """Extract entities, facts and relationships from one conversation and print what was (or would be) written,
    with the usage; exit 1 when the run stopped early (budget, LLM failure)."""
    from rich.markup import escape

    from .extraction import ExtractionReport
    from .memory import AsyncAgentMemory

    if args.offline:
        settings.extraction.extractor = "offline"

    async def run() -> ExtractionReport:
        async with await AsyncAgentMemory.open(settings) as memory:
            return await memory.extract_conversation(args.conversation, user_id=args.user, dry_run=args.dry_run,
                                                     force=args.force)

    report = _run(run())
    if args.json:
        print(json.dumps(report.summary(), indent=2))
        return 0 if report.stopped is None else 1
    verb = "would write" if report.dry_run else "wrote"
    _console().print(f"{report.extractor}: {report.batches_done}/{report.batches} batch(es), "
                      f"{report.batches_skipped} skipped as extracted before", markup=False)
    if report.dry_run:
        for batch in report.found:
            for entity in batch.entities:
                _console().print(f"  entity  {entity.name} ({entity.type})", markup=False)
            for fact in batch.facts:
                _console().print(f"  fact    [{fact.certainty}, {fact.temporal or '-'}] {fact.claim}", markup=False)
            for rel in batch.relationships:
                _console().print(f"  link    {rel.source} -{rel.type}-> {rel.target}", markup=False)
    summary = report.summary()
    _console().print(f"{verb}: {summary['entities']} entities, {summary['facts']} facts, "
                      f"{summary['relationships']} relationships; dropped {summary['dropped'] or 'nothing'}",
                      markup=False)
    usage = report.usage
    cost = "no price known" if usage.cost_usd is None else f"${usage.cost_usd:.4f}"
    _console().print(f"usage: {usage.calls} call(s), {usage.input_tokens} input + {usage.output_tokens} output "
                      f"tokens, {cost}", markup=False)
    if report.stopped:
        _console().print(f"[red]stopped early[/red]: {escape(report.stopped)}")
        return 1
    return 0


def cmd_review(args: argparse.Namespace, settings: Settings) -> int:
    """List the user's facts flagged as contradicting each other (extraction.contradiction_policy = flag_review)."""
    from .memory import AsyncAgentMemory

    async def run() -> list[tuple[Any, list[str]]]:
        async with await AsyncAgentMemory.open(settings) as memory:
            return await memory.facts_for_review(args.user, limit=args.limit)

    flagged = _run(run())
    if args.json:
        print(json.dumps([{"fact": f.model_dump(mode="json", exclude={"embedding"}), "conflicts_with": ids}
                          for f, ids in flagged], indent=2))
        return 0
    for fact, ids in flagged:
        _console().print(f"{fact.id}  {fact.claim}  (conflicts with {', '.join(ids)})", markup=False)
    _console().print(f"{len(flagged)} fact(s) to review", markup=False)
    return 0


def _review_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--user", required=True, help="user id")
    p.add_argument("--limit", type=_count, default=100, help="at most N facts")
    p.add_argument("--json", action="store_true", help="print them as JSON")


def _extract_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--conversation", required=True, help="conversation id")
    p.add_argument("--user", required=True, help="user id")
    p.add_argument("--dry-run", action="store_true", help="write nothing; print what would be written")
    p.add_argument("--offline", action="store_true", help="use the offline rules whatever extraction.extractor says")
    p.add_argument("--force", action="store_true", help="extract again the batches extracted before")
    p.add_argument("--json", action="store_true", help="print the report as JSON")


def _remember_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("query")
    p.add_argument("--user", required=True, help="user id")
    p.add_argument("--channel", default="_global")
    p.add_argument("--top-k", type=int, default=10)
    p.add_argument("--hours", type=float, default=None, help="only memories of the last N hours")
    p.add_argument("--explain", action="store_true", help="show each item's signal breakdown")
    p.add_argument("--json", action="store_true", help="print the bundle as JSON")
    p.add_argument("--prompt-tokens", type=int, default=0, help="also print to_prompt(max_tokens=N)")


def _ingest_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="JSONL: user_id, conversation_id, role, content, timestamp, metadata per line")
    p.add_argument("--batch", type=_count, default=200, help="turns per store_turns batch")


def _demo_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--brief", action="store_true", help="no signal breakdown")
    p.add_argument("--prompt-tokens", type=int, default=300, help="token budget of the printed prompt blocks")


def cmd_worker(args: argparse.Namespace, settings: Settings) -> int:
    """Run the background worker; ``--once`` runs each job once (exit 1 when a job failed); ``run JOB`` runs one job
    now (``--dry-run``, ``--user``); ``undo RUN_ID`` reverses a recorded run; ``status`` shows each job's last run."""
    from workers.scheduler import run_once, run_worker

    from .logs import configure

    configure(json_lines=args.json_logs, level=args.library_log_level or "info")
    if args.action is None and (args.target or args.dry_run or args.user):
        raise ValidationError("worker", "JOB, --dry-run and --user go with 'worker run JOB'")
    if args.action == "run":
        return _worker_run(args, settings)
    if args.action == "undo":
        return _worker_undo(args, settings)
    if args.action == "status":
        return _worker_status(args, settings)
    if args.once:
        failed = []
        for name, summary in _run(run_once(settings)).items():
            _console().print(f"{name}: {summary}", markup=False)
            if summary.get("error"):
                failed.append(name)
        if failed:
            _console().print(f"[red]failed[/red]: {', '.join(failed)} (the log above has why)")
            return 1
        return 0
    _run(run_worker(settings))
    return 0


def _worker_run(args: argparse.Namespace, settings: Settings) -> int:
    from rich.markup import escape

    from workers.scheduler import JobOptions, run_job

    from .memory import AsyncAgentMemory

    if not args.target:
        raise ValidationError("job", "name the job to run: worker run JOB")

    async def go() -> dict[str, Any]:
        async with await AsyncAgentMemory.open(settings) as memory:
            return await run_job(args.target, memory, JobOptions(dry_run=args.dry_run, user_id=args.user))

    try:
        summary = _run(go())
    except AgentXMemoryError:
        raise
    except Exception as exc:  # the job failed: say so, exit non-zero
        _console().print(f"[red]job {escape(args.target)} failed[/red]: {escape(f'{type(exc).__name__}: {exc}')}")
        return 1
    print(json.dumps(summary, indent=2, default=str))
    return 0


def _worker_undo(args: argparse.Namespace, settings: Settings) -> int:
    from .memory import AsyncAgentMemory

    if not args.target:
        raise ValidationError("run_id", "name the run to undo: worker undo RUN_ID (worker status lists runs)")

    async def go() -> dict[str, Any]:
        async with await AsyncAgentMemory.open(settings) as memory:
            return await memory.undo_run(args.target)

    print(json.dumps(_run(go()), indent=2, default=str))
    return 0


def _worker_status(args: argparse.Namespace, settings: Settings) -> int:
    from .memory import AsyncAgentMemory

    async def go() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        async with await AsyncAgentMemory.open(settings) as memory:
            return await memory.worker_runs(latest_per_job=True), await memory.worker_runs(limit=10)

    latest, recent = _run(go())
    if args.json:
        print(json.dumps({"latest_per_job": latest, "recent": recent}, indent=2, default=str))
        return 0
    from rich.markup import escape
    from rich.table import Table

    table = Table("job", "last run", "status", "seconds", "summary", "run id", title="worker runs (latest per job)")
    for run in latest:
        summary = {k: v for k, v in run["summary"].items() if k not in ("run_id", "duration_seconds", "dry_run")}
        table.add_row(run["job"], f"{run['started_at']:%Y-%m-%d %H:%M:%S}", run["status"],
                      str(run["summary"].get("duration_seconds", "")), escape(json.dumps(summary, default=str)),
                      run["run_id"])
    _console().print(table if latest else "no recorded runs yet (the worker records consolidate, promote, decay, "
                                       "archive and cleanup)")
    return 0


def cmd_mcp(args: argparse.Namespace, settings: Settings) -> int:
    """Serve one user's memory over the Model Context Protocol (stdio, or streamable HTTP at /mcp) until the client
    disconnects or the process is stopped (docs/mcp.md)."""
    try:
        from .mcp import McpBinding, serve
    except ModuleNotFoundError as exc:
        if exc.name is None or not exc.name.startswith("mcp"):
            raise
        raise ConfigurationError("agentx-memory mcp needs the MCP SDK 2.x: pip install 'agentx-memory[mcp]'") from None

    binding = McpBinding(user_id=args.user, agent_id=args.agent, channel=args.channel)
    if args.transport == "http":  # stdout is the protocol's on stdio; here say where the server answers
        print(f"agentx-memory MCP server for user {args.user!r} at http://{args.host}:{args.port}/mcp",
              file=sys.stderr, flush=True)
    _run(serve(settings, binding, transport=args.transport, host=args.host, port=args.port))
    return 0


def _port(text: str) -> int:
    """An argparse type: a TCP port, 1-65535."""
    value = _count(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"must be at most 65535, got {value}")
    return value


def _mcp_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio",
                   help="stdio (a client starts the server; default) or http (streamable HTTP at /mcp)")
    p.add_argument("--host", default="127.0.0.1", help="with http: the address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=_port, default=8078, help="with http: the port to listen on (default 8078)")
    p.add_argument("--user", required=True, help="the user whose memory the server serves (the only one it reaches)")
    p.add_argument("--agent", default=None, help="act as this agent of the user (its private memory and the user's "
                                                  "global memory)")
    p.add_argument("--channel", default="_global", help="the default channel of every tool call (default _global)")


def _reconcile_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--full", action="store_true",
                   help="first compare the whole log with the graph and queue every logged turn and tool invocation "
                        "whose node is missing (after restoring the graph from an older backup)")


def _no_args(p: argparse.ArgumentParser) -> None:
    """A subcommand without options."""


def _status_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the report as JSON")


def _export_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("user", help="the user whose memory is exported")
    p.add_argument("--out", "-o", help="the file to write (default: USER.jsonl.gz)")


def _import_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="a snapshot file written by export")
    p.add_argument("--user", help="load it as this user (default: the user in the file)")


def _reembed_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", help="the new embedding model, 'provider:model' (e.g. local:minilm)")
    p.add_argument("--dimension", type=int, help="the new model's vector dimension")
    p.add_argument("--batch", type=int, default=256, help="vectors per batch (default 256)")
    p.add_argument("--status", action="store_true", help="print each store's model and the re-embed in progress")


def _worker_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", nargs="?", choices=("run", "undo", "status"),
                   help="run JOB now | undo RUN_ID | status of recorded runs (none: run the scheduler)")
    p.add_argument("target", nargs="?", help="the job (run) or the run id (undo)")
    p.add_argument("--once", action="store_true", help="run each job once and exit")
    p.add_argument("--dry-run", action="store_true", help="with run: report what the job would change, change nothing")
    p.add_argument("--user", help="with run: only this user's memories")
    p.add_argument("--json", action="store_true", help="with status: print JSON")
    p.add_argument("--json-logs", action="store_true", help="log one JSON object per line (job, outcome, summary)")


#: A subcommand's handler: parsed arguments and settings in, exit status out.
Handler: TypeAlias = "Callable[[argparse.Namespace, Settings], int]"  # a string: Settings loads with a command
#: Adds a subcommand's arguments to its parser.
ArgumentAdder: TypeAlias = Callable[[argparse.ArgumentParser], None]

#: Subcommands: name → (handler, help, argument adder).
COMMANDS: dict[str, tuple[Handler, str, ArgumentAdder]] = {
    "up": (cmd_up, "start the embedded servers and migrate", _no_args),
    "down": (cmd_down, "stop the embedded servers", _no_args),
    "status": (cmd_status, "show servers and schema version", _status_args),
    "migrate": (cmd_migrate, "apply pending schema migrations", _no_args),
    "reconcile": (cmd_reconcile, "project unprojected log rows into the graph", _reconcile_args),
    "bench": (cmd_bench, "run a benchmark (locomo, beam, scale, serve, extract)", _bench_args),
    "demo": (cmd_demo, "guided tour: ingest a sample conversation and ask questions", _demo_args),
    "remember": (cmd_remember, "recall memories for a query", _remember_args),
    "ingest": (cmd_ingest, "load conversations from JSONL", _ingest_args),
    "extract": (cmd_extract, "extract entities, facts and relationships from a conversation", _extract_args),
    "review": (cmd_review, "list facts flagged as contradicting each other", _review_args),
    "worker": (cmd_worker, "run the background jobs (docs/worker.md)", _worker_args),
    "export": (cmd_export, "write a user's memory to a portable snapshot file", _export_args),
    "import": (cmd_import, "load a snapshot file into a user with no memory yet", _import_args),
    "reembed": (cmd_reembed, "re-embed every vector with another model, online and resumable", _reembed_args),
    "mcp": (cmd_mcp, "serve one user's memory over the Model Context Protocol (docs/mcp.md)", _mcp_args),
    "serve": (cmd_serve, "run the REST service (extra [server]; docs/server.md)", serve_args),
    "keys": (cmd_keys, "make, list or revoke API keys of the REST service", keys_args),
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered subcommand."""
    from .logs import LEVELS

    parser = argparse.ArgumentParser(prog="agentx-memory", description="Graph-centric cognitive memory for AI agents.")
    # its own dest: `serve --log-level` is uvicorn's
    parser.add_argument("--log-level", choices=LEVELS, default=None, dest="library_log_level",
                        help="print log records of this level and above to stderr (default: warnings only; the "
                        "worker: info)")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (_, help_text, add_args) in COMMANDS.items():
        add_args(sub.add_parser(name, help=help_text))
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``agentx-memory`` console script."""
    args = build_parser().parse_args(argv)
    if args.library_log_level and args.command != "worker":  # the worker sets its own format (--json-logs)
        from .logs import configure

        configure(level=args.library_log_level)
    try:
        from .settings import load_settings

        settings = load_settings()
        handler = COMMANDS[args.command][0]
        return handler(args, settings)
    except AgentXMemoryError as exc:
        from rich.markup import escape

        _console().print(f"[red]error[/red]: {escape(str(exc))}")
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
