"""Build Presidio's analyzer from installed packages only.

The spaCy model must be an installed package: Presidio's own loader downloads a missing model,
which turnwatch never allows. Only the tokenizer and the entity recognizer run: no recognizer
reads tags, lemmas or the parse, and they cost over a third of the pipeline's time. The shared
`tok2vec` component goes too once nothing listens to it (the English models' NER embeds its own;
a pipeline whose NER listens keeps it), a quarter of what is left, with the same entities. The
tokenizer reads every text; with `deid.ner_scope: sentences` (the default) the model reads
only the sentences that may hold a name (`ner_scope.py`) and its entities are mapped back onto
the whole text's tokens. The NER labels are passed through under their spaCy names, and
`NameNerRecognizer` decides what they are in context.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import spacy
from presidio_analyzer import AnalyzerEngine, EntityRecognizer, RecognizerRegistry
from presidio_analyzer import predefined_recognizers as predefined
from presidio_analyzer.nlp_engine import NerModelConfiguration, NlpArtifacts, SpacyNlpEngine
from spacy.tokens import Doc
from turnwatch.collector.deid.config import DeidConfig
from turnwatch.collector.deid.ner_scope import ner_sentences
from turnwatch.collector.deid.offline import OfflineEmailRecognizer
from turnwatch.collector.deid.recognizers import turnwatch_recognizers
from turnwatch.collector.deid.recognizers.base import LANGUAGE
from turnwatch.collector.deid.urls import ChunkedUrlRecognizer

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

    def __init__(self, *args, whole_texts: bool = False, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.whole_texts = whole_texts

    def load(self) -> None:
        self.nlp = {}
        for model in self.models:
            name = model["model_name"]
            if not spacy.util.is_package(name):
                raise ModelMissingError(
                    f"spaCy model package {name!r} is not installed; install it with pip "
                    "(turnwatch never downloads models at run time)"
                )
            nlp = spacy.load(name, exclude=UNUSED_COMPONENTS)
            if "tok2vec" in nlp.pipe_names and not nlp.get_pipe("tok2vec").listening_components:
                nlp.remove_pipe("tok2vec")
            self.nlp[model["lang_code"]] = nlp

    def process_batch(
        self, texts: list[str], language: str, batch_size: int = 1, **_: object
    ) -> Iterator[tuple[str, NlpArtifacts]]:
        """Every text tokenized whole; the model over its NER sentences, in batches."""
        if self.whole_texts:
            yield from super().process_batch(texts, language, batch_size=batch_size)
            return
        nlp = self.nlp[language]
        docs = [nlp.make_doc(text) for text in texts]
        pieces: list[Doc] = []
        owners: list[tuple[int, int]] = []
        # `texts`, never `Doc.text`: spaCy joins every token's text on each read of it.
        for number, (text, doc) in enumerate(zip(texts, docs, strict=True)):
            for start, end in ner_sentences(text):
                whole = start == 0 and end == len(text)
                pieces.append(doc if whole else nlp.make_doc(text[start:end]))
                owners.append((number, start))
        entities: list[list] = [[] for _ in docs]
        for piece, (number, start) in zip(
            nlp.pipe(pieces, batch_size=batch_size), owners, strict=True
        ):
            doc = docs[number]
            for entity in piece.ents:
                # Sentences end on white space, so the spans align; "expand" drops none if not.
                span = doc.char_span(
                    start + entity.start_char,
                    start + entity.end_char,
                    label=entity.label_,
                    alignment_mode="expand",
                )
                if span is not None:
                    entities[number].append(span)
        for text, doc, found in zip(texts, docs, entities, strict=True):
            doc.ents = found
            yield text, self._doc_to_nlp_artifact(doc, language)

    def _doc_to_nlp_artifact(self, doc, language: str):
        # Without a lemmatizer every lemma is empty and Presidio's context words (custom
        # patterns' `context`) would never match: the lower-cased word stands in for its lemma.
        for token in doc:
            if not token.lemma_:
                token.lemma_ = token.lower_
        return super()._doc_to_nlp_artifact(doc, language)


def load_nlp_engine(model: str, whole_texts: bool = False) -> InstalledSpacyEngine:
    engine = InstalledSpacyEngine(
        whole_texts=whole_texts,
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
    if name == "UrlRecognizer":
        return ChunkedUrlRecognizer(supported_language=LANGUAGE)
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
