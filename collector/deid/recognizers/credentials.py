"""Secrets typed in chat: passwords, one-time codes, API keys and tokens, login names.

A secret has no shape of its own (a password is any string), so the word that introduces it
decides: the token right after "password is" / "my login:" is replaced whole. API keys with a
vendor prefix (sk-, ghp_, AKIA, xoxb-, AIza, glpat-) and JSON Web Tokens are found anywhere.
"""

from __future__ import annotations

import regex
from turnwatch.collector.deid.recognizers.base import TurnwatchRecognizer, words

_LINK = r"(?:\s+(?:is|was|are|=|:|-|to|would\s+be|should\s+be|will\s+be))*\s*[:=]?\s*"
# A typed secret ends at white space; trailing sentence punctuation is not part of it.
_SECRET_VALUE = r"[\"'“‘`]?(?P<value>[^\s\"'”’`]{3,128}?)[\"'”’`]?(?=[.,;:)]*(?:\s|$))"

PASSWORD = regex.compile(
    r"(?i)(?<!\w)(?:new\s+|old\s+|current\s+|temporary\s+)?(?:password|passwd|pwd|pass\s*word|"
    r"passcode|pass\s*phrase|pin(?:\s+(?:code|number))?|security\s+answer|memorable\s+word)"
    + _LINK
    + _SECRET_VALUE
)
ONE_TIME_CODE = regex.compile(
    r"(?i)(?<!\w)(?<!(?:postal|zip|area|country|discount|promo|coupon|error|status|product|"
    r"dial|post|sort|swift|bic|tax|source|qr|bar)\s)(?:one[- ]time\s+(?:code|password|passcode|"
    r"pin)|otp|verification\s+code|security\s+code|confirmation\s+code|2fa\s+code|mfa\s+code|"
    r"auth(?:entication|orization)?\s+code|login\s+code|sms\s+code|code)(?:\s+(?:i|we)\s+"
    r"(?:got|received|was\s+sent))?" + _LINK + r"(?P<value>\d{4,8}|\d{3}[ -]\d{3})(?!\w)"
)
LOGIN = regex.compile(
    r"(?i)(?<!\w)(?:user\s*name|login(?:\s+(?:name|id))?|user\s+id|screen\s+name|handle|"
    r"sign[- ]in\s+name|log(?:ged)?\s+in\s+as|sign(?:ed)?\s+in\s+as)"
    + _LINK
    + r"[\"'“‘`]?(?P<value>@?[\w.+-]*\w)(?![\w@])"
)
# Words that follow "login"/"password" in ordinary sentences rather than a secret.
NOT_A_SECRET = frozenset(
    words(
        """
        the a an my your our their this that it is was to for and or but not reset page link
        screen button field box form change changed expired please again here there help
        issue problem error works working doesn't does don't won't can't isn't wasn't has
        have had hint manager policy requirements sent code email
        """
    )
)
API_KEY = regex.compile(
    r"(?<![\w-])(?:sk-(?:proj-|live-|test-)?[A-Za-z0-9_-]{16,}|(?:sk|pk|rk)_(?:live|test)_"
    r"[A-Za-z0-9]{16,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|"
    r"xox[abposr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|ASIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35}|"
    r"glpat-[A-Za-z0-9_-]{20,}|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})"
    r"(?![\w-])"
)
CUED_KEY = regex.compile(
    r"(?i)(?<!\w)(?:api[- _]?key|access[- _]?key|secret(?:[- _]key)?|access\s+token|"
    r"bearer\s+token|auth\s+token|token|client\s+secret)" + _LINK + r"[\"'“‘`]?"
    r"(?P<value>(?=[A-Za-z0-9_\-./+=]*\d)(?=[A-Za-z0-9_\-./+=]*[A-Za-z])[A-Za-z0-9_\-./+=]{12,})"
)


LINKED = regex.compile(r"(?i)(?:\bis|\bwas|\bto|\bas|[:=\-\"'“‘`])\s*[\"'“‘`]?\s*$")


class CredentialRecognizer(TurnwatchRecognizer):
    ENTITIES = ("PASSWORD", "ONE_TIME_CODE", "USERNAME", "API_KEY")

    def find(self, text, nlp_artifacts):
        found = []
        for entity, pattern in (
            ("PASSWORD", PASSWORD),
            ("ONE_TIME_CODE", ONE_TIME_CODE),
            ("USERNAME", LOGIN),
            ("API_KEY", CUED_KEY),
        ):
            for match in pattern.finditer(text):
                value = match.group("value")
                if value.casefold().strip("@") in NOT_A_SECRET:
                    continue
                linked = match.group()[: match.start("value") - match.start()]
                if entity != "API_KEY" and value.isalpha() and not LINKED.search(linked):
                    continue  # "login failed", "password reset": no secret follows
                found.append((entity, match.start("value"), match.end("value"), 0.85))
        for match in API_KEY.finditer(text):
            found.append(("API_KEY", match.start(), match.end(), 0.95))
        return found
