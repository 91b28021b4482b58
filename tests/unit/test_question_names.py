"""The names a question says (``mentioned_names``) and the other names of the entities they resolve to, which recall
searches too (``unsaid_names``)."""

from __future__ import annotations

from agentx_memory.retrieval.query import mentioned_names, unsaid_names


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


def test_a_common_word_that_starts_a_sentence_is_no_name():
    # "Any Lena" was read as one name, which no entity or participant is called
    assert mentioned_names("Any news from Lena?") == ["Lena"]
    assert mentioned_names("Any Lena news?") == ["Lena"]
    assert mentioned_names("Any vegetarian restaurant tips I liked?") == []
    assert mentioned_names("For how long has Nate had his turtles?") == ["Nate"]
    assert mentioned_names("Did Caroline go? Both Melanie and Caroline went.") == ["Caroline", "Melanie"]


def test_names_that_are_no_common_words_stay_names_wherever_they_stand():
    assert mentioned_names("Caroline and Melanie went hiking with Jon") == ["Caroline", "Melanie", "Jon"]
    assert mentioned_names("Would Tim enjoy books by C. S. Lewis?") == ["Tim", "C", "S", "Lewis"]
    # a common word inside a sentence keeps its capital for a reason ("The Any Day Cafe" is a place)
    assert mentioned_names("We went to The Any Day Cafe") == ["Any Day Cafe"]


def test_the_turns_search_the_other_names_and_the_facts_full_text_the_question_alone():
    from datetime import UTC, datetime

    from agentx_memory.retrieval.plan import LEXICAL_TEXT_BYTES, SearchPlan

    plan = SearchPlan(query="What did Bob say?", user_id="u", channels=["_global"], top_k=5,
                      lexical_texts=["What did Bob say?"], vectors=[], reference_time=datetime.now(UTC),
                      other_names=["Robert Hale", "Rob"])
    assert plan.turn_text() == "What did Bob say? Robert Hale Rob"
    assert plan.lexical_texts == ["What did Bob say?"]
    long = SearchPlan(query="q", user_id="u", channels=["_global"], top_k=5, lexical_texts=["x" * LEXICAL_TEXT_BYTES],
                      vectors=[], reference_time=datetime.now(UTC), other_names=["Robert"])
    assert len(long.turn_text().encode()) <= LEXICAL_TEXT_BYTES
