"""The built-in judge: no model, no network. It answers the same tasks from their data.

It is the default when no endpoint is configured, so the embedded setup shows every metric it can;
its scores are labelled `judge: heuristic`. It is deliberately plain (word overlap, a few phrasings)
and right on clear cases only; custom G-Eval criteria need a model and stay unscored.
"""

from __future__ import annotations

import re
from typing import Any

from turnwatch.scorers.judge.schemas import (
    Attrition,
    AttritionVerdicts,
    ExtractedFacts,
    Intentions,
    IntentionVerdict,
    OutOfCharacter,
    RelevancyVerdicts,
    RoleVerdicts,
    SatisfactionVerdicts,
    WindowVerdict,
)
from turnwatch.scorers.judge.task import Answer, T, Task, Unjudged, Usage
from turnwatch.scorers.phrases import FACT_QUESTIONS, REFUSAL, asking_sentences

from turnwatch.tokens import TOKEN

_WORD = re.compile(rf"{TOKEN.pattern}|(?i:[a-z][a-z']+)")
_STOP = (
    "the and for you your are was were with that this have has had not but can could would "
    "should will what when where which who how why there their them they then than from into "
    "about just also some any all our out get got its it's i'm i've i'd you're don't please "
    "thanks thank hello hey okay yes sure well very really let know like one"
)
STOPWORDS = frozenset(_STOP.split())
OUT_OF_CHARACTER = re.compile(
    r"\b(as an ai( language)? model|i am (chatgpt|a large language model|an ai developed by)|"
    r"shut up|stupid|idiot|moron|dumb question|i don'?t care|not my problem|whatever\b|"
    r"damn|hell no|screw (you|this))",
    re.IGNORECASE,
)
REQUEST = re.compile(
    r"\?|\b(i want|i'd like|i would like|i need|can you|could you|would you|please|help me|"
    r"how do i|how can i|i'm looking for|i am looking for)\b",
    re.IGNORECASE,
)
_TURN_REF = re.compile(r"^turn (\d+):")
# A reply that asks the user something back (clarifying) addresses the message.
CLARIFY = re.compile(
    r"(^|[.!?]\s+)((could|can|would|will) you|please|what|which|when|where|how|who|"
    r"(do|did|have|are) you)\b[^.!?]*\?",
    re.IGNORECASE,
)


def _stem(word: str) -> str:
    if word.startswith("<"):
        match = TOKEN.match(word)
        return match.group(1) if match else word  # the same entity type = the same topic
    word = word.lower()
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def content_words(text: str) -> set[str]:
    return {
        _stem(word)
        for word in (match.group(0) for match in _WORD.finditer(text))
        if len(word) >= 3 and word.lower() not in STOPWORDS
    }


def relevancy(data: list[tuple[int, list[Any]]]) -> RelevancyVerdicts:
    verdicts = []
    for number, units in data:
        last = units[-1]
        asked = content_words(" ".join(line.text for line in last.user))
        context = asked | content_words(
            " ".join(line.text for unit in units[:-1] for line in unit.lines)
        )
        reply_text = " ".join(line.text for line in last.assistant)
        reply = content_words(reply_text)
        relevant = (
            len(asked) < 2  # greetings, thanks, "yes": any reply fits
            or CLARIFY.search(reply_text) is not None
            or REFUSAL.search(reply_text) is not None  # declining addresses the request
            or reply_text.startswith("(calls ")  # acting on the request
            or bool(reply & context)
        )
        verdicts.append(WindowVerdict(window=number, verdict="yes" if relevant else "no"))
    return RelevancyVerdicts(verdicts=verdicts)


def role(data: tuple[str, list[Any]]) -> RoleVerdicts:
    _, lines = data
    return RoleVerdicts(
        out_of_character=[
            OutOfCharacter(turn=line.index)
            for line in lines
            if line.role.value == "assistant" and OUT_OF_CHARACTER.search(line.text)
        ]
    )


def facts(data: list[Any]) -> ExtractedFacts:
    # Free-text facts need a model; tokens and patterns were already taken without one.
    return ExtractedFacts(facts=[])


def attrition(data: tuple[list[Any], list[Any]]) -> AttritionVerdicts:
    known, replies = data
    by_entity: dict[str, tuple[int, int]] = {}  # entity -> (fact number, turn given)
    for number, fact in enumerate(known):
        if fact.source == "token":
            by_entity[fact.text.split(":", 1)[0]] = (number, fact.turn)
    found = []
    for line in replies:
        for sentence in asking_sentences(line.text):
            quoted = {match.group(1) for match in TOKEN.finditer(sentence)}
            for entity, (number, turn) in by_entity.items():
                pattern = FACT_QUESTIONS.get(entity)
                if (
                    pattern
                    and turn < line.index
                    and entity not in quoted
                    and re.search(pattern, sentence, re.IGNORECASE)
                ):
                    found.append(Attrition(turn=line.index, fact=number))
    return AttritionVerdicts(attritions=found)


def intentions(data: list[Any]) -> Intentions:
    # The opening message states the reason for the conversation even without a question mark.
    asks = [
        line
        for position, line in enumerate(data)
        if REQUEST.search(line.text) or (position == 0 and len(content_words(line.text)) >= 2)
    ]
    return Intentions(intentions=[f"turn {line.index}: user request" for line in asks])


def satisfaction(data: tuple[list[str], list[Any]]) -> SatisfactionVerdicts:
    listed, lines = data
    replies = [line for line in lines if line.role.value == "assistant"]
    final_refusal = bool(replies) and REFUSAL.search(replies[-1].text) is not None
    verdicts = []
    for number, text in enumerate(listed):
        match = _TURN_REF.match(text)
        turn = int(match.group(1)) if match else -1
        after = [line for line in replies if line.index > turn]
        met = bool(after) and REFUSAL.search(after[0].text) is None and not final_refusal
        verdicts.append(IntentionVerdict(intention=number, verdict="yes" if met else "no"))
    return SatisfactionVerdicts(verdicts=verdicts)


class HeuristicJudge:
    name = "heuristic"
    model = None
    remote = False

    def unanswered_seconds(self) -> float:
        return 0.0  # answers at once, on the caller's loop

    async def ask(self, task: Task[T], usage: Usage | None = None) -> Answer[T] | Unjudged:
        if task.heuristic is None:
            return Unjudged("heuristic_unsupported")
        return Answer(task.heuristic(task.data))

    def input_budget(self, task_overhead_chars: int) -> int:
        return 1 << 40  # no context window: never chunk
