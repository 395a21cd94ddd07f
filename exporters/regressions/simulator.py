"""Simulated users for replay: who speaks for the user when a new version answers differently.

A recorded transcript stops being a fair test as soon as the new version says something else: the
recorded next user turn may answer a question the new version never asked. A simulated user
answers what is asked, from the user's profile (`profile.UserProfile`):

- `ScriptedUser` (the default, deterministic): a question about a fact the user knows is answered
  from private state (the recorded answer when it gives just that, else "It's <token>."), as the
  release schedule allows; a confirmation question is answered yes only for a side effect the
  recorded user authorised, and no otherwise; anything else gets the next of the user's own
  recorded turns. It never volunteers a fact before it is asked (facts given when asked are
  never in the script), and stops by the profile's stopping rule.
- `RecordedUser`: the recorded user turns verbatim, in order, whatever the new version says (the
  behaviour of replay before simulated users; `--user recorded`).
- `LlmUser` (`simulator_llm.py`): a model through an OpenAI-compatible endpoint, held to the
  same rules after the fact.

Each move says where the simulator was unsure (a question it could not map, a fact it does not
hold, a confirmation naming no tool) or broke a rule (an LLM that volunteers a fact); replay
attributes a failure that follows such a note to the simulator, not to the chatbot.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal, Protocol

from pydantic import Field
from turnwatch.exporters.regressions.profile import (
    Fact,
    Release,
    UserProfile,
    side_effects,
    tool_words,
)
from turnwatch.scorers.checks.outcome import escalation_point, outcome
from turnwatch.scorers.checks.slots import asked_slots, token_specs
from turnwatch.scorers.contract import Contract
from turnwatch.scorers.phrases import CLOSING, REFUSAL, asking_sentences, confirmation_requests
from turnwatch.scorers.scorer import Context

from turnwatch.schema import Role, Session, Turn, WireModel

SIMULATOR_VERSION = "1"
DECLINE = "No, please don't do that."
UNKNOWN_FACT = "I don't have that information."


class StopReason(StrEnum):
    SUCCESS = "success"
    ESCALATED = "escalated"
    DONE = "done"
    """The user said all they came to say and nothing is asked of them."""
    TURN_BUDGET = "turn_budget"
    GAVE_UP = "gave_up"
    UNANSWERABLE = "unanswerable"
    """Asked something the simulator cannot answer, with nothing of its own left to say."""


class SimulatorNote(WireModel):
    turn_index: int = Field(description="The replayed turn the note is about (0-based).")
    kind: Literal["unsure", "violation"]
    reason: str


class SimulatorInfo(WireModel):
    """Stored with every replay result: which simulated user produced the user turns."""

    kind: Literal["recorded", "scripted", "llm"]
    version: str = SIMULATOR_VERSION
    model: str | None = None
    seed: int | None = None
    temperature: float | None = None
    prompt_version: str | None = Field(default=None, description="Digest of the prompt file.")
    prompt: str | None = Field(default=None, description="The prompt template as sent.")


@dataclass(slots=True)
class Move:
    text: str | None = None
    stop: StopReason | None = None
    notes: list[SimulatorNote] = field(default_factory=list)


class SimulatedUser(Protocol):
    info: SimulatorInfo

    def first(self) -> Move: ...

    def next(self, session: Session) -> Move:
        """The user's reply to the assistant's last reply (the end of `session.turns`)."""
        ...


class RecordedUser:
    def __init__(self, profile_turns: list[str]) -> None:
        self.info = SimulatorInfo(kind="recorded")
        self._turns = profile_turns
        self._sent = 0

    def first(self) -> Move:
        return self._advance()

    def next(self, session: Session) -> Move:
        return self._advance()

    def _advance(self) -> Move:
        if self._sent >= len(self._turns):
            return Move(stop=StopReason.DONE)
        self._sent += 1
        return Move(text=self._turns[self._sent - 1])


class ScriptedUser:
    def __init__(self, profile: UserProfile, contract: Contract | None) -> None:
        self.info = SimulatorInfo(kind="scripted")
        self.profile = profile
        self.contract = contract
        self.slots = token_specs(contract)
        self.side_effects = side_effects(contract)
        self.state = UserState(profile)

    def first(self) -> Move:
        return self.state.next_script(0) or Move(stop=StopReason.DONE)

    def next(self, session: Session) -> Move:
        stop = self.state.stopping(session, self.contract)
        if stop is not None:
            return Move(stop=stop)
        return self.respond(session)

    def respond(self, session: Session) -> Move:
        """The reply to the assistant's last reply, the stopping rule aside."""
        state = self.state
        reply = last_reply(session)
        position = len(session.turns)
        text = " ".join(turn.text or "" for turn in reply)
        asked = asked_slots(text, self.slots)
        if asked:
            return state.counted(answer_facts(state, asked, position))
        questions = asking_sentences(text)
        confirmations = confirmation_requests(text)
        if confirmations:
            question = " ".join(confirmations)
            return state.counted(confirm(state, question, position, self.side_effects))
        unmapped = [q for q in questions if q.rstrip().endswith("?") and not CLOSING.search(q)]
        move = state.next_script(position)
        if unmapped:
            reason = "a question the simulator cannot map to a fact or a confirmation"
            if move is None:
                note = SimulatorNote(turn_index=position, kind="unsure", reason=reason)
                return Move(stop=StopReason.UNANSWERABLE, notes=[note])
            move.notes.append(
                SimulatorNote(
                    turn_index=position,
                    kind="unsure",
                    reason=f"{reason}; answered with the next recorded turn",
                )
            )
        return move or Move(stop=StopReason.DONE)

    def accepts(self, question: str) -> bool:
        """Whether this user would say yes to the confirmation `question`."""
        return confirm(self.state, question, 0, self.side_effects).text != DECLINE


class UserState:
    """What the simulated user has said so far, and how the conversation is going."""

    def __init__(self, profile: UserProfile) -> None:
        self.profile = profile
        self.cursor = 0
        self.released: dict[str, str] = {}  # entity -> the value last given
        self.sent = 0
        self.no_progress = 0
        self.previous_reply: str | None = None

    def next_script(self, position: int) -> Move | None:
        script = self.profile.script
        if self.cursor >= len(script):
            return None
        turn = script[self.cursor]
        for fact in self.profile.facts:
            if fact.release is Release.AT_TURN and fact.script_turn == self.cursor:
                self.released[fact.entity] = fact.value
        self.cursor += 1
        return self.counted(Move(text=turn.text))

    def counted(self, move: Move) -> Move:
        if move.text is not None:
            self.sent += 1
        return move

    def stopping(self, session: Session, contract: Contract | None) -> StopReason | None:
        reply = last_reply(session)
        if contract is not None and contract.success is not None:
            ctx = Context.of(session, contract)
            if outcome(ctx).value == 1.0:
                handed_over = escalation_point(ctx.transcript, contract) is not None
                return StopReason.ESCALATED if handed_over else StopReason.SUCCESS
        text = " ".join(turn.text or "" for turn in reply)
        calls = [call for turn in reply for call in turn.tool_calls]
        stuck = (
            (calls and all(call.error is not None for call in calls))
            or REFUSAL.search(text) is not None
            or (bool(text) and text == self.previous_reply)
        )
        self.previous_reply = text
        self.no_progress = self.no_progress + 1 if stuck else 0
        if self.no_progress >= self.profile.stop.give_up_after:
            return StopReason.GAVE_UP
        if self.sent >= self.profile.stop.max_user_turns:
            return StopReason.TURN_BUDGET
        return None

    def current(self, entity: str) -> Fact | None:
        """The value the user would give for `entity` now: the latest they said, else a fact
        they give when asked; a fact given only at a later turn is not given yet."""
        known = self.profile.known(entity)
        if entity in self.released:
            value = self.released[entity]
            return next((f for f in known if f.value == value), None)
        return next((f for f in known if f.release is Release.WHEN_ASKED), None)


def last_reply(session: Session) -> list[Turn]:
    """The assistant turns since the user last spoke."""
    reply: list[Turn] = []
    for turn in reversed(session.turns):
        if turn.role is Role.USER:
            break
        if turn.role is Role.ASSISTANT:
            reply.insert(0, turn)
    return reply


def answer_facts(state: UserState, asked: list[str], position: int) -> Move:
    answers: list[Fact] = []
    notes: list[SimulatorNote] = []
    for entity in dict.fromkeys(asked):
        fact = state.current(entity)
        if fact is None:
            notes.append(
                SimulatorNote(
                    turn_index=position,
                    kind="unsure",
                    reason=f"asked for {entity}, which the user does not give at this point",
                )
            )
            continue
        answers.append(fact)
        state.released[entity] = fact.value
    if not answers:
        return Move(text=UNKNOWN_FACT, notes=notes)
    return Move(text=_answer_text(answers, state), notes=notes)


def _answer_text(answers: list[Fact], state: UserState) -> str:
    """The recorded answer when it gives exactly what is asked (and what is already said),
    else a plain one: the user says no more than asked."""
    [first, *rest] = answers
    recorded = first.answer
    if recorded is not None and not rest:
        given = {fact.value for fact in state.profile.facts if fact.answer == recorded}
        if given <= {first.value, *state.released.values()}:
            return recorded
    values = [fact.value for fact in answers]
    return f"It's {values[0]}." if len(values) == 1 else f"{', '.join(values)}."


def confirm(state: UserState, question: str, position: int, side_effects: set[str]) -> Move:
    """Yes for a side effect the recorded user authorised, no for everything else."""
    words = set(question.lower().replace("?", " ").split())
    authorised = state.profile.authorised
    for authorisation in authorised:
        if authorisation.tool is not None and tool_words(authorisation.tool) & words:
            return Move(text=authorisation.answer)
    mentioned = {tool for tool in side_effects if tool_words(tool) & words}
    if mentioned or not authorised:
        return Move(text=DECLINE)
    if len(authorised) == 1:
        reason = "the confirmation names no tool; answered as the recorded user did"
        note = SimulatorNote(turn_index=position, kind="unsure", reason=reason)
        return Move(text=authorised[0].answer, notes=[note])
    reason = "the confirmation names no tool and the user authorised several; declined"
    note = SimulatorNote(turn_index=position, kind="unsure", reason=reason)
    return Move(text=DECLINE, notes=[note])
