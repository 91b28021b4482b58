"""The LoCoMo loader: what a question's evidence is, as the recall figures count it."""

from __future__ import annotations

import json

from agentx_memory.bench.locomo import load_locomo


def _sample(evidence: list[str]) -> dict:
    return {
        "sample_id": "s1",
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Ben", "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "I paint."},
                          {"speaker": "Ben", "dia_id": "D1:2", "text": "Nice."}],
            "session_2_date_time": "1:56 pm on 9 May, 2023",
            "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "I painted a horse."}],
        },
        "qa": [{"question": "What did Ann paint?", "answer": "a horse", "evidence": evidence, "category": 1}],
    }


def test_an_evidence_entry_naming_two_turns_counts_as_two(tmp_path):
    """LoCoMo writes a few evidence entries as "D8:6; D9:17": read whole, it matched no turn, so the question
    counted its evidence as never found whatever was returned."""
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([_sample(["D1:1; D2:1", "D1:2"])]))
    [sample] = load_locomo(path)
    assert sample.questions[0]["evidence"] == ["D1:1", "D2:1", "D1:2"]
    assert set(sample.questions[0]["evidence"]) <= {t.metadata["dia_id"] for t in sample.turns}


def test_plain_evidence_is_read_as_it_is(tmp_path):
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([_sample(["D2:1"])]))
    assert load_locomo(path)[0].questions[0]["evidence"] == ["D2:1"]
