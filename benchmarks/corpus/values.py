"""Values that are not personal: dates, amounts, colours; formatted the ways people write them."""

from __future__ import annotations

import datetime as dt
import random

_BASE = dt.date(2026, 3, 2)


def day(rng: random.Random, within: int = 60) -> dt.date:
    return _BASE + dt.timedelta(days=rng.randrange(within))


def date_text(rng: random.Random, when: dt.date | None = None) -> str:
    when = when or day(rng)
    style = rng.randrange(4)
    if style == 0:
        return when.strftime("%A %d %B").replace(" 0", " ")
    if style == 1:
        return when.strftime("%B %d").replace(" 0", " ")
    if style == 2:
        return when.strftime("%d %b").lstrip("0")
    return when.isoformat()


def money(rng: random.Random, low: float, high: float, cents: bool) -> float:
    if cents:
        value = round(rng.uniform(low, high), 2)
        return value if round(value % 1, 2) else value + 0.5
    return float(rng.randrange(int(low), int(high) + 1))


def money_text(amount: float, symbol: str = "$") -> str:
    return f"{symbol}{amount:,.2f}" if amount % 1 else f"{symbol}{int(amount):,}"
