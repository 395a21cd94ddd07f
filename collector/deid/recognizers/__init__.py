"""turnwatch's recognizers, by the name `deid.recognizers` lists them under, and the
configuration-built ones (custom patterns, deny list).

Each entry builds one small recognizer class from the stage's configuration; the analyzer runs
them next to the Presidio recognizers named in `deid.presidio_recognizers`.
"""

from __future__ import annotations

from collections.abc import Callable

from presidio_analyzer import EntityRecognizer, Pattern, PatternRecognizer
from turnwatch.collector.deid.config import CustomPattern, DeidConfig
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
from turnwatch.collector.deid.recognizers.ner import NameNerRecognizer
from turnwatch.collector.deid.recognizers.numbers import (
    CardNumberRecognizer,
    IbanCodeRecognizer,
    IpAddressRecognizer,
    PhoneNumberRecognizer,
)

CATALOGUE: dict[str, Callable[[DeidConfig], EntityRecognizer]] = {
    "cards": lambda config: CardNumberRecognizer(),
    "phones": lambda config: PhoneNumberRecognizer(config.phone_regions),
    "ibans": lambda config: IbanCodeRecognizer(),
    "ip_addresses": lambda config: IpAddressRecognizer(),
    "references": lambda config: ReferenceRecognizer(),
    "ssns": lambda config: SocialSecurityRecognizer(),
    "documents": lambda config: DocumentNumberRecognizer(),
    "credentials": lambda config: CredentialRecognizer(),
    "dates": lambda config: CalendarDateRecognizer(),
    "addresses": lambda config: PostalAddressRecognizer(config.keep_coarse_location),
    "introduced_names": lambda config: IntroducedNameRecognizer(),
    "contact_block_names": lambda config: ContactBlockNameRecognizer(),
    "ner_names": lambda config: NameNerRecognizer(),
}


def turnwatch_recognizers(config: DeidConfig) -> list[EntityRecognizer]:
    recognizers = [CATALOGUE[name](config) for name in config.recognizers]
    recognizers += [custom_pattern_recognizer(n, spec) for n, spec in enumerate(config.patterns)]
    if config.deny_list:
        recognizers.append(deny_list_recognizer(config.deny_list))
    return recognizers


def custom_pattern_recognizer(number: int, spec: CustomPattern) -> PatternRecognizer:
    return PatternRecognizer(
        supported_entity=spec.entity,
        name=f"turnwatch_pattern_{number}_{spec.entity.lower()}",
        patterns=[Pattern(spec.entity.lower(), spec.regex, spec.score)],
        context=spec.context or None,
    )


def deny_list_recognizer(words: list[str]) -> EntityRecognizer:
    return PatternRecognizer(
        supported_entity="DENY_LIST", name="turnwatch_deny_list", deny_list=words
    )
