"""Presidio's URL recognizer, run only where a URL can be.

Its patterns put an alternation of some 700 top-level domains after `[a-z0-9.\\-]{1,253}`, tried
from every letter and digit of the text: on chat text the costliest of Presidio's recognizers.
No pattern matches white space and none looks around, and every match holds a dot followed by
a letter (the start of its top-level domain). So the patterns find in each white-space-free
chunk holding such a dot, read alone, exactly what they find there in the whole text, and
nothing anywhere else. Duplicates can only lie in one chunk; the union is put in Presidio's
order by its own `remove_duplicates`.
"""

from __future__ import annotations

import regex
from presidio_analyzer import EntityRecognizer, RecognizerResult
from presidio_analyzer.predefined_recognizers import UrlRecognizer

CHUNK = regex.compile(r"\S+")
DOT_LETTER = regex.compile(r"\.[a-z]", regex.IGNORECASE)


class ChunkedUrlRecognizer(UrlRecognizer):
    def __init__(self, supported_language: str) -> None:
        super().__init__(supported_language=supported_language, name=UrlRecognizer.__name__)

    def analyze(self, text, entities, nlp_artifacts=None, regex_flags=None):
        results: list[RecognizerResult] = []
        for chunk in CHUNK.finditer(text):
            if DOT_LETTER.search(chunk.group()) is None:
                continue
            for result in super().analyze(chunk.group(), entities, nlp_artifacts, regex_flags):
                result.start += chunk.start()
                result.end += chunk.start()
                results.append(result)
        return EntityRecognizer.remove_duplicates(results)
