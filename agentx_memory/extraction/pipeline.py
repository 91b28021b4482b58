"""Extraction of one conversation: batches of turns → one extraction call each → validation → writes.

:class:`ConversationExtractor` reads the conversation from the durable log, cuts it into batches
(``extraction.batch_turns`` turns and ``extraction.batch_chars`` characters at most), asks the extractor (the LLM of
``llm.extraction_model``, or the rules of :class:`~agentx_memory.extraction.offline.OfflineExtractor`) for each
batch, validates the answer item by item and writes it (:func:`~agentx_memory.extraction.writer.write_batch`).

A batch is all or nothing from the caller's point of view: its call happens before any of its writes, and a call the
token budget refuses (:class:`~agentx_memory.errors.LLMBudgetExceededError`) or that fails stops the run there, with
every earlier batch written and nothing of that one (the report says where and why). Writes are idempotent, so
running again over the same turns adds nothing twice. The run's usage (calls, tokens, estimated cost) is in the
report and in the audit log (operation ``extract``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from ..errors import ConfigurationError, LLMError, NotFoundError
from ..graph import cypher
from ..models import Turn
from ..providers.llm import LLM, is_local_endpoint, make_llm
from ..providers.usage import Usage, UsageMeter
from ..semantic import SemanticMemory
from ..settings import Settings
from ..timeutil import now_ms
from .contradictions import Resolution, resolve_contradictions
from .offline import BatchTurn, OfflineExtractor
from .schema import SYSTEM_PROMPT, ExtractionOutput, RawBatch, render_turns
from .validate import ValidBatch, validate_batch
from .writer import write_batch

__all__ = ["ConversationExtractor", "ExtractionReport", "Extractor", "LLMExtractor", "batch_key", "batches",
           "choose_extractor"]

log = logging.getLogger(__name__)


class Extractor(Protocol):
    """Anything that answers a batch in the extraction schema (:class:`LLMExtractor`, :class:`OfflineExtractor`)."""

    model: str

    async def __call__(self, batch: Sequence[BatchTurn], meter: UsageMeter) -> tuple[RawBatch, Usage]:
        """The answer for ``batch`` and what it cost (``meter`` enforces the run's budgets)."""
        ...


class LLMExtractor:
    """One structured LLM call per batch (the prompt and schema of :mod:`~agentx_memory.extraction.schema`)."""

    def __init__(self, llm: LLM):
        self.llm = llm
        self.model = llm.model

    async def __call__(self, batch: Sequence[BatchTurn], meter: UsageMeter) -> tuple[RawBatch, Usage]:
        """Ask the model for the batch's entities, facts and relationships."""
        prompt = render_turns([(b.ref, b.turn.timestamp.date().isoformat(), b.speaker, b.text) for b in batch])
        answer = await self.llm.structured(SYSTEM_PROMPT, prompt, RawBatch, name="record_memory",
                                           description="Record the memory extracted from the turns.",
                                           schema=ExtractionOutput.model_json_schema(), meter=meter)
        return answer.value, answer.usage


class RulesExtractor:
    """The offline extractor behind the same call signature (no usage: nothing is called)."""

    model = OfflineExtractor.model

    def __init__(self) -> None:
        self._rules = OfflineExtractor()

    async def __call__(self, batch: Sequence[BatchTurn], meter: UsageMeter) -> tuple[RawBatch, Usage]:
        """The rules' answer for ``batch``."""
        return self._rules.extract(batch), Usage()


def choose_extractor(settings: Settings) -> Extractor:
    """The extractor ``extraction.extractor`` names; ``auto`` takes the LLM when it can be called (a model, a key
    or a local base URL, and paid calls allowed unless the server is local), else the offline rules."""
    wanted = settings.extraction.extractor
    if wanted == "offline":
        return RulesExtractor()
    spec = settings.llm.extraction_model
    if wanted == "llm":
        llm = make_llm(spec, settings.llm)
        if llm is None:
            raise ConfigurationError("extraction.extractor is 'llm' but llm.extraction_model is empty")
        return LLMExtractor(llm)
    try:
        llm = make_llm(spec, settings.llm)
    except ConfigurationError as exc:  # no key, no SDK: auto falls back to the rules and says why
        log.info("extraction: using the offline extractor (%s)", exc)
        llm = None
    if llm is None or not (settings.llm.allow_paid_calls or is_local_endpoint(llm.base_url)):
        return RulesExtractor()
    return LLMExtractor(llm)


def speaker_of(turn: Turn) -> str:
    """Who said the turn: ``metadata["speaker"]``, else "the user" / "the assistant" / the role."""
    named = str(turn.metadata.get("speaker") or "").strip()
    if named:
        return named
    return {"user": "the user", "assistant": "the assistant"}.get(turn.role, turn.role)


def batches(turns: Sequence[Turn], max_turns: int, max_chars: int) -> list[list[BatchTurn]]:
    """The turns cut into batches of at most ``max_turns`` turns and ``max_chars`` characters (a longer turn goes
    alone, cut), each turn with its reference ``t<n>`` (numbered within its batch) and its speaker."""
    out: list[list[BatchTurn]] = []
    current: list[BatchTurn] = []
    size = 0
    for turn in turns:
        speaker = speaker_of(turn)
        text = turn.content
        if text.startswith(f"{speaker}: "):  # transcripts that repeat the speaker in the text
            text = text[len(speaker) + 2:]
        text = text[:max_chars]
        if current and (len(current) == max_turns or size + len(text) > max_chars):
            out.append(current)
            current, size = [], 0
        current.append(BatchTurn(f"t{len(current) + 1}", turn, speaker, text))
        size += len(text)
    if current:
        out.append(current)
    return out


#: Changes whenever the prompt or the schema does, so a batch extracted under an older prompt is extracted again.
PROMPT_VERSION: Final = hashlib.sha256((SYSTEM_PROMPT + json.dumps(ExtractionOutput.model_json_schema(),
                                                                   sort_keys=True)).encode()).hexdigest()[:16]


def batch_key(extractor: str, batch: Sequence[BatchTurn]) -> str:
    """The idempotency key of a batch: the extractor, the prompt version and each turn's id and content."""
    digest = hashlib.sha256(f"{extractor}\x1f{PROMPT_VERSION}".encode())
    for item in batch:
        digest.update(f"\x1e{item.turn.id}\x1f{item.text}".encode())
    return digest.hexdigest()[:32]


@dataclass
class ExtractionReport:
    """What one run did: per kind the ids written, what was dropped or left unresolved and why, the usage, and
    whether it stopped early (``stopped``: the reason; ``batches_done`` of ``batches``)."""

    conversation_id: str
    user_id: str
    extractor: str
    dry_run: bool
    batches: int = 0
    batches_done: int = 0
    batches_skipped: int = 0
    entity_ids: list[str] = field(default_factory=list)
    fact_ids: list[str] = field(default_factory=list)
    relationships: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    unresolved: Counter[str] = field(default_factory=Counter)
    usage: Usage = field(default_factory=Usage)
    stopped: str | None = None
    found: list[ValidBatch] = field(default_factory=list)
    resolutions: list[Resolution] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """Plain values for printing and the audit log (without the found items)."""
        return {
            "conversation_id": self.conversation_id, "extractor": self.extractor, "dry_run": self.dry_run,
            "batches": self.batches, "batches_done": self.batches_done, "batches_skipped": self.batches_skipped,
            "entities": len(dict.fromkeys(self.entity_ids)), "facts": len(dict.fromkeys(self.fact_ids)),
            "relationships": self.relationships, "dropped": dict(self.dropped), "unresolved": dict(self.unresolved),
            "usage": self.usage.as_dict(), "stopped": self.stopped,
            "contradictions": [{"facts": list(r.fact_ids), "kept": r.kept, "policy": r.policy, "reason": r.reason}
                               for r in self.resolutions],
        }


class ConversationExtractor:
    """Runs extraction over one conversation of a user (see the module docstring)."""

    def __init__(self, semantic: SemanticMemory, extractor: Extractor):
        self.semantic = semantic
        self.ctx = semantic.ctx
        self.extractor = extractor

    async def run(self, turns: Sequence[Turn], *, dry_run: bool = False, force: bool = False) -> ExtractionReport:
        """Extract from ``turns`` (one conversation, in order): write unless ``dry_run`` (then the validated items
        are in ``report.found``). A batch extracted before by the same extractor and prompt, from the same turns, is
        skipped (``report.batches_skipped``) unless ``force``; a dry run skips nothing."""
        if not turns:
            raise NotFoundError("conversation", "(no turns)")
        first = turns[0]
        settings = self.ctx.settings
        started = time.perf_counter()
        report = ExtractionReport(first.conversation_id, first.user_id, self.extractor.model, dry_run)
        meter = UsageMeter.from_settings(settings.llm)
        cut = batches(turns, settings.extraction.batch_turns, settings.extraction.batch_chars)
        report.batches = len(cut)
        done = set() if dry_run or force else set((await self.ctx.graph.read(cypher.EXTRACTED_BATCHES, {
            "conversation_id": first.conversation_id, "user_id": first.user_id}) or [{"keys": []}])[0]["keys"])
        for batch in cut:
            key = batch_key(self.extractor.model, batch)
            if key in done:
                report.batches_skipped += 1
                report.batches_done += 1
                continue
            try:
                raw, usage = await self.extractor(batch, meter)
            except LLMError as exc:
                report.stopped = f"{type(exc).__name__}: {exc}"
                break
            report.usage = report.usage + usage
            valid = validate_batch(raw, [b.ref for b in batch])
            report.dropped.update(valid.dropped)
            if dry_run:
                report.found.append(valid)
            else:
                written = await write_batch(
                    self.semantic, valid, {b.ref: b.turn for b in batch}, user_id=first.user_id,
                    channel=first.channel, conversation_id=first.conversation_id, model=self.extractor.model,
                    settings=settings.extraction)
                report.entity_ids += written.entity_ids
                report.fact_ids += written.fact_ids
                report.relationships += written.relationships
                report.unresolved.update(written.unresolved)
                report.resolutions += await resolve_contradictions(
                    self.semantic, written.facts, settings.extraction.contradiction_policy,
                    settings.extraction.contradiction_window_days)
                await self.ctx.graph.write(cypher.MARK_BATCH_EXTRACTED, {
                    "conversation_id": first.conversation_id, "user_id": first.user_id, "key": key, "now": now_ms()})
            report.batches_done += 1
        await self.ctx.audit.log_write(
            "extract", "semantic", first.channel, list(dict.fromkeys(report.fact_ids)), report.summary(),
            user_id=first.user_id, conversation_id=first.conversation_id,
            latency_ms=int((time.perf_counter() - started) * 1000))
        return report
