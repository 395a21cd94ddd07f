"""Support conversations: a person introduces themselves, is addressed by first name or title
later, answers the assistant's questions, types numbers in pieces, shows up in tool arguments
and results under many keys, and the bot echoes values in other formats."""

from __future__ import annotations

import random

from benchmarks.pii.model import (
    LabelledCall,
    LabelledConversation,
    LabelledText,
    LabelledTurn,
    Value,
)
from benchmarks.pii.texts import PRODUCT_MISSES, WORD_MISSES, TextMaker
from benchmarks.pii.values import Name

NAME_KEYS = [
    "name",
    "full_name",
    "passenger",
    "holder",
    "beneficiary",
    "recipient",
    "customerName",
    "guest",
    "cardHolder",
]
ID_KEYS = [
    ("order_id", "ORDER_NUMBER"),
    ("orderNumber", "ORDER_NUMBER"),
    ("account_number", "ACCOUNT_ID"),
    ("bookingRef", "BOOKING_REFERENCE"),
    ("member_id", "ACCOUNT_ID"),
]


def _sentence(words: str) -> str:
    return words[0].upper() + words[1:]


class ConversationMaker:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.texts = TextMaker(rng)
        self.values = self.texts.values

    def conversation(self, number: int) -> LabelledConversation:
        rng, values = self.rng, self.values
        person = values.name()
        group = self.texts.group()
        lower = rng.random() < 0.25
        turns: list[LabelledTurn] = []

        def user(*pieces) -> None:
            turns.append(LabelledTurn("user", LabelledText().say(*pieces)))

        def bot(*pieces) -> None:
            turns.append(LabelledTurn("assistant", LabelledText().say(*pieces)))

        def name(text: str, ambiguous: bool = False) -> Value:
            return Value("PERSON", text, group, ambiguous)

        order = values.order_id()
        order_group = self.texts.group()
        bot(
            rng.choice(
                [
                    "Hi! How can I help you today?",
                    "Hello, this is Acme support. What can I do for you?",
                    "Welcome back! How can I help?",
                ]
            )
        )
        full = person.full.lower() if lower else person.full
        user(
            rng.choice(["Hi, my name is ", "Hello, I'm ", "hi this is ", "My name is "]),
            name(full),
            rng.choice([", my order ", " and order "]),
            Value("ORDER_NUMBER", order, order_group),
            rng.choice([" never arrived.", " is late.", " was damaged."]),
        )
        call = self._lookup(person, group, order, order_group)
        turns.append(LabelledTurn("assistant", calls=[call]))
        first = person.first.lower() if lower else person.first
        bot(
            rng.choice(["Thanks, ", "Thank you, ", "Sorry about that, "]),
            name(first, person.ambiguous_first),
            "! I found order ",
            Value("ORDER_NUMBER", order.lower() if rng.random() < 0.3 else order, order_group),
            ". ",
            _sentence(rng.choice(WORD_MISSES)),
            ".",
        )
        self._phone(user, bot)
        if rng.random() < 0.5:
            holder = values.name()
            holder_group = self.texts.group()
            bot("What's the name on the card?")
            user(
                Value(
                    "PERSON",
                    holder.full if rng.random() < 0.6 else holder.full.lower(),
                    holder_group,
                )
            )
            bot("Thanks. And the card number?")
            user(
                rng.choice(["", "it's ", "sure, "]),
                Value("CREDIT_CARD", values.card(), self.texts.group()),
            )
        else:
            bot("Please confirm your password so I can verify the account.")
            user(
                rng.choice(["", "it's ", "sure: "]),
                Value("PASSWORD", values.password(), self.texts.group()),
            )
        if rng.random() < 0.5:
            bot(
                "Shall I send the replacement to ",
                Value(
                    "STREET_ADDRESS", call.result["address"].text, self._group_of(call, "address")
                ),
                "?",
            )
        else:
            bot("What is your date of birth?")
            user(Value("DATE_TIME", values.dob(), self.texts.group()))
        title = rng.choice(["Mr.", "Ms", "Mrs."])
        surname = person.last.lower() if lower else person.last
        bot(
            "All set, ",
            title,
            " ",
            name(surname, person.ambiguous_last),
            ". Have a good day, ",
            name(first, person.ambiguous_first),
            "! ",
            rng.choice(["I will call you back ", "We may follow up ", "I hope that helps, "]),
            rng.choice(["tomorrow at 5pm about ", "within 2 business days about ", "about "]),
            rng.choice(PRODUCT_MISSES),
            ".",
        )
        if rng.random() < 0.4:
            user("Thanks!\n\nBest regards,\n", name(full))
        else:
            user(rng.choice(["thanks ", "Thanks a lot, bye", "great, thank you"]))
        conversation = LabelledConversation(f"pii-{number:05d}", f"user-{number % 97}", turns)
        for text in conversation.texts():
            text.check()
        return conversation

    def _phone(self, user, bot) -> None:
        rng = self.rng
        phone = self.values.phone()
        phone_group = self.texts.group()
        bot(
            rng.choice(
                [
                    "What's the best phone number to reach you?",
                    "Can I have a phone number in case the courier needs it?",
                ]
            )
        )
        digits = phone.replace(" ", "")
        if rng.random() < 0.4 and sum(ch.isdigit() for ch in phone) >= 9 and " " in phone:
            cut = phone.rindex(" ")
            head, tail = phone[:cut], phone[cut + 1 :]
            user(
                rng.choice(["it's ", "sure, ", ""]), Value("PHONE_NUMBER", head, phone_group), "..."
            )
            if rng.random() < 0.5:
                bot(rng.choice(["Go on.", "Got it, and the rest?"]))
            # A part of two or three digits is found anywhere: it is looked for with its "...".
            user("...", Value("PHONE_NUMBER", tail, phone_group, ambiguous=len(tail) < 4))
        else:
            user(
                rng.choice(["sure, ", "it's ", "", "call me on "]),
                Value("PHONE_NUMBER", phone, phone_group),
            )
        bot(
            "Noted: ",
            Value("PHONE_NUMBER", phone if rng.random() < 0.5 else digits, phone_group),
            ".",
        )

    def _lookup(self, person: Name, group: str, order: str, order_group: str) -> LabelledCall:
        rng, values = self.rng, self.values
        id_key, _ = rng.choice([k for k in ID_KEYS if k[1] == "ORDER_NUMBER"])
        arguments = {id_key: LabelledText().say(Value("ORDER_NUMBER", order, order_group))}
        name_key = rng.choice(NAME_KEYS)
        full = person.full if rng.random() < 0.7 else f"{person.last}, {person.first}"
        if "," in full:
            name_text = LabelledText().say(
                Value("PERSON", person.last, group, person.ambiguous_last),
                ", ",
                Value("PERSON", person.first, group, person.ambiguous_first),
            )
        else:
            name_text = LabelledText().say(Value("PERSON", full, group))
        account_key, account_entity = rng.choice([k for k in ID_KEYS if k[1] != "ORDER_NUMBER"])
        account = (
            values.booking_ref() if account_entity == "BOOKING_REFERENCE" else values.account_id()
        )
        result = {
            name_key: name_text,
            rng.choice(["email", "customer_email", "contact_email"]): LabelledText().say(
                Value("EMAIL_ADDRESS", values.email(person), self.texts.group())
            ),
            "address": LabelledText().say(
                Value("STREET_ADDRESS", values.address(), self.texts.group())
            ),
            account_key: LabelledText().say(Value(account_entity, account, self.texts.group())),
            "status": LabelledText().say(rng.choice(["shipped", "delayed", "lost in transit"])),
            "items": [
                {
                    "name": LabelledText().say(
                        rng.choice(["Blue Widget", "Desk Lamp", "USB-C Cable"])
                    ),
                    "sku": LabelledText().say(f"SKU-{values.digits(5)}"),
                }
            ],
        }
        return LabelledCall(f"call_{values.digits(6)}", "lookup_order", arguments, result)

    @staticmethod
    def _group_of(call: LabelledCall, key: str) -> str:
        return call.result[key].occurrences[0].group
