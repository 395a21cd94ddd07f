"""Synthetic but realistic personal data: names, e-mails, phones, addresses, customer ids.

Phone numbers use the 555-01xx range reserved for fiction and UK 07700 900xxx drama numbers;
e-mail domains are common providers, so de-identification meets what it meets in production.
The name lists are split like phrase pools, so the heldout split also meets other names.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from benchmarks.corpus.pools import P, Split

# fmt: off
FIRST = P(
    "Maria", "James", "Aisha", "Wei", "Sofia", "Daniel", "Priya", "Lucas", "Fatima", "Noah",
    "Elena", "Kwame", "Hannah", "Mateo", "Yuki", "Oliver", "Chloe", "Rahul", "Ingrid", "Omar",
    "Grace", "Diego", "Amara", "Tomasz", "Leila", "Ethan", "Mei", "Samuel", "Zara", "Viktor",
    "Nadia", "Connor", "Isabel", "Jamal", "Freya", "Hiro", "Olivia", "Andre", "Sunita", "Felix",
    "Camila", "Marcus", "Ana", "Benjamin", "Lina", "Gabriel", "Rosa", "Arjun", "Emily", "Tariq",
)
LAST = P(
    "Lopez", "Okafor", "Chen", "Schmidt", "Patel", "Novak", "Haddad", "Johansson", "Kim",
    "Martin", "Rossi", "Mensah", "Garcia", "Nguyen", "Fischer", "Sato", "Brennan", "Kowalski",
    "Silva", "Ahmed", "Dubois", "Moreau", "Walker", "Ivanova", "Tanaka", "Owusu", "Fernandes",
    "Bauer", "Murphy", "Costa", "Reyes", "Lindqvist", "Hughes", "Yilmaz", "Adeyemi", "Park",
    "Romero", "Carter", "Nakamura", "Petrov",
)
EMAIL_DOMAINS = P(
    "gmail.com", "outlook.com", "yahoo.com", "proton.me", "icloud.com", "hotmail.co.uk",
    "fastmail.com", "gmx.de", "aol.com", "live.com",
)
STREETS = P(
    "Maple Avenue", "Harbor Road", "Elm Street", "Juniper Lane", "Cedar Court", "Orchard Way",
    "Willow Drive", "Kingsley Road", "Birch Street", "Lakeview Drive", "Foxglove Close",
    "Station Road", "Hawthorn Avenue", "Mill Lane", "Bayview Terrace", "Rosemary Street",
)
CITIES = P(
    "Springfield", "Leeds", "Portland", "Manchester", "Austin", "Bristol", "Denver", "Glasgow",
    "Madison", "Cardiff", "Raleigh", "Norwich", "Tucson", "Brighton", "Boise", "Dundee",
)
# fmt: on


@dataclass(frozen=True)
class Person:
    first: str
    last: str
    email: str
    phone: str
    address: str
    city: str
    customer_id: str

    @property
    def name(self) -> str:
        return f"{self.first} {self.last}"


def _phone(rng: random.Random) -> str:
    style = rng.randrange(5)
    area = rng.choice(["415", "212", "312", "206", "617", "512", "303", "646"])
    line = f"01{rng.randrange(100):02d}"
    if style == 0:
        return f"({area}) 555-{line}"
    if style == 1:
        return f"+1 {area}-555-{line}"
    if style == 2:
        return f"{area}.555.{line}"
    if style == 3:
        return f"+44 7700 900{rng.randrange(1000):03d}"
    return f"07700 900{rng.randrange(1000):03d}"


def _email(rng: random.Random, first: str, last: str, split: Split) -> str:
    domain = rng.choice(EMAIL_DOMAINS.of(split))
    local = rng.choice(
        [
            f"{first}.{last}",
            f"{first}{last}{rng.randrange(10, 99)}",
            f"{first[0]}{last}",
            f"{first}_{last[0]}",
            f"{last}.{first}{rng.randrange(1970, 2004)}",
        ]
    )
    return f"{local.lower()}@{domain}"


def make_person(rng: random.Random, split: Split, taken: set[str]) -> Person:
    """A new person whose customer id and e-mail no earlier person of this corpus has."""
    while True:
        first = rng.choice(FIRST.of(split))
        last = rng.choice(LAST.of(split))
        email = _email(rng, first, last, split)
        customer_id = f"ACC-{rng.randrange(10**7, 10**8)}"
        if email not in taken and customer_id not in taken:
            taken.update((email, customer_id))
            break
    number = rng.randrange(12, 4800)
    return Person(
        first=first,
        last=last,
        email=email,
        phone=_phone(rng),
        address=f"{number} {rng.choice(STREETS.of(split))}",
        city=rng.choice(CITIES.of(split)),
        customer_id=customer_id,
    )


def other_address(rng: random.Random, split: Split, person: Person) -> str:
    while True:
        address = f"{rng.randrange(12, 4800)} {rng.choice(STREETS.of(split))}"
        if address != person.address:
            return address


def other_email(rng: random.Random, split: Split, person: Person) -> str:
    while True:
        email = _email(rng, person.first, person.last, split)
        if email != person.email:
            return email


def other_phone(rng: random.Random, person: Person) -> str:
    while True:
        phone = _phone(rng)
        if phone != person.phone:
            return phone
