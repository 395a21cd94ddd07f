"""The questions Brightwave's customers ask most, each with answers that address every
phrasing of it (so answering a different topic is irrelevant, and nothing else is)."""

from __future__ import annotations

from benchmarks.corpus.domain import Faq
from benchmarks.corpus.pools import P

FAQS = [
    Faq(
        "data_allowance",
        P(
            "How much data do I get each month?",
            "What's my mobile data allowance?",
            "Is my data unlimited?",
            "how much data is on my plan",
        ),
        P(
            "Unlimited Mobile plans have no data cap; other plans include 30 GB a month, and "
            "unused data doesn't roll over.",
            "Your monthly data depends on the plan: 30 GB on standard mobile, unlimited on "
            "Unlimited Mobile.",
            "Standard plans come with 30 GB of monthly data; you can add 10 GB boosts for £5.",
            "Data allowances reset on your bill date each month: 30 GB, or unlimited on the top "
            "plan.",
        ),
    ),
    Faq(
        "roaming_charges",
        P(
            "How much does it cost to use my phone abroad?",
            "Are there roaming charges in Europe?",
            "What does roaming cost?",
            "do i pay extra abroad",
        ),
        P(
            "Roaming in the EU costs £2.50 a day and uses your normal allowance; outside Europe "
            "it's £6 a day.",
            "Using your phone in Europe is £2.50 per day; the rest of the world is £6 per day.",
            "There's a daily roaming charge: £2.50 in the EU, £6 elsewhere, only on days you use "
            "the phone.",
            "Roaming costs a flat daily fee (£2.50 EU, £6 worldwide) and your allowance works as "
            "at home.",
        ),
    ),
    Faq(
        "contract_end",
        P(
            "When does my contract end?",
            "What happens when my contract runs out?",
            "Can I leave my contract early?",
            "how long is my contract",
        ),
        P(
            "Contracts run 18 or 24 months; after that you move to a rolling monthly plan and can "
            "leave with 30 days' notice.",
            "Leaving before the end of the minimum term means paying the remaining months; after "
            "the term there's no fee.",
            "Your contract end date is in the app under Plan details; we'll message you 90 days "
            "before it.",
            "When the minimum term ends you're free to leave or re-contract for a better price.",
        ),
    ),
    Faq(
        "wifi_speed",
        P(
            "How can I get faster WiFi at home?",
            "Why is my WiFi slow upstairs?",
            "How do I improve my WiFi speed?",
            "wifi is slow in some rooms, tips?",
        ),
        P(
            "Place the router somewhere central and off the floor, away from TVs and mirrors; a "
            "Mesh WiFi booster helps in bigger homes.",
            "For faster WiFi, connect big devices by cable, restart the router weekly and keep it "
            "in the open.",
            "Slow WiFi upstairs is usually distance; our Mesh boost add-on extends coverage to "
            "every room.",
            "Move the router out of cupboards and use the 5 GHz network near the router for the "
            "best WiFi speed.",
        ),
    ),
    Faq(
        "bill_date",
        P(
            "Can I change the date my bill is taken?",
            "When is my bill paid each month?",
            "Can I move my payment date?",
            "how do i change my billing date",
        ),
        P(
            "You can move your bill date once every six months in the app under Billing; the "
            "change applies from the next bill.",
            "Bills are taken on the same day each month. To change it, pick a new date in the "
            "app's Billing section.",
            "Your payment date can be any day from the 1st to the 28th; set it in Billing.",
            "Changing the bill date is free and can be done in the app, once per six months.",
        ),
    ),
    Faq(
        "sim_replacement",
        P(
            "I lost my SIM, how do I get a new one?",
            "How do I get a replacement SIM card?",
            "My SIM stopped working, what now?",
            "can i get an esim instead",
        ),
        P(
            "Replacement SIMs are free: order one in the app and it arrives in 1-2 days, or "
            "switch to an eSIM instantly.",
            "We'll post a free new SIM within two working days, or you can pick one up in any "
            "Brightwave store.",
            "You can get a replacement SIM or an eSIM for free; your number stays the same.",
            "A new SIM is free of charge and activates as soon as you insert it.",
        ),
    ),
    Faq(
        "5g_coverage",
        P(
            "Do you have 5G in my area?",
            "Is 5G included in my plan?",
            "Where does your 5G work?",
            "is there 5g coverage near me",
        ),
        P(
            "5G is included on all current plans at no extra cost; check the coverage map on our "
            "website for your postcode.",
            "Our 5G covers most cities and large towns; the coverage checker shows your street.",
            "Every plan gets 5G where it's available. Over 80% of the population is covered.",
            "5G comes with your plan; you need a 5G phone and to be inside the coverage area on "
            "our map.",
        ),
    ),
    Faq(
        "router_return",
        P(
            "How do I return my old router?",
            "Do I have to send the router back?",
            "What do I do with the router if I leave?",
            "router return process?",
        ),
        P(
            "If you leave, return the router within 30 days using the free label we email you, "
            "or a £40 fee applies.",
            "Routers are ours to keep track of: post it back with the prepaid bag we send, within "
            "30 days.",
            "You can drop the old router at a Brightwave store or post it free; we email the "
            "label.",
            "Send the router back within a month of leaving; the return postage is free.",
        ),
    ),
]
