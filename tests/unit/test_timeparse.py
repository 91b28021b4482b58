"""Time phrases read relative to a fixed reference time (self-query): every phrase family, anchors and edges."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from agentx_memory.retrieval.timeparse import TimeRange, parse_time_phrases

#: A Wednesday afternoon.
NOW = datetime(2024, 3, 20, 15, 30, tzinfo=UTC)


def d(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def one(text: str, now: datetime = NOW) -> tuple[datetime, datetime, str]:
    """The single range read from ``text``: (start, end, phrase)."""
    ranges = parse_time_phrases(text, now)
    assert len(ranges) == 1, ranges
    return ranges[0].start, ranges[0].end, ranges[0].phrase


# --- days ----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "start", "end"), [
    ("What did we do today?", d(2024, 3, 20), d(2024, 3, 21)),
    ("Where are we going tonight?", d(2024, 3, 20), d(2024, 3, 21)),
    ("What did I eat this morning?", d(2024, 3, 20), d(2024, 3, 21)),
    ("Who called this evening?", d(2024, 3, 20), d(2024, 3, 21)),
    ("What did I say yesterday?", d(2024, 3, 19), d(2024, 3, 21)),  # yesterday, and today (said late, or loosely)
    ("What happened the day before yesterday?", d(2024, 3, 18), d(2024, 3, 19)),
])
def test_named_days(text, start, end):
    assert one(text)[:2] == (start, end)


def test_the_day_before_yesterday_is_not_also_yesterday():
    assert one("the day before yesterday")[2] == "the day before yesterday"


@pytest.mark.parametrize(("text", "day"), [
    ("What did Caroline do last Monday?", d(2024, 3, 18)),
    ("I saw her on Friday", d(2024, 3, 15)),
    ("this past Sunday", d(2024, 3, 17)),
    ("last Wednesday", d(2024, 3, 13)),  # today is a Wednesday: the one before, not today
])
def test_weekdays_are_the_most_recent_one_before_today(text, day):
    assert one(text)[:2] == (day, day + timedelta(days=1))


# --- relative units ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["last week", "this week", "previous week", "last weekend", "this weekend"])
def test_last_or_this_week_is_the_last_fourteen_days(text):
    assert one(f"What did we talk about {text}?")[:2] == (NOW - timedelta(days=14), d(2024, 3, 21))


@pytest.mark.parametrize("text", ["last month", "this month", "previous month"])
def test_last_or_this_month_is_the_last_forty_five_days(text):
    assert one(text)[:2] == (NOW - timedelta(days=45), d(2024, 3, 21))


@pytest.mark.parametrize(("text", "start", "end"), [
    ("next week", d(2024, 3, 25), d(2024, 4, 1)),  # the calendar week after this one, Monday to Monday
    ("coming week", d(2024, 3, 25), d(2024, 4, 1)),
    ("next weekend", d(2024, 3, 30), d(2024, 4, 1)),
    ("next month", d(2024, 4, 1), d(2024, 5, 1)),
    ("last year", d(2023, 1, 1), d(2024, 1, 1)),
    ("this year", d(2024, 1, 1), d(2025, 1, 1)),
    ("next year", d(2025, 1, 1), d(2026, 1, 1)),
])
def test_calendar_units(text, start, end):
    assert one(text)[:2] == (start, end)


@pytest.mark.parametrize(("text", "now", "start", "end"), [
    ("next week", d(2023, 12, 28, 9), d(2024, 1, 1), d(2024, 1, 8)),  # across the new year
    ("next month", d(2023, 12, 15), d(2024, 1, 1), d(2024, 2, 1)),
    ("next month", d(2024, 1, 31, 23, 59), d(2024, 2, 1), d(2024, 3, 1)),  # from the 31st: February, not March
    ("next weekend", d(2024, 3, 31, 12), d(2024, 4, 6), d(2024, 4, 8)),  # on a Sunday: the coming one
])
def test_calendar_units_across_month_and_year_boundaries(text, now, start, end):
    assert one(text, now)[:2] == (start, end)


# --- N units ago, within the last N units, recently ------------------------------------------------------------------

@pytest.mark.parametrize(("text", "start", "end"), [
    ("two weeks ago", d(2024, 3, 2), d(2024, 3, 11)),  # 6 March, give or take 4 days
    ("3 days ago", d(2024, 3, 16), d(2024, 3, 19)),  # 17 March, give or take a day
    ("a couple of days ago", d(2024, 3, 17), d(2024, 3, 20)),
    ("a month ago", d(2024, 2, 4), d(2024, 3, 8)),  # 20 February, give or take 16 days
    ("a few months ago", d(2023, 12, 4), d(2024, 1, 6)),
    ("several weeks ago", d(2024, 2, 24), d(2024, 3, 4)),
    ("one year ago", d(2023, 3, 20) - timedelta(days=183), d(2023, 3, 20) + timedelta(days=184)),
])
def test_n_units_ago_is_a_window_around_that_day(text, start, end):
    assert one(f"What did I mention {text}?")[:2] == (start, end)


@pytest.mark.parametrize(("text", "delta"), [
    ("in the last 3 days", timedelta(days=3)),
    ("over the past two weeks", timedelta(weeks=2)),
    ("within the last 1 month", timedelta(days=29)),  # February 2024 has 29 days: calendar months, not 30 days
    ("during the past 2 years", timedelta(days=365 + 366)),
])
def test_within_the_last_n_units_runs_up_to_now(text, delta):
    assert one(text)[:2] == (NOW - delta, NOW + timedelta(seconds=1))


@pytest.mark.parametrize("word", ["recently", "lately", "these days"])
def test_recently_is_the_last_thirty_days(word):
    assert one(f"What has Mel been up to {word}?")[:2] == (NOW - timedelta(days=30), NOW + timedelta(seconds=1))


# --- dates, months, years ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "day"), [
    ("What happened on 2023-05-08?", d(2023, 5, 8)),
    ("on June 3rd", d(2023, 6, 3)),  # June is after March: last year's
    ("on March 5", d(2024, 3, 5)),  # March is this month: this year's
    ("Jan. 2nd", d(2024, 1, 2)),
    ("on March 5, 2022", d(2022, 3, 5)),
    ("8 May 2023", d(2023, 5, 8)),
    ("the 3rd of June, 2023", d(2023, 6, 3)),
    ("on Feb 29", d(2024, 2, 29)),  # 2024 is a leap year
])
def test_named_dates_cover_the_day_before_and_after(text, day):
    assert one(text)[:2] == (day - timedelta(days=1), day + timedelta(days=2))


def test_without_a_count_the_last_month_is_last_month():
    assert one("within the last month")[:2] == one("last month")[:2]


@pytest.mark.parametrize("text", ["on February 30", "on Feb 29, 2023"])
def test_impossible_dates_are_no_phrase(text):
    assert parse_time_phrases(text, NOW) == []


def test_an_impossible_day_with_a_year_falls_back_to_the_month():
    assert one("31 April 2023")[:2] == (d(2023, 4, 1), d(2023, 5, 8))


def test_a_day_and_month_without_a_year_take_the_year_of_its_last_occurrence():
    assert one("on Feb 29", d(2024, 3, 1))[:2] == (d(2024, 2, 28), d(2024, 3, 2))
    assert parse_time_phrases("on Feb 29", d(2025, 3, 1)) == []  # 2025 has no 29 February
    assert one("on Dec 31", d(2024, 1, 1))[:2] == (d(2023, 12, 30), d(2024, 1, 2))  # across the year


@pytest.mark.parametrize(("text", "start", "end"), [
    ("in May 2023", d(2023, 5, 1), d(2023, 6, 8)),  # the month and the week after it
    ("during December 2023", d(2023, 12, 1), d(2024, 1, 8)),  # the extra week crosses the year
    ("around February 2024", d(2024, 2, 1), d(2024, 3, 8)),
    ("Sept 2022", d(2022, 9, 1), d(2022, 10, 8)),
    ("in the month of July 2021", d(2021, 7, 1), d(2021, 8, 8)),
])
def test_a_month_with_a_year(text, start, end):
    assert one(text)[:2] == (start, end)


@pytest.mark.parametrize(("text", "start", "end"), [
    ("What did we do in May?", d(2023, 5, 1), d(2023, 6, 8)),  # May is still ahead this year: last year's
    ("during March", d(2024, 3, 1), d(2024, 4, 8)),  # the current month: this year's
    ("in January", d(2024, 1, 1), d(2024, 2, 8)),
])
def test_a_month_without_a_year_is_its_last_occurrence(text, start, end):
    assert one(text)[:2] == (start, end)


def test_may_alone_is_not_a_month():
    assert parse_time_phrases("May I ask what you did?", NOW) == []


@pytest.mark.parametrize(("text", "year"), [("in 2022", 2022), ("since 1999", 1999), ("during 2024", 2024)])
def test_years(text, year):
    assert one(text)[:2] == (d(year, 1, 1), d(year + 1, 1, 1))


def test_a_bare_number_is_no_year():
    assert parse_time_phrases("I ran 2022 meters", NOW) == []


# --- several phrases, none, anchors --------------------------------------------------------------------------------

def test_no_phrase_no_range():
    assert parse_time_phrases("What did Caroline say about the harp?", NOW) == []
    assert parse_time_phrases("", NOW) == []


def test_several_phrases_come_back_in_text_order_with_their_phrase():
    ranges = parse_time_phrases("Did I go there in 2022 or last week?", NOW)
    assert [r.phrase for r in ranges] == ["in 2022", "last week"]


def test_overlapping_matches_keep_the_more_specific_reading():
    # "in May 2023" also contains "in May"; the month-with-year rule reads it, once
    assert one("in May 2023")[2] == "in May 2023"
    # "on March 5, 2022" is one date, not also "March ... 2022"
    assert one("on March 5, 2022")[:2] == (d(2022, 3, 4), d(2022, 3, 7))


def test_phrases_are_matched_in_any_case_and_keep_their_text():
    assert one("What did we do LAST WEEK?")[2] == "LAST WEEK"


def test_a_naive_reference_time_is_utc():
    assert one("yesterday", datetime(2024, 3, 20, 15, 30)) == one("yesterday")


def test_the_reference_time_keeps_its_zone_offset():
    tz = timezone(timedelta(hours=2))
    start, end, _ = one("today", datetime(2024, 3, 20, 1, 0, tzinfo=tz))
    assert start == datetime(2024, 3, 20, tzinfo=tz) and end - start == timedelta(days=1)


def test_without_a_reference_time_phrases_are_read_against_now():
    before = datetime.now(UTC)
    start, end, _ = one_without_reference("today")
    assert start <= before < end


def one_without_reference(text: str) -> tuple[datetime, datetime, str]:
    (found,) = parse_time_phrases(text)
    return found.start, found.end, found.phrase


def test_a_range_is_half_open():
    r = TimeRange(d(2024, 3, 1), d(2024, 3, 2), "x")
    assert r.contains(d(2024, 3, 1)) and r.contains(d(2024, 3, 1, 23, 59))
    assert not r.contains(d(2024, 3, 2)) and not r.contains(d(2024, 2, 29, 23, 59))


@pytest.mark.parametrize("text", [
    "what happened 99999999999999999999 days ago", "in the last 99999999999999999999 days", "1000000 weeks ago",
    "on 0001-01-01", "on 9999-12-31",
])
def test_a_phrase_beyond_the_calendar_reads_as_no_time_range(text):
    """A time phrase that names a day outside what dates can hold is not a filter (it raised a raw OverflowError
    out of remember(), found by the injection corpus)."""
    assert parse_time_phrases(text, NOW) == []


@pytest.mark.parametrize("text", [
    "What did Nate make on 9 November, 2022?", "Where was I on March 5?", "What happened in May 2023?",
    "What did I learn in 2023?", "What did we do in December?", "Notes from 2024-03-08",
    "What did I start during September 2023?",
])
def test_a_named_date_month_or_year_names_the_calendar(text):
    (found,) = parse_time_phrases(text, NOW)
    assert found.calendar, found


@pytest.mark.parametrize("text", [
    "What did Nate cook recently?", "What did we do last week?", "What did I say yesterday?",
    "What happened two days ago?", "Where was I last Friday?", "What changed in the last 3 months?",
    "What are we doing next month?", "What did I eat this morning?",
])
def test_a_phrase_read_from_the_reference_time_does_not_name_the_calendar(text):
    (found,) = parse_time_phrases(text, NOW)
    assert not found.calendar, found
