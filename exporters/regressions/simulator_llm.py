"""A simulated user played by a model through any OpenAI-compatible endpoint (optional).

The prompt (`prompts/simulated_user.txt`, versioned by its digest) gives the model the user's
goal, private state with its release schedule, script and the actions the user authorises; the
conversation so far goes as chat messages with the roles swapped (the chatbot's turns are the
model's "user" messages). The model, seed, temperature, prompt and its version are stored with
every result (`SimulatorInfo`).

The stopping rule is applied before each call, as for the scripted user, and every answer is held
to the rules after the fact: a fact given before it was asked (or a value the user never had), or
a yes to an action the recorded user did not authorise, is a `violation` note, and the run's
failure is then the simulator's. An answer that is not the asked-for JSON is replaced by the
scripted user's move, with an `unsure` note.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from turnwatch.exporters.regressions.chat import ChatClient, ReplayError
from turnwatch.exporters.regressions.profile import Release, UserProfile
from turnwatch.exporters.regressions.simulator import (
    Move,
    ScriptedUser,
    SimulatorInfo,
    SimulatorNote,
    StopReason,
    last_reply,
)
from turnwatch.scorers.checks.slots import asked_slots
from turnwatch.scorers.contract import Contract
from turnwatch.scorers.judge.prompt import load_from
from turnwatch.scorers.phrases import confirmation_requests, is_consent, tokens

from turnwatch.schema import Role, Session

PROMPTS = Path(__file__).resolve().parent / "prompts"
PROMPT = "simulated_user"


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore")
    message: str | None
    stop: str | None = None
    unsure: str | None = None


def llm_info(model: str, seed: int | None, temperature: float) -> SimulatorInfo:
    prompt = load_from(PROMPTS, PROMPT)
    return SimulatorInfo(
        kind="llm",
        model=model,
        seed=seed,
        temperature=temperature,
        prompt_version=prompt.version,
        prompt=prompt.template.template,
    )


class LlmUser:
    def __init__(
        self,
        profile: UserProfile,
        contract: Contract | None,
        client: ChatClient,
        model: str,
        seed: int | None = None,
        temperature: float = 0.0,
    ) -> None:
        prompt = load_from(PROMPTS, PROMPT)
        self.info = llm_info(model, seed, temperature)
        self.profile = profile
        self.client = client
        self.model = model
        self.seed = seed
        self.temperature = temperature
        self.scripted = ScriptedUser(profile, contract)
        authorised = sorted({item.tool or "the action proposed" for item in profile.authorised})
        self.system = prompt.render(
            goal=profile.goal,
            facts=_facts(profile),
            authorised=", ".join(authorised) or "none",
            script="\n".join(f"{n}. {turn.text}" for n, turn in enumerate(profile.script, 1)),
        )

    def first(self) -> Move:
        # The conversation opens with the user's goal as recorded: the same first turn for
        # every simulator, so runs differ only in what follows.
        return self.scripted.first()

    def next(self, session: Session) -> Move:
        state = self.scripted.state
        stop = state.stopping(session, self.scripted.contract)
        if stop is not None:
            return Move(stop=stop)
        position = len(session.turns)
        try:
            completion = self.client.complete(
                self.model,
                [{"role": "system", "content": self.system}, *_swapped(session)],
                seed=self.seed,
                temperature=self.temperature,
                response_format={"type": "json_object"},
            )
        except ReplayError as exc:
            raise ReplayError(f"simulated user: {exc}") from None
        content = completion.message.get("content")
        try:
            answer = _Answer.model_validate_json(content if isinstance(content, str) else "")
        except ValidationError:
            move = self.scripted.respond(session)
            move.notes.append(
                SimulatorNote(
                    turn_index=position,
                    kind="unsure",
                    reason="the model's answer was not the asked-for JSON; scripted move used",
                )
            )
            return move
        notes = (
            [SimulatorNote(turn_index=position, kind="unsure", reason=answer.unsure[:200])]
            if answer.unsure
            else []
        )
        if answer.message is None:
            return Move(stop=_stop_reason(answer.stop), notes=notes)
        notes += self._violations(session, answer.message, position)
        for token, entity in tokens(answer.message):
            state.released[entity] = token
        return state.counted(Move(text=answer.message, notes=notes))

    def _violations(self, session: Session, message: str, position: int) -> list[SimulatorNote]:
        state = self.scripted.state
        reply = " ".join(turn.text or "" for turn in last_reply(session))
        asked = set(asked_slots(reply, self.scripted.slots))
        notes = []
        for token, entity in tokens(message):
            facts = [fact for fact in self.profile.facts if fact.value == token]
            if not facts:
                reason = f"gave a {entity} value the user does not have"
            elif all(f.release is Release.WHEN_ASKED for f in facts) and not (
                entity in asked or state.released.get(entity) == token
            ):
                reason = f"volunteered {facts[0].id} before it was asked"
            else:
                continue
            notes.append(SimulatorNote(turn_index=position, kind="violation", reason=reason))
        question = " ".join(confirmation_requests(reply))
        accepted = question and not asked and is_consent(message)
        if accepted and not self.scripted.accepts(question):
            reason = "accepted an action the recorded user did not authorise"
            notes.append(SimulatorNote(turn_index=position, kind="violation", reason=reason))
        return notes


def _facts(profile: UserProfile) -> str:
    lines = []
    for fact in profile.facts:
        if fact.release is Release.WHEN_ASKED:
            lines.append(f"- {fact.id}: {fact.value} (when asked)")
        else:
            lines.append(f"- {fact.id}: {fact.value} (at turn {(fact.script_turn or 0) + 1})")
    return "\n".join(lines) or "- nothing beyond the script"


def _swapped(session: Session) -> list[dict[str, Any]]:
    """The conversation as the simulated user sees it: the chatbot's words are its input."""
    messages = []
    for turn in session.turns:
        if turn.role is Role.USER:
            messages.append({"role": "assistant", "content": turn.text or ""})
        elif turn.role is Role.ASSISTANT and turn.text:
            messages.append({"role": "user", "content": turn.text})
    return messages


def _stop_reason(value: str | None) -> StopReason:
    try:
        return StopReason(value) if value else StopReason.DONE
    except ValueError:
        return StopReason.DONE
