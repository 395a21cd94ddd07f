"""Remembering and repeating: repeat requests, revisions, and the contact facts every domain has."""

from __future__ import annotations

from benchmarks.corpus.pools import P, Pool

REPEAT_REQUEST = Pool.split(
    dev=[
        "Sorry, can you say that again?",
        "Could you repeat that? I missed it.",
        "Can you say that one more time, slowly?",
    ],
    heldout=[
        "wait, repeat that please",
        "Sorry, what was that again?",
        "Say that again? My screen jumped.",
    ],
)
REPEAT_PREFIX = P("", "Sure: ", "Of course. ", "No problem - ", "Again: ", "Certainly. ")
ECHO_PREFIX = P("", "As I said, ", "Like I mentioned, ", "To repeat, ", "As mentioned, ", "Again, ")
UNHELPED_FOLLOW_UP = Pool.split(
    dev=[
        "Okay, but what do I actually need to do next?",
        "That doesn't answer my question though. What happens now?",
        "Right, and how long will it take?",
        "Sure, but is there anything I need to send you?",
    ],
    heldout=[
        "Fine, and then what?",
        "I get that, but when will it be sorted?",
        "ok... and do I need to do anything?",
        "Understood, but who do I contact if it doesn't work?",
    ],
)
ACK = P(
    "Thanks, noted.",
    "Got it, thank you.",
    "Okay, I've made a note of that.",
    "Thanks for letting me know.",
    "Understood.",
    "Noted, thanks.",
    "Thank you, that helps.",
    "Okay, I have that down.",
)
REVISE = Pool.split(
    dev=[
        "Actually, sorry, use {value} instead.",
        "Wait, I got that wrong: it should be {value}.",
        "Correction: make that {value}, not what I said before.",
        "Hmm, scratch that. It's {value}.",
    ],
    heldout=[
        "Oops, my mistake - the right one is {value}.",
        "Change of plan, please go with {value}.",
        "No sorry, I meant {value}.",
        "Let me correct myself: {value}.",
    ],
)
NOTED_NEW = P(
    "No problem, I'll use {value}.",
    "Thanks for the correction: {value} it is.",
    "Got it, updated to {value}.",
    "Okay, switching to {value}.",
)
ACK_CHANGE = Pool.split(
    dev=[
        "Done. I changed it from {old} to {value}, as you asked.",
        "All set: {value} replaces {old}.",
    ],
    heldout=[
        "Updated - it was {old}, it's now {value}.",
        "That's changed: {old} is gone and {value} is in place.",
    ],
)
EMAIL_FACT = (
    P(
        "You can reach me at {value}.",
        "Send anything to {value}, please.",
        "My email is {value} by the way.",
        "Use {value} for the confirmation.",
        "The best email for me is {value}.",
        "Email me at {value} if you need anything.",
    ),
    Pool.split(
        dev=["What email address should I use for you?", "Could you give me your email?"],
        heldout=["What's your e-mail, please?", "Which email can I reach you on?"],
    ),
    Pool.split(
        dev=["I'll send it to {value}, is that still right?"],
        heldout=["Can I use {value} for the confirmation?"],
    ),
    Pool.split(
        dev=["My email address changed recently, by the way."],
        heldout=["Oh, I don't use that email anymore."],
    ),
)
PHONE_FACT = (
    P(
        "My number is {value}.",
        "Call me on {value} if needed.",
        "You can text {value}.",
        "The best number is {value}.",
        "If you need me, {value} works.",
        "Phone me at {value}, please.",
    ),
    Pool.split(
        dev=["What's the best phone number to reach you?", "Could you share your phone number?"],
        heldout=["Which mobile number should we call?", "What number can I reach you on?"],
    ),
    Pool.split(
        dev=["Shall I call {value} if anything comes up?"],
        heldout=["Is {value} still the best number?"],
    ),
    Pool.split(
        dev=["I got a new phone number last week."],
        heldout=["That number isn't mine anymore, actually."],
    ),
)
SORRY_NOT_FOUND = Pool.split(
    dev=[
        "I couldn't find anything under {wrong}. Could you double-check the {item_ref}?",
        "Hmm, {wrong} doesn't match any {item_noun} on our side. What's the {item_ref} again?",
    ],
    heldout=[
        "Nothing comes up for {wrong}, I'm afraid. Can you confirm the {item_ref}?",
        "That reference ({wrong}) returns no results. Could you re-check the {item_ref}?",
    ],
)
ITEM_RETRY = P(
    "Sorry, typo. It's {item}.",
    "Oops, I mean {item}.",
    "My bad, the right one is {item}.",
    "Let me try again: {item}",
)
OTHER_ITEM_QUESTION = P(
    "And what about my other {item_noun}, {item}?",
    "Can you also check {item}?",
    "There's also {item}, how is that one doing?",
    "What about {item}?",
)
SECOND_ITEM_MENTION = Pool.split(
    dev=["I actually have a second {item_noun} with the same problem."],
    heldout=["There's another {item_noun} of mine that needs the same thing."],
)
SECOND_ITEM_ASK = Pool.split(
    dev=["Sure. What's the {item_ref} of the other one?"],
    heldout=["No problem. Which {item_ref} does the second one have?"],
)
SECOND_ITEM_GIVE = P("It's {item}.", "That one is {item}.", "{item}", "The other is {item}.")
ALREADY_TOLD = P(
    "I already told you: {value}.",
    "Like I said before, {value}.",
    "It's {value}, I gave you that earlier.",
    "Again? {value}.",
)
NUDGE = P(
    "So what happens next?",
    "Can you sort it out for me then?",
    "Okay, what do you need from me?",
    "Great, can we get this moving?",
    "Alright, what's the next step?",
    "So can you help?",
    "Cool. Now what?",
    "How do we fix it?",
)
ASK_LEAD = P("", "Sure, I can help with that. ", "Happy to. ", "Of course. ", "Okay! ", "Right. ")
YES_THATS_RIGHT = P("Yes, that's right.", "Yep, correct.", "That's the one.", "yes exactly")
READY = P(
    "Thanks, I'll get that ready.",
    "Okay, I can do that for you.",
    "Sure, let me prepare the change.",
    "No problem, that's possible.",
)
TWO_ITEMS = P(
    "I've got two {item_noun}s with you, {item} and {second}. It's {item} I need help with.",
    "There are two: {second} and {item}. This is about {item}.",
    "I have {item} and also {second}, but only {item} matters today.",
    "Both {second} and {item} are mine; the problem is with {item}.",
)
