"""Build Presidio's analyzer from installed packages only.

The spaCy model must be an installed package: Presidio's own loader downloads a missing model,
which turnwatch never allows. The dependency parser is left out because no recognizer reads it
and it costs about a third of the pipeline's time.
"""

from __future__ import annotations

import logging

import spacy
from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
from presidio_analyzer.nlp_engine import NerModelConfiguration, SpacyNlpEngine
from presidio_analyzer.predefined_recognizers import EmailRecognizer
from turnwatch.collector.deid.config import DeidConfig
from turnwatch.collector.deid.offline import OfflineEmailRecognizer
from turnwatch.collector.deid.recognizers import (
    custom_pattern_recognizer,
    deny_list_recognizer,
    introduced_name_recognizer,
)

LANGUAGE = "en"
UNUSED_COMPONENTS = ["parser"]

# Presidio logs matched text (the IBAN validator at ERROR, context words at DEBUG): silence it.
for _name in ("presidio-analyzer", "presidio-anonymizer"):
    logging.getLogger(_name).disabled = True


class ModelMissingError(Exception):
    pass


class InstalledSpacyEngine(SpacyNlpEngine):
    """Presidio's spaCy engine, loading an installed package and never downloading one."""

    def load(self) -> None:
        self.nlp = {}
        for model in self.models:
            name = model["model_name"]
            if not spacy.util.is_package(name):
                raise ModelMissingError(
                    f"spaCy model package {name!r} is not installed; install it with pip "
                    "(turnwatch never downloads models at run time)"
                )
            self.nlp[model["lang_code"]] = spacy.load(name, exclude=UNUSED_COMPONENTS)


def load_nlp_engine(model: str) -> InstalledSpacyEngine:
    engine = InstalledSpacyEngine(
        models=[{"lang_code": LANGUAGE, "model_name": model}],
        # ORGANIZATION and NRP are not personal data here and only cost precision.
        ner_model_configuration=NerModelConfiguration(
            labels_to_ignore=["ORGANIZATION", "ORG", "NORP", "NRP", "CARDINAL", "ORDINAL"]
        ),
    )
    engine.load()
    return engine


def build_analyzer(config: DeidConfig, nlp_engine: InstalledSpacyEngine) -> AnalyzerEngine:
    registry = RecognizerRegistry(supported_languages=[LANGUAGE])
    registry.load_predefined_recognizers(nlp_engine=nlp_engine, languages=[LANGUAGE])
    registry.remove_recognizer(EmailRecognizer.__name__)
    registry.add_recognizer(OfflineEmailRecognizer())
    for number, spec in enumerate(config.patterns):
        registry.add_recognizer(custom_pattern_recognizer(number, spec))
    if config.introduced_names:
        registry.add_recognizer(introduced_name_recognizer())
    if config.deny_list:
        registry.add_recognizer(deny_list_recognizer(config.deny_list))
    # Recognizers for entities nobody asked for would only burn CPU.
    wanted = set(config.all_entities())
    registry.recognizers = [
        recognizer
        for recognizer in registry.recognizers
        if wanted.intersection(recognizer.supported_entities)
    ]
    return AnalyzerEngine(
        registry=registry,
        nlp_engine=nlp_engine,
        supported_languages=[LANGUAGE],
        default_score_threshold=config.score_threshold,
    )
