"""Offline study: do passage vectors (chunks of long messages) beat one vector per message on BEAM?

    python benchmarks/beam_passages.py [--data ../shared/data/beam-dev] [--chats 1,2] [--size 256 --overlap 32]

For every chat, each message is embedded with ``local:minilm`` (the fast extra) once whole (its first 256 tokens)
and once per passage of ``--size`` model tokens overlapping by ``--overlap``; a message's passage score is its best
passage's cosine. Prints turn recall@5/@10 of each vector leg alone and fused with BM25 (reciprocal rank, k 60),
mean over questions and across chats. No database; nothing is written. docs/benchmarks.md has the figures.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import numpy as np

from agentx_memory.bench.beam import load_beam, recall_at
from agentx_memory.bench.common import bm25_okapi, tokens
from agentx_memory.providers.embeddings import MiniLMEmbedder


def passages(tokenizer, text: str, size: int, overlap: int) -> list[str]:
    """The text cut at token offsets into windows of ``size - 2`` tokens (the model adds two), ``overlap`` shared."""
    offsets = tokenizer.encode(text, add_special_tokens=False).offsets
    window = size - 2
    if len(offsets) <= window:
        return [text]
    out, start = [], 0
    while True:
        end = min(start + window, len(offsets))
        out.append(text[offsets[start][0]:offsets[end - 1][1]])
        if end == len(offsets):
            return out
        start += window - overlap


def rrf(*rankings: list[int], k: int = 60) -> list[int]:
    """Reciprocal-rank fusion of rankings of indexes."""
    score: dict[int, float] = {}
    for ranking in rankings:
        for position, item in enumerate(ranking):
            score[item] = score.get(item, 0.0) + 1 / (k + position + 1)
    return sorted(score, key=lambda i: -score[i])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/data/beam-dev")
    parser.add_argument("--chats", default=None, help="comma-separated chat numbers (default: all)")
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--overlap", type=int, default=32)
    args = parser.parse_args()
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(MiniLMEmbedder.tokenizer_path()))
    tokenizer.no_truncation()
    model = MiniLMEmbedder()
    chats = [int(c) for c in args.chats.split(",")] if args.chats else None
    recall: dict[tuple[str, int], dict[str, list[float]]] = {}
    for chat in load_beam(Path(args.data), chats):
        texts = [t.content for t in chat.turns]
        owner, pieces = [], []
        for i, text in enumerate(texts):
            for piece in passages(tokenizer, text, args.size, args.overlap):
                owner.append(i)
                pieces.append(piece)
        whole, parts = model._run(texts), model._run(pieces)
        owners = np.array(owner)
        bm25 = bm25_okapi()([tokens(t) for t in texts])
        ids = [t.metadata["msg_id"] for t in chat.turns]
        questions = model._run([q.question for q in chat.questions])
        for q, qv in zip(chat.questions, questions, strict=True):
            best = np.full(len(texts), -1.0)
            np.maximum.at(best, owners, parts @ qv)
            ranked = {"bm25": list(np.argsort(-bm25.get_scores(tokens(q.question)), kind="stable")),
                      "whole": list(np.argsort(-(whole @ qv), kind="stable")),
                      "best passage": list(np.argsort(-best, kind="stable"))}
            ranked["bm25 + whole (rrf)"] = rrf(ranked["bm25"][:100], ranked["whole"][:100])
            ranked["bm25 + best passage (rrf)"] = rrf(ranked["bm25"][:100], ranked["best passage"][:100])
            for name, order in ranked.items():
                for k in (5, 10):
                    recall.setdefault((name, k), {}).setdefault(chat.chat_id, []).append(
                        recall_at(q.evidence, [ids[i] for i in order], k))
        print(f"chat {chat.chat_id}: {len(texts)} messages, {len(pieces)} passages", flush=True)
    for (name, k), per_chat in recall.items():
        means = [statistics.mean(v) for v in per_chat.values()]
        overall = statistics.mean(x for v in per_chat.values() for x in v)
        print(f"{name:28s} R@{k:<2d} {overall:.3f}   across chats {statistics.mean(means):.3f} "
              f"± {statistics.pstdev(means):.3f}")


if __name__ == "__main__":
    main()
