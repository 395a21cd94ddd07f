"""Postal addresses, replaced whole: street and house number, flat or suite, city, state or
region, postcode and country, as one finding, in the common national shapes (number first as
in the US, UK, France, Ireland, Australia; number last as in Germany, the Netherlands, Italy,
Spain, the Nordics; postcode before or after the city).

With `keep_coarse_location` the city, state and country stay readable and only the street part
and the postcode are replaced: enough to group incidents by region, not to find a door.
"""

from __future__ import annotations

import regex
from turnwatch.collector.deid.recognizers.base import TurnwatchRecognizer


def _words(text: str) -> str:
    return "|".join(sorted(text.split(), key=len, reverse=True))


US_SUFFIXES = _words(
    """street st avenue ave av road rd lane ln boulevard blvd drive dr court ct way place pl
    terrace ter close square sq parkway pkwy highway hwy circle cir trail trl crescent cres
    grove gardens gdns row mews park walk alley aly plaza loop pike path crossing xing point
    ridge heights hts view green broadway expressway expy freeway fwy turnpike tpke"""
)
PREFIX_TYPES = _words(
    """rue avenue av. boulevard bd chemin allée impasse quai route place cours via viale piazza
    corso largo vicolo calle avenida avda. plaza paseo carrer rambla rua travessa praça ulica
    ul. aleja al. strada bulevardul"""
)
# Street names that end in their type (Hauptstraße, Keizersgracht, Storgatan, Mannerheimintie).
JOINED_SUFFIXES = (
    r"(?:straße|strasse|str\.|weg|gasse|platz|allee|ring|damm|ufer|chaussee|steig|pfad|"
    r"straat|laan|gracht|plein|dijk|kade|singel|markt|vej|gade|gatan|vägen|gränd|gata|veien|"
    r"gaten|katu|tie|kuja|utca|útja)"
)
US_STATES = _words(
    """AL AK AZ AR CA CO CT DE DC FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV
    NH NJ NM NY NC ND OH OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY PR ON QC BC AB MB SK NS
    NB NL PE NSW VIC QLD WA SA TAS ACT NT"""
)
STATE_NAMES = (
    r"(?:Alabama|Alaska|Arizona|Arkansas|California|Colorado|Connecticut|Delaware|Florida|"
    r"Georgia|Hawaii|Idaho|Illinois|Indiana|Iowa|Kansas|Kentucky|Louisiana|Maine|Maryland|"
    r"Massachusetts|Michigan|Minnesota|Mississippi|Missouri|Montana|Nebraska|Nevada|"
    r"New\s+Hampshire|New\s+Jersey|New\s+Mexico|New\s+York|North\s+Carolina|North\s+Dakota|"
    r"Ohio|Oklahoma|Oregon|Pennsylvania|Rhode\s+Island|South\s+Carolina|South\s+Dakota|"
    r"Tennessee|Texas|Utah|Vermont|Virginia|Washington|West\s+Virginia|Wisconsin|Wyoming|"
    r"Ontario|Quebec|British\s+Columbia|Alberta|Bavaria|Bayern|Catalonia|Catalunya|"
    r"Lombardy|Lombardia|Scotland|Wales|England)"
)
COUNTRIES = (
    r"(?:USA|U\.S\.A\.?|U\.S\.|United\s+States(?:\s+of\s+America)?|UK|U\.K\.|United\s+Kingdom|"
    r"Great\s+Britain|England|Scotland|Wales|Ireland|Germany|Deutschland|France|Spain|España|"
    r"Italy|Italia|Netherlands|The\s+Netherlands|Nederland|Holland|Belgium|België|Belgique|"
    r"Austria|Österreich|Switzerland|Schweiz|Suisse|Svizzera|Portugal|Poland|Polska|Sweden|"
    r"Sverige|Norway|Norge|Denmark|Danmark|Finland|Suomi|Czechia|Czech\s+Republic|Hungary|"
    r"Greece|Romania|Canada|Australia|New\s+Zealand|India|Japan|Brazil|Brasil|Mexico|México|"
    r"Argentina|South\s+Africa|Singapore)"
)
POSTCODE = (
    r"(?:\d{5}(?:-\d{4})?|\d{4}\s?[A-Z]{2}|[A-Z]{1,2}\d[A-Z\d]?\s?\d[A-Z]{2}|"
    r"[A-Z]\d[A-Z]\s?\d[A-Z]\d|\d{2}-\d{3}|\d{4}-\d{3}|\d{3}\s\d{2}|\d{3}-\d{4}|\d{4})"
)
NAME_WORD = r"(?:\p{L}[\p{L}\p{M}'’.-]*)"
CAPITAL_WORD = r"(?:\p{Lu}[\p{L}\p{M}'’.-]*)"
SMALL = r"(?:de|del|della|di|da|du|des|la|le|les|l'|d'|van|von|der|den|am|an|im|zum|zur|of|the)"
# Words that end a street name rather than belong to it ("18 Elm Road is on its way").
STOP = (
    r"(?!(?:is|on|its|in|at|to|the|of|and|or|was|were|will|be|for|from|with|by|my|your|our|"
    r"please|thanks|thank|today|tomorrow|days?|items?|orders?|times?|minutes?|hours?|"
    r"weeks?|months?|years?|pcs|units?|dollars|euros?|pounds|percent|people|apt|suite|unit|"
    r"flat)\b)"
)
NUMBER = r"\d{1,6}[A-Za-z]?(?:[-/]\d{1,4}[A-Za-z]?)?"
UNIT = (
    r"(?:,?\s*(?i:apt|apartment|suite|ste|unit|flat|fl|floor|room|rm|bldg|building|no|#)\.?"
    r"\s*#?\s*[\w-]{1,6}\b)"
)

NUMBER_FIRST = (
    rf"(?:{NUMBER},?\s+(?:(?i:[NSEW]|north|south|east|west)\.?\s+)?"
    rf"(?:{STOP}{NAME_WORD}\s+){{1,4}}(?i:{US_SUFFIXES})\b\.?"
    rf"(?:\s+(?i:[NSEW]{{1,2}}|north|south|east|west)\b\.?)?"
    rf"|{NUMBER},?\s+(?i:{PREFIX_TYPES})\s+(?:(?i:{SMALL})\s*)*{NAME_WORD}"
    rf"(?:\s+(?:(?i:{SMALL})\s*)*{CAPITAL_WORD}){{0,3}})"
)
NUMBER_LAST = (
    rf"(?:(?:{CAPITAL_WORD}[\s-])?\p{{Lu}}\p{{Ll}}*(?i:{JOINED_SUFFIXES})\s+{NUMBER}"
    rf"|(?:{CAPITAL_WORD}\s+){{1,3}}(?i:straße|strasse|str\.|weg|allee|platz)\s*{NUMBER}"
    rf"|(?i:{PREFIX_TYPES})\s+(?:(?i:{SMALL})\s*)*{NAME_WORD}(?:\s+(?:(?i:{SMALL})\s*)*"
    rf"{CAPITAL_WORD}){{0,3}},?\s+{NUMBER}(?:,?\s*\d{{1,2}}(?:º|ª|°)\s*[A-Z]?\b)?)"
)
PO_BOX = r"(?i:p\.?\s?o\.?\s*box|postfach|apartado(?:\s+de\s+correos)?)\s+\d{1,6}"
# A flat before the street, as the UK writes it: "Flat 2, 14 Elm Grove".
UNIT_FIRST = r"(?:(?i:flat|apt|apartment|unit|suite|ste)\.?\s*#?\s*[\w-]{1,5},?\s+)"
STREET = rf"(?P<street>{UNIT_FIRST}?(?:{NUMBER_FIRST}|{NUMBER_LAST}|{PO_BOX}){UNIT}?)"
CITY = rf"(?:{STOP}{CAPITAL_WORD}(?:[ \t-]{CAPITAL_WORD}){{0,2}})"
LOCALITY = (
    rf"(?:,?\s*(?P<zip1>{POSTCODE})\s+(?P<city1>{CITY})"  # 10115 Berlin
    rf"|,?\s+(?P<city2>{CITY}),?\s+(?P<state2>{US_STATES}|{STATE_NAMES})(?:\s+(?P<zip2>{POSTCODE}))?"
    rf"|,\s*(?P<city3>{CITY}),?\s+(?P<zip3>{POSTCODE})"  # London SW1A 2AA, Lyon 69002
    rf"|,\s*(?P<city4>{CITY})(?=\s*(?:$|[.,;!?)\n]|\s-)))"
)
COUNTRY = rf"(?:,?\s+(?P<country>{COUNTRIES})\b\.?)"
ADDRESS = regex.compile(rf"(?<![\w-]){STREET}{LOCALITY}{{0,2}}{COUNTRY}?(?![\w])")
# Without a street: "Springfield, IL 62704", "SW1A 2AA", "75002 Paris, France" on its own line.
LOCALITY_ONLY = regex.compile(
    rf"(?<![\w-])(?:(?P<city>{CITY}),?\s+(?P<state>{US_STATES})\s+(?P<zip>\d{{5}}(?:-\d{{4}})?)"
    rf"|(?<=^|\n|,\s)(?P<zip2>\d{{4,5}})\s+(?P<city2>{CITY})(?=\s*(?:$|\n|,)))"
    rf"{COUNTRY}?(?![\w])",
    regex.MULTILINE,
)
UK_POSTCODE = regex.compile(r"(?<![\w])[A-Z]{1,2}\d[A-Z\d]?\s\d[A-Z]{2}(?![\w])")

COARSE_GROUPS = ("city1", "city2", "city3", "city4", "state2", "country", "city", "state", "city2")


class PostalAddressRecognizer(TurnwatchRecognizer):
    ENTITIES = ("STREET_ADDRESS",)

    def __init__(self, keep_coarse_location: bool = False) -> None:
        super().__init__()
        self.keep_coarse_location = keep_coarse_location

    def find(self, text, nlp_artifacts):
        found = []
        for pattern in (ADDRESS, LOCALITY_ONLY):
            for match in pattern.finditer(text):
                found += self._spans(match, 0.9 if pattern is ADDRESS else 0.75)
        found += [("STREET_ADDRESS", m.start(), m.end(), 0.7) for m in UK_POSTCODE.finditer(text)]
        return found

    def _spans(self, match: regex.Match[str], score: float) -> list[tuple[str, int, int, float]]:
        start, end = match.span()
        if not self.keep_coarse_location:
            return [
                ("STREET_ADDRESS", low, high, score)
                for low, high in _trimmed(match.string, [(start, end)])
            ]
        # Cut the coarse parts out: what is left (street, postcode) is replaced piece by piece.
        spans = [(start, end)]
        for name in COARSE_GROUPS:
            if name not in match.groupdict():
                continue
            for cut_start, cut_end in match.spans(name):
                spans = [
                    piece
                    for low, high in spans
                    for piece in ((low, min(high, cut_start)), (max(low, cut_end), high))
                    if piece[1] > piece[0]
                ]
        return [("STREET_ADDRESS", low, high, score) for low, high in _trimmed(match.string, spans)]


def _trimmed(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out = []
    for low, high in spans:
        while low < high and not text[low].isalnum():
            low += 1
        while high > low and not text[high - 1].isalnum():
            high -= 1
        if high > low:
            out.append((low, high))
    return out
