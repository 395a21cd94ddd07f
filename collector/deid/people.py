"""Every mention of a person in a session gets that person's token.

The recognizers see one text at a time: "Maria Garcia" in the user's first message, then
"Thanks, Maria!" or "Ms Garcia" or "maria's order" later, which nothing tags alone. Here the
names found anywhere in the session (text, tool arguments, tool results) are grouped into
people (given name + surname, particles kept: "van der Berg"), and every variant of each (the
full name, given name, surname, initial + surname, given name + initial; any case; possessives
keep their "'s" outside the token) is replaced everywhere in the session, keyed by the person,
so all of them share one token.

A part that is also a common word (Will, Grace, Hope, Mark, May; Hill, Wood, Stone) is replaced
only where it is used as the name: after a title or a greeting, as a vocative ("..., Will."),
next to another part of the name, before a possessive, or capitalised inside a sentence; never
in "I will call" or "a stone wall".
"""

from __future__ import annotations

from dataclasses import dataclass, field

import regex
from turnwatch.collector.deid.alternation import whole_words
from turnwatch.collector.deid.cache import Finding, Findings
from turnwatch.collector.deid.recognizers.base import words
from turnwatch.collector.deid.recognizers.names import GREETINGS, PARTICLE, TITLES

PARTICLES = frozenset(PARTICLE.strip("(?:)").replace("\\", "").split("|"))
TITLE_WORDS = frozenset(TITLES.split("|"))
# English words that are also given names or surnames: replaced only where used as the name.
COMMON_WORDS = frozenset(
    words(
        """
        will bill mark hope grace faith joy rose may june april august summer autumn dawn
        eve holly ivy iris lily daisy violet ruby pearl amber jade crystal sky river brook
        glen dale dean miles chase hunter cash price king bell rich frank sue pat ray art
        bob jack drew rob nick gene don ken sandy penny honey rusty hill wood woods stone
        brown green white black gray grey young long short small little baker cook miller
        walker fisher carter mason hunter porter turner cooper taylor bishop knight page
        field ford bush lane street marsh moss rivers banks hall north west east south
        winter spring snow rain storm star sunny happy lucky major noble sterling victor
        grant earl duke sage rowan reed heath cliff rock hale case wells lake bay beach park
        parks day days mars paris london jordan harmony melody destiny trinity genesis
        justice liberty patience prudence constance charity mercy unity sunshine angel
        angela chance colt fox wolf hawk crow swan lamb bean rice oliver olive basil
        rosemary ginger pepper candy sugar cherry berry apple peach plum hazel ash aspen
        willow birch oak elm pine cedar laurel myrtle heather clay flint gill gold silver
        goldsmith sparks love christian christmas easter noel wade hope hardy strong swift
        bright sharp clever wise gay merry jolly bonny guy max sam kit jean rue nell
        """
    )
)
MIN_PART_CHARS = 2
CALENDAR_WORDS = frozenset(
    words(
        """
        january february march april may june july august september october november
        december monday tuesday wednesday thursday friday saturday sunday
        """
    )
)
INITIAL = regex.compile(r"^\p{Lu}\.?$")
WORD = regex.compile(r"[\p{L}\p{M}]+(?:['’-][\p{L}\p{M}]+)*\.?")
TITLE_BEFORE = regex.compile(rf"(?i)(?<!\w)(?:{TITLES})\.?\s*$")
GREETING_BEFORE = regex.compile(rf"(?i)(?<!\w)(?:{GREETINGS})\s*,?\s*$")
VOCATIVE_AFTER = regex.compile(r"^\s*(?:[,!?;:)]|\.(?!\w)|$)")
POSSESSIVE_AFTER = regex.compile(r"^['’]s?(?!\w)")
SENTENCE_START = regex.compile(r"(?:^|[.!?\n:\"“]\s*|^\W*)$")


@dataclass
class Person:
    key: str
    given: str = ""
    family: str = ""
    parts: set[str] = field(default_factory=set)
    variants: set[str] = field(default_factory=set)


def _words(name: str) -> list[str]:
    words = [word.rstrip(".") if not INITIAL.match(word) else word for word in WORD.findall(name)]
    while words and words[0].casefold().rstrip(".") in TITLE_WORDS:
        words = words[1:]
    return [word for word in words if word]


def _person(name: str) -> Person | None:
    if name.count(",") == 1:
        last, first = (part.strip() for part in name.split(","))
        name = f"{first} {last}"
    words = _words(name)
    full = [word for word in words if not INITIAL.match(word)]
    if not full:
        return None
    if len(full) > 1 and full[0].casefold() in PARTICLES:
        # "da Silva", "van der Berg": a surname on its own, no given name.
        family = " ".join(full).casefold()
        return Person(key=family, family=family, parts={family, full[-1].casefold()})
    given = full[0].casefold()
    # The surname is the last word with the particles before it ("van der Berg").
    family_words = [full[-1]] if len(full) > 1 else []
    index = len(words) - 2
    while family_words and index >= 0 and words[index].casefold() in PARTICLES:
        family_words.insert(0, words[index])
        index -= 1
    family = " ".join(family_words).casefold()
    person = Person(key=f"{given} {family}".strip(), given=given, family=family)
    person.parts.add(given)
    if family:
        person.parts.add(family)
        person.parts.add(full[-1].casefold())
        person.variants |= {
            f"{given} {family}",
            f"{given[0]}. {family}",
            f"{given[0]} {family}",
            f"{given} {family[0]}.",
        }
    person.variants.add(" ".join(word.casefold() for word in words))
    return person


def group_people(names: list[str]) -> list[Person]:
    """People from the names found in a session; a one-word name joins the person it is a
    part of, if any."""
    people: dict[str, Person] = {}
    singles: list[Person] = []
    # In order of appearance (the sort is stable): a given name two people share ("Will") is
    # the one introduced first, the session's own user as a rule.
    for name in sorted(dict.fromkeys(names), key=lambda n: -len(n.split())):
        person = _person(name)
        if person is None:
            continue
        if " " not in person.key:
            singles.append(person)
            continue
        known = people.setdefault(person.key, Person(person.key, person.given, person.family))
        known.parts |= person.parts
        known.variants |= person.variants
    for single in singles + [p for p in people.values() if not p.given]:
        owner = next(
            (p for p in people.values() if p is not single and p.given and single.key in p.parts),
            None,
        )
        if owner is not None and single.key in people and people[single.key] is single:
            del people[single.key]
        if owner is None:
            people.setdefault(single.key, single)
    return list(people.values())


def ambiguous(part: str) -> bool:
    return len(part) <= MIN_PART_CHARS or part in COMMON_WORDS


def used_as_name(text: str, start: int, end: int, person: Person) -> bool:
    """Whether an ambiguous part at text[start:end] is the name there, not the word."""
    left, right = text[max(0, start - 40) : start], text[end : end + 40]
    if TITLE_BEFORE.search(left) or POSSESSIVE_AFTER.match(right):
        return True
    if GREETING_BEFORE.search(left) and VOCATIVE_AFTER.match(right):
        return True
    if left.rstrip().endswith(",") and VOCATIVE_AFTER.match(right):
        return True
    # Next to the other part, in its place: "Will May", "Ms Hope Stone".
    part = text[start:end].casefold()
    before_word = (left.split()[-1:] or [""])[0].strip(".,!?").casefold()
    after_word = (right.split()[:1] or [""])[0].strip(".,!?").casefold()
    if part == person.given and person.family and after_word == person.family.split()[-1]:
        return True
    if part in person.family.split() and before_word == person.given:
        return True
    word = text[start:end]
    if part in CALENDAR_WORDS:
        return False  # "in June", "on Friday": capitalised whatever they mean
    return word[0].isupper() and not word.isupper() and not SENTENCE_START.search(left)


def propagate_people(findings: dict[str, Findings]) -> dict[str, Findings]:
    names = [
        text[item.start : item.end]
        for text, found in findings.items()
        for item in found
        if item.entity == "PERSON"
    ]
    people = group_people(names)
    if not people:
        return findings
    by_variant: dict[str, Person] = {}
    for person in people:
        for variant in sorted(person.parts | person.variants, key=len):
            if len(variant.replace(".", "")) >= MIN_PART_CHARS:
                by_variant.setdefault(variant, person)
    pattern = whole_words(by_variant, findings)
    out: dict[str, Findings] = {}
    for text, found in findings.items():
        keyed = [_keyed(text, item, by_variant) for item in found]
        for match in pattern.finditer(text) if pattern is not None else ():
            variant = " ".join(match.group().casefold().split())
            person = by_variant.get(variant)
            if person is None:
                continue
            gated = " " not in variant and ambiguous(variant) and not _inside(match.span(), found)
            if gated and not used_as_name(text, match.start(), match.end(), person):
                continue
            keyed.append(Finding(match.start(), match.end(), "PERSON", 0.5, person.key))
        out[text] = tuple(keyed)
    return out


def _keyed(text: str, item: Finding, by_variant: dict[str, Person]) -> Finding:
    if item.entity != "PERSON":
        return item
    person = _person(text[item.start : item.end])
    if person is None:
        return item
    known = by_variant.get(person.key) or by_variant.get(person.key.split()[0])
    key = known.key if known is not None else person.key
    return Finding(item.start, item.end, item.entity, item.score, key)


def _inside(span: tuple[int, int], found: Findings) -> bool:
    return any(f.entity == "PERSON" and f.start <= span[0] and span[1] <= f.end for f in found)
