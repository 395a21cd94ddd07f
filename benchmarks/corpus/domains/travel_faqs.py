"""The questions Skyway Travel's customers ask most, each with answers that address every
phrasing of it (so answering a different topic is irrelevant, and nothing else is)."""

from __future__ import annotations

from benchmarks.corpus.domain import Faq
from benchmarks.corpus.pools import P

FAQS = [
    Faq(
        "baggage_allowance",
        P(
            "How much luggage can I take?",
            "What's the baggage allowance?",
            "Is a cabin bag included?",
            "how heavy can my suitcase be",
        ),
        P(
            "Every ticket includes a 10 kg cabin bag and a small personal item; checked bags up "
            "to 23 kg can be added.",
            "You can bring one cabin bag of up to 10 kg plus a handbag; hold luggage is 23 kg per "
            "bag and costs extra on Light fares.",
            "The allowance is a 10 kg cabin bag and one under-seat item, with 23 kg checked bags "
            "available to add.",
            "Cabin bags up to 10 kg are included on all fares; checked suitcases may weigh up to "
            "23 kg.",
        ),
    ),
    Faq(
        "check_in",
        P(
            "When does online check-in open?",
            "How early do I need to be at the airport?",
            "When can I check in?",
            "check in times?",
        ),
        P(
            "Online check-in opens 24 hours before departure and closes 2 hours before; at the "
            "airport, bag drop closes 45 minutes before.",
            "Check in online from 24 hours before the flight, and arrive at the airport at least "
            "two hours early.",
            "You can check in in the app a day before; be at the airport two hours before "
            "departure for bag drop.",
            "Check-in runs from 24 hours to 2 hours before take-off online, and bag drop shuts 45 "
            "minutes before.",
        ),
    ),
    Faq(
        "pets",
        P(
            "Can I bring my dog on the plane?",
            "Do you allow pets in the cabin?",
            "What's your pet policy?",
            "can my cat fly with me",
        ),
        P(
            "Small cats and dogs up to 8 kg including the carrier can fly in the cabin for €60 "
            "per flight; larger pets travel in the hold.",
            "Pets under 8 kg can travel in the cabin in an approved carrier for €60; book it at "
            "least 48 hours ahead.",
            "Yes, small pets may fly in the cabin (8 kg limit with carrier); assistance dogs fly "
            "free.",
            "Our pet policy allows one small cat or dog per passenger in the cabin, €60 each way.",
        ),
    ),
    Faq(
        "insurance",
        P(
            "Do you sell travel insurance?",
            "Is travel insurance included?",
            "Should I get insurance for my trip?",
            "how does your travel insurance work",
        ),
        P(
            "Travel insurance isn't included, but you can add our partner's cover from €12 per "
            "trip in Manage booking.",
            "We offer optional insurance covering cancellation, medical costs and lost luggage, "
            "from €12 a trip.",
            "Insurance can be added at any time before you fly; single-trip cover starts at €12.",
            "It's optional: our partner policy covers cancellations, medical emergencies and "
            "baggage from €12.",
        ),
    ),
    Faq(
        "special_assistance",
        P(
            "Can I get wheelchair assistance?",
            "How do I book special assistance?",
            "My mother needs help at the airport, what can you do?",
            "assistance for reduced mobility?",
        ),
        P(
            "Special assistance is free: request it in Manage booking at least 48 hours before "
            "the flight and staff will meet you at the airport.",
            "We arrange free wheelchair and mobility assistance from check-in to the aircraft; "
            "book it 48 hours ahead.",
            "Assistance at the airport is free of charge. Add it to the booking and tell us what "
            "help is needed.",
            "Just add special assistance to the booking two days before travel; airport staff "
            "take care of the rest.",
        ),
    ),
    Faq(
        "cancelled_flights",
        P(
            "What happens if you cancel my flight?",
            "Am I compensated if my flight is cancelled?",
            "My flight might be cancelled, what are my rights?",
            "flight cancelled what now",
        ),
        P(
            "If we cancel, you choose a free rebooking or a full refund, and you may be owed "
            "compensation of up to €600 under EU rules.",
            "A cancelled flight entitles you to a refund or a new flight at no cost, plus meals "
            "and a hotel if you're stranded.",
            "When we cancel a flight you can rebook for free or get your money back; EU261 "
            "compensation may also apply.",
            "For cancellations on our side, you get a choice of refund or rebooking and we email "
            "you the options straight away.",
        ),
    ),
    Faq(
        "infants",
        P(
            "Can I fly with a baby?",
            "Do infants need their own seat?",
            "How much is an infant ticket?",
            "flying with a toddler rules",
        ),
        P(
            "Babies under two fly on your lap for €25 per flight, with a free pushchair and car "
            "seat in the hold.",
            "Infants under 2 don't need a seat; the fee is €25 each way and they get a 10 kg bag "
            "allowance.",
            "Children under two travel on an adult's lap for a flat €25; from two years they need "
            "their own seat.",
            "You can add an infant to the booking for €25; pushchairs go free to the aircraft "
            "door.",
        ),
    ),
    Faq(
        "meals",
        P(
            "Is food included on the flight?",
            "Can I pre-order a meal?",
            "Do you have vegetarian meals on board?",
            "what food is there on the plane",
        ),
        P(
            "Meals aren't included on short flights, but you can pre-order hot meals, including "
            "vegetarian and vegan, up to 24 hours before.",
            "There's a café on board with snacks and drinks; pre-ordered meals cost from €9 and "
            "include vegetarian options.",
            "Food is available to buy on board, and you can pre-book vegetarian, vegan or "
            "gluten-free meals online.",
            "We sell sandwiches and hot dishes on board; pre-order by the day before to be sure "
            "of a vegetarian meal.",
        ),
    ),
]
