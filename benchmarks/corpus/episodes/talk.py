"""Answers: repeated without progress, off the question, or dropped; and the repeat the user
asked for, the topic switch, the clarifying question, the request withdrawn or refused."""

from __future__ import annotations

import random
import re

from benchmarks.corpus.builder import Builder
from benchmarks.corpus.domain import Faq
from benchmarks.corpus.episodes.tasks import faq, first_words
from benchmarks.corpus.phrases.memory import ECHO_PREFIX, REPEAT_PREFIX, REPEAT_REQUEST
from benchmarks.corpus.phrases.memory import UNHELPED_FOLLOW_UP as FOLLOW_UP_UNHELPED
from benchmarks.corpus.phrases.persona import OFF_SCOPE, REFUSE_OFF_SCOPE
from benchmarks.corpus.phrases.talk import (
    AND_THE_OTHER,
    ANYTHING_ELSE,
    CLARIFY,
    FOLLOW_UP,
    LATER,
    NEVER_MIND,
    OK_GO_ON,
    STILL_WANT,
    TOPIC_SWITCH,
    VAGUE,
)

_SYNONYMS = {
    "usually": "normally",
    "within": "inside",
    "can": "are able to",
    "most": "the majority of",
    "free": "at no cost",
    "about": "roughly",
    "arrive": "get to you",
    "days": "business days",
    "We": "Our team",
    "you'll": "you will",
    "available": "offered",
}


def perturb(text: str, rng: random.Random, variant: str) -> str:
    """A near repeat of `text`: the words barely change, so nothing new is said."""
    if variant == "reworded":
        words = text.split(" ")
        swappable = [i for i, word in enumerate(words) if word in _SYNONYMS]
        for index in rng.sample(swappable, k=min(2, len(swappable))):
            words[index] = _SYNONYMS[words[index]]
        reworded = " ".join(words)
        if reworded != text:
            return reworded
        variant = "trimmed"
    if variant == "trimmed":
        cut = max(text.rfind(", "), text.rfind("; "))
        if cut > len(text) // 2:
            return text[:cut] + "."
        variant = "echo"
    if variant == "echo":
        prefix = rng.choice([p for p in ECHO_PREFIX.dev + ECHO_PREFIX.heldout if p])
        return prefix + text[0].lower() + text[1:]
    return text


def _joined(b: Builder, first: str, second: str) -> str:
    if first[-1] not in ".?!":
        first += "?"
    link = b.pick(FOLLOW_UP)
    if link.endswith((",", "-")):
        second = second[0].lower() + second[1:]
    return f"{first} {link} {second}"


def _two_topics(b: Builder) -> tuple[Faq, Faq]:
    first = b.topic()
    second = b.topic()
    while second.topic == first.topic:
        second = b.rng.choice(b.domain.faqs)
    return first, second


def repeat(b: Builder, mode: str) -> None:
    turn, answer = faq(b)
    if mode == "repeat.requested":
        b.user_says(b.pick(REPEAT_REQUEST))
        b.near_miss(mode, b.bot_says(b.pick(REPEAT_PREFIX) + answer), original_turn=turn)
        return
    for _ in range(b.rng.choice([0, 0, 1, 2])):
        faq(b, topic=None)
    if b.chance(0.5):
        b.user_says(b.pick(FOLLOW_UP_UNHELPED))
    else:
        b.user_says(b.pick(b.topic().questions))
    variant = b.rng.choice(["verbatim", "echo", "trimmed", "reworded"])
    text = perturb(answer, b.rng, variant)
    b.defect(mode, b.bot_says(text), original_turn=turn, variant=variant)


def relevance(b: Builder, mode: str) -> None:
    first, second = _two_topics(b)
    if mode == "relevance.topic_switch":
        faq(b, topic=first)
        question = b.pick(second.questions)
        b.user_says(b.say(TOPIC_SWITCH, question=question[0].lower() + question[1:]))
        b.near_miss(mode, b.bot_says(b.pick(second.answers)))
        return
    if mode == "relevance.clarifying_question":
        b.user_says(first_words(b, b.say(VAGUE)))
        names = [topic.topic.replace("_", " ") for topic in (first, second)]
        ask = b.say(CLARIFY, one=names[0], two=names[1])
        b.near_miss(mode, b.bot_says(ask))
        b.user_says(b.pick(first.questions))
        b.bot_says(b.pick(first.answers))
        return
    question = b.pick(first.questions)
    b.user_says(first_words(b, question))
    if mode == "relevance.brief_answer":
        answer = b.pick(first.answers)
        brief = re.split(r", |; | - ", answer)[0].rstrip(".") + "."
        b.near_miss(mode, b.bot_says(brief), question=first.topic)
        return
    b.defect(mode, b.bot_says(b.pick(second.answers)), asked=first.topic, answered=second.topic)


def completeness(b: Builder, mode: str) -> None:
    first, second = _two_topics(b)
    one = b.pick(first.questions)
    if mode == "completeness.refused_correctly":
        questions, _ = b.rng.choice(OFF_SCOPE)
        turn = b.user_says(first_words(b, _joined(b, one, b.pick(questions))))
        b.bot_says(f"{b.pick(first.answers)} {b.say(REFUSE_OFF_SCOPE)}")
        b.near_miss(mode, turn)
        return
    action_variant = mode == "dropped_request" and b.chance(0.4)
    if action_variant:
        act = b.domain.actions["plain"]
        slots = {**b.slots, **act.prepare(b.rng, b.slots)}
        two = b.say(act.request, **slots)
    else:
        two = b.pick(second.questions)
    turn = b.user_says(first_words(b, _joined(b, one, two)))
    answer = b.pick(first.answers)
    if mode == "completeness.addressed_later":
        b.bot_says(f"{answer} {b.say(LATER)}")
        b.user_says(b.pick(OK_GO_ON))
        b.bot_says(b.say(AND_THE_OTHER, answer=b.pick(second.answers)))
        b.near_miss(mode, turn)
        return
    if mode == "completeness.withdrawn":
        b.bot_says(f"{answer} {b.say(STILL_WANT)}")
        b.user_says(b.pick(NEVER_MIND))
        b.bot_says(b.pick(ANYTHING_ELSE))
        b.near_miss(mode, turn)
        return
    b.bot_says(answer)
    variant = "action" if action_variant else "question"
    b.defect(mode, turn, answered=first.topic, variant=variant)
