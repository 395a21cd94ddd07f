"""A generated, labelled PII corpus: conversations with known personal data in every place.

Values are synthetic but valid where validity matters to a recognizer (Luhn card numbers, IBAN
mod-97 check digits, SSN area/group rules, real US area codes). Names include lowercase and
common-word names ("rose hill", "will may") that NER models tend to miss.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime

from turnwatch.schema import Role, SamplingDecision, SamplingReason, Session, ToolCall, Turn

FIRST = ["Maria", "James", "Aisha", "Chen", "Olga", "Pedro", "Fatima", "Liam", "Grace", "Noah"]
LAST = ["Garcia", "Okafor", "Kowalski", "Nguyen", "Schmidt", "Haddad", "Murphy", "Tanaka"]
COMMON_WORD_NAMES = ["rose hill", "will may", "mark wood", "june berry", "grace lee", "hope stone"]
STREETS = ["Baker", "Elm", "Maple", "Harbor", "Cedar", "Willow", "Station"]
STREET_KINDS = ["Street", "Avenue", "Road", "Lane", "Drive"]
DOMAINS = ["example.com", "mail.example.org", "post.example.co.uk", "inbox.example.net"]
AREA_CODES = ["212", "415", "646", "312", "617", "206", "303", "512"]
MONTHS = ["January", "March", "May", "July", "September", "November"]

SYSTEM_PROMPT = (
    "You are Acme's support assistant. Be concise and polite. Verify the customer's identity "
    "before changing an order, never reveal another customer's data, and escalate refunds over "
    "500 dollars to a human agent."
)
CANNED = [
    "Thanks for contacting Acme support. Is there anything else I can help you with?",
    "I'm sorry, I can't help with that request. Let me connect you with a human agent.",
    "Your request has been received and our team will follow up within one business day.",
]
FILLER = [
    "Can I change the delivery address?",
    "How long does shipping usually take?",
    "The package arrived damaged, what should I do?",
    "Okay, thanks a lot for the help.",
    "Which payment methods do you accept?",
]


@dataclass
class Pii:
    entity: str
    value: str


@dataclass
class LabelledText:
    text: str
    pii: list[Pii] = field(default_factory=list)


def luhn_complete(prefix: str, length: int, rng: random.Random) -> str:
    digits = prefix + "".join(str(rng.randrange(10)) for _ in range(length - len(prefix) - 1))
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2 == 0:  # every second digit from the right, check digit excluded
            value *= 2
            value -= 9 if value > 9 else 0
        total += value
    return digits + str((10 - total % 10) % 10)


def iban(country: str, bban: str) -> str:
    rearranged = bban + country + "00"
    number = int("".join(str(int(ch, 36)) for ch in rearranged))
    return f"{country}{98 - number % 97:02d}{bban}"


class CorpusGenerator:
    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)

    def name(self) -> str:
        if self.rng.random() < 0.35:
            return self.rng.choice(COMMON_WORD_NAMES)
        return f"{self.rng.choice(FIRST)} {self.rng.choice(LAST)}"

    def email(self, name: str) -> str:
        local = name.lower().replace(" ", ".")
        return f"{local}{self.rng.randrange(10, 99)}@{self.rng.choice(DOMAINS)}"

    def phone(self) -> str:
        area = self.rng.choice(AREA_CODES)
        exchange = f"{self.rng.randrange(2, 10)}{self.rng.randrange(10)}{self.rng.randrange(10)}"
        line = f"{self.rng.randrange(10000):04d}"
        formats = [
            f"({area}) {exchange}-{line}",
            f"{area}-{exchange}-{line}",
            f"+1 {area} {exchange} {line}",
            f"{area}.{exchange}.{line}",
        ]
        return self.rng.choice(formats)

    def card(self) -> str:
        digits = luhn_complete(self.rng.choice(["4", "51", "55"]), 16, self.rng)
        separator = self.rng.choice([" ", "-"])
        return separator.join(digits[i : i + 4] for i in range(0, 16, 4))

    def ssn(self) -> str:
        area = self.rng.choice([n for n in range(101, 665) if n != 666])
        return f"{area:03d}-{self.rng.randrange(10, 99):02d}-{self.rng.randrange(1000, 9999):04d}"

    def iban(self) -> str:
        if self.rng.random() < 0.5:
            bank = "".join(self.rng.choice("ABCDEFGHJKLMNPRSTWXY") for _ in range(4))
            value = iban("GB", bank + "".join(str(self.rng.randrange(10)) for _ in range(14)))
        else:
            value = iban("DE", "".join(str(self.rng.randrange(10)) for _ in range(18)))
        if self.rng.random() < 0.5:
            return " ".join(value[i : i + 4] for i in range(0, len(value), 4))
        return value

    def address(self) -> str:
        number = self.rng.randrange(2, 999)
        return f"{number} {self.rng.choice(STREETS)} {self.rng.choice(STREET_KINDS)}"

    def ip(self) -> str:
        return ".".join(str(self.rng.randrange(11, 223)) for _ in range(4))

    def dob(self) -> str:
        year, month, day = self.rng.randrange(1950, 2004), self.rng.randrange(1, 13), 14
        return self.rng.choice(
            [
                f"{year}-{month:02d}-{day:02d}",
                f"{month:02d}/{day:02d}/{year}",
                f"{day} {self.rng.choice(MONTHS)} {year}",
            ]
        )

    def order_id(self) -> str:
        return f"ORD-{self.rng.randrange(10**7, 10**8)}"

    def account_id(self) -> str:
        return f"ACC-{self.rng.randrange(10**6, 10**7)}"

    def user_text(self) -> LabelledText:
        """One user message carrying one or two PII values."""
        name = self.name()
        choice = self.rng.randrange(10)
        if choice == 0:
            email = self.email(name)
            return LabelledText(
                f"Hi, my name is {name} and my email is {email}.",
                [Pii("PERSON", name), Pii("EMAIL_ADDRESS", email)],
            )
        if choice == 1:
            phone = self.phone()
            return LabelledText(
                f"You can call me back on {phone} after 5pm.", [Pii("PHONE_NUMBER", phone)]
            )
        if choice == 2:
            card = self.card()
            return LabelledText(
                f"Please charge my credit card {card} for the upgrade.",
                [Pii("CREDIT_CARD", card)],
            )
        if choice == 3:
            ssn = self.ssn()
            return LabelledText(
                f"For the tax form, my social security number is {ssn}.", [Pii("US_SSN", ssn)]
            )
        if choice == 4:
            value = self.iban()
            return LabelledText(
                f"Refund it to my bank account, IBAN {value}, please.", [Pii("IBAN_CODE", value)]
            )
        if choice == 5:
            address = self.address()
            return LabelledText(
                f"Ship it to {address}, the blue door.", [Pii("STREET_ADDRESS", address)]
            )
        if choice == 6:
            ip = self.ip()
            return LabelledText(
                f"The login failed from IP address {ip} this morning.", [Pii("IP_ADDRESS", ip)]
            )
        if choice == 7:
            dob = self.dob()
            return LabelledText(
                f"My date of birth is {dob} if you need to verify me.", [Pii("DATE_TIME", dob)]
            )
        if choice == 8:
            order = self.order_id()
            return LabelledText(
                f"Where is my order {order}? It is late.", [Pii("ORDER_NUMBER", order)]
            )
        account = self.account_id()
        return LabelledText(
            f"my name is {name.lower()}, account {account}",
            [Pii("PERSON", name.lower()), Pii("ACCOUNT_ID", account)],
        )

    def assistant_text(self, pii: list[Pii]) -> LabelledText:
        """An answer that echoes what the user gave, as bots do when confirming."""
        if not pii or self.rng.random() < 0.3:
            return LabelledText(self.rng.choice(CANNED))
        first = pii[0]
        return LabelledText(f"Thanks, I have noted {first.value} on your file.", [first])

    def tool_call(self) -> tuple[dict, dict, list[Pii]]:
        name = self.name().title()
        email, phone, address = self.email(name), self.phone(), self.address()
        order = self.order_id()
        arguments = {"customer_email": email, "order_id": order}
        result = {
            "customer": {"name": name, "phone": phone, "address": address},
            "status": "shipped",
            "items": 2,
        }
        pii = [
            Pii("EMAIL_ADDRESS", email),
            Pii("ORDER_NUMBER", order),
            Pii("PERSON", name),
            Pii("PHONE_NUMBER", phone),
            Pii("STREET_ADDRESS", address),
        ]
        return arguments, result, pii


@dataclass
class LabelledSession:
    session: Session
    pii: list[Pii]


def _session(conversation: int, revision: int, turns: list[Turn], user_id: str) -> Session:
    now = datetime(2025, 1, 1, tzinfo=UTC)
    return Session(
        session_id=f"{conversation:032x}",
        revision=revision,
        conversation_key=f"conv-{conversation}",
        key_source="gen_ai.conversation.id",
        service="support-bot",
        user_id=user_id,
        started_at=now,
        ended_at=now,
        system_instructions=[SYSTEM_PROMPT],
        turns=turns,
        close_reason="idle",
        sampling=SamplingDecision(
            sampled=True, reason=SamplingReason.RATE, rate=1.0, hash_fraction=0.5
        ),
    )


def build_sessions(conversations: int, exchanges: int = 4, seed: int = 7) -> list[LabelledSession]:
    """Sessions as the collector emits them: each conversation once partway (revision 1) and
    once whole (revision 2, which repeats the earlier turns), with the shared system prompt."""
    generator = CorpusGenerator(seed)
    sessions: list[LabelledSession] = []
    for conversation in range(conversations):
        turns: list[Turn] = []
        pii: list[Pii] = []
        revision_one: list[Turn] | None = None
        for number in range(exchanges):
            user = (
                generator.user_text()
                if number % 2 == 0
                else LabelledText(generator.rng.choice(FILLER))
            )
            turns.append(Turn(index=len(turns), role=Role.USER, text=user.text))
            pii += user.pii
            if number == 1:
                arguments, result, tool_pii = generator.tool_call()
                call = ToolCall(
                    id=f"call_{number}", name="lookup_customer", arguments=arguments, result=result
                )
                turns.append(Turn(index=len(turns), role=Role.ASSISTANT, tool_calls=[call]))
                pii += tool_pii
            answer = generator.assistant_text(user.pii)
            turns.append(
                Turn(index=len(turns), role=Role.ASSISTANT, text=answer.text, model="gpt-4o-mini")
            )
            pii += answer.pii
            if number == exchanges // 2 - 1:
                revision_one = [turn.model_copy(deep=True) for turn in turns]
        user_id = f"user-{conversation % 50}"
        if revision_one is not None:
            sessions.append(LabelledSession(_session(conversation, 1, revision_one, user_id), pii))
        sessions.append(LabelledSession(_session(conversation, 2, turns, user_id), pii))
    return sessions


def message_units(session: Session) -> list[list[str]]:
    """The session as messages (system prompt, each turn), each a list of its text pieces."""
    messages: list[list[str]] = [list(session.system_instructions)]
    for turn in session.turns:
        pieces = [turn.text] if turn.text else []
        for call in turn.tool_calls:
            pieces += list(_strings(call.arguments)) + list(_strings(call.result))
        messages.append(pieces)
    return messages


def _strings(value: object):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
