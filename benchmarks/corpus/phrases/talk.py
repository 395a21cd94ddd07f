"""The connective tissue of a support chat: greetings, verification, thanks, goodbyes, preambles."""

from __future__ import annotations

from benchmarks.corpus.pools import P, Pool

GREETING = P(
    "Hi there",
    "Hello",
    "Hey",
    "Good morning",
    "Hi,",
    "hello?",
    "Good evening",
    "Hiya",
    "Hi, hope you can help",
    "Morning",
    "Hey there, quick question",
    "Hello, I need some help",
)
WELCOME = P(
    "Hi! I'm the {company} assistant. How can I help you today?",
    "Hello, thanks for contacting {company}. What can I do for you?",
    "Hi there, welcome to {company} support. What brings you here today?",
    "Good to see you. I can help with {scope}. What do you need?",
    "Welcome! I'm {company}'s virtual assistant. How can I help?",
    "Hello! Tell me what's going on and I'll do my best to sort it out.",
)
ASK_IDENTITY = {
    "email": Pool.split(
        dev=[
            "Happy to help. Could you tell me the email address on your account first?",
            "Sure. To find your account, what's the email you registered with?",
            "I can look into that. Which email address is the account under?",
        ],
        heldout=[
            "Of course. First I need to verify you: please share your account email.",
            "Let's get you verified. Can you give me the e-mail you use with us?",
            "No problem. May I have the email address linked to your account?",
        ],
    ),
    "phone": Pool.split(
        dev=[
            "Happy to help. What's the phone number on the account?",
            "Sure thing. Could you give me the mobile number we have on file?",
            "I can check. Which phone number is the account registered to?",
        ],
        heldout=[
            "Certainly. To verify you, please share the account's phone number.",
            "Let's find your account first: what phone number do you use with us?",
            "Of course. May I have the contact number on your account?",
        ],
    ),
}
GIVE_IDENTITY = {
    "email": P(
        "It's {value}",
        "{value}",
        "sure, it's {value}",
        "The email is {value}.",
        "I use {value} for everything",
        "should be {value}",
        "It's registered to {value}, I think.",
        "my email is {value}",
    ),
    "phone": P(
        "It's {value}",
        "{value}",
        "my number is {value}",
        "The phone number is {value}.",
        "try {value}",
        "should be {value}",
        "It's {value}, that's my mobile.",
        "{value} is the one",
    ),
}
VERIFIED = P(
    "Lovely, that's your account, {first}. How can I help?",
    "Found you! What would you like help with today?",
    "Thanks, {first}, I've found your account. What can I help you with?",
    "Got it, you're verified. How can I help today?",
    "Thank you {first}, that matches. What would you like to do?",
    "Perfect, I have your account open. What's the issue?",
    "Thanks! Account found. What do you need help with?",
    "Great, that's you verified, {first}. Go ahead.",
)
PREAMBLE = P(
    "Let me check that for you.",
    "One moment while I look that up.",
    "I'll pull that up now.",
    "Checking our system now.",
    "Give me a second to look into it.",
    "Let me take a look.",
    "Sure, looking into it now.",
    "I'm on it, one moment.",
    "Let me see what I can find.",
    "Just a moment, checking.",
    "I'll run that for you now.",
    "Okay, let me check on our side.",
    "Looking it up.",
    "Bear with me while I check.",
)
THANKS = P(
    "That's great, thanks again.",
    "Perfect. Bye!",
    "Super, that's me sorted.",
    "ok great. thanks for the help",
    "Thanks, that's everything.",
    "Great, thank you so much.",
    "Perfect, that's all I needed.",
    "ok thanks, bye",
    "Brilliant, thanks for your help.",
    "That's all, cheers.",
    "Thank you, that sorts it.",
    "thanks!! that's it for today",
    "Lovely, thanks a lot.",
    "Nothing else, thank you.",
    "cool, thanks",
    "Appreciate it. That's all.",
)
GOODBYE = P(
    "Glad that's sorted, {first}. Bye for now!",
    "It was a pleasure. Enjoy the rest of your day.",
    "Thanks for reaching out, and take care.",
    "All done here. Have a great week!",
    "You're welcome, {first}! Have a great day.",
    "Glad I could help. Take care!",
    "Happy to help. Goodbye for now.",
    "Anytime! Have a lovely evening.",
    "You're very welcome. All the best.",
    "My pleasure. Have a good one!",
    "Thanks for chatting with {company}. Bye!",
    "No problem at all. Take care, {first}.",
    "Great, I've closed this chat. Have a nice day.",
    "You're all set. Goodbye!",
)
HANDOFF_REQUEST = P(
    "Can I talk to a person about the rest?",
    "I'd rather speak to someone on your team about this.",
    "Could you pass me to a human agent please?",
    "Is there a real person I can talk to about it?",
    "I think I need a specialist for this one.",
    "Please put me through to an agent.",
)
HANDOFF_SAY = P(
    "Of course. I'm transferring you to a colleague now; they'll see this conversation.",
    "Sure, I'm connecting you with a human agent. Please hold for a moment.",
    "No problem, I'm handing this over to our support team now.",
    "I've passed this to a specialist, who will pick up this chat shortly.",
    "Understood. Connecting you to a member of our team.",
    "Right away: transferring you to a live agent.",
)
ANYTHING_ELSE = P(
    "Is there anything else I can help with?",
    "Anything else today?",
    "Can I help with anything else?",
    "Is there something else you need?",
)
FOLLOW_UP = P(
    "One more thing.",
    "Also,",
    "Another question:",
    "While I have you,",
    "Oh, and",
    "Separately,",
    "Quick follow-up:",
    "And one other thing -",
)
LATER = Pool.split(
    dev=[
        "I'll come back to your other question in a moment.",
        "Let me answer the first part now; the second one right after.",
    ],
    heldout=[
        "One at a time - I'll get to your second question next.",
        "Starting with the first question; I haven't forgotten the other.",
    ],
)
OK_GO_ON = P("ok", "Sure, go on.", "Alright.", "okay thanks, and the other thing?")
AND_THE_OTHER = Pool.split(
    dev=["And about your other question: {answer}", "Now, your second question: {answer}"],
    heldout=["As for the other thing you asked: {answer}", "On your second point: {answer}"],
)
STILL_WANT = Pool.split(
    dev=["Did you still want help with your other question?"],
    heldout=["Shall I also look at the second thing you mentioned?"],
)
NEVER_MIND = P(
    "No, never mind that one.",
    "Forget it, it's not important.",
    "No need, I found the answer myself.",
    "Nah, skip it.",
)
TOPIC_SWITCH = P(
    "Totally different question: {question}",
    "Changing the subject - {question}",
    "Unrelated, but {question}",
    "New topic. {question}",
)
VAGUE = P(
    "How long does it take?",
    "How much is it?",
    "What are the rules on that?",
    "Is that free?",
    "how does that work",
    "What's the policy?",
)
CLARIFY = Pool.split(
    dev=[
        "Happy to explain. Do you mean {one} or {two}?",
        "Could you tell me which you mean: {one}, or {two}?",
    ],
    heldout=[
        "Just to be sure I answer the right thing: is this about {one} or {two}?",
        "Which one are you asking about, {one} or {two}?",
    ],
)
ANSWER_LEAD = P(
    "Good question! ",
    "Sure. ",
    "Happy to explain. ",
    "Of course: ",
    "Great question. ",
    "Here's how it works: ",
    "Let me explain. ",
    "Certainly! ",
    "Thanks for asking. ",
    "In short: ",
)
