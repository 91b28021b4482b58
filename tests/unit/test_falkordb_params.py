"""The FalkorDB adapter writes embeddings into the ``CYPHER`` params header itself (``json`` in C, not the client's
float-by-float ``stringify_param_value``); the text the server reads must be exactly the client's."""

from __future__ import annotations

from falkordb.helpers import stringify_param_value

from agentx_memory.graph.falkordb import _prerender

ROWS = {
    "rows": [
        {"id": "t-1", "embedding": [0.25, -1.0, 1e-05, 3.0e20, -0.0, 0.1 + 0.2], "content": 'say "hi" \\\\ there',
         "index": 3, "archived": False, "speaker": None, "tags": ["a", "b"]},
        {"id": "t-2", "embedding": [1.0], "mixed": [1, 2.5], "nested": [[0.5, 0.25], ["x"]], "scores": (0.5, 0.75)},
    ],
    "embedding": [0.125] * 384,
    "empty": [],
    "user_id": "alice",
}


def test_prerendered_params_read_exactly_as_the_client_writes_them():
    for key, value in ROWS.items():
        assert stringify_param_value(_prerender(value)) == stringify_param_value(value), key


def test_only_lists_of_floats_are_prerendered():
    out = _prerender(ROWS)
    assert type(out["embedding"]).__name__ == "_Rendered"
    row = out["rows"][1]
    assert row["mixed"] == [1, 2.5] and row["nested"][1] == ["x"]  # left to the client
    assert out["rows"][0]["tags"] == ["a", "b"] and out["empty"] == []


def test_a_vector_changed_in_place_is_written_with_its_new_values():
    """Rendered vectors are reused by their values (one recall sends its question's vector to several statements),
    never by the list's identity: a list changed in place must not send its old values."""
    vector = [0.5] * 384
    first = str(_prerender({"embedding": vector})["embedding"])
    assert str(_prerender({"embedding": list(vector)})["embedding"]) == first
    vector[7] = -0.25
    again = str(_prerender({"embedding": vector})["embedding"])
    assert again != first and again == stringify_param_value(vector)


def test_vectors_equal_in_value_but_not_in_their_zeros_are_written_each_as_it_is():
    positive, negative = [0.0, 0.5], [-0.0, 0.5]
    assert str(_prerender({"e": positive})["e"]) == stringify_param_value(positive)
    assert str(_prerender({"e": negative})["e"]) == stringify_param_value(negative) == "[-0.0, 0.5]".replace(" ", "")
