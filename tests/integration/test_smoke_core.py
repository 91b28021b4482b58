from agentx_memory import Turn


def test_store_and_read_a_turn(memory):
    stored = memory.store_turn(
        Turn(conversation_id="c1", user_id="alice", content="I live in Lisbon", metadata={"k": [1, 2]})
    )
    assert stored.index == 0
    conv = memory.get_conversation("c1", user_id="alice")
    assert [t.content for t in conv] == ["I live in Lisbon"]
    assert conv[0].metadata == {"k": [1, 2]}
