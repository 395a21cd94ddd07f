"""Build Presidio's analyzer from installed packages only.

The spaCy model must be an installed package: Presidio's own loader downloads a missing model,
which turnwatch never allows. Only the tokenizer and the entity recognizer run (tok2vec and
ner): no recognizer reads tags, lemmas or the parse, and they cost over a third of the
pipeline's time. The NER labels are passed through under their spaCy names, and
`NameNerRecognizer` decides what they are in context.
"""

from __future__ import annotations

import logging

import spacy
from presidio_analyzer import AnalyzerEngine, EntityRecognizer, RecognizerRegistry
from presidio_analyzer import predefined_recognizers as predefined
from presidio_analyzer.nlp_engine import NerModelConfiguration, SpacyNlpEngine
from turnwatch.collector.deid.config import DeidConfig
from turnwatch.collector.deid.offline import OfflineEmailRecognizer
from turnwatch.collector.deid.recognizers import turnwatch_recognizers
from turnwatch.collector.deid.recognizers.base import LANGUAGE

# Every component a spaCy English pipeline may hold besides tok2vec and ner (excluding a name
# the package does not have is harmless).
UNUSED_COMPONENTS = [
    "tagger", "parser", "attribute_ruler", "lemmatizer", "trainable_lemmatizer", "senter",
    "sentencizer", "morphologizer", "entity_ruler", "span_ruler", "textcat", "spancat",
]  # fmt: skip
NER_LABELS = ("PERSON", "NORP", "ORG", "GPE", "LOC", "FAC")
# Dates come from CalendarDateRecognizer (whole calendar dates only); amounts and ordinals are
# no PII.
IGNORED_LABELS = (
    "DATE", "TIME", "CARDINAL", "ORDINAL", "MONEY", "PERCENT", "QUANTITY", "PRODUCT",
    "EVENT", "WORK_OF_ART", "LAW", "LANGUAGE",
)  # fmt: skip

# Presidio logs matched text (the IBAN validator at ERROR, context words at DEBUG): silence it.
for _name in ("presidio-analyzer", "presidio-anonymizer"):
    logging.getLogger(_name).disabled = True


class ModelMissingError(Exception):
    """The stage cannot be built as configured (a model package or a recognizer is missing)."""


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

    def _doc_to_nlp_artifact(self, doc, language: str):
        # Without a lemmatizer every lemma is empty and Presidio's context words (custom
        # patterns' `context`) would never match: the lower-cased word stands in for its lemma.
        for token in doc:
            if not token.lemma_:
                token.lemma_ = token.lower_
        return super()._doc_to_nlp_artifact(doc, language)


def load_nlp_engine(model: str) -> InstalledSpacyEngine:
    engine = InstalledSpacyEngine(
        models=[{"lang_code": LANGUAGE, "model_name": model}],
        ner_model_configuration=NerModelConfiguration(
            labels_to_ignore=list(IGNORED_LABELS),
            model_to_presidio_entity_mapping={label: label for label in NER_LABELS},
            low_score_entity_names=[],
        ),
    )
    engine.load()
    return engine


def presidio_recognizer(name: str) -> EntityRecognizer:
    if name == "EmailRecognizer":
        return OfflineEmailRecognizer()
    factory = getattr(predefined, name, None)
    if not (isinstance(factory, type) and issubclass(factory, EntityRecognizer)):
        raise ModelMissingError(f"deid.presidio_recognizers: no Presidio recognizer {name!r}")
    return factory(supported_language=LANGUAGE)


def build_analyzer(config: DeidConfig, nlp_engine: InstalledSpacyEngine) -> AnalyzerEngine:
    registry = RecognizerRegistry(supported_languages=[LANGUAGE])
    for name in config.presidio_recognizers:
        registry.add_recognizer(presidio_recognizer(name))
    for recognizer in turnwatch_recognizers(config):
        registry.add_recognizer(recognizer)
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
