"""Extraction benchmark on LoCoMo (``agentx-memory bench extract``): what extraction costs and what the offline
rules find, without a paid call.

* **Cost of the LLM path**: every conversation's turns go through :class:`~agentx_memory.extraction.pipeline.
  LLMExtractor` and the real ``openai`` SDK to a local server in the Chat Completions wire format
  (:mod:`agentx_memory.bench.wire`), which counts each request's input tokens the way a provider bills them
  (system prompt, turns and the JSON schema, with tiktoken's ``cl100k_base``) and answers an empty extraction.
  Reported: calls and input tokens per 100 turns and per turn (output tokens depend on the model and are not
  measured here).
* **Offline coverage**: LoCoMo's ``observation`` annotations cite the turns each observation comes from. Reported:
  the share of those evidence turns from which the offline rules extract at least one fact, facts per 100 turns,
  and a sample of extracted facts (seeded) to label by hand for precision.

No database is needed: the extractors run on the loaded turns and nothing is written.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
from pathlib import Path
from typing import Any

from ..extraction.pipeline import LLMExtractor, RulesExtractor, batches
from ..extraction.schema import ExtractionOutput
from ..extraction.validate import validate_batch
from ..providers.llm import make_llm
from ..providers.usage import Usage, UsageMeter
from ..settings import LLMSettings, Settings
from ..tokens import count_tokens, tokenizer_name
from .locomo import load_locomo
from .wire import Reply, WireServer, openai_completion

__all__ = ["run_extract_bench"]

_EMPTY = json.dumps(ExtractionOutput().model_dump())


def _billed(body: dict[str, Any]) -> Reply:
    """The wire server's answer: an empty extraction, with the request's input tokens counted like a provider."""
    text = "".join(m["content"] for m in body["messages"]) + json.dumps(body.get("response_format", {}))
    return Reply(openai_completion(_EMPTY, input_tokens=count_tokens(text), output_tokens=count_tokens(_EMPTY),
                                   model=body["model"]))


async def _llm_cost(settings: Settings, turns_by_sample: dict[str, list[Any]]) -> dict[str, Any]:
    with WireServer().running() as server:
        server.answer = _billed
        llm = make_llm("openai:gpt-4o-mini", LLMSettings(openai_base_url=server.url + "/v1", max_retries=0))
        assert llm is not None
        extractor = LLMExtractor(llm)
        usage, turns = Usage(), 0
        meter = UsageMeter(per_call=10**9, per_run=10**12)
        for sample_turns in turns_by_sample.values():
            for batch in batches(sample_turns, settings.extraction.batch_turns, settings.extraction.batch_chars):
                _, used = await extractor(batch, meter)
                usage = usage + used
            turns += len(sample_turns)
    return {"turns": turns, "calls": usage.calls, "input_tokens": usage.input_tokens,
            "calls_per_100_turns": round(100 * usage.calls / turns, 2),
            "input_tokens_per_turn": round(usage.input_tokens / turns, 1), "tokenizer": tokenizer_name(),
            "batch_turns": settings.extraction.batch_turns, "batch_chars": settings.extraction.batch_chars}


async def _offline(settings: Settings, data: Path, turns_by_sample: dict[str, list[Any]], sample_size: int
                   ) -> dict[str, Any]:
    raw = {s["sample_id"]: s for s in json.loads(data.read_text())}
    rules = RulesExtractor()
    meter = UsageMeter(per_call=1, per_run=1)
    per_sample, facts_sample = {}, []
    total_turns = total_facts = total_evidence = total_covered = 0
    for sample_id, turns in turns_by_sample.items():
        covered: set[str] = set()
        facts = 0
        for batch in batches(turns, settings.extraction.batch_turns, settings.extraction.batch_chars):
            answer, _ = await rules(batch, meter)
            valid = validate_batch(answer, [b.ref for b in batch])
            by_ref = {b.ref: b.turn for b in batch}
            for fact in valid.facts:
                facts += 1
                dia_ids = [str(by_ref[r].metadata.get("dia_id")) for r in fact.source_turns]
                covered.update(dia_ids)
                facts_sample.append({"sample": sample_id, "dia_id": dia_ids[0], "claim": fact.claim,
                                     "turn": by_ref[fact.source_turns[0]].content})
        evidence = _evidence(raw[sample_id])
        hit = len(evidence & covered)
        per_sample[sample_id] = {"turns": len(turns), "facts": facts, "evidence_turns": len(evidence),
                                 "evidence_turns_with_a_fact": hit,
                                 "coverage": round(hit / len(evidence), 3) if evidence else None}
        total_turns += len(turns)
        total_facts += facts
        total_evidence += len(evidence)
        total_covered += hit
    random.Random(13).shuffle(facts_sample)
    return {"per_sample": per_sample, "turns": total_turns, "facts": total_facts,
            "facts_per_100_turns": round(100 * total_facts / total_turns, 1),
            "evidence_turns": total_evidence, "evidence_turns_with_a_fact": total_covered,
            "coverage": round(total_covered / total_evidence, 3) if total_evidence else None,
            "sample_to_label": facts_sample[:sample_size]}


def _evidence(sample: dict[str, Any]) -> set[str]:
    """The dia_ids the sample's observations cite (an item is ``[text, dia_id or [dia_ids]]``)."""
    out: set[str] = set()
    for session in (sample.get("observation") or {}).values():
        for items in session.values():
            for item in items:
                cited = item[1] if len(item) > 1 else []
                for dia in [cited] if isinstance(cited, str) else cited:
                    out.update(d for d in re.split(r"[;,\s]+", str(dia)) if d)
    return out


def run_extract_bench(settings: Settings, data: Path, out_dir: Path, *, sample_size: int = 40) -> dict[str, Any]:
    """Both measurements on the LoCoMo file ``data``; the report is written to ``out_dir/extract.json`` and
    returned."""
    samples = load_locomo(data)
    turns_by_sample = {s.sample_id: s.turns for s in samples}
    report = {
        "benchmark": "extract", "data": str(data),
        "llm_cost": asyncio.run(_llm_cost(settings, turns_by_sample)),
        "offline": asyncio.run(_offline(settings, data, turns_by_sample, sample_size)),
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "extract.json").write_text(json.dumps(report, indent=2, ensure_ascii=False))
    return report
