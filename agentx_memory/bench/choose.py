"""Leave-one-conversation-out choice among engine configurations, from the dumps of ``bench locomo`` and ``bench beam``.

Constants of the ranking are chosen on both dev sets together and checked on conversations the choice did not see.
This module does that from reports already written, without running anything again: run each benchmark with
``--dump`` and the same ``--variant`` options, then ``agentx-memory bench choose locomo.json beam.json``.

- **The configurations** are the engine's runs present in every report: ``agentx (full)`` (the defaults) and each
  variant; baselines are left out.
- **R@K of a question** is the share of its evidence among the first K distinct ids a configuration returned
  (:func:`recall_at`; LoCoMo's dump holds the ids returned at K = 50, BEAM's the first 50).
- **The objective** of a configuration on some conversations is the mean, over the datasets, of its mean
  per-conversation R@K: each dataset counts once, however many conversations it has, and each conversation once,
  however many questions it asks.
- **A fold** leaves one conversation out, picks the configuration with the best objective on all the others (ties go
  to the defaults, then to the first name), and scores the left-out conversation with it.

The report gives the picks of every fold; the held-out figures per dataset (the mean over its conversations, and
pooled over its questions) and per category or ability (pooled over the questions of its held-out conversations);
and every configuration's in-sample figures beside them.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean, stdev
from typing import Any

from ..errors import ValidationError
from . import LOCOMO_CATEGORIES, recall_at

__all__ = ["DEFAULTS", "Question", "choose", "markdown_report", "questions_of", "questions_of_reports", "recall_at"]

#: The method name of the engine with its default settings in both benchmarks' reports.
DEFAULTS = "agentx (full)"
_BASELINE_PREFIX = "baseline:"

#: How each benchmark's dump names a question's conversation and its category.
_FIELDS = {"locomo": ("sample", "category"), "beam": ("chat", "ability")}


@dataclass(frozen=True)
class Question:
    """One dev question as a dump records it: its dataset, conversation, category, evidence ids and, per
    configuration, the ids returned."""

    dataset: str
    conversation: str
    category: str
    evidence: tuple[Hashable, ...]
    returned: Mapping[str, Sequence[Hashable]]


def questions_of(report: Mapping[str, Any]) -> list[Question]:
    """The questions of a ``bench locomo`` or ``bench beam`` report written with ``--dump``; raises
    :class:`ValidationError` for any other report."""
    name = str(report.get("benchmark", "")).split(" ", 1)[0]
    if name not in _FIELDS:
        raise ValidationError("benchmark", f"expected a 'bench locomo' or 'bench beam' report, got {name!r}")
    if not report.get("per_question"):
        raise ValidationError("per_question", f"the {name} report has none; run the benchmark with --dump")
    conversation, category = _FIELDS[name]
    dataset = f"{name}@{report['prefix']}" if report.get("prefix") else name  # a cut chat is another conversation
    out = []
    for i, q in enumerate(report["per_question"]):
        try:
            label = q[category]
            if name == "locomo":
                label = f"{label} {LOCOMO_CATEGORIES.get(int(label), '?')}"
            evidence = tuple(q["evidence"])
            returned = {m: list(ids) for m, ids in q["returned"].items() if not m.startswith(_BASELINE_PREFIX)}
            where = q[conversation]
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValidationError(f"per_question[{i}]", f"not a {name} dump entry (needs {conversation}, {category}, "
                                                        f"evidence and returned): {exc!r}") from exc
        if not evidence:
            raise ValidationError(f"per_question[{i}].evidence", "is empty; R@K needs at least one evidence id")
        out.append(Question(dataset=dataset, conversation=f"{dataset}:{where}", category=str(label),
                            evidence=evidence, returned=returned))
    return out


def questions_of_reports(reports: Sequence[Mapping[str, Any]]) -> list[Question]:
    """The questions of several reports (:func:`questions_of`), each dataset once: the same set given twice would
    count its conversations twice."""
    out: list[Question] = []
    seen: set[str] = set()
    for report in reports:
        questions = questions_of(report)
        dataset = questions[0].dataset
        if dataset in seen:
            raise ValidationError("reports", f"two reports of {dataset}; give each dataset once")
        seen.add(dataset)
        out += questions
    return out


def _configurations(questions: Sequence[Question]) -> list[str]:
    """The engine configurations every question has an answer of, the defaults first."""
    common = set.intersection(*(set(q.returned) for q in questions))
    if not common:
        raise ValidationError("per_question", "no engine configuration was run on every report's questions")
    return sorted(common, key=lambda m: (m != DEFAULTS, m))


def choose(questions: Sequence[Question], k: int = 10) -> dict[str, Any]:
    """Leave-one-conversation-out over ``questions`` (see the module's docstring) at R@``k``: a JSON-ready report."""
    if not questions:
        raise ValidationError("questions", "none to choose with")
    if k < 1:
        raise ValidationError("k", f"must be at least 1, got {k}")
    configs = _configurations(questions)
    dataset_of = {q.conversation: q.dataset for q in questions}
    if len(dataset_of) < 2:
        raise ValidationError("questions", f"leaving one conversation out needs at least two, got {len(dataset_of)}")
    # score[config][conversation] = the R@k of each of its questions, in order
    score: dict[str, dict[str, list[float]]] = {c: defaultdict(list) for c in configs}
    category_of: dict[str, list[str]] = defaultdict(list)  # in the same order as the scores
    for q in questions:
        category_of[q.conversation].append(q.category)
        for c in configs:
            score[c][q.conversation].append(recall_at(q.evidence, q.returned[c], k))
    conversations = sorted(dataset_of)

    def objective(config: str, among: Iterable[str]) -> float:
        by_dataset: dict[str, list[float]] = defaultdict(list)
        for conv in among:
            by_dataset[dataset_of[conv]].append(fmean(score[config][conv]))
        return fmean(fmean(v) for v in by_dataset.values())

    folds: list[dict[str, Any]] = []
    for held in conversations:
        rest = [c for c in conversations if c != held]
        # configs start with the defaults, then go by name: max keeps the first of equal objectives
        pick = max(configs, key=lambda c: round(objective(c, rest), 12))
        folds.append({"held_out": held, "pick": pick, "held_out_recall": round(fmean(score[pick][held]), 4)})
    pick_of: dict[str, str] = {f["held_out"]: f["pick"] for f in folds}
    return {
        "k": k,
        "configurations": configs,
        "conversations": len(conversations),
        "picks": dict(Counter(pick_of.values()).most_common()),
        "folds": folds,
        "held_out": _figures(pick_of.__getitem__, score, dataset_of, category_of),
        "in_sample": {c: _figures(dict.fromkeys(conversations, c).__getitem__, score, dataset_of, category_of)
                      for c in configs},
    }


def _figures(config_for: Callable[[str], str], score: Mapping[str, Mapping[str, list[float]]],
             dataset_of: Mapping[str, str], category_of: Mapping[str, list[str]]) -> dict[str, Any]:
    """Per dataset (mean over conversations, pooled over questions) and per category, each conversation scored with
    ``config_for(conversation)``."""
    per_conv: dict[str, list[float]] = defaultdict(list)
    pooled: dict[str, list[float]] = defaultdict(list)
    per_category: dict[tuple[str, str], list[float]] = defaultdict(list)
    for conv, dataset in dataset_of.items():
        values = score[config_for(conv)][conv]
        per_conv[dataset].append(fmean(values))
        pooled[dataset].extend(values)
        for category, value in zip(category_of[conv], values, strict=True):
            per_category[(dataset, category)].append(value)
    return {dataset: {"mean_per_conversation": round(fmean(per_conv[dataset]), 4),
                      "std_per_conversation": round(stdev(per_conv[dataset]), 4) if len(per_conv[dataset]) > 1
                      else 0.0,
                      "min_per_conversation": round(min(per_conv[dataset]), 4),
                      "pooled": round(fmean(pooled[dataset]), 4), "questions": len(pooled[dataset]),
                      "per_category": {cat: {"recall": round(fmean(v), 4), "n": len(v)}
                                       for (d, cat), v in sorted(per_category.items()) if d == dataset}}
            for dataset in sorted(per_conv)}


def markdown_report(result: Mapping[str, Any]) -> str:
    """The choice as Markdown: the picks, then held-out and in-sample R@K per dataset and per category."""
    k = result["k"]
    held = result["held_out"]
    picks = ", ".join(f"{name} {n}" for name, n in result["picks"].items())
    lines = [f"Leave-one-conversation-out over {result['conversations']} conversations at R@{k}; picks per fold: "
             f"{picks}.", "",
             "| configuration | " + " | ".join(f"{d} R@{k}: per conversation mean ± std (min) / pooled" for d in held)
             + " |",
             "|---|" + "---|" * len(held)]

    def row(name: str, figures: Mapping[str, Any]) -> str:
        return f"| {name} | " + " | ".join(
            f"{f['mean_per_conversation']:.4f} ± {f['std_per_conversation']:.4f} ({f['min_per_conversation']:.4f}) / "
            f"{f['pooled']:.4f}" for f in (figures[d] for d in held)) + " |"

    lines.append(row("**held out (each fold's pick)**", held))
    lines += [row(name, figures) for name, figures in result["in_sample"].items()]
    lines += ["", f"Per category, R@{k} pooled over questions (held out, and the defaults in sample):", "",
              "| dataset | category | n | held out | defaults |", "|---|---|---|---|---|"]
    defaults = result["in_sample"].get(DEFAULTS)
    for dataset, figures in held.items():
        for category, value in figures["per_category"].items():
            base = f"{defaults[dataset]['per_category'][category]['recall']:.4f}" if defaults else ""
            lines.append(f"| {dataset} | {category} | {value['n']} | {value['recall']:.4f} | {base} |")
    return "\n".join(lines) + "\n"
