"""The input checks of validation.py: one id rule, text and JSON that both databases can store, integer ranges."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from agentx_memory.errors import ValidationError
from agentx_memory.validation import (
    INT32_MAX,
    check_channels,
    check_datetime,
    check_id,
    check_ids,
    check_int,
    check_json,
    check_range,
    check_text,
)

BAD_IDS = [
    pytest.param("", id="empty"),
    pytest.param(" trip", id="leading-space"),
    pytest.param("grep ", id="trailing-space"),
    pytest.param("turn-1\n", id="trailing-newline"),
    pytest.param("bob\n", id="newline"),
    pytest.param("a\tb", id="tab"),
    pytest.param("a\x00b", id="nul"),
    pytest.param("a\x7fb", id="del"),
    pytest.param("a\x85b", id="c1-control"),
    pytest.param("a\u2028b", id="line-separator"),
    pytest.param("a\ud800b", id="lone-surrogate"),
    pytest.param("x" * 101, id="101-chars"),
    pytest.param("x" * 5000, id="5000-chars"),
    pytest.param(None, id="none"),
    pytest.param(7, id="int"),
    pytest.param(b"abc", id="bytes"),
]


@pytest.mark.parametrize("value", BAD_IDS)
def test_check_id_rejects(value):
    with pytest.raises(ValidationError) as caught:
        check_id(value, "turn.id")
    assert caught.value.field == "turn.id"
    assert str(caught.value).startswith("turn.id: ")


@pytest.mark.parametrize("value", ["a", "turn-1", "a b", "Ünïcødé-✓", "x" * 100,
                                   "550e8400-e29b-41d4-a716-446655440000"])
def test_check_id_accepts(value):
    assert check_id(value, "id") == value


def test_every_ascii_character_in_an_id_is_judged_by_its_unicode_category():
    """Printable ASCII ids skip the per-character look: every ASCII character still gets the rule's verdict."""
    import unicodedata

    from agentx_memory.validation import _BAD_ID_CATEGORIES

    for code in range(128):
        ch = chr(code)
        refused = unicodedata.category(ch) in _BAD_ID_CATEGORIES
        try:
            check_id(f"a{ch}b", "id")
        except ValidationError:
            assert refused, repr(ch)
        else:
            assert not refused, repr(ch)


def test_check_id_limit_is_the_column_width():
    assert check_id("c" * 200, "conversation_id", max_len=200)
    with pytest.raises(ValidationError, match="201 characters; the limit is 200"):
        check_id("c" * 201, "conversation_id", max_len=200)


def test_check_ids():
    assert check_ids(["a", "b"], "entity_ids") == ["a", "b"]
    for bad in ("ab", ["a", " b"], None, {"a": 1}):
        with pytest.raises(ValidationError, match="entity_ids"):
            check_ids(bad, "entity_ids")


@pytest.mark.parametrize("value", ["a\ud800", "\udfff end", "nul\x00"])
def test_check_text_rejects_what_no_database_stores(value):
    with pytest.raises(ValidationError, match=r"^content: "):
        check_text(value, "content", max_bytes=1000)


@pytest.mark.parametrize("value", [5, None, ["a"]])
def test_check_text_rejects_wrong_types(value):
    with pytest.raises(ValidationError, match=r"^content: must be a string"):
        check_text(value, "content", max_bytes=1000)


@pytest.mark.parametrize("value", [
    pytest.param({"a": "x\x00"}, id="nul-value"),
    pytest.param({"a\x00": 1}, id="nul-key"),
    pytest.param({"a": ["ok", {"b": "\ud83d"}]}, id="nested-surrogate"),
    pytest.param({"\udc80": 1}, id="surrogate-key"),
    pytest.param({"a": float("nan")}, id="nan"),
    pytest.param({"a": float("inf")}, id="inf"),
    pytest.param({"a": object()}, id="not-serializable"),
])
def test_check_json_rejects_what_jsonb_does_not_store(value):
    with pytest.raises(ValidationError, match=r"^metadata: "):
        check_json(value, "metadata", max_bytes=10_000)


def test_check_json_keeps_a_backslash_u0000_text():
    # the six characters \u0000 are ordinary text, not a NUL
    assert check_json({"a": "\\u0000"}, "metadata", max_bytes=100) == '{"a": "\\\\u0000"}'


def test_check_int():
    assert check_int(5, "index", low=0, high=INT32_MAX) == 5
    assert check_int(INT32_MAX, "index", low=0, high=INT32_MAX) == INT32_MAX
    for bad in (99_999_999_999, -1, 2**31, True, 1.5, "5", None):
        with pytest.raises(ValidationError, match=r"^index: "):
            check_int(bad, "index", low=0, high=INT32_MAX)
    with pytest.raises(ValidationError, match=r"^priority: "):
        check_int(2**70, "priority")


def test_check_range_rejects_nan_and_bools():
    for bad in (float("nan"), True, "0.5"):
        with pytest.raises(ValidationError, match=r"^confidence: "):
            check_range(bad, "confidence", 0.0, 1.0)


def test_check_channels_rejects_wrong_types():
    assert check_channels("proj-a") == ["proj-a", "_global"]
    assert check_channels(None) == ["_global"]
    for bad in (5, b"proj", {"proj": 1}, ["proj", 5], ["\ud800"]):
        with pytest.raises(ValidationError, match=r"^channels: "):
            check_channels(bad)


def test_check_datetime():
    assert check_datetime(datetime(2024, 5, 1), "timestamp") == datetime(2024, 5, 1, tzinfo=UTC)
    plus5 = timezone(timedelta(hours=5))
    for bad in (datetime(1, 1, 1, tzinfo=plus5), datetime(1, 1, 1), datetime(9999, 12, 31, tzinfo=UTC), "2024-05-01",
                None):
        with pytest.raises(ValidationError, match=r"^timestamp: "):
            check_datetime(bad, "timestamp")
