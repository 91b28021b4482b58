"""Knowledge from conversations: entities, facts and relationships extracted from turns (spec 003 "Extraction
Pipeline"), by an LLM or by offline rules, validated item by item and written idempotently. See docs/extraction.md."""

from .pipeline import ConversationExtractor, ExtractionReport, choose_extractor

__all__ = ["ConversationExtractor", "ExtractionReport", "choose_extractor"]
