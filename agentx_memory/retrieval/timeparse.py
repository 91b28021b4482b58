"""Rule-based self-query for time: find common time phrases in a question and turn them into a UTC range.

Phrases are read relative to a reference time ("now"; an agent replaying an old conversation, or a benchmark, sets
it). Recognized:

* ``today``, ``yesterday``, ``the day before yesterday``, ``tonight``, ``this morning``
* ``last|this|next week|month|year|weekend``, ``last <weekday>``, ``on <weekday>``
* ``N days|weeks|months|years ago`` (digits or words: "two weeks ago", "a month ago", "a couple of days ago")
* ``in the last|past N days|weeks|months``, ``recently`` / ``lately`` (the last 30 days)
* ``in|during <Month> [<Year>]``, ``in <Year>``, ``on <Month> <day>[, <Year>]``, ``<day> <Month> <Year>``,
  ISO dates ``2023-05-08``

Each match becomes a :class:`TimeRange` with the phrase that produced it and whether that phrase names the calendar
(a date, a month, a year: ``calendar=True``) or is read from the reference time ("recently", "last week", "two days
ago", a weekday). Recall weighs the two apart (``recall.date_weight``, ``recall.time_weight``): a named date says
when something happened wherever the question is asked from, while a relative phrase is only as good as the
reference time (in the dev sets it often counts from when the event was discussed, not from the end of the
conversation). Ranges are half-open ``[start, end)`` and deliberately lenient, because people use these phrases
loosely and a range only boosts what falls inside it: a named day covers the day before and after, "last/this week"
the last 14 days, "last/this month" the last 45 days, a named month runs 7 days past its end. (These windows were
validated on LoCoMo: docs/benchmarks.md.)
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from dateutil.relativedelta import relativedelta

__all__ = ["TimeRange", "parse_time_phrases"]

_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a few": 3, "few": 3, "several": 3,
}
_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
_MONTHS["sept"] = 9  # the pattern accepts it; without this entry "Sept 2022" matched and then read as nothing
_WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}

_NUM = r"(\d+|a couple of|a few|few|several|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_UNIT = r"(day|week|month|year)s?"
_MONTH = (r"(january|february|march|april|may|june|july|august|september|october|november|december"
          r"|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)")
_WEEKDAY = r"(monday|tuesday|wednesday|thursday|friday|saturday|sunday)"


@dataclass(frozen=True)
class TimeRange:
    """A UTC time range ``[start, end)`` and the phrase it was read from."""

    start: datetime
    end: datetime
    phrase: str
    #: Whether the phrase names the calendar (a date, month or year) rather than counting from the reference time.
    calendar: bool = False

    def contains(self, moment: datetime) -> bool:
        """Whether ``moment`` falls inside the range."""
        return self.start <= moment < self.end


def _day(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _count(text: str) -> int:
    return int(text) if text.isdigit() else _NUMBERS[text]


def _unit_range(now: datetime, unit: str, offset: int) -> tuple[datetime, datetime]:
    """The calendar ``unit`` (day/week/month/year) ``offset`` units from the one containing ``now``."""
    today = _day(now)
    if unit == "day":
        start = today + timedelta(days=offset)
        return start, start + timedelta(days=1)
    if unit == "week":
        start = today - timedelta(days=today.weekday()) + timedelta(weeks=offset)
        return start, start + timedelta(weeks=1)
    if unit == "month":
        start = today.replace(day=1) + relativedelta(months=offset)
        return start, start + relativedelta(months=1)
    start = today.replace(month=1, day=1) + relativedelta(years=offset)
    return start, start + relativedelta(years=1)


def _ago(now: datetime, n: int, unit: str) -> tuple[datetime, datetime]:
    """``n`` units ago, with a tolerance of about one unit either side (people round)."""
    delta = {"day": relativedelta(days=n), "week": relativedelta(weeks=n), "month": relativedelta(months=n),
             "year": relativedelta(years=n)}[unit]
    center = _day(now) - delta
    slack = {"day": timedelta(days=1), "week": timedelta(days=4), "month": timedelta(days=16),
             "year": timedelta(days=183)}[unit]
    return center - slack, center + slack + timedelta(days=1)


def _month_range(month: int, year: int) -> tuple[datetime, datetime]:
    """A named month, and the week after it (things get mentioned a little after they happen)."""
    start = datetime(year, month, 1, tzinfo=UTC)
    return start, start + relativedelta(months=1) + timedelta(days=7)


def _year_for_month(now: datetime, month: int) -> int:
    """A month named without a year means its most recent occurrence up to now."""
    return now.year if month <= now.month else now.year - 1


_Range = tuple[datetime, datetime]
#: A rule reads a match relative to "now": a ``[start, end)`` range, or None when the match is no date after all.
_Rule = Callable[[datetime, "re.Match[str]"], _Range | None]
#: Every rule: its pattern, its reading, and whether its phrases name the calendar.
_RULES: list[tuple[re.Pattern[str], _Rule, bool]] = []


def _rule(pattern: str, *, names_calendar: bool = False) -> Callable[[_Rule], _Rule]:
    def register(func: _Rule) -> _Rule:
        _RULES.append((re.compile(pattern, re.IGNORECASE), func, names_calendar))
        return func
    return register


def _named_day(day: datetime) -> tuple[datetime, datetime]:
    """A named date, give or take a day."""
    return day - timedelta(days=1), day + timedelta(days=2)


@_rule(r"\b(\d{4})-(\d{2})-(\d{2})\b", names_calendar=True)
def _iso(now: datetime, m: re.Match[str]) -> _Range | None:
    return _named_day(datetime(int(m[1]), int(m[2]), int(m[3]), tzinfo=UTC))


@_rule(r"\bthe day before yesterday\b")
def _day_before(now: datetime, m: re.Match[str]) -> _Range | None:
    return _unit_range(now, "day", -2)


@_rule(r"\byesterday\b")
def _yesterday(now: datetime, m: re.Match[str]) -> _Range | None:
    start, _ = _unit_range(now, "day", -1)
    return start, _day(now) + timedelta(days=1)


@_rule(r"\b(today|tonight|this morning|this afternoon|this evening)\b")
def _today(now: datetime, m: re.Match[str]) -> _Range | None:
    return _unit_range(now, "day", 0)


@_rule(rf"\b(?:in|over|during|within) the (?:last|past) {_NUM} {_UNIT}\b")
def _within(now: datetime, m: re.Match[str]) -> _Range | None:
    n, unit = _count(m[1].lower()), m[2].lower()
    delta = {"day": relativedelta(days=n), "week": relativedelta(weeks=n), "month": relativedelta(months=n),
             "year": relativedelta(years=n)}[unit]
    return now - delta, now + timedelta(seconds=1)


@_rule(rf"\b{_NUM} {_UNIT} ago\b")
def _n_ago(now: datetime, m: re.Match[str]) -> _Range | None:
    return _ago(now, _count(m[1].lower()), m[2].lower())


@_rule(r"\b(last|this|next|previous|coming) (week|month|year|weekend)\b")
def _relative_unit(now: datetime, m: re.Match[str]) -> _Range | None:
    which, unit = m[1].lower(), m[2].lower()
    offset = {"last": -1, "previous": -1, "this": 0, "next": 1, "coming": 1}[which]
    if offset <= 0 and unit in ("week", "weekend"):
        return now - timedelta(days=14), _day(now) + timedelta(days=1)
    if offset <= 0 and unit == "month":
        return now - timedelta(days=45), _day(now) + timedelta(days=1)
    if unit == "weekend":
        monday, _ = _unit_range(now, "week", offset)
        start = monday + timedelta(days=5)
        return start, start + timedelta(days=2)
    return _unit_range(now, unit, offset)


@_rule(rf"\b(?:last|on|this past) {_WEEKDAY}\b")
def _weekday(now: datetime, m: re.Match[str]) -> _Range | None:
    target = _WEEKDAYS[m[1].lower()]
    back = (now.weekday() - target) % 7 or 7
    start = _day(now) - timedelta(days=back)
    return start, start + timedelta(days=1)


@_rule(r"\b(recently|lately|these days)\b")
def _recently(now: datetime, m: re.Match[str]) -> _Range | None:
    return now - timedelta(days=30), now + timedelta(seconds=1)


@_rule(rf"\b(?:on )?{_MONTH}\.? (\d{{1,2}})(?:st|nd|rd|th)?(?:,? (\d{{4}}))?\b", names_calendar=True)
def _month_day(now: datetime, m: re.Match[str]) -> _Range | None:
    month, day = _MONTHS[m[1].lower()], int(m[2])
    year = int(m[3]) if m[3] else _year_for_month(now, month)
    if day > calendar.monthrange(year, month)[1]:
        return None
    return _named_day(datetime(year, month, day, tzinfo=UTC))


@_rule(rf"\b(\d{{1,2}})(?:st|nd|rd|th)? (?:of )?{_MONTH},? (\d{{4}})\b", names_calendar=True)
def _day_month_year(now: datetime, m: re.Match[str]) -> _Range | None:
    day, month, year = int(m[1]), _MONTHS[m[2].lower()], int(m[3])
    if day > calendar.monthrange(year, month)[1]:
        return None
    return _named_day(datetime(year, month, day, tzinfo=UTC))


@_rule(rf"\b(?:in|during|since|by|of|from|around|early|late|mid|mid-) ?(?:the )?(?:month of )?{_MONTH},? (\d{{4}})\b"
       rf"|\b{_MONTH} (\d{{4}})\b", names_calendar=True)
def _month_year(now: datetime, m: re.Match[str]) -> _Range | None:
    name = (m[1] or m[3]).lower()
    year = int(m[2] or m[4])
    return _month_range(_MONTHS[name], year)


@_rule(rf"\b(?:in|during) {_MONTH}\b", names_calendar=True)
def _month_only(now: datetime, m: re.Match[str]) -> _Range | None:
    month = _MONTHS[m[1].lower()]
    return _month_range(month, _year_for_month(now, month))


@_rule(r"\b(?:in|during|since) (19\d\d|20\d\d)\b", names_calendar=True)
def _year(now: datetime, m: re.Match[str]) -> _Range | None:
    start = datetime(int(m[1]), 1, 1, tzinfo=UTC)
    return start, start + relativedelta(years=1)


def parse_time_phrases(text: str, reference_time: datetime | None = None) -> list[TimeRange]:
    """Every time phrase in ``text`` as a UTC range relative to ``reference_time`` (default: now).

    Overlapping matches keep the first (most specific) rule's reading.
    """
    now = reference_time or datetime.now(UTC)
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, TimeRange]] = []
    for pattern, func, names_calendar in _RULES:
        for match in pattern.finditer(text):
            span = match.span()
            if any(span[0] < end and start < span[1] for start, end in taken):
                continue
            result = _read(func, now, match)
            if result is not None:
                taken.append(span)
                found.append((span[0], TimeRange(result[0], result[1], match.group(0), names_calendar)))
    return [r for _, r in sorted(found, key=lambda x: x[0])]


def _read(rule: _Rule, now: datetime, match: re.Match[str]) -> _Range | None:
    """A rule's reading of a match; None when the match names no real date ("February 30") or one beyond the
    calendar ("99999999999999999999 days ago", "on 0001-01-01" read around it)."""
    try:
        return rule(now, match)
    except (ValueError, KeyError, OverflowError):
        return None
