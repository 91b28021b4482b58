"""``unsaid_names``: the other names of the entities a question's names resolved to, which recall searches too."""

from __future__ import annotations

from agentx_memory.retrieval.query import unsaid_names


def test_the_names_the_question_does_not_say_are_added_once_in_order():
    entities = [{"name": "Robert Hale", "aliases": ["Bob", "Rob", "bob"]},
                {"name": "Maya Costa", "aliases": ["Maya", "robert hale"]}]
    assert unsaid_names("What did Bob tell Maya?", entities) == ["Robert Hale", "Rob", "Maya Costa"]


def test_names_compare_as_whole_words_ignoring_case():
    # "Al" is not said by "also"; "MAYA" is said by "maya"
    entities = [{"name": "Al", "aliases": []}, {"name": "maya", "aliases": None}]
    assert unsaid_names("Did MAYA also come?", entities) == ["Al"]


def test_blank_or_missing_names_are_skipped():
    assert unsaid_names("Who is Bob?", [{"name": "  ", "aliases": ["", "Bob"]}, {"aliases": ["Robert"]}]) == [
        "Robert"]
    assert unsaid_names("Who is Bob?", []) == []


def test_names_with_regex_characters_are_matched_literally():
    entities = [{"name": "C++ (the language)", "aliases": ["C++"]}]
    assert unsaid_names("What did I say about C++?", entities) == ["C++ (the language)"]
