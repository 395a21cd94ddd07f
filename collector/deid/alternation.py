"""One pattern finding any of a session's known values as whole words, in any case.

It is built for every session, so its compile time counts: the `regex` module compiles a
long alternation at about a quarter of a millisecond per alternative, and a session's people
alone make a hundred or more (every variant of every name). Only the values that occur in the
session's texts go in. The pattern matches a value only where the text's characters equal the
value's under case folding, so where it matches, the text's case-folded words (white space
aside) hold the value's: a value not found that way in any text can match nowhere, and
leaving it out changes no match. The others keep their order, longest first.
"""

from __future__ import annotations

from collections.abc import Iterable

import regex


def whole_words(values: Iterable[str], texts: Iterable[str]) -> regex.Pattern[str] | None:
    """`values` as whole words, case-insensitive, any white space between their words; None
    when no value occurs in `texts`."""
    folded = "\n".join(" ".join(text.casefold().split()) for text in texts)
    present = [
        value
        for value in sorted(values, key=len, reverse=True)
        if " ".join(value.casefold().split()) in folded
    ]
    if not present:
        return None
    alternatives = "|".join(regex.escape(value).replace(r"\ ", r"\s+") for value in present)
    return regex.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", regex.IGNORECASE)
