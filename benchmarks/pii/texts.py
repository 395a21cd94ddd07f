"""Short single texts: one or two values each, in many phrasings, with near misses beside them."""

from __future__ import annotations

import random
from collections.abc import Callable

from benchmarks.pii.model import LabelledText, Miss, Value
from benchmarks.pii.values import Name, Values

# Ordinary words and numbers that look like PII and are not.
WORD_MISSES = [
    "I will call you back", "I hope that helps", "please mark it as urgent", "the rose garden",
    "a stone wall", "up the hill", "in the wood shed", "we may be late", "in June", "with grace",
    "the bill is paid", "by the river banks", "the king size bed", "a brown box",
]  # fmt: skip
PRODUCT_MISSES = [
    "SKU 48213", "model RTX-4090", "part number 7731-22", "item 5567", "EAN 4006381333931",
    "the X200 router", "version 2.4.1", "firmware 10.2.3.4", "error code 504", "size 42",
    "3 items", "$149.99", "25% off", "promo code SPRING24", "flight BA 117", "gate 42",
]  # fmt: skip
TIME_MISSES = [
    "tomorrow at 5pm",
    "within 2 business days",
    "next Monday",
    "in 30 minutes",
    "by Friday",
]


class TextMaker:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.values = Values(rng)
        self.groups = 0

    def group(self) -> str:
        self.groups += 1
        return f"g{self.groups}"

    def name_value(self, name: Name, lower: bool = False) -> Value:
        text = name.full.lower() if lower else name.full
        return Value("PERSON", text, self.group())

    def miss(self) -> Miss:
        roll = self.rng.random()
        if roll < 0.35:
            return Miss("word", self.rng.choice(WORD_MISSES))
        if roll < 0.7:
            return Miss("product", self.rng.choice(PRODUCT_MISSES))
        if roll < 0.85:
            return Miss("time", self.rng.choice(TIME_MISSES))
        return Miss("private_ip", self.values.private_ip())

    def text(self) -> LabelledText:
        maker = self.rng.choice(self.makers())
        out = maker()
        if self.rng.random() < 0.45 and "\n" not in out.text:
            out.say(self.rng.choice([" Also, ", " By the way, ", " Note: ", " "]), self.miss(), ".")
        out.check()
        return out

    def makers(self) -> list[Callable[[], LabelledText]]:
        return [
            self.intro, self.intro, self.lower_intro, self.titled, self.contact_block,
            self.signature, self.email, self.phone, self.phone, self.card, self.card,
            self.ssn, self.iban, self.ip, self.address, self.address, self.address,
            self.dob, self.order, self.account, self.booking, self.password, self.otp,
            self.api_key, self.username, self.licence, self.passport, self.near_misses,
        ]  # fmt: skip

    def v(self, entity: str, text: str) -> Value:
        return Value(entity, text, self.group())

    def intro(self) -> LabelledText:
        name = self.values.name()
        lead = self.rng.choice([
            "Hi, my name is ", "Hello, I'm ", "This is ", "My name is ", "Hi there, I am ",
            "Good morning, my full name is ", "Name: ", "You can call me ",
        ])  # fmt: skip
        rest = self.rng.choice(
            [" and I need help with my order.", ".", ", calling about a refund.", " here.", ""]
        )
        return LabelledText().say(lead, self.name_value(name), rest)

    def lower_intro(self) -> LabelledText:
        name = self.values.name()
        lead = self.rng.choice(
            ["hi my name is ", "my name is ", "name is ", "hey its ", "this is "]
        )
        return LabelledText().say(
            lead,
            self.name_value(name, lower=True),
            self.rng.choice([" pls help", "", ", my parcel is lost", " thx"]),
        )

    def titled(self) -> LabelledText:
        name = self.values.name()
        title = self.rng.choice(["Mr.", "Mrs.", "Ms", "Dr.", "Prof."])
        lead = self.rng.choice(
            ["Please forward this to ", "Dear ", "I spoke with ", "Appointment for "]
        )
        return LabelledText().say(
            lead,
            f"{title} ",
            self.v("PERSON", name.last),
            self.rng.choice([".", ", thank you.", " tomorrow."]),
        )

    def contact_block(self) -> LabelledText:
        name = self.values.name()
        out = LabelledText().say(self.name_value(name), "\n")
        for piece in self.rng.sample(["phone", "email", "address"], 2):
            if piece == "phone":
                out.say(
                    self.rng.choice(["Tel: ", "Phone: ", "Mobile "]),
                    self.v("PHONE_NUMBER", self.values.phone()),
                    "\n",
                )
            elif piece == "email":
                out.say(self.v("EMAIL_ADDRESS", self.values.email(name)), "\n")
            else:
                out.say(self.v("STREET_ADDRESS", self.values.address()), "\n")
        out.text = out.text.rstrip("\n")
        return out

    def signature(self) -> LabelledText:
        name = self.values.name()
        body = self.rng.choice(
            [
                "Thanks for sorting out the delivery.",
                "Please cancel the subscription.",
                "The replacement works fine now.",
            ]
        )
        close = self.rng.choice(
            ["Best regards,", "Kind regards,", "Thanks,", "Cheers,", "Sincerely,"]
        )
        return LabelledText().say(body, "\n\n", close, "\n", self.name_value(name))

    def email(self) -> LabelledText:
        name = self.values.name()
        lead = self.rng.choice(
            ["My email is ", "Send the receipt to ", "you can reach me at ", "Email: "]
        )
        return LabelledText().say(
            lead,
            self.v("EMAIL_ADDRESS", self.values.email(name)),
            self.rng.choice([".", " please", ""]),
        )

    def phone(self) -> LabelledText:
        lead = self.rng.choice(
            [
                "Call me on ",
                "My number is ",
                "phone: ",
                "You can reach me at ",
                "text me at ",
                "my mobile is ",
            ]
        )
        return LabelledText().say(
            lead,
            self.v("PHONE_NUMBER", self.values.phone()),
            self.rng.choice([" after 5pm.", ".", "", " any time."]),
        )

    def card(self) -> LabelledText:
        lead = self.rng.choice(
            [
                "Please charge my card ",
                "Card number: ",
                "use the card ",
                "my credit card is ",
                "Charge it to ",
            ]
        )
        return LabelledText().say(
            lead,
            self.v("CREDIT_CARD", self.values.card()),
            self.rng.choice([" for the upgrade.", ".", ", expiry 04/27."]),
        )

    def ssn(self) -> LabelledText:
        lead = self.rng.choice(
            ["My social security number is ", "SSN: ", "for the tax form, my SSN is "]
        )
        return LabelledText().say(lead, self.v("US_SSN", self.values.ssn()), ".")

    def iban(self) -> LabelledText:
        lead = self.rng.choice(
            ["Refund it to my IBAN ", "IBAN: ", "my bank account is ", "Please transfer to "]
        )
        return LabelledText().say(
            lead, self.v("IBAN_CODE", self.values.iban()), self.rng.choice([", please.", ".", ""])
        )

    def ip(self) -> LabelledText:
        lead = self.rng.choice(
            [
                "The login failed from IP address ",
                "my IP is ",
                "blocked from ",
                "The request came from ",
            ]
        )
        return LabelledText().say(
            lead,
            self.v("IP_ADDRESS", self.values.ip()),
            self.rng.choice([" this morning.", ".", ""]),
        )

    def address(self) -> LabelledText:
        lead = self.rng.choice(
            [
                "Ship it to ",
                "My address is ",
                "Please deliver to ",
                "I moved to ",
                "Billing address: ",
            ]
        )
        return LabelledText().say(
            lead,
            self.v("STREET_ADDRESS", self.values.address()),
            self.rng.choice([".", ", thanks.", ""]),
        )

    def dob(self) -> LabelledText:
        lead = self.rng.choice(["My date of birth is ", "DOB: ", "I was born on ", "born "])
        return LabelledText().say(
            lead,
            self.v("DATE_TIME", self.values.dob()),
            self.rng.choice([".", " if you need to verify me.", ""]),
        )

    def order(self) -> LabelledText:
        lead = self.rng.choice(
            ["Where is my order ", "Order number: ", "my order ", "tracking number "]
        )
        return LabelledText().say(
            lead,
            self.v("ORDER_NUMBER", self.values.order_id()),
            self.rng.choice(["? It is late.", " has not arrived.", "."]),
        )

    def account(self) -> LabelledText:
        lead = self.rng.choice(
            ["My account number is ", "account ", "Customer ID: ", "member number "]
        )
        return LabelledText().say(lead, self.v("ACCOUNT_ID", self.values.account_id()), ".")

    def booking(self) -> LabelledText:
        lead = self.rng.choice(
            ["My booking reference is ", "Booking ref: ", "confirmation code ", "PNR "]
        )
        return LabelledText().say(lead, self.v("BOOKING_REFERENCE", self.values.booking_ref()), ".")

    def password(self) -> LabelledText:
        lead = self.rng.choice(
            ["my password is ", "Password: ", "I set the password to ", "the pin is "]
        )
        value = self.values.password() if "pin" not in lead else self.values.otp()
        return LabelledText().say(
            lead, self.v("PASSWORD", value), self.rng.choice(["", " but it fails", "."])
        )

    def otp(self) -> LabelledText:
        lead = self.rng.choice(
            ["The code is ", "verification code: ", "my one-time code is ", "OTP "]
        )
        return LabelledText().say(
            lead,
            self.v("ONE_TIME_CODE", self.values.otp()),
            self.rng.choice(["", ".", " but it expired"]),
        )

    def api_key(self) -> LabelledText:
        lead = self.rng.choice(["Here is my API key: ", "token ", "I pasted ", "the key "])
        return LabelledText().say(
            lead,
            self.v("API_KEY", self.values.api_key()),
            self.rng.choice(["", " into the settings", "."]),
        )

    def username(self) -> LabelledText:
        name = self.values.name()
        lead = self.rng.choice(["my username is ", "Login: ", "user name ", "I log in as "])
        return LabelledText().say(
            lead,
            self.v("USERNAME", self.values.username(name)),
            self.rng.choice(["", ".", " and it is locked"]),
        )

    def licence(self) -> LabelledText:
        lead = self.rng.choice(
            ["My driver's license number is ", "licence no. ", "Driver license: "]
        )
        return LabelledText().say(lead, self.v("US_DRIVER_LICENSE", self.values.licence()), ".")

    def passport(self) -> LabelledText:
        lead = self.rng.choice(["passport number ", "My passport no. is ", "Passport: "])
        return LabelledText().say(lead, self.v("US_PASSPORT", self.values.passport()), ".")

    def near_misses(self) -> LabelledText:
        out = LabelledText().say(
            self.rng.choice(["Quick question: ", "Hi, ", "", "FYI "]), self.miss()
        )
        out.say(
            self.rng.choice([" and ", ", also ", "; "]),
            self.miss(),
            self.rng.choice([".", "?", ""]),
        )
        return out
