"""``bench locomo|beam --variant NAME:key=value,...``: named recall overrides, checked when the command is parsed."""

from __future__ import annotations

import argparse

import pytest

from agentx_memory.cli import _variant


def test_a_variant_is_a_name_and_recall_overrides():
    assert _variant("no idf:lexical_b=0,vector_weight=0.25") == ("no idf", {"lexical_b": 0, "vector_weight": 0.25})
    assert _variant("rrf:fusion=rrf") == ("rrf", {"fusion": "rrf"})  # not JSON: kept as text
    assert _variant("plain:") == ("plain", {})
    assert _variant("cap:retrieval.max_per_conversation=50") == ("cap", {"retrieval.max_per_conversation": 50})


@pytest.mark.parametrize(("text", "message"), [
    ("no-colon", "NAME:key=value"),
    (":vector_weight=1", "NAME:key=value"),
    ("x:vector_weight", "is not key=value"),
    ("x:mmr_lambda=0.5", "not recall settings: mmr_lambda"),
    ("x:vector_weight=99", "vector_weight"),
    ("x:fusion=best", "fusion"),
    ("x:retrieval.nope=1", "not recall settings: retrieval.nope"),
    ("x:retrieval.max_per_conversation=-1", "max_per_conversation"),
])
def test_a_bad_variant_is_a_usage_error_naming_what_is_wrong(text, message):
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        _variant(text)
