"""BEAM evidence recall: how often ``remember()`` returns the messages that answer a question in long user–assistant
chats (the BEAM development split, ``../shared/data/beam-dev/``; its README defines the format and the protocol).

The protocol: each chat is one user (``beam-<n>``) and each session (BEAM's batch) one conversation. Every message is
stored in order with ``store_turns`` as an episodic turn with its real role, content ``"User: <text>"`` /
``"Assistant: <text>"`` (the index marker `` ->-> s,t`` a user message may end with is stripped), timestamp = the
session's date (``time_anchor`` of its first message) plus i seconds for its i-th message, ``metadata = {"msg_id"}``.
Every question that names evidence (``source_chat_ids``; a dict or nested lists are flattened) is asked once with
``remember(question, user_id=chat, top_k=50, reference_time=<the chat's last message>)``; **turn-level recall@K** is
the share of the question's evidence message ids among the first K distinct messages returned. Abstention questions
and questions without evidence are counted but left out of the recall figures.

Beside it, on the same texts: BM25 (``rank-bm25``; lower-cased words, stop-words out) and vector-only (exact cosine
over the vectors the engine stored, same embedder). Figures per ability, overall (over questions) and per chat, with
the mean and spread across chats; ingest wall time and messages/s; ``remember()`` latency p50/p95.

BEAM messages are long (1.8 KB on average; the longest dev message is 107 KB) and are stored whole under the engine's
default ``limits.max_turn_bytes`` (1 MiB); should a message be longer, :func:`run_beam` raises the limit of the
benchmark's own settings to it. The report says which limits were used.

Shorter chats of the same kind (``prefix``, ``bench beam --prefix 0.25``): each chat cut to its first share of messages
(:func:`cut_chat`), asked from its last kept message, with only the questions whose evidence all lies in it. BEAM's
held-out 128K track has chats about a quarter as long as the dev set's 500K ones; the cut shows whether a figure holds
at that length.
"""

from __future__ import annotations

import json
import re
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ValidationError
from ..memory import AsyncAgentMemory
from ..models import Turn
from ..settings import Settings
from . import recall_at
from .common import (
    Bm25Ranking,
    VectorRanking,
    bm25_okapi,
    engine_variant,
    latency_summary,
    report_header,
    spread,
    turn_vectors,
    write_report,
)
from .locomo import ABLATIONS
from .progress import progress_bar, track

__all__ = ["ABILITIES", "BEAM_ABLATIONS", "DEFAULT_DATA", "KS", "TOP_K", "BeamChat", "BeamQuestion",
           "beam_data", "beam_settings", "cut_chat", "flatten_evidence", "load_beam", "markdown_report", "recall_at",
           "run_beam", "strip_marker"]

#: The ten BEAM abilities, in the report's order; ``abstention`` has no evidence (left out of recall).
ABILITIES = ("information_extraction", "knowledge_update", "temporal_reasoning", "contradiction_resolution",
             "multi_session_reasoning", "event_ordering", "summarization", "instruction_following",
             "preference_following", "abstention")
KS = (5, 10, 20, 50)
#: Every question is asked once, with this many turns; recall@K looks at the first K of them.
TOP_K = 50
#: Where ``bench beam`` looks for the data when ``--data`` is not given (relative to the current directory).
DEFAULT_DATA = ("../shared/data/beam-dev", "../../shared/data/beam-dev")
_MARKER = re.compile(r"\s*->->\s*\d+\s*,\s*\d+\s*$")
ENGINE = "agentx (full)"
#: ``--ablations``: LoCoMo's, plus the lexical leg alone (the vector leg weighted 0).
BEAM_ABLATIONS: dict[str, dict[str, Any] | None] = {**ABLATIONS, "- vector leg (lexical only)": {"vector_weight": 0.0}}
BM25 = "baseline: BM25 (rank-bm25)"
VECTOR = "baseline: vector (exact cosine)"


@dataclass
class BeamQuestion:
    """One question that names evidence: its ability, text and the flattened evidence message ids."""

    ability: str
    question: str
    evidence: list[int]


@dataclass
class BeamChat:
    """One BEAM chat as stored: one user, its turns (one per message, sessions as conversations), its questions."""

    chat_id: str
    user_id: str
    turns: list[Turn]
    questions: list[BeamQuestion]
    reference_time: datetime
    left_out: dict[str, int] = field(default_factory=dict)  # questions per ability without evidence (abstention, …)
    cut_off: int = 0  # questions left out because their evidence lies beyond a cut (cut_chat)


def strip_marker(text: str) -> str:
    """A user message without the trailing BEAM index marker `` ->-> s,t``."""
    return _MARKER.sub("", text)


def flatten_evidence(value: Any) -> list[int]:
    """The message ids of ``source_chat_ids`` (a list, a dict of lists, or nested lists), first occurrence order."""
    out: list[int] = []

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            for item in v.values():
                walk(item)
        elif isinstance(v, list):
            for item in v:
                walk(item)
        elif v is not None:
            if isinstance(v, bool) or not isinstance(v, int | str):
                raise ValueError(f"a message id was expected in source_chat_ids, got {v!r}")
            out.append(int(v))

    walk(value)
    return list(dict.fromkeys(out))


def _session_date(text: str) -> datetime:
    return datetime.strptime(text.strip(), "%B-%d-%Y").replace(tzinfo=UTC)


def _load_chat(directory: Path, chat_id: str) -> BeamChat:
    sessions = json.loads((directory / "chat.json").read_text())
    probing = json.loads((directory / "probing_questions.json").read_text())
    if not isinstance(sessions, list) or not isinstance(probing, dict):
        raise ValueError("chat.json must be a list of sessions and probing_questions.json an object of abilities")
    user_id = f"beam-{chat_id}"
    turns: list[Turn] = []
    for n, session in enumerate(sessions, start=1):
        messages = [m for group in session["turns"] for m in group]
        anchor = next((m["time_anchor"] for m in messages if m.get("time_anchor")), session.get("time_anchor"))
        if not anchor:
            raise ValueError(f"session {session.get('batch_number', n)} has no time_anchor")
        day = _session_date(anchor)
        batch = session.get("batch_number", n)
        for i, m in enumerate(messages):
            role = m["role"]
            text = strip_marker(m["content"]) if role == "user" else m["content"]
            turns.append(Turn(
                id=f"{user_id}:{m['id']}", conversation_id=f"{user_id}:session-{batch}", user_id=user_id, index=i,
                timestamp=day + timedelta(seconds=i), role=role,
                content=f"{'User' if role == 'user' else 'Assistant'}: {text}", metadata={"msg_id": int(m["id"])},
            ))
    if not turns:
        raise ValueError("the chat has no messages")
    questions: list[BeamQuestion] = []
    left_out: dict[str, int] = defaultdict(int)
    for ability, items in probing.items():
        for q in items:
            evidence = [] if ability == "abstention" else flatten_evidence(q.get("source_chat_ids"))
            if evidence:
                questions.append(BeamQuestion(ability, q["question"], evidence))
            else:
                left_out[ability] += 1
    return BeamChat(chat_id, user_id, turns, questions, max(t.timestamp for t in turns), dict(left_out))


def load_beam(data: Path, chats: Sequence[int] | None = None) -> list[BeamChat]:
    """Read the chats of a BEAM folder (``data/chats/<n>/``; all of them, in number order, or those of ``chats``).

    A folder, chat or file that cannot be read or is not in BEAM's format raises
    :class:`~agentx_memory.errors.ValidationError` for the field ``data``, naming the path.
    """
    root = Path(data) / "chats"
    try:
        available = sorted(int(p.name) for p in root.iterdir() if p.is_dir() and p.name.isdigit())
    except OSError as exc:
        raise ValidationError("data", f"cannot read {root}: {exc.strerror or exc}") from exc
    wanted = list(chats) if chats else available
    missing = [n for n in wanted if n not in available]
    if missing:
        raise ValidationError("data", f"no chat {', '.join(map(str, missing))} in {root} (it has {available})")
    out = []
    for n in wanted:
        directory = root / str(n)
        try:
            out.append(_load_chat(directory, str(n)))
        except OSError as exc:
            raise ValidationError("data", f"cannot read {directory}: {exc.strerror or exc}") from exc
        except ValueError as exc:  # also JSON errors and a Turn pydantic rejects
            raise ValidationError("data", f"{directory} is not a BEAM chat: {exc}") from exc
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValidationError("data", f"{directory} is not a BEAM chat: no {exc} where one is expected") from exc
    return out


def cut_chat(chat: BeamChat, fraction: float) -> BeamChat:
    """The chat's first ``fraction`` of messages (at least one), asked from the last of them, with only the questions
    whose evidence all lies there (the others are counted in ``cut_off``): a shorter chat of the same kind.

    ``fraction`` must be a number above 0 and at most 1 (:class:`~agentx_memory.errors.ValidationError` for the field
    ``prefix`` otherwise)."""
    _check_prefix(fraction)
    turns = chat.turns[:max(1, int(len(chat.turns) * fraction))]
    kept = {t.metadata["msg_id"] for t in turns}
    questions = [q for q in chat.questions if all(e in kept for e in q.evidence)]
    return BeamChat(chat.chat_id, chat.user_id, turns, questions, max(t.timestamp for t in turns),
                    dict(chat.left_out), chat.cut_off + len(chat.questions) - len(questions))


def _check_prefix(fraction: float) -> float:
    """``fraction`` when it is a number above 0 and at most 1, else a ValidationError for the field ``prefix``."""
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction <= 1:
        raise ValidationError("prefix", f"must be a share of each chat's messages above 0 and at most 1, "
                                        f"got {fraction!r}")
    return float(fraction)


def beam_data(data: str | None, chats: Sequence[int] | None = None) -> Path:
    """The BEAM folder ``bench beam`` reads: ``data``, else the first of :data:`DEFAULT_DATA` that exists; checked
    (every chat asked for loads) before any store is touched. A ValidationError naming ``--data`` otherwise."""
    if data is None:
        found = next((Path(c) for c in DEFAULT_DATA if (Path(c) / "chats").is_dir()), None)
        if found is None:
            raise ValidationError("--data", "bench beam needs the BEAM folder: pass --data PATH (none given, and no "
                                            f"{' or '.join(DEFAULT_DATA)} from {Path.cwd()})")
        data = str(found)
    try:
        load_beam(Path(data), chats)
    except ValidationError as exc:
        raise ValidationError("--data", str(exc).removeprefix("data: ")) from exc
    return Path(data)


def beam_settings(settings: Settings, cache: Path, embedding: str | None = None) -> Settings:
    """``settings`` with the persistent embedding cache in ``cache`` (created) and, if given, another embedding
    model (the local presets are 384-d; another model keeps the configured dimension)."""
    cache.mkdir(parents=True, exist_ok=True)
    update: dict[str, Any] = {"cache_path": str(cache / "embeddings.sqlite")}
    if embedding:
        update["model"] = embedding
        if embedding.startswith("local:"):
            update["dimension"] = 384
    return settings.model_copy(update={"embedding": settings.embedding.model_copy(update=update)})


@dataclass
class _Scores:
    """Recall@K of one method: per question (with its chat and ability) and the latencies of its calls."""

    rows: list[tuple[str, str, dict[int, float]]] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    #: Per question, in the order scored: the message ids returned (``--dump`` writes them).
    returned: list[list[int | None]] = field(default_factory=list)

    def add(self, chat: str, q: BeamQuestion, returned: Sequence[int | None]) -> None:
        """Score one question's returned message ids (best first)."""
        self.rows.append((chat, q.ability, {k: recall_at(q.evidence, returned, k) for k in KS}))
        self.returned.append(list(returned))

    def _mean(self, chat: str | None = None, ability: str | None = None) -> dict[str, Any]:
        picked = [r for c, a, r in self.rows if chat in (None, c) and ability in (None, a)]
        return {**{f"R@{k}": round(float(np.mean([r[k] for r in picked])), 4) for k in KS}, "n": len(picked)}

    def summary(self) -> dict[str, Any]:
        """Overall (over questions), per ability, per chat, and mean/std/min/max of the per-chat figures."""
        chats = list(dict.fromkeys(chat for chat, _, _ in self.rows))
        abilities = {ability for _, ability, _ in self.rows}
        per_chat = {c: self._mean(chat=c) for c in chats}
        out: dict[str, Any] = {
            "overall": self._mean(),
            "per_ability": {a: self._mean(ability=a) for a in ABILITIES if a in abilities},
            "per_chat": per_chat,
            "across_chats": {f"R@{k}": spread([per_chat[c][f"R@{k}"] for c in chats]) for k in KS},
            "questions": len(self.rows),
        }
        if self.latencies_ms:
            out["latency_ms"] = latency_summary(self.latencies_ms)
        return out


async def run_beam(settings: Settings, data: Path, *, out_dir: Path, chats: Sequence[int] | None = None,
                   limit_questions: int | None = None, ablations: bool = False,
                   variants: Mapping[str, dict[str, Any]] | None = None, dump: bool = False,
                   prefix: float | None = None, progress: Callable[[str], None] = print) -> dict[str, Any]:
    """Ingest the chats, ask their questions, score; write beam.json, beam.md and beam.png into ``out_dir``; return
    the report; ``variants`` are extra engine runs by name, each with its recall overrides. ``dump`` adds every
    question with what each method returned (``per_question``), for paired comparisons of methods. ``prefix`` cuts
    every chat to that share of its messages first (:func:`cut_chat`). ``settings`` should name a namespace of the
    benchmark's own (the CLI drops it before and after)."""
    if prefix is not None:
        _check_prefix(prefix)
    bm25_okapi()  # the bench extra is missing: say so before anything is ingested
    loaded = load_beam(data, chats)
    if prefix is not None:
        loaded = [cut_chat(chat, prefix) for chat in loaded]
    longest = max(len(t.content.encode()) for c in loaded for t in c.turns)
    turn_limit = max(settings.limits.max_turn_bytes, longest)
    value_limit = settings.working.max_value_bytes
    settings = settings.model_copy(update={
        "limits": settings.limits.model_copy(update={"max_turn_bytes": turn_limit}),
    })
    memory = await AsyncAgentMemory.open(settings)
    results: dict[str, _Scores] = defaultdict(_Scores)
    ingest: dict[str, float] = {}
    try:
        messages = sum(len(c.turns) for c in loaded)
        with progress_bar("ingest (embed + store)", messages, unit="msg") as bar:
            for chat in loaded:
                started = time.perf_counter()
                for start in range(0, len(chat.turns), 100):
                    chunk = chat.turns[start:start + 100]
                    await memory.store_turns(chunk)
                    bar.update(len(chunk))
                ingest[chat.chat_id] = time.perf_counter() - started
        ingest_seconds = sum(ingest.values())
        progress(f"ingested {messages} messages of {len(loaded)} chats in {ingest_seconds:.1f}s "
                 f"({messages / ingest_seconds:.1f} messages/s; document vectors cached in "
                 f"{memory.settings.embedding.cache_path or 'memory'})")
        vectors = await turn_vectors(memory)

        for chat in loaded:
            bm25 = Bm25Ranking({t.metadata["msg_id"]: t.content for t in chat.turns})
            by_cosine = VectorRanking({t.metadata["msg_id"]: vectors[t.id] for t in chat.turns})
            for q in track(chat.questions[:limit_questions], f"baselines chat {chat.chat_id}", unit="q",
                           transient=True):
                results[BM25].add(chat.chat_id, q, bm25.rank(q.question, TOP_K))
                qvec = await memory.ctx.embedder.embed_query(q.question)
                results[VECTOR].add(chat.chat_id, q, by_cosine.rank(qvec, TOP_K))
        methods: dict[str, dict[str, Any] | None] = dict(BEAM_ABLATIONS) if ablations else {ENGINE: None}
        methods.update(variants or {})
        questions = [(c, q) for c in loaded for q in c.questions[:limit_questions]]
        for name, variant in methods.items():
            scores = results[name]
            with engine_variant(memory, variant) as override:
                for chat, q in track(questions, name, unit="q"):
                    started = time.perf_counter()
                    bundle = await memory.remember(q.question, user_id=chat.user_id, top_k=TOP_K,
                                                   reference_time=chat.reference_time, include_semantic=False,
                                                   include_procedural=False, recall=override)
                    scores.latencies_ms.append((time.perf_counter() - started) * 1000)
                    scores.add(chat.chat_id, q, [t.item.metadata.get("msg_id") for t in bundle.turns])
        await memory.drain()
    finally:
        await memory.close()

    report = {
        **report_header("beam evidence recall", data, settings),
        "top_k": TOP_K,
        "max_turn_bytes": turn_limit,
        "working_max_value_bytes": value_limit,
        "chats": [c.chat_id for c in loaded],
        "prefix": prefix,
        "messages": messages,
        "longest_message_bytes": longest,
        "questions": sum(len(c.questions[:limit_questions]) for c in loaded),
        "left_out": {a: sum(c.left_out.get(a, 0) for c in loaded) for a in ABILITIES
                     if any(c.left_out.get(a) for c in loaded)},
        "cut_off": sum(c.cut_off for c in loaded),
        "ingest": {"seconds": round(ingest_seconds, 2), "messages_per_second": round(messages / ingest_seconds, 1),
                   "per_chat_seconds": {c: round(s, 2) for c, s in ingest.items()},
                   "embedding_cache": settings.embedding.cache_path or None},
        "methods": {name: results[name].summary() for name in [ENGINE, BM25, VECTOR, *results] if name in results},
    }
    if dump:  # every method scored the questions in this order
        report["per_question"] = [
            {"chat": chat.chat_id, "ability": q.ability, "question": q.question, "evidence": q.evidence,
             "returned": {name: scores.returned[i] for name, scores in results.items()}}
            for i, (chat, q) in enumerate(questions)]
    write_report(report, out_dir, "beam", markdown_report, KS, "BEAM evidence recall (turn level)")
    return report


def _cells(m: dict[str, Any], ks: Sequence[int] = (5, 10, 20)) -> str:
    return " / ".join(f"{m[f'R@{k}']:.3f}" for k in ks)


def markdown_report(report: dict[str, Any]) -> str:
    """The results as Markdown: overall per method, per ability, per chat (with the spread across chats), ingest."""
    ing = report["ingest"]
    left = ", ".join(f"{a} {n}" for a, n in report["left_out"].items()) or "none"
    if report.get("prefix") is not None:
        left += f"; each chat cut to its first {report['prefix']:g} of messages, {report['cut_off']} questions beyond"
    lines = [
        f"BEAM evidence recall (turn level) — chats {', '.join(report['chats'])}: {report['messages']} messages, "
        f"{report['questions']} questions with evidence (left out: {left}); embedding `{report['embedding_model']}`, "
        f"top_k {report['top_k']}, limits.max_turn_bytes {report['max_turn_bytes']:,} and working.max_value_bytes "
        f"{report['working_max_value_bytes']:,} (longest message {report['longest_message_bytes']:,} bytes, stored "
        f"whole), commit `{report['commit']}`, {report['date']}",
        "",
        f"Ingest: {report['messages']} messages in {ing['seconds']} s ({ing['messages_per_second']} messages/s, "
        f"embedding included; cache {ing['embedding_cache'] or 'in memory'}).",
        "",
        "| method | R@5 | R@10 | R@20 | R@50 | per-chat R@10 mean ± std (min–max) | p50 ms | p95 ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, m in report["methods"].items():
        o, s, lat = m["overall"], m["across_chats"]["R@10"], m.get("latency_ms", {})
        lines.append(f"| {name} | {o['R@5']:.3f} | {o['R@10']:.3f} | {o['R@20']:.3f} | {o['R@50']:.3f} | "
                     f"{s['mean']:.3f} ± {s['std']:.3f} ({s['min']:.3f}–{s['max']:.3f}) | {lat.get('p50', '')} | "
                     f"{lat.get('p95', '')} |")
    names = list(report["methods"])
    lines += ["", "R@5 / R@10 / R@20 per ability:", "", "| ability | n | " + " | ".join(names) + " |",
              "|---" * (len(names) + 2) + "|"]
    first = report["methods"][names[0]]
    for ability, m in first["per_ability"].items():
        cells = [_cells(report["methods"][n]["per_ability"][ability]) for n in names]
        lines.append(f"| {ability} | {m['n']} | " + " | ".join(cells) + " |")
    lines += ["", "R@5 / R@10 / R@20 per chat:", "", "| chat | questions | ingest s | " + " | ".join(names) + " |",
              "|---" * (len(names) + 3) + "|"]
    for chat, m in first["per_chat"].items():
        cells = [_cells(report["methods"][n]["per_chat"][chat]) for n in names]
        lines.append(f"| {chat} | {m['n']} | {ing['per_chat_seconds'][chat]} | " + " | ".join(cells) + " |")
    spread = [" / ".join(f"{report['methods'][n]['across_chats'][f'R@{k}']['mean']:.3f} ± "
                         f"{report['methods'][n]['across_chats'][f'R@{k}']['std']:.3f}" for k in (5, 10, 20))
              for n in names]
    lines.append("| mean ± std across chats | | | " + " | ".join(spread) + " |")
    return "\n".join(lines) + "\n"
