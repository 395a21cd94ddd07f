"""The questions Northwind Home's customers ask most, each with answers that address every
phrasing of it (so answering a different topic is irrelevant, and nothing else is)."""

from __future__ import annotations

from benchmarks.corpus.domain import Faq
from benchmarks.corpus.pools import P

FAQS = [
    Faq(
        "returns",
        P(
            "What's your returns policy?",
            "How long do I have to send something back?",
            "Can I return an item if I just don't like it?",
            "how do returns work with you",
        ),
        P(
            "You can return most items within 30 days of delivery for a full refund, as long as "
            "they're unused and in their original packaging.",
            "Returns are free within 30 days, even if you simply changed your mind. Book a "
            "collection from My Orders and we refund you once it reaches our warehouse.",
            "Anything unused can come back within 30 days for any reason; large furniture is "
            "collected from your home at no cost.",
            "We accept returns up to 30 days after delivery, no reason needed, and refunds go "
            "back to the original payment method within five working days.",
        ),
    ),
    Faq(
        "delivery_times",
        P(
            "How long does delivery usually take?",
            "If I order today, when will it arrive?",
            "What are your delivery times?",
            "how quickly do you deliver",
        ),
        P(
            "Small items arrive in 2-4 working days; furniture takes 5-10 working days because it "
            "travels with our two-person delivery team.",
            "Standard delivery takes 3-5 working days, and we deliver Monday to Saturday between "
            "8am and 6pm.",
            "Most parcels arrive within a week of ordering. You'll get a text with a two-hour "
            "window the day before.",
            "Orders placed before 2pm usually ship the same day and arrive within 2-4 working "
            "days.",
        ),
    ),
    Faq(
        "assembly",
        P(
            "Do you offer furniture assembly?",
            "Can someone assemble the wardrobe for me?",
            "Is there an assembly service for furniture?",
            "how much does furniture assembly cost",
        ),
        P(
            "Yes, we offer assembly for most furniture for a flat fee of $49, booked at checkout "
            "or up to two days before delivery.",
            "Our partner fitters can assemble it on delivery day; it costs $49 per order and takes "
            "about an hour.",
            "Assembly isn't included by default, but you can add it for $49 and the delivery team "
            "will build it in the room of your choice.",
            "We can send fitters to assemble larger pieces for $49. Add the service in My Orders "
            "before the delivery day.",
        ),
    ),
    Faq(
        "price_match",
        P(
            "Do you price match?",
            "I saw this cheaper somewhere else, can you match the price?",
            "Will you match a lower price from another shop?",
            "is there a price match guarantee",
        ),
        P(
            "We match prices from major UK and US retailers for identical items within 14 days of "
            "purchase; just send us a link.",
            "Yes: if a major retailer sells the identical item for less within 14 days, we refund "
            "the difference as store credit.",
            "We price match identical items sold new by a major retailer. Share the link and "
            "we'll check it within a day.",
            "Our price match covers 14 days after purchase for the same product from a big "
            "retailer; the difference comes back to you.",
        ),
    ),
    Faq(
        "gift_cards",
        P(
            "Can I pay with a gift card?",
            "How do gift cards work with you?",
            "Can I use my Northwind gift card online?",
            "do gift cards work for online orders",
        ),
        P(
            "Gift cards work online and in store and last for 24 months; enter the code at "
            "checkout and the balance is deducted.",
            "Yes, enter the 16-digit gift card code at checkout. Any remaining balance stays on "
            "the card for next time.",
            "Northwind gift cards can pay for online orders, last two years from purchase and "
            "can be combined with a card payment.",
            "You can use up to three gift cards per online order; the balance shows when you "
            "enter the code.",
        ),
    ),
    Faq(
        "warranty",
        P(
            "What warranty do your products have?",
            "Is there a guarantee on furniture?",
            "How long is the warranty on what I buy?",
            "what does your warranty cover",
        ),
        P(
            "Furniture carries a two-year warranty against manufacturing faults, and sofa frames "
            "are covered for ten years.",
            "Every product has at least a 12-month warranty against faults; we repair or replace "
            "anything that fails in that time.",
            "All products have at least a one-year guarantee; solid wood furniture is covered for "
            "five years.",
            "The warranty covers manufacturing faults for at least a year. Claims are made from "
            "My Orders with a photo, and we reply within two days.",
        ),
    ),
    Faq(
        "international",
        P(
            "Do you ship abroad?",
            "Can you deliver outside the country?",
            "Is there international shipping?",
            "do you ship to other countries",
        ),
        P(
            "We ship to the UK, Ireland and most of the EU; furniture deliveries abroad take "
            "10-15 working days.",
            "International delivery is available to 18 countries. Costs are shown at checkout "
            "once you enter the address.",
            "Right now we deliver within the UK, the US and the EU. Duties for non-EU orders are "
            "paid on delivery.",
            "Yes, we ship to a growing list of countries. Large items may need a freight partner, "
            "which we arrange for you.",
        ),
    ),
    Faq(
        "payment_methods",
        P(
            "Which payment methods do you accept?",
            "How can I pay for an order?",
            "What ways of paying do you take?",
            "what can i pay with",
        ),
        P(
            "We accept Visa, Mastercard, Amex, PayPal, Apple Pay and Google Pay, and Klarna for "
            "paying in three instalments.",
            "You can pay by card, PayPal or a digital wallet, and split orders over $100 into "
            "three interest-free payments with Klarna.",
            "Cards, PayPal and digital wallets all work. Bank transfer is available for orders "
            "above $1,000.",
            "All major cards and wallets are accepted; the payment is only taken when the order "
            "ships.",
        ),
    ),
]
