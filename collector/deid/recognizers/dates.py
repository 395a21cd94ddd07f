"""Calendar dates: a day, a month and a year together (numeric or written), the way dates of
birth are given. Times of day and relative dates ("tomorrow", "5pm", "within two business
days") say nothing about a person and are left alone."""

from __future__ import annotations

import regex
from turnwatch.collector.deid.recognizers.base import TurnwatchRecognizer, before, context_words

MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|januar|februar|märz|mai|"
    r"juni|juli|oktober|dezember|janvier|février|mars|avril|juin|juillet|août|septembre|"
    r"octobre|novembre|décembre|enero|febrero|marzo|abril|mayo|junio|julio|agosto|"
    r"septiembre|octubre|noviembre|diciembre)\.?"
)
DAY = r"(?:0?[1-9]|[12]\d|3[01])(?:st|nd|rd|th)?"
YEAR = r"(?:1[89]\d\d|20\d\d)"
DATE = regex.compile(
    rf"(?i)(?<![\w/.-])(?:"
    rf"{YEAR}[-/.](?:0?[1-9]|1[0-2])[-/.](?:0?[1-9]|[12]\d|3[01])"  # 1985-03-14
    rf"|(?:0?[1-9]|[12]\d|3[01])[-/.](?:0?[1-9]|[12]\d|3[01])[-/.](?:{YEAR}|\d\d)"  # 14/03/1985
    rf"|{DAY}(?:\s+of)?[\s-]+{MONTH},?[\s-]+{YEAR}"  # 14 March 1985, 14th of March, 1985
    rf"|{MONTH}\s+{DAY},?\s+{YEAR}"  # March 14, 1985
    rf")(?![\w/-]|\.\d)"
)
BIRTH_CONTEXT = context_words(["born", "birth", "dob", "d.o.b", "birthday", "birthdate", "age"])


class CalendarDateRecognizer(TurnwatchRecognizer):
    ENTITIES = ("DATE_TIME",)

    def find(self, text, nlp_artifacts):
        return [
            (
                "DATE_TIME",
                match.start(),
                match.end(),
                0.9 if BIRTH_CONTEXT.search(before(text, match.start())) else 0.6,
            )
            for match in DATE.finditer(text)
        ]
