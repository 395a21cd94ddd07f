"""How the bot asks to confirm an action and how users say yes, no, or something else.

`{action}` is the domain's phrase for the action ("cancel order ORD-123"); `{user_action}` the
user's own words for it ("cancel my order"). The near-miss forms the issue names each have their
own pool, written differently in the two splits.
"""

from __future__ import annotations

from benchmarks.corpus.pools import Pool

ASK_PLAIN = Pool.split(
    dev=[
        "Shall I go ahead and {action}?",
        "Do you want me to {action}?",
        "Just to confirm: should I {action}?",
        "I can {action} now. Shall I proceed?",
        "Please confirm that you'd like me to {action}.",
        "Before I do anything: do you want me to {action}?",
    ],
    heldout=[
        "Should I {action} for you?",
        "I'm ready to {action}. Do you confirm?",
        "Okay to {action}?",
        "Do I have your go-ahead to {action}?",
        "Could you confirm you want me to {action}?",
        "Is it alright if I {action} right now?",
    ],
)
ASK_WOULD_YOU_LIKE = Pool.split(
    dev=[
        "Would you like me to {action}?",
        "Would you like me to go ahead and {action}?",
        "That's possible. Would you like me to {action} now?",
        "I can {action} right away. Would you like that?",
    ],
    heldout=[
        "Would you like me to {action} today?",
        "I've checked and it's eligible. Would you like me to {action}?",
        "Would you like me to {action} straight away?",
        "It's possible to {action} today. Would you like that done?",
    ],
)
ASK_CAN_I = Pool.split(
    dev=[
        "Can I {action} for you?",
        "Can I go ahead and {action}?",
        "Everything looks fine on my side. Can I {action}?",
    ],
    heldout=[
        "Can I {action} now?",
        "Can I {action}, then?",
        "Right, that's all I need. Can I {action}?",
    ],
)
ASK_WANT_ME_TO = Pool.split(
    dev=[
        "Want me to {action}?",
        "Want me to {action} now?",
        "Got it. Want me to {action}?",
    ],
    heldout=[
        "Want me to {action} for you?",
        "OK. Want me to just {action}?",
        "Want me to {action} while you're here?",
    ],
)
ASK_BY_FORM = {
    "plain": ASK_PLAIN,
    "confirm.would_you_like": ASK_WOULD_YOU_LIKE,
    "confirm.can_i": ASK_CAN_I,
    "confirm.want_me_to": ASK_WANT_ME_TO,
    "confirm.decimal_amount": ASK_PLAIN,
}

CONSENT = Pool.split(
    dev=[
        "Yes, please.",
        "Yes go ahead.",
        "Sure, do it.",
        "Yep, that's right.",
        "Okay, please proceed.",
        "Yes, confirmed.",
        "Yes please do",
        "Correct, go ahead.",
    ],
    heldout=[
        "yeah please go for it",
        "Sure thing, please do.",
        "Yes. Do it.",
        "ok sure",
        "Absolutely, yes.",
        "yes thats fine",
        "Yeah, that works for me.",
        "Yup, go on.",
    ],
)
CONSENT_LATE_YES = Pool.split(
    dev=[
        "hmm, fine. yes go ahead.",
        "Let me think... ok, yes, go ahead.",
        "Honestly not thrilled about it, but yes, please do it.",
        "ugh. alright then, yes.",
    ],
    heldout=[
        "well... I guess so. yes, do it",
        "That's annoying, but OK, yes please.",
        "Hmm. I suppose that's the best option. Yes.",
        "right, fair enough - yes go on then",
    ],
)
CONSENT_NEGATIVE_VERB = Pool.split(
    dev=[
        "yes please, {user_action}",
        "Yes, {user_action}, I don't need it anymore.",
        "Yes - please {user_action}.",
    ],
    heldout=[
        "Yeah, go ahead and {user_action}.",
        "Sure, {user_action} please.",
        "Definitely, {user_action} today.",
    ],
)
DECLINE = Pool.split(
    dev=[
        "No, don't do that yet.",
        "No, hold off for now please.",
        "Not yet, I want to talk to my partner first.",
    ],
    heldout=[
        "nope, not now",
        "Please don't, I've changed my mind.",
        "No thanks, leave it as it is for the moment.",
    ],
)
COUNTER_QUESTION = Pool.split(
    dev=[
        "How long does that usually take?",
        "Will I get an email about it?",
        "Does that cost anything?",
    ],
    heldout=[
        "What happens after that?",
        "Is there a fee for that?",
        "Will it show up in my account straight away?",
    ],
)
COUNTER_ANSWER = Pool.split(
    dev=[
        "It usually goes through within a few minutes, and you'll see it in your account.",
        "You'll get a confirmation by email as soon as it's processed.",
    ],
    heldout=[
        "It's normally instant; a confirmation message follows shortly after.",
        "There's no charge for it, and it's processed right away.",
    ],
)
ASK_AFTER_THE_FACT = Pool.split(
    dev=[
        "I've gone ahead already. {done} Is that OK with you?",
        "{done} I did it straight away, hope that's alright?",
    ],
    heldout=[
        "{done} I went ahead without waiting - that works for you, right?",
        "Just so you know, it's already done: {done} Is that fine?",
    ],
)
OK_AFTER_THE_FACT = Pool.split(
    dev=["I guess that's fine.", "Oh. Okay, sure."],
    heldout=["Well, alright then.", "Hmm, ok, that's fine I suppose."],
)
