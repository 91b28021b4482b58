"""LoCoMo evidence-recall benchmark: how often ``remember()`` returns the turns that answer a question.

Each LoCoMo sample (one long multi-session conversation between two people) is ingested as its own user with
``store_turns``: content ``"{speaker}: {text}"`` (plus ``" [shares an image: {caption}]"``), timestamp = the session's
date, conversation = the session, ``metadata = {"dia_id", "sample_id"}``. For every question of categories 1-4
(category 5 has no evidence) we call ``remember(question, user_id=sample, top_k=K, reference_time=<last session>)``
and compute **evidence recall@K** (share of the question's evidence dia_ids among the returned turns) and **hit@K**
(any evidence returned), overall and per category.

In the same run, on the same turns: PostgreSQL full text alone (the baseline of docs/benchmarks.md), BM25 alone
(``rank-bm25``), vector alone (exact cosine, same embedder), and the RecallLayer with each technique switched off
one at a time (ablation), so every gain is attributable.
"""

from __future__ import annotations

import json
import re
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from dateutil import parser as dateparser

from ..errors import ValidationError
from ..memory import AsyncAgentMemory
from ..models import Entity, Fact, Turn
from ..settings import Settings
from ..sql.search import OR_QUERY
from . import LOCOMO_CATEGORIES
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
from .progress import progress_bar, track

__all__ = ["CATEGORIES", "KS", "LocomoSample", "load_locomo", "run_locomo"]

CATEGORIES = LOCOMO_CATEGORIES
KS = (5, 10, 20, 50)


@dataclass
class LocomoSample:
    """One LoCoMo conversation: its turns (as Turn models) and its questions."""

    sample_id: str
    turns: list[Turn]
    questions: list[dict[str, Any]]
    reference_time: datetime
    #: LoCoMo's own per-session observations: (speaker, statement, the dia_ids it was drawn from).
    observations: list[tuple[str, str, list[str]]] = field(default_factory=list)


def _session_time(text: str) -> datetime:
    return dateparser.parse(text.replace(" on ", " ")).replace(tzinfo=UTC)


def load_locomo(path: Path) -> list[LocomoSample]:
    """Read a LoCoMo JSON file into samples (see the module docstring for how turns are built).

    A file that cannot be read, is not JSON or is not a list of LoCoMo samples raises
    :class:`~agentx_memory.errors.ValidationError` for the field ``data``, naming the file.
    """
    try:
        return _samples(json.loads(Path(path).read_text()))
    except OSError as exc:
        raise ValidationError("data", f"cannot read {path}: {exc.strerror or exc}") from exc
    except ValueError as exc:  # also a Turn pydantic rejects, or a date dateparser cannot read
        raise ValidationError("data", f"{path} is not a LoCoMo JSON file: {exc}") from exc
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValidationError("data", f"{path} is not a LoCoMo JSON file: no {exc} where a sample has one") from exc


def _samples(data: Any) -> list[LocomoSample]:
    if not isinstance(data, list):
        raise ValueError(f"a list of samples was expected, got {type(data).__name__}")
    samples = []
    for raw in data:
        conv = raw["conversation"]
        sample_id = raw["sample_id"]
        speakers = {conv.get("speaker_a"): "user", conv.get("speaker_b"): "assistant"}
        turns: list[Turn] = []
        n = 1
        last = None
        while f"session_{n}" in conv:
            when = _session_time(conv[f"session_{n}_date_time"])
            last = when
            for i, t in enumerate(conv[f"session_{n}"]):
                content = f"{t['speaker']}: {t['text']}"
                if t.get("blip_caption"):
                    content += f" [shares an image: {t['blip_caption']}]"
                turns.append(Turn(
                    id=f"{sample_id}:{t['dia_id']}", conversation_id=f"{sample_id}:session_{n}", user_id=sample_id,
                    index=i, timestamp=when, role=speakers.get(t["speaker"], "user"), content=content,
                    metadata={"dia_id": t["dia_id"], "sample_id": sample_id, "speaker": t["speaker"]},
                ))
            n += 1
        questions = [{**q, "evidence": _evidence_ids(q["evidence"])} for q in raw["qa"]
                     if q.get("category") in CATEGORIES and q.get("evidence")]
        samples.append(LocomoSample(sample_id, turns, questions, last or datetime.now(UTC),
                                    _observations(raw.get("observation") or {})))
    return samples


def _evidence_ids(raw: Sequence[str]) -> list[str]:
    """A question's evidence dia_ids, one per entry: LoCoMo writes a few entries as several ids in one string
    (``"D8:6; D9:17"``), which would match no turn and count as evidence never found."""
    return [part for entry in raw for part in re.split(r"[;,\s]+", str(entry)) if part]


def _observations(raw: Mapping[str, Any]) -> list[tuple[str, str, list[str]]]:
    """``observation.session_N_observation.{speaker: [[statement, dia_id or [dia_ids]], ...]}`` flattened."""
    out = []
    for per_speaker in raw.values():
        for speaker, items in (per_speaker or {}).items():
            for item in items or []:
                if isinstance(item, (list, tuple)) and len(item) >= 2 and isinstance(item[0], str) and item[0].strip():
                    ids = item[1] if isinstance(item[1], list) else [item[1]]
                    out.append((speaker, item[0].strip(), [str(i) for i in ids if i]))
    return out


@dataclass
class _Scores:
    recall: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    hit: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    per_cat: dict[tuple[int, int], list[float]] = field(default_factory=lambda: defaultdict(list))
    per_cat_hit: dict[tuple[int, int], list[float]] = field(default_factory=lambda: defaultdict(list))
    per_sample: dict[tuple[int, str], list[float]] = field(default_factory=lambda: defaultdict(list))
    latencies_ms: list[float] = field(default_factory=list)
    #: Per question, in the order scored: the dia_ids returned for the largest K (``--dump`` writes them).
    returned: list[list[str | None]] = field(default_factory=list)

    def add(self, k: int, sample: str, category: int, evidence: Sequence[str], returned: Sequence[str | None]) -> None:
        if k == max(KS):
            self.returned.append(list(returned[:k]))
        found = len(set(evidence) & set(returned[:k]))
        recall = found / len(set(evidence))
        self.per_sample[(k, sample)].append(recall)
        self.recall[k].append(recall)
        self.hit[k].append(1.0 if found else 0.0)
        self.per_cat[(k, category)].append(recall)
        self.per_cat_hit[(k, category)].append(1.0 if found else 0.0)

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "overall": {f"R@{k}": round(float(np.mean(self.recall[k])), 4) for k in KS},
            "hit": {f"H@{k}": round(float(np.mean(self.hit[k])), 4) for k in KS},
            "per_category": {},
            "questions": len(self.recall[KS[0]]),
        }
        for cat, name in CATEGORIES.items():
            values = {f"R@{k}": round(float(np.mean(self.per_cat[(k, cat)])), 4) for k in KS if self.per_cat[(k, cat)]}
            if values:
                out["per_category"][f"{cat} {name}"] = {**values, "n": len(self.per_cat[(KS[0], cat)])}
        samples = sorted({s for _, s in self.per_sample})
        per_sample = {s: {f"R@{k}": round(float(np.mean(self.per_sample[(k, s)])), 4) for k in KS} for s in samples}
        out["per_sample"] = per_sample
        out["across_samples"] = {f"R@{k}": spread([per_sample[s][f"R@{k}"] for s in samples]) for k in KS}
        if self.latencies_ms:
            out["latency_ms"] = latency_summary(self.latencies_ms)
        return out


async def _method_engine(memory: AsyncAgentMemory, sample: LocomoSample, question: str, k: int,
                         recall: dict[str, Any] | None, *, facts: bool = False) -> list[str | None]:
    bundle = await memory.remember(question, user_id=sample.sample_id, top_k=k, reference_time=sample.reference_time,
                                   include_semantic=facts, include_procedural=False, recall=recall)
    return [t.item.metadata.get("dia_id") for t in bundle.turns]


async def _method_fulltext(memory: AsyncAgentMemory, sample: LocomoSample, question: str, k: int) -> list[str]:
    rows = await memory.ctx.postgres.fetch(
        f"WITH q AS (SELECT {OR_QUERY} AS query) SELECT metadata->>'dia_id' AS dia_id FROM conversation_logs, q"
        " WHERE user_id = %(user)s AND content_tsv @@ q.query ORDER BY ts_rank(content_tsv, q.query) DESC, turn_id"
        " LIMIT %(k)s",
        {"text": question, "user": sample.sample_id, "k": k},
    )
    return [r["dia_id"] for r in rows]


#: The ablations: the full RecallLayer, then each technique off on its own.
ABLATIONS: dict[str, dict[str, Any] | None] = {
    "agentx (full)": None,
    "- hybrid (vector leg only)": {"hybrid": False},
    "- neighbours": {"neighbours": 0},
    "- session boost": {"session_weight": 0.0},
    "- speaker boost": {"speaker_weight": 0.0},
    "- self-query (time phrases)": {"self_query": False},
    "- query expansion": {"query_expansion": False},
    "- entity-centric": {"entity_centric": False},
    "fusion = weighted RRF": {"fusion": "rrf"},
}


#: The method name of the engine run with facts (``bench locomo --extract`` or ``--observations``).
WITH_FACTS = "agentx + facts"


async def _extract_all(memory: AsyncAgentMemory, samples: list[LocomoSample], progress: Callable[[str], None]
                       ) -> dict[str, Any]:
    """Extract every conversation of every sample; the totals (facts, entities, usage, seconds)."""
    started = time.perf_counter()
    facts = entities = calls = 0
    extractor = ""
    for sample in samples:
        for conversation in dict.fromkeys(t.conversation_id for t in sample.turns):
            report = await memory.extract_conversation(conversation, user_id=sample.sample_id)
            facts += len(set(report.fact_ids))
            entities += len(set(report.entity_ids))
            calls += report.usage.calls
            extractor = report.extractor
    seconds = round(time.perf_counter() - started, 1)
    progress(f"extracted {facts} facts, {entities} entities with {extractor} in {seconds}s")
    return {"extractor": extractor, "facts": facts, "entities": entities, "calls": calls, "seconds": seconds}


async def _learn_observations(memory: AsyncAgentMemory, samples: list[LocomoSample],
                              progress: Callable[[str], None]) -> dict[str, Any]:
    """Learn LoCoMo's own session observations as facts: each about its speaker (a person entity), derived from the
    turn of its first dia_id, dated like that turn. Observations naming no stored turn are left out (counted)."""
    started = time.perf_counter()
    learned = skipped = 0
    for sample in samples:
        turns = {t.metadata["dia_id"]: t for t in sample.turns}
        speakers = sorted({speaker for speaker, _, _ in sample.observations})
        people = await memory.upsert_entities([
            Entity(user_id=sample.sample_id, name=name, type="person") for name in speakers])
        person = {name: e.id for name, e in zip(speakers, people, strict=True)}
        facts = []
        for n, (speaker, statement, dia_ids) in enumerate(sample.observations):
            turn = next((turns[i] for i in dia_ids if i in turns), None)
            if turn is None:
                skipped += 1
                continue
            # a fixed id per observation: ties between facts are broken by id, so random ids made runs differ
            facts.append(Fact(id=f"obs-{sample.sample_id}-{n}", user_id=sample.sample_id, claim=statement,
                              confidence=0.9, source="observation",
                              source_turn_id=turn.id, conversation_id=turn.conversation_id,
                              entity_ids=[person[speaker]], created_at=turn.timestamp))
        for start in range(0, len(facts), 500):
            await memory.learn_facts(facts[start:start + 500])
        learned += len(facts)
    seconds = round(time.perf_counter() - started, 1)
    progress(f"learned {learned} observations as facts ({skipped} naming no turn left out) in {seconds}s")
    return {"source": "observations", "facts": learned, "skipped": skipped, "seconds": seconds}


async def run_locomo(settings: Settings, data: Path, *, out_dir: Path, limit_samples: int | None = None,
                     limit_questions: int | None = None, ablations: bool = True,
                     variants: Mapping[str, dict[str, Any]] | None = None, extract: bool = False,
                     observations: bool = False, dump: bool = False,
                     progress: Callable[[str], None] = print) -> dict[str, Any]:
    """Ingest, query, score; write JSON, Markdown and a PNG plot into ``out_dir``; return the results. ``variants``:
    extra engine runs by name, each with its recall overrides. ``extract``: also extract every conversation
    (``extraction.extractor``); ``observations``: also learn LoCoMo's own session observations as facts (each
    derived from the turn it cites). With either, the engine runs once more with facts on (a recalled fact lends to
    the turn it came from: :data:`WITH_FACTS`), and every variant runs with facts only (named ``"<variant> +
    facts"``). ``dump`` adds every question with what each method returned for the largest K (``per_question``),
    for paired comparisons of methods."""
    bm25_okapi()  # the bench extra is missing: say so before anything is ingested
    samples = load_locomo(data)[:limit_samples]
    memory = await AsyncAgentMemory.open(settings)
    results: dict[str, _Scores] = defaultdict(_Scores)
    try:
        ingest_started = time.perf_counter()
        turns = [t for s in samples for t in s.turns]
        with progress_bar("ingest (embed + store)", len(turns), unit="turn") as bar:
            for sample in samples:
                for start in range(0, len(sample.turns), 100):
                    chunk = sample.turns[start:start + 100]
                    await memory.store_turns(chunk)
                    bar.update(len(chunk))
        ingest_seconds = time.perf_counter() - ingest_started
        progress(f"ingested {len(turns)} turns of {len(samples)} samples in {ingest_seconds:.1f}s "
                 f"(document vectors cached in {memory.settings.embedding.cache_path or 'memory'})")
        vectors = await turn_vectors(memory)
        extraction: dict[str, Any] = {}
        if extract:
            extraction = await _extract_all(memory, samples, progress)
        if observations:
            extraction["observations"] = await _learn_observations(memory, samples, progress)

        methods: dict[str, dict[str, Any] | None] = dict(ABLATIONS) if ablations else {"agentx (full)": None}
        runs = [(name, variant, False) for name, variant in methods.items()]
        if extraction:  # with facts, the engine runs once more with them, and so does every variant (only)
            runs += [(WITH_FACTS, None, True), *((f"{name} + facts", v, True) for name, v in (variants or {}).items())]
        else:
            runs += [(name, variant, False) for name, variant in (variants or {}).items()]
        questions = [(s, q) for s in samples for q in s.questions[:limit_questions]]
        for sample in samples:
            docs = {t.metadata["dia_id"]: t for t in sample.turns}
            bm25 = Bm25Ranking({i: t.content for i, t in docs.items()})
            by_cosine = VectorRanking({i: vectors[t.id] for i, t in docs.items()})
            for q in track(sample.questions[:limit_questions], f"baselines {sample.sample_id}", unit="q",
                           transient=True):
                qvec = await memory.ctx.embedder.embed_query(q["question"])
                by_bm25 = bm25.rank(q["question"], max(KS))
                by_vector = by_cosine.rank(qvec, max(KS))
                by_fulltext = await _method_fulltext(memory, sample, q["question"], max(KS))
                for k in KS:
                    for name, ranked in (("baseline: PostgreSQL full text", by_fulltext),
                                         ("baseline: BM25 (rank-bm25)", by_bm25),
                                         ("baseline: vector (exact cosine)", by_vector)):
                        results[name].add(k, sample.sample_id, q["category"], q["evidence"], ranked)
        for name, variant, facts in runs:
            scores = results[name]
            with engine_variant(memory, variant) as override:
                for sample, q in track(questions, name, unit="q"):
                    for k in KS:
                        started = time.perf_counter()
                        returned = await _method_engine(memory, sample, q["question"], k, override, facts=facts)
                        if k == 10:
                            scores.latencies_ms.append((time.perf_counter() - started) * 1000)
                        scores.add(k, sample.sample_id, q["category"], q["evidence"], returned)
        await memory.drain()
    finally:
        await memory.close()

    report = {
        **report_header("locomo evidence recall", data, settings),
        "samples": [s.sample_id for s in samples],
        "turns": sum(len(s.turns) for s in samples),
        "ingest_seconds": round(ingest_seconds, 2),
        **({"extraction": extraction} if extraction else {}),
        "methods": {name: scores.summary() for name, scores in results.items()},
    }
    if dump:  # every method scored the questions in this order
        report["per_question"] = [
            {"sample": sample.sample_id, "category": q["category"], "question": q["question"],
             "evidence": q["evidence"], "returned": {name: scores.returned[i] for name, scores in results.items()}}
            for i, (sample, q) in enumerate(questions)]
    write_report(report, out_dir, "locomo", markdown_report, KS, "LoCoMo evidence recall")
    return report


def markdown_report(report: dict[str, Any]) -> str:
    """The results as Markdown tables (overall, then per category at K=10)."""
    lines = [
        f"LoCoMo evidence recall — {report['turns']} turns, samples {', '.join(report['samples'])}, "
        f"embedding `{report['embedding_model']}`, commit `{report['commit']}`, {report['date']}",
        "",
        "| method | R@5 | R@10 | R@20 | R@50 | H@10 | R@10 across conversations (mean ± std, min) | p50 ms | p95 ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, m in report["methods"].items():
        lat, r10 = m.get("latency_ms", {}), m["across_samples"]["R@10"]
        lines.append(
            f"| {name} | {m['overall']['R@5']:.3f} | {m['overall']['R@10']:.3f} | {m['overall']['R@20']:.3f} | "
            f"{m['overall']['R@50']:.3f} | {m['hit']['H@10']:.3f} | {r10['mean']:.3f} ± {r10['std']:.3f} "
            f"({r10['min']:.3f}) | {lat.get('p50', '')} | {lat.get('p95', '')} |"
        )
    cats = [f"{c} {n}" for c, n in CATEGORIES.items()]
    lines += ["", "Recall@10 per category:", "", "| method | " + " | ".join(cats) + " |",
              "|---" * (len(cats) + 1) + "|"]
    for name, m in report["methods"].items():
        cells = [f"{m['per_category'].get(c, {}).get('R@10', float('nan')):.3f}" for c in cats]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
