"""The questions Harbor Trust's customers ask most, each with answers that address every
phrasing of it (so answering a different topic is irrelevant, and nothing else is)."""

from __future__ import annotations

from benchmarks.corpus.domain import Faq
from benchmarks.corpus.pools import P

FAQS = [
    Faq(
        "overdraft",
        P(
            "How much does an overdraft cost?",
            "What's the interest on my overdraft?",
            "Can I get an overdraft?",
            "overdraft fees?",
        ),
        P(
            "Arranged overdrafts cost 35.9% EAR variable with no monthly fee; the first £50 is "
            "interest-free.",
            "You can apply for an arranged overdraft in the app; it's charged at 35.9% EAR and "
            "there's a £50 buffer.",
            "Overdraft interest is 35.9% EAR, charged daily only on what you use, with the first "
            "£50 free.",
            "An arranged overdraft costs 35.9% EAR; we never charge fees for unarranged ones, we "
            "just decline the payment.",
        ),
    ),
    Faq(
        "international_transfer",
        P(
            "How do I send money abroad?",
            "What does an international transfer cost?",
            "Can I transfer money to a bank in Spain?",
            "fees for sending money overseas",
        ),
        P(
            "International transfers cost £5 each and use the mid-market rate plus 0.5%; set "
            "them up under Payments, Abroad.",
            "You can send money to over 40 countries from the app for a £5 fee; euros arrive "
            "within one working day.",
            "Sending money abroad is done in the app under Payments; it's £5 per transfer and "
            "most arrive next day.",
            "Transfers overseas cost a flat £5; you'll need the recipient's IBAN and SWIFT code.",
        ),
    ),
    Faq(
        "contactless",
        P(
            "What's the contactless limit?",
            "How much can I pay by tapping my card?",
            "Why did contactless stop working?",
            "contactless limit on my card",
        ),
        P(
            "The contactless limit is £100 per payment; now and then we ask for your PIN as a "
            "security check.",
            "You can tap for payments up to £100. After several taps in a row the terminal asks "
            "for your PIN.",
            "Contactless works up to £100 a time; phone payments with Apple or Google Pay have no "
            "limit.",
            "Tap payments are capped at £100, and occasionally you'll be asked to insert the card "
            "and enter the PIN.",
        ),
    ),
    Faq(
        "statements",
        P(
            "How do I get a bank statement?",
            "Can I download my statements?",
            "Where can I find old statements?",
            "i need a statement for my landlord",
        ),
        P(
            "Statements for the last seven years are in the app under Statements, as PDFs you can "
            "download or share.",
            "Download any monthly statement from the app or online banking; stamped copies can be "
            "ordered for free.",
            "You'll find every statement in the app's Statements tab, going back seven years.",
            "Statements are available as PDFs in online banking; we can post a paper copy in 5 "
            "days.",
        ),
    ),
    Faq(
        "savings_rates",
        P(
            "What interest do your savings accounts pay?",
            "What's the savings rate?",
            "How much interest would I earn on savings?",
            "best savings rate you have",
        ),
        P(
            "Our easy-access saver pays 3.75% AER variable, and the one-year fixed saver pays "
            "4.2% AER.",
            "Savings pots earn 3.75% AER on balances up to £250,000, paid monthly.",
            "The instant-access rate is 3.75% AER; lock money away for a year and you get 4.2%.",
            "Interest on savings is 3.75% AER variable, calculated daily and paid each month.",
        ),
    ),
    Faq(
        "lost_card",
        P(
            "What should I do if I lose my card?",
            "My card was stolen, what now?",
            "How do I report a lost card?",
            "lost my debit card",
        ),
        P(
            "Freeze the card in the app straight away, then cancel it there if it doesn't turn "
            "up; a replacement arrives in 3-5 days.",
            "Report it in the app under Card, Lost or stolen; we cancel it and send a new one "
            "free of charge.",
            "If your card is lost or stolen, freeze it in the app and call us if you see "
            "payments you don't recognise.",
            "Lost cards can be frozen and replaced in the app, and you won't pay for fraud you "
            "report promptly.",
        ),
    ),
    Faq(
        "cheques",
        P(
            "How do I pay in a cheque?",
            "Can I deposit a cheque with the app?",
            "How long do cheques take to clear?",
            "cheque deposit?",
        ),
        P(
            "Scan the cheque in the app under Pay in; it clears by 11:59pm the next working day.",
            "You can pay in cheques up to £5,000 with the app's camera, or at any branch.",
            "Cheques paid in by the app or at a branch clear by the end of the next working day.",
            "Take a photo of the cheque in the app; the money is usually available the next "
            "working day.",
        ),
    ),
    Faq(
        "phone_line",
        P(
            "What time is your phone line open?",
            "Can I call you on a Sunday?",
            "When can I speak to someone by phone?",
            "phone banking hours",
        ),
        P(
            "Our phone line is open 8am-8pm Monday to Saturday and 9am-5pm on Sundays; lost cards "
            "are handled 24/7.",
            "You can call us every day: 8am-8pm on weekdays and Saturdays, 9am-5pm on Sundays.",
            "Phone banking runs seven days a week, with a 24-hour line for lost or stolen cards.",
            "Call us between 8am and 8pm (Sundays 9am-5pm); the fraud line never closes.",
        ),
    ),
]
