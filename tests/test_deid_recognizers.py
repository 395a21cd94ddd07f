"""turnwatch's recognizers and session rules one class at a time, without the NER model (fast):
each class on what it must find, and on the near misses it must leave."""

from __future__ import annotations

import random

import pytest
from turnwatch.collector.deid.cache import Finding
from turnwatch.collector.deid.config import DeidConfig
from turnwatch.collector.deid.context import TurnText, answers, split_values
from turnwatch.collector.deid.fields import FieldRules
from turnwatch.collector.deid.people import propagate_people
from turnwatch.collector.deid.propagate import propagate
from turnwatch.collector.deid.pseudonym import Pseudonymizer, canonical
from turnwatch.collector.deid.recognizers.addresses import PostalAddressRecognizer
from turnwatch.collector.deid.recognizers.credentials import CredentialRecognizer
from turnwatch.collector.deid.recognizers.dates import CalendarDateRecognizer
from turnwatch.collector.deid.recognizers.identifiers import (
    DocumentNumberRecognizer,
    ReferenceRecognizer,
    SocialSecurityRecognizer,
)
from turnwatch.collector.deid.recognizers.names import (
    ContactBlockNameRecognizer,
    IntroducedNameRecognizer,
)
from turnwatch.collector.deid.recognizers.numbers import (
    CardNumberRecognizer,
    IbanCodeRecognizer,
    IpAddressRecognizer,
    PhoneNumberRecognizer,
)

from benchmarks.pii.values import CARD_KINDS, luhn_complete
from turnwatch.schema import Role

REGIONS = DeidConfig().phone_regions
GITHUB_TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"


def found(recognizer, text: str) -> list[tuple[str, str]]:
    return [(r.entity_type, text[r.start : r.end]) for r in recognizer.analyze(text, [])]


def values(recognizer, text: str) -> list[str]:
    return [value for _, value in found(recognizer, text)]


@pytest.mark.parametrize(("prefix", "length"), CARD_KINDS)
def test_cards_of_every_issuer_range_and_length(prefix, length):
    digits = luhn_complete(prefix, length, random.Random(length))
    grouped = " ".join(digits[i : i + 4] for i in range(0, length, 4))
    assert values(CardNumberRecognizer(), f"charge {grouped} now") == [grouped]
    assert values(CardNumberRecognizer(), f"card {digits}.") == [digits]


def test_cards_fail_their_checks_and_product_codes_stay():
    card = CardNumberRecognizer()
    assert values(card, "card 4111 1111 1111 1112") == []  # Luhn
    assert values(card, "ref 9111 1111 1111 1111") == []  # no issuer starts with 9111
    digits = luhn_complete("4", 13, random.Random(1))
    assert values(card, f"EAN {digits} on the box") == []  # a product's barcode
    assert values(card, f"card {digits}") == [digits]  # the same digits as a card


def test_a_product_word_in_an_earlier_sentence_does_not_hide_a_number():
    digits = luhn_complete("4", 16, random.Random(2))
    for text in (f"SKU 48213. Charge it to {digits}.", f"Also, 3 items. Use card {digits}"):
        assert values(CardNumberRecognizer(), text) == [digits], text
    assert values(PhoneNumberRecognizer(REGIONS), "item 5567. text me at 612 311 799") == [
        "612 311 799"
    ]
    assert found(ReferenceRecognizer(), "SKU 48213.\n\naccount AC44928615.") == [
        ("ACCOUNT_ID", "AC44928615")
    ]


@pytest.mark.parametrize(
    "phone",
    ["(415) 867-5309", "+1 415 867 5309", "020 7946 0958", "+44 20 7946 0958", "030 901820",
     "+49 30 901820", "06 12 34 56 78", "612 345 678", "+61 412 345 678", "098765 43210"],
)  # fmt: skip
def test_phones_in_national_and_international_formats(phone):
    assert values(PhoneNumberRecognizer(REGIONS), f"call me on {phone} please") == [phone]


def test_a_phone_followed_by_another_number_ends_where_the_phone_does():
    text = "Call me on (206) 534-0166 10.209.28.159."
    assert values(PhoneNumberRecognizer(REGIONS), text) == ["(206) 534-0166"]


def test_phone_near_misses_stay():
    phones = PhoneNumberRecognizer(REGIONS)
    for text in ("from 192.168.1.20 today", "on 2024-05-12", "order 31860", "EAN 4006381333931"):
        assert values(phones, text) == [], text


def test_one_phone_in_any_format_has_one_canonical_value():
    forms = ["(415) 867-5309", "+1 415 867 5309", "415.867.5309", "1-415-867-5309"]
    assert {canonical(form, REGIONS) for form in forms} == {"+14158675309"}


def test_ibans_compact_and_printed_checked_by_mod_97():
    ibans = IbanCodeRecognizer()
    assert values(ibans, "IBAN DE89 3704 0044 0532 0130 00 OK") == ["DE89 3704 0044 0532 0130 00"]
    assert values(ibans, "to GB82WEST12345698765432.") == ["GB82WEST12345698765432"]
    assert values(ibans, "to GB83WEST12345698765432.") == []  # check digits wrong
    printed, compact = "DE89 3704 0044 0532 0130 00", "de89370400440532013000"
    assert canonical(printed, REGIONS) == canonical(compact, REGIONS)


def test_public_ips_only():
    ips = IpAddressRecognizer()
    text = "from 8.8.4.4, 2001:4860:4860::8888, 192.168.1.1, 10.0.0.7, 127.0.0.1 and ::1"
    assert values(ips, text) == ["8.8.4.4", "2001:4860:4860::8888"]
    assert values(ips, "firmware version 10.2.3.4") == []


def test_references_are_whole_and_typed_by_their_cue():
    refs = ReferenceRecognizer()
    assert found(refs, "Where is my order A-10234?") == [("ORDER_NUMBER", "A-10234")]
    assert found(refs, "account number: 88120934") == [("ACCOUNT_ID", "88120934")]
    assert ("BOOKING_REFERENCE", "X7K9PQ") in found(refs, "booking ref is X7K9PQ")
    assert found(refs, "ORD-31860 shipped") == [("ORDER_NUMBER", "ORD-31860")]
    assert found(refs, "product number 12345, item 5567, flight 1203") == []


def test_social_security_and_document_numbers():
    assert values(SocialSecurityRecognizer(), "SSN 123-45-6789") == ["123-45-6789"]
    assert values(SocialSecurityRecognizer(), "my social security number is 123456789") == [
        "123456789"
    ]
    assert values(SocialSecurityRecognizer(), "call 123456789 or 666-12-3456") == []
    documents = DocumentNumberRecognizer()
    assert found(documents, "Licence no. A123-4567-8901 please") == [
        ("US_DRIVER_LICENSE", "A123-4567-8901")
    ]
    assert found(documents, "passport number: 533380006") == [("US_PASSPORT", "533380006")]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("my password is hunter2!", [("PASSWORD", "hunter2!")]),
        ("I set the password to blue195#", [("PASSWORD", "blue195#")]),
        ("the code is 482913", [("ONE_TIME_CODE", "482913")]),
        ("my username is jdoe88", [("USERNAME", "jdoe88")]),
        ("I log in as m.garcia", [("USERNAME", "m.garcia")]),
        (f"token {GITHUB_TOKEN}", [("API_KEY", GITHUB_TOKEN)] * 2),
        ("postal code 10115, promo code SPRING24", []),
        ("the login failed, please reset my password", []),
    ],
)  # fmt: skip
def test_secrets_typed_in_chat(text, expected):
    assert found(CredentialRecognizer(), text) == expected


def test_whole_calendar_dates_not_times_of_day():
    dates = CalendarDateRecognizer()
    for date in ("1985-03-14", "14/03/1985", "14 March 1985", "March 14, 1985", "3rd of May 1990"):
        assert values(dates, f"born {date}.") == [date]
    assert values(dates, "tomorrow at 5pm, next Monday, within 2 business days") == []


@pytest.mark.parametrize(
    "address",
    [
        "742 Evergreen Terrace, Springfield, IL 62704, USA",
        "55 Oak Avenue Apt 4B, Boston, MA 02116",
        "10 Downing Street, London SW1A 2AA",
        "4 Privet Drive, Little Whinging, Surrey GU1 3SX",
        "Hauptstraße 12, 10115 Berlin, Germany",
        "12 rue de la Paix, 75002 Paris",
        "Via Roma 10, 00184 Roma, Italia",
        "Calle Mayor 5, 3º B, 28013 Madrid",
        "Keizersgracht 123, 1015 CJ Amsterdam",
        "ul. Marszałkowska 84, 00-514 Warszawa",
        "P.O. Box 1234, Austin, TX 78701",
    ],
)
def test_addresses_whole_in_common_national_formats(address):
    assert PostalAddressRecognizer().analyze(f"Ship it to {address}.", [])[0:1]
    spans = {value for value in values(PostalAddressRecognizer(), f"Ship it to {address}.")}
    assert address in spans


def test_coarse_location_keeps_city_state_and_country():
    text = "Ship it to 742 Evergreen Terrace, Springfield, IL 62704, USA please."
    kept = values(PostalAddressRecognizer(keep_coarse_location=True), text)
    assert "742 Evergreen Terrace" in kept and "62704" in kept
    assert not any("Springfield" in value or "USA" in value for value in kept)
    assert values(PostalAddressRecognizer(), "18 Elm Road is on its way") == ["18 Elm Road"]
    assert values(PostalAddressRecognizer(), "promo code SPRING24, 3 items") == []


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("Hi, my name is rose hill and I need help", "rose hill"),
        ("my name is José García-López.", "José García-López"),
        ("I am Maria J. Garcia", "Maria J. Garcia"),
        ("Dear Mr. van der Berg,", "van der Berg"),
        ("it is under Nguyễn Văn An", "Nguyễn Văn An"),
        ("Passenger: zoë müller", "zoë müller"),
        ("hey its tomás le roux pls help", "tomás le roux"),
        ("Thanks, Will!", "Will"),
        ("My name is June A. Rivers.", "June A. Rivers"),
        ("name is ingrid m. abernathy I set the password", "ingrid m. abernathy"),
        ("Hi. name's james costa, order 5", "james costa"),
        ("Sure. this is faith bell pls help", "faith bell"),
        ("order 5 is late. hey its ondřej abernathy, thanks", "ondřej abernathy"),
    ],
)
def test_introduced_names_in_every_script_and_shape(text, name):
    assert name in values(IntroducedNameRecognizer(), text)


def test_cue_words_without_a_name_find_nothing():
    names = IntroducedNameRecognizer()
    for text in (
        "I am looking for my order", "Hello, this is Acme support.", "thanks, see you",
        "it's very late. this is taking ages. i'm really sorry. it's the wrong size, please",
        "this is so frustrating pls help. I'm not happy. its still broken.",
        "Name is wrong on my card. Your name is on the list.",
    ):  # fmt: skip
        assert values(names, text) == [], text


def test_a_name_heading_a_contact_block_or_closing_a_letter():
    contact = ContactBlockNameRecognizer()
    assert values(contact, "Maria Garcia\n+1 415 867 5309\nmaria@example.com") == ["Maria Garcia"]
    letter = "Thanks for the help.\n\nBest regards,\nSøren Kierkegaard"
    assert values(contact, letter) == ["Søren Kierkegaard"]
    assert values(contact, "Order status\nshipped 3 items") == []


def spans(findings: dict, text: str) -> list[tuple[str, str | None]]:
    return sorted((text[f.start : f.end], f.key) for f in findings[text])


def test_every_name_part_gets_its_persons_token_and_common_words_only_as_the_name():
    intro, later = (
        "my name is Will May",
        "Thanks, Will! I will call you. May I help? Ms May will see.",
    )
    echo = "Thanks maria, M. Garcia is noted. Garcia’s file. Maria G. ok"
    findings = {
        intro: (Finding(11, 19, "PERSON", 0.8),),
        later: (),
        "Hello Maria Garcia": (Finding(6, 18, "PERSON", 0.85),),
        echo: (),
    }
    out = propagate_people(findings)
    assert spans(out, later) == [("May", "will may"), ("Will", "will may")]
    assert {key for _, key in spans(out, echo)} == {"maria garcia"}
    assert [value for value, _ in spans(out, echo)] == ["Garcia", "M. Garcia", "Maria G.", "maria"]


def test_a_surname_alone_joins_its_person():
    findings = {
        "Chen di Stefano": (Finding(0, 15, "PERSON", 0.8),),
        "Ms di Stefano": (Finding(3, 13, "PERSON", 0.8),),
    }
    out = propagate_people(findings)
    assert {key for text in findings for _, key in spans(out, text)} == {"chen di stefano"}


def test_values_recur_in_other_formats():
    findings = {
        "call 415-867-5309": (Finding(5, 17, "PHONE_NUMBER", 0.9),),
        "noted (415) 867 5309.": (),
    }
    out = propagate(findings, lambda value: canonical(value, REGIONS))
    assert spans(out, "noted (415) 867 5309.") == [("(415) 867 5309", "+14158675309")]


def test_answers_to_the_assistants_questions():
    turns = [
        TurnText(Role.ASSISTANT, "What's the name on the account?"),
        TurnText(Role.USER, "rose hill"),
        TurnText(Role.ASSISTANT, "What is your password?"),
        TurnText(Role.USER, "Sure, it's Mango2710!"),
        TurnText(Role.ASSISTANT, "Anything else?"),
        TurnText(Role.USER, "no thanks"),
    ]
    got = {
        text: [(text[f.start : f.end], f.entity) for f in items]
        for text, items in answers(turns).items()
    }
    assert got == {
        "rose hill": [("rose hill", "PERSON")],
        "Sure, it's Mango2710!": [("Mango2710!", "PASSWORD")],
    }


def test_numbers_typed_across_user_turns_are_joined():
    turns = [
        TurnText(Role.ASSISTANT, "And your phone number?"),
        TurnText(Role.USER, "it's 415 732..."),
        TurnText(Role.ASSISTANT, "Go on."),
        TurnText(Role.USER, "...9184"),
        TurnText(Role.USER, "I have 2 orders"),
    ]
    recognizers = [PhoneNumberRecognizer(["US"])]
    got = split_values(turns, recognizers, lambda value: canonical(value, ["US"]))
    assert {
        text: [(text[f.start : f.end], f.entity, f.key) for f in items]
        for text, items in got.items()
    } == {
        "it's 415 732...": [("415 732", "PHONE_NUMBER", "+14157329184")],
        "...9184": [("9184", "PHONE_NUMBER", "+14157329184")],
    }


def test_tool_fields_by_key():
    rules = FieldRules(DeidConfig())
    assert rules.entity("customer_email", "a@b.co", frozenset()) == "EMAIL_ADDRESS"
    assert rules.entity("passenger", "Zoë Müller", frozenset()) == "PERSON"
    assert rules.entity("cardHolder", "Banks, Grace", frozenset()) == "PERSON"
    assert rules.entity("bookingRef", "X7K9PQ", frozenset()) == "BOOKING_REFERENCE"
    assert rules.entity("order_id", "A-10234", frozenset()) == "ORDER_NUMBER"
    assert rules.entity("account_number", "88120934", frozenset()) == "ACCOUNT_ID"
    assert rules.entity("product_id", "P-100", frozenset()) is None
    assert rules.entity("order_status", "shipped", frozenset()) is None
    assert rules.entity("name", "Blue Widget", frozenset({"name", "sku", "price"})) is None
    assert rules.names_a_thing("name", frozenset({"name", "sku"}))


def test_tokens_are_keyed_by_the_value_not_its_type():
    pseudonymizer = Pseudonymizer(b"k" * 32, REGIONS)
    card = pseudonymizer.token("CREDIT_CARD", "4111 1111 1111 1111")
    as_date = pseudonymizer.token("DATE_TIME", "4111-1111-1111-1111")
    assert card.split("_")[-1] == as_date.split("_")[-1]
    assert pseudonymizer.token("ORDER_NUMBER", "A-10234") == pseudonymizer.token(
        "ORDER_NUMBER", "a10234"
    )
