"""``ingest_file`` reports every bad line by number and stores all the good ones (issue 11 item 7).

One bad line (a lone surrogate, NUL in metadata or user_id, an index beyond PostgreSQL's INTEGER, bytes that are not
UTF-8) used to abort the whole ingest with nothing stored: a raw UnicodeEncodeError, a psycopg error for the whole
batch, or a ValidationError for the whole file.
"""

from __future__ import annotations

import json
from typing import Any

from agentx_memory.ingest import ingest_file
from tests.conftest import gread, sql


def _line(n: int, **overrides: Any) -> str:
    record = {"user_id": "alice", "conversation_id": "imp", "role": "user", "content": f"imported message {n}",
              "timestamp": "2024-05-01T10:00:00Z", "metadata": {"n": n}}
    record.update(overrides)
    return json.dumps(record)  # ensure_ascii: lone surrogates and NUL travel as \\uXXXX escapes, as real files have


BAD_LINES: dict[int, tuple[bytes, str]] = {
    2: (_line(2, content="caf\udce9").encode(), "content"),
    4: (_line(4, metadata={"note": "a\x00b"}).encode(), "metadata"),
    5: (_line(5, user_id="ali\x00ce").encode(), "user_id"),
    6: (_line(6, index=99_999_999_999).encode(), "index"),
    7: (_line(7, token_count=-5).encode(), "token_count"),
    8: (b'{"user_id": "alice", "content": "caf\xe9"}', "UTF-8"),
    9: (_line(9, id=" t9").encode(), "id"),
    10: (_line(10, metadata={"\ud800": 1}).encode(), "metadata"),
    11: (_line(11).replace('"n": 11', '"n": NaN').encode(), "metadata"),
    12: (_line(12, conversation_id="imp\n").encode(), "conversation_id"),
    # nested deeper than json, pydantic or a copy recurse: a raw RecursionError aborted the file (property suite)
    14: (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    15: (_line(15).replace('"n": 15', '"n": ' + "[" * 600 + "]" * 600).encode(), "metadata"),
}
GOOD_LINES = (1, 3, 13)


def test_ingest_skips_each_bad_line_and_stores_the_good_ones(memory, tmp_path):
    lines = [BAD_LINES[n][0] if n in BAD_LINES else _line(n).encode() for n in range(1, 16)]
    path = tmp_path / "turns.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")

    report = memory._portal.run(ingest_file(memory.core, path))

    assert report.stored == len(GOOD_LINES)
    assert [number for number, _ in report.skipped] == sorted(BAD_LINES)
    for number, reason in report.skipped:
        assert BAD_LINES[number][1] in reason, (number, reason)
    stored = sql(memory, "SELECT content FROM conversation_logs ORDER BY turn_index")
    assert [r["content"] for r in stored] == [f"imported message {n}" for n in GOOD_LINES]
    assert len(gread(memory, "MATCH (t:Turn) RETURN t.id AS id")) == len(GOOD_LINES)


def test_one_bad_line_in_a_batch_does_not_hold_back_the_batch(memory, tmp_path):
    path = tmp_path / "turns.jsonl"
    lines = [_line(n, conversation_id=f"c{n}") for n in range(1, 6)]
    lines[2] = _line(3, conversation_id="c3", index=2**31)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = memory._portal.run(ingest_file(memory.core, path, batch_size=10))
    assert report.stored == 4
    assert [number for number, _ in report.skipped] == [3]
    assert sql(memory, "SELECT count(*) AS n FROM conversation_logs")[0]["n"] == 4
