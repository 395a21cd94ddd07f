"""Facts from user turns without a judge: de-identification tokens and a few plain patterns.

A user turn with `<EMAIL_ADDRESS_...>` has given an e-mail address; "my name is ...", "I'm allergic
to ..." give themselves away. Only user turns that look informative and yield nothing here are
sent to the judge for extraction.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from turnwatch.scorers.judge.view import Line
from turnwatch.scorers.phrases import tokens

_FLAGS = re.IGNORECASE
_VALUE = r"([^.,;!?\n]{1,60})"
PATTERNS = [
    re.compile(r"\bmy ([a-z][a-z ]{1,30}?) (?:is|are|was|were) " + _VALUE, _FLAGS),
    re.compile(r"\bi(?:'m| am) (allergic to|vegetarian|vegan|based in|from|in) ?" + _VALUE, _FLAGS),
    re.compile(r"\bi (live|work|stay) (?:in|at|for) " + _VALUE, _FLAGS),
    re.compile(r"\bi (?:don'?t|do not|can'?t|cannot) (eat|drink|use|travel|fly) " + _VALUE, _FLAGS),
    re.compile(r"\bcall me " + _VALUE, _FLAGS),
]
# Turns worth asking a judge about: numbers, or the user talking about themselves.
INFORMATIVE = re.compile(
    r"\d|\b(my|our|i am|i'm|i was|i have|i've|we have|we're|i live|i work|i prefer|i like|"
    r"i need it|allergic|budget|deadline)\b",
    _FLAGS,
)
MIN_INFORMATIVE_CHARS = 15


@dataclass(frozen=True, slots=True)
class Fact:
    turn: int
    text: str
    source: str  # "token", "pattern" or "judge"


def extract(lines: list[Line]) -> tuple[list[Fact], list[Line]]:
    """(facts found without a judge, user turns that need one)."""
    facts: list[Fact] = []
    undetermined: list[Line] = []
    for line in lines:
        if line.role.value != "user":
            continue
        found = [
            Fact(line.index, f"{entity}: {token}", "token") for token, entity in tokens(line.text)
        ]
        for pattern in PATTERNS:
            for match in pattern.finditer(line.text):
                found.append(Fact(line.index, " ".join(match.groups()).strip(), "pattern"))
        if found:
            facts.extend(found)
        elif len(line.text) >= MIN_INFORMATIVE_CHARS and INFORMATIVE.search(line.text):
            undetermined.append(line)
    return facts, undetermined
