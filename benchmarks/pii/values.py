"""Synthetic values of every PII class, valid where validity matters to a recognizer (Luhn card
numbers of every issuer range and length, IBAN mod-97 check digits, SSN area rules, phone
numbers valid in their region, public IP addresses), in the formats people type them."""

from __future__ import annotations

import random
from dataclasses import dataclass

FIRST = [
    "Maria",
    "James",
    "Aisha",
    "Chen",
    "Olga",
    "Pedro",
    "Fatima",
    "Liam",
    "Noah",
    "Sofia",
    "Lukas",
    "Emma",
    "Mateo",
    "Chloé",
    "José",
    "Zoë",
    "Łukasz",
    "Søren",
    "Björn",
    "Aoife",
    "Siobhán",
    "Ngozi",
    "Chidi",
    "Priya",
    "Arjun",
    "Yuki",
    "Haruto",
    "Ana",
    "Inês",
    "Joaquín",
    "François",
    "Hélène",
    "Jürgen",
    "Małgorzata",
    "Dmitri",
    "Oksana",
    "Kwame",
    "Amara",
    "Leilani",
    "Tomás",
    "Nguyễn",
    "Thảo",
    "Ahmed",
    "Leila",
    "Ravi",
    "Elif",
    "Mehmet",
    "Ingrid",
    "Astrid",
    "Kofi",
    "Lucía",
    "Raphaël",
    "Zuzana",
    "Ondřej",
]
LAST = [
    "Garcia",
    "Okafor",
    "Kowalski",
    "Nguyen",
    "Schmidt",
    "Haddad",
    "Murphy",
    "Tanaka",
    "Müller",
    "Dubois",
    "Rossi",
    "Novák",
    "Fernández",
    "Silva",
    "Johansson",
    "Ó Briain",
    "O'Neill",
    "McAllister",
    "Nakamura",
    "Patel",
    "Mensah",
    "Adeyemi",
    "Kuznetsov",
    "Yılmaz",
    "Lindqvist",
    "Costa",
    "Moreau",
    "Bianchi",
    "Wiśniewski",
    "Horvát",
    "Petrović",
    "Andersen",
    "Okonkwo",
    "Castillo",
    "Brennan",
    "Abernathy",
    "Whitfield",
    "Kaur",
    "Osei",
]
PARTICLE_SURNAMES = [
    "van der Berg",
    "de la Cruz",
    "van Dijk",
    "von Trapp",
    "da Silva",
    "di Stefano",
    "Le Roux",
    "al-Masri",
]
HYPHENATED = [
    "García-López",
    "Smith-Jones",
    "Müller-Lüdenscheidt",
    "Nowak-Kowalska",
    "Dupont-Aignan",
]
# Given names and surnames that are ordinary English words.
COMMON_FIRST = [
    "Will",
    "Grace",
    "Hope",
    "Mark",
    "Rose",
    "June",
    "May",
    "Faith",
    "Joy",
    "Summer",
    "Bill",
    "Dawn",
]
COMMON_LAST = [
    "Hill",
    "Wood",
    "Stone",
    "Brown",
    "King",
    "Bell",
    "Rivers",
    "Banks",
    "Marsh",
    "Field",
]
DOMAINS = [
    "example.com",
    "mail.example.org",
    "post.example.co.uk",
    "inbox.example.net",
    "example.de",
]
STREETS_US = [
    "Evergreen",
    "Maple",
    "Oak",
    "Cedar",
    "Willow",
    "Harbor",
    "Sunset",
    "Lakeview",
    "Hillcrest",
    "Pine",
]
SUFFIXES_US = [
    "Street",
    "St",
    "Avenue",
    "Ave",
    "Road",
    "Rd",
    "Lane",
    "Drive",
    "Boulevard",
    "Court",
    "Terrace",
    "Way",
]
CITIES_US = [
    ("Springfield", "IL", "62704"),
    ("Austin", "TX", "78701"),
    ("Boston", "MA", "02116"),
    ("Denver", "CO", "80202"),
    ("Portland", "OR", "97205"),
    ("Madison", "WI", "53703"),
]
CITIES_UK = [
    ("London", "SW1A 2AA"),
    ("Manchester", "M1 1AE"),
    ("Leeds", "LS1 4AP"),
    ("Bristol", "BS1 5TR"),
    ("Edinburgh", "EH1 1YZ"),
]
STREETS_DE = [
    "Hauptstraße",
    "Bahnhofstraße",
    "Gartenweg",
    "Lindenallee",
    "Schillerstraße",
    "Marktplatz",
    "Goethestraße",
]
CITIES_DE = [
    ("10115", "Berlin"),
    ("80331", "München"),
    ("50667", "Köln"),
    ("20095", "Hamburg"),
    ("60311", "Frankfurt"),
]
STREETS_FR = [
    "rue de la Paix",
    "avenue Victor Hugo",
    "boulevard Saint-Michel",
    "rue des Lilas",
    "place de la République",
]
CITIES_FR = [("75002", "Paris"), ("69002", "Lyon"), ("13001", "Marseille"), ("31000", "Toulouse")]
STREETS_IT_ES = [
    "Via Roma",
    "Via Garibaldi",
    "Corso Italia",
    "Calle Mayor",
    "Avenida de la Constitución",
    "Calle de Alcalá",
]
CITIES_IT_ES = [
    ("00184", "Roma", "Italia"),
    ("20121", "Milano", "Italia"),
    ("28013", "Madrid", "España"),
    ("08002", "Barcelona", "Spain"),
]
STREETS_NL = ["Keizersgracht", "Prinsengracht", "Damstraat", "Kerkstraat", "Stationsplein"]
CITIES_NL = [("1015 CJ", "Amsterdam"), ("3011 AD", "Rotterdam"), ("2511 BT", "Den Haag")]
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
# (region, national format makers): numbers valid in the region (libphonenumber's examples).
PHONE_REGIONS = ["US", "GB", "DE", "FR", "ES", "IT", "NL", "IN", "AU", "CA"]


@dataclass(frozen=True)
class Name:
    first: str
    last: str
    middle_initial: str | None = None

    @property
    def full(self) -> str:
        middle = f" {self.middle_initial}." if self.middle_initial else ""
        return f"{self.first}{middle} {self.last}"

    @property
    def ambiguous_first(self) -> bool:
        return self.first in COMMON_FIRST

    @property
    def ambiguous_last(self) -> bool:
        return self.last in COMMON_LAST


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


# (prefix, length): Visa 13/16/19, Mastercard 5x and 2-series, Amex, Discover, JCB, Diners,
# Maestro 12-19, UnionPay 19, Mir.
CARD_KINDS = [
    ("4", 16), ("4", 13), ("4", 19), ("51", 16), ("55", 16), ("2221", 16), ("2720", 16),
    ("34", 15), ("37", 15), ("6011", 16), ("65", 16), ("3530", 16), ("36", 14), ("5018", 12),
    ("6759", 19), ("62", 19), ("2200", 16),
]  # fmt: skip


class Values:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.choice = rng.choice

    def digits(self, count: int) -> str:
        return "".join(str(self.rng.randrange(10)) for _ in range(count))

    def name(self, common: bool | None = None) -> Name:
        rng = self.rng
        common = rng.random() < 0.25 if common is None else common
        first = self.choice(COMMON_FIRST) if common else self.choice(FIRST)
        roll = rng.random()
        if common and rng.random() < 0.5:
            last = self.choice(COMMON_LAST)
        elif roll < 0.12:
            last = self.choice(PARTICLE_SURNAMES)
        elif roll < 0.22:
            last = self.choice(HYPHENATED)
        else:
            last = self.choice(LAST)
        initial = self.choice("ABCDEFGHJKLMNPRSTW") if rng.random() < 0.15 else None
        return Name(first, last, initial)

    def email(self, name: Name) -> str:
        local = self.choice(
            [
                f"{name.first}.{name.last}",
                f"{name.first[0]}{name.last}",
                f"{name.first}{self.rng.randrange(10, 99)}",
            ]
        )
        local = "".join(ch for ch in local.lower() if ch.isascii() and (ch.isalnum() or ch == "."))
        return f"{local or 'user'}{self.rng.randrange(10, 999)}@{self.choice(DOMAINS)}"

    def phone(self) -> str:
        rng, d = self.rng, self.digits
        region = self.choice(PHONE_REGIONS)
        if region in ("US", "CA"):
            area = self.choice(
                ["212", "415", "646", "312", "617", "206", "303", "512", "416", "604"]
            )
            exchange, line = f"{rng.randrange(2, 10)}{d(2)}", d(4)
            return self.choice(
                [
                    f"({area}) {exchange}-{line}",
                    f"{area}-{exchange}-{line}",
                    f"+1 {area} {exchange} {line}",
                    f"{area}.{exchange}.{line}",
                    f"1-{area}-{exchange}-{line}",
                ]
            )
        if region == "GB":
            tail = d(6)
            return self.choice(
                [
                    f"07700 9{tail[:2]} {tail[2:5]}",
                    f"+44 20 7946 0{d(3)}",
                    f"020 7946 0{d(3)}",
                    f"+44 7700 9{tail[:5]}",
                ]
            )
        if region == "DE":
            return self.choice(
                [f"030 {d(3)} {d(4)}", f"+49 30 {d(8)}", f"0151 {d(8)}", f"+49 151 {d(4)} {d(4)}"]
            )
        if region == "FR":
            return self.choice(
                [
                    f"01 {d(2)} {d(2)} {d(2)} {d(2)}",
                    f"+33 6 {d(2)} {d(2)} {d(2)} {d(2)}",
                    f"06 {d(2)} {d(2)} {d(2)} {d(2)}",
                ]
            )
        if region == "ES":
            return self.choice(
                [f"+34 612 {d(3)} {d(3)}", f"612 {d(3)} {d(3)}", f"91 {d(3)} {d(2)} {d(2)}"]
            )
        if region == "IT":
            return self.choice([f"+39 06 {d(4)} {d(4)}", f"347 {d(3)} {d(4)}", f"+39 347 {d(7)}"])
        if region == "NL":
            return self.choice([f"06 {d(8)}", f"+31 6 {d(4)} {d(4)}", f"020 {d(3)} {d(4)}"])
        if region == "IN":
            return self.choice([f"+91 98{d(3)} {d(5)}", f"098{d(3)} {d(5)}", f"+91-98{d(8)}"])
        return self.choice(
            [f"+61 4{d(2)} {d(3)} {d(3)}", f"04{d(2)} {d(3)} {d(3)}", f"(02) {d(4)} {d(4)}"]
        )

    def card(self) -> str:
        prefix, length = self.choice(CARD_KINDS)
        digits = luhn_complete(prefix, length, self.rng)
        style = self.rng.random()
        if style < 0.3:
            return digits
        separator = self.choice([" ", "-"])
        if length == 15:
            return separator.join([digits[:4], digits[4:10], digits[10:]])
        return separator.join(digits[i : i + 4] for i in range(0, length, 4))

    def ssn(self) -> str:
        area = self.choice([n for n in range(101, 900) if n != 666])
        serial = f"{area:03d}{self.rng.randrange(10, 99):02d}{self.rng.randrange(1000, 9999):04d}"
        return self.choice(
            [f"{serial[:3]}-{serial[3:5]}-{serial[5:]}", f"{serial[:3]} {serial[3:5]} {serial[5:]}"]
        )

    def iban(self) -> str:
        country = self.choice(["GB", "DE", "FR", "ES", "NL", "IT", "BE"])
        d = self.digits
        bank = "".join(self.choice("ABCDEFGHJKLMNPRSTWXY") for _ in range(4))
        bban = {
            "GB": bank + d(14),
            "DE": d(18),
            "FR": d(10) + "A" + d(12)[:12],
            "ES": d(20),
            "NL": bank + d(10),
            "IT": "X" + d(22)[:22],
            "BE": d(12),
        }[country]
        value = iban(country, bban)
        if self.rng.random() < 0.5:
            return " ".join(value[i : i + 4] for i in range(0, len(value), 4))
        return value

    def ip(self) -> str:
        if self.rng.random() < 0.2:
            groups = [f"{self.rng.randrange(1, 65535):x}" for _ in range(3)]
            return f"2a00:1450:{groups[0]}:{groups[1]}::{groups[2]}"
        while True:
            octets = [self.rng.randrange(1, 224), *(self.rng.randrange(256) for _ in range(3))]
            if octets[0] not in (10, 127, 100, 169, 172, 192, 198, 203):
                return ".".join(map(str, octets))

    def private_ip(self) -> str:
        return self.choice(
            [
                f"192.168.{self.rng.randrange(256)}.{self.rng.randrange(1, 255)}",
                "10." + ".".join(str(self.rng.randrange(1, 255)) for _ in range(3)),
                "127.0.0.1",
                f"172.16.{self.rng.randrange(256)}.{self.rng.randrange(1, 255)}",
            ]
        )

    def dob(self) -> str:
        year, month, day = (
            self.rng.randrange(1940, 2006),
            self.rng.randrange(1, 13),
            self.rng.randrange(1, 29),
        )
        return self.choice(
            [
                f"{year}-{month:02d}-{day:02d}",
                f"{month:02d}/{day:02d}/{year}",
                f"{day} {MONTHS[month - 1]} {year}",
                f"{MONTHS[month - 1]} {day}, {year}",
                f"{day:02d}.{month:02d}.{year}",
            ]
        )

    def address(self) -> str:
        rng, n = self.rng, self.rng.randrange(1, 9999)
        kind = rng.randrange(6)
        unit = self.choice(
            [
                "",
                "",
                f", Apt {rng.randrange(1, 40)}{self.choice('ABC')}",
                f" Suite {rng.randrange(100, 999)}",
            ]
        )
        if kind == 0:
            city, state, zip_code = self.choice(CITIES_US)
            tail = self.choice(
                [
                    f", {city}, {state} {zip_code}",
                    f", {city}, {state} {zip_code}, USA",
                    f", {city} {state} {zip_code}",
                ]
            )
            return f"{n} {self.choice(STREETS_US)} {self.choice(SUFFIXES_US)}{unit}{tail}"
        if kind == 1:
            city, post = self.choice(CITIES_UK)
            return (
                f"{rng.randrange(1, 300)} "
                f"{self.choice(['Baker', 'Station', 'Church', 'Victoria', 'Mill'])} "
                f"{self.choice(['Street', 'Road', 'Lane', 'Close', 'Gardens'])}, {city} {post}"
                + self.choice(["", ", United Kingdom", ", UK"])
            )
        if kind == 2:
            zip_code, city = self.choice(CITIES_DE)
            return (
                f"{self.choice(STREETS_DE)} {rng.randrange(1, 200)}{self.choice(['', 'a', 'b'])}, "
                f"{zip_code} {city}" + self.choice(["", ", Germany", ", Deutschland"])
            )
        if kind == 3:
            zip_code, city = self.choice(CITIES_FR)
            return (
                f"{rng.randrange(1, 150)} {self.choice(STREETS_FR)}, {zip_code} {city}"
                + self.choice(["", ", France"])
            )
        if kind == 4:
            zip_code, city, country = self.choice(CITIES_IT_ES)
            return (
                f"{self.choice(STREETS_IT_ES)} {rng.randrange(1, 200)}, {zip_code} {city}"
                + self.choice(["", f", {country}"])
            )
        zip_code, city = self.choice(CITIES_NL)
        return (
            f"{self.choice(STREETS_NL)} {rng.randrange(1, 400)}, {zip_code} {city}"
            + self.choice(["", ", Netherlands"])
        )

    def order_id(self) -> str:
        return self.choice(
            [
                f"ORD-{self.digits(8)}",
                f"A-{self.digits(5)}",
                f"{self.digits(9)}",
                f"ORD{self.digits(6)}",
                f"{self.choice('ABCDEFGHKMNPRSTWXYZ')}{self.digits(2)}-{self.digits(6)}",
            ]
        )

    def account_id(self) -> str:
        return self.choice(
            [
                f"ACC-{self.digits(7)}",
                f"{self.digits(10)}",
                f"AC{self.digits(8)}",
                f"CUST-{self.digits(6)}",
            ]
        )

    def booking_ref(self) -> str:
        letters = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
        return "".join(self.choice(letters) for _ in range(6))

    def password(self) -> str:
        word = self.choice(
            [
                "sunflower",
                "Tiger",
                "purple",
                "Mango",
                "hunter",
                "Dragon",
                "blue",
                "Rocket",
                "Winter",
                "maple",
            ]
        )
        return f"{word}{self.rng.randrange(10, 9999)}{self.choice(['', '!', '#', '$', '?'])}"

    def otp(self) -> str:
        return self.digits(self.choice([4, 6, 6, 8]))

    def api_key(self) -> str:
        alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
        body = "".join(self.choice(alnum) for _ in range(32))
        return self.choice(
            [
                f"sk-proj-{body}",
                f"ghp_{body}{body[:4]}",
                f"AKIA{body[:16].upper()}",
                f"xoxb-{self.digits(11)}-{body[:24]}",
            ]
        )

    def username(self, name: Name) -> str:
        base = "".join(
            ch for ch in (name.first[0] + name.last).lower() if ch.isascii() and ch.isalpha()
        )
        return f"{base or 'user'}{self.rng.randrange(1, 999)}"

    def licence(self) -> str:
        return self.choice(
            [
                f"{self.choice('ABCDEFGHS')}{self.digits(7)}",
                f"{self.choice('ABCDW')}{self.digits(3)}-{self.digits(4)}-{self.digits(4)}",
                f"{self.digits(9)}",
            ]
        )

    def passport(self) -> str:
        return self.choice(
            [
                self.digits(9),
                f"{self.choice('CXKL')}{self.digits(8)}",
                f"{self.choice('ABCDEFGH')}{self.choice('ABCDEFGH')}{self.digits(7)}",
            ]
        )
