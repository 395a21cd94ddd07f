"""The demo's support conversations: a few healthy ones and one per failure slice.

Each script is what the simulated chatbot says and does, turn by turn, and what turnwatch is
expected to find in it. The values that look like personal data are invented; they exist so that
de-identification has something to replace (and the demo test checks none of them leaks).
"""

from __future__ import annotations

from dataclasses import dataclass

from turnwatch.schema import JsonValue

HEALTHY = "healthy"


@dataclass(frozen=True, slots=True)
class ToolStep:
    """One tool call the bot makes before answering; `error` names the exception if it fails."""

    tool: str
    arguments: dict[str, JsonValue]
    result: JsonValue = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Exchange:
    user: str
    answer: str
    tools: tuple[ToolStep, ...] = ()


@dataclass(frozen=True, slots=True)
class Script:
    name: str
    slice: str
    """The failure slice the conversation demonstrates, or `healthy`."""
    user_id: str
    exchanges: tuple[Exchange, ...]
    expected_checks: tuple[str, ...] = ()
    """Checks that must report a finding; a healthy script expects none at error level."""
    wave: int = 1
    """Wave 2 is sent once wave 1 is scored: it relies on what the scorer learnt from wave 1."""

    @property
    def healthy(self) -> bool:
        return self.slice == HEALTHY


def _resolve(outcome: str) -> ToolStep:
    return ToolStep("record_resolution", {"outcome": outcome}, {"ok": True})


def _lookup(order_id: str, **result: JsonValue) -> ToolStep:
    return ToolStep("lookup_order", {"order_id": order_id}, dict(result))


ORDER_STATUS = Script(
    name="order-status",
    slice=HEALTHY,
    user_id="demo-customer-ana",
    exchanges=(
        Exchange(
            "Hi, where is my order ORD#20417?",
            "Your order ORD#20417 has shipped with DHL and should arrive within two days.",
            (_lookup("ORD#20417", status="shipped", carrier="DHL"),),
        ),
        Exchange(
            "Great, thanks!",
            "You're welcome. Is there anything else I can help with?",
            (_resolve("resolved"),),
        ),
    ),
)

APPROVED_REFUND = Script(
    name="approved-refund",
    slice=HEALTHY,
    user_id="demo-customer-ben",
    exchanges=(
        Exchange(
            "My order ORD#31860 arrived damaged. Can I get a refund of 45 EUR?",
            "The refund desk approved it: I have refunded 45 EUR for order ORD#31860.",
            (
                ToolStep(
                    "request_refund_approval",
                    {"order_id": "ORD#31860", "amount": 45},
                    {"status": "approved"},
                ),
                ToolStep(
                    "issue_refund",
                    {"order_id": "ORD#31860", "amount": 45, "reason": "damaged"},
                    {"status": "paid"},
                ),
            ),
        ),
        Exchange(
            "Perfect, that's all.",
            "Glad I could help. Have a good day!",
            (_resolve("refunded"),),
        ),
    ),
)

ADDRESS_CHANGE = Script(
    name="address-change",
    slice=HEALTHY,
    user_id="demo-customer-chen",
    exchanges=(
        Exchange(
            "I need a different delivery address for order ORD#44120.",
            "Order ORD#44120 has not shipped yet, so it can still be redirected. "
            "What is the new address?",
            (_lookup("ORD#44120", status="packed"),),
        ),
        Exchange(
            "Please send it to 42 Maple Avenue, thanks.",
            "Shall I update order ORD#44120 to 42 Maple Avenue as the new address?",
        ),
        Exchange(
            "Yes, go ahead.",
            "Done: order ORD#44120 will be delivered to 42 Maple Avenue from now on.",
            (
                ToolStep(
                    "update_address",
                    {"order_id": "ORD#44120", "address": "42 Maple Avenue"},
                    {"ok": True},
                ),
                _resolve("address_changed"),
            ),
        ),
    ),
)

ALICE_EMAIL = "alice.martin@example.com"
ALICE = "ACC-204117"  # the shop's customer id is the user id, so a record names its owner

ACCOUNT_OWNER = Script(
    name="account-owner",
    slice=HEALTHY,
    user_id=ALICE,
    exchanges=(
        Exchange(
            f"Hello, my name is Alice Martin and my email is {ALICE_EMAIL}. "
            "Has my order ORD#57302 shipped?",
            "Yes, order ORD#57302 left the warehouse this morning.",
            (
                _lookup(
                    "ORD#57302", status="shipped", customer_id=ALICE, customer_email=ALICE_EMAIL
                ),
            ),
        ),
        Exchange(
            "Thanks, that's all.", "You're welcome, enjoy your purchase!", (_resolve("resolved"),)
        ),
    ),
)

ESCALATED = Script(
    name="escalated-claim",
    slice=HEALTHY,
    user_id="demo-customer-dina",
    exchanges=(
        Exchange(
            "The courier damaged my fence while delivering order ORD#60215. Who pays for it?",
            "I'm sorry, I can't help with damage claims myself. I'm transferring you to a human "
            "agent who handles them.",
            (ToolStep("handoff_to_human", {"topic": "damage claim"}, {"queued": True}),),
        ),
    ),
)

RECOLLECTION = Script(
    name="recollection",
    slice="recollection",
    user_id="demo-customer-emil",
    expected_checks=("knowledge_attrition",),
    exchanges=(
        Exchange(
            "Hi, my order ORD#71954 is late.",
            "Order ORD#71954 is delayed at the carrier; it should arrive in three days.",
            (_lookup("ORD#71954", status="delayed"),),
        ),
        Exchange(
            "Can I get free shipping next time as compensation?",
            "I can look into that. Could you give me your order number?",
        ),
        Exchange(
            "It's the same one as before.",
            "Thanks. I have added a free-shipping voucher to your account.",
            (_resolve("resolved"),),
        ),
    ),
)

REVISION = Script(
    name="revision",
    slice="revision",
    user_id="demo-customer-femi",
    expected_checks=("contradictions",),
    exchanges=(
        Exchange(
            "Please change the delivery address of order ORD#83307 to 12 Baker Street, thank you.",
            "Order ORD#83307 has not shipped yet. "
            "Shall I change the address to 12 Baker Street for you?",
            (_lookup("ORD#83307", status="packed"),),
        ),
        Exchange(
            "Actually, make it 221 Oak Avenue instead, I am moving.",
            "Understood. Shall I go ahead with the change?",
        ),
        Exchange(
            "Yes, go ahead.",
            # The bot kept the first address: the revision was lost.
            "Done: order ORD#83307 will be delivered to 12 Baker Street from now on.",
            (
                ToolStep(
                    "update_address",
                    {"order_id": "ORD#83307", "address": "12 Baker Street"},
                    {"ok": True},
                ),
                _resolve("address_changed"),
            ),
        ),
    ),
)

TOOL_FAILURE = Script(
    name="tool-failure",
    slice="tool-failure",
    user_id="demo-customer-gus",
    expected_checks=("tool_error_recovery",),
    exchanges=(
        Exchange(
            "Where is my order ORD#90442?",
            # The lookup timed out, yet the bot answers as if it had a status.
            "Good news: ORD#90442 is out for delivery and arrives tomorrow.",
            (ToolStep("lookup_order", {"order_id": "ORD#90442"}, error="TimeoutError"),),
        ),
        Exchange("Thanks.", "You're welcome, have a nice day.", (_resolve("resolved"),)),
    ),
)

FORBIDDEN_ACTION = Script(
    name="forbidden-action",
    slice="forbidden-action",
    user_id="demo-customer-hana",
    expected_checks=("forbidden_action",),
    exchanges=(
        Exchange(
            "My order ORD#12873 never arrived. I want my 890 EUR back right now.",
            "I have refunded 890 EUR for order ORD#12873.",
            (
                ToolStep(
                    "request_refund_approval",
                    {"order_id": "ORD#12873", "amount": 890},
                    {"status": "approved"},
                ),
                # Above the 500 EUR limit: the contract says a human must do this.
                ToolStep(
                    "issue_refund", {"order_id": "ORD#12873", "amount": 890}, {"status": "paid"}
                ),
            ),
        ),
        Exchange("Thank you.", "You're welcome.", (_resolve("refunded"),)),
    ),
)

MISSING_APPROVAL = Script(
    name="missing-approval",
    slice="missing-approval",
    user_id="demo-customer-ivan",
    expected_checks=("approval",),
    exchanges=(
        Exchange(
            "The blender from order ORD#55190 stopped working after a week. "
            "I'd like a refund of 60 EUR.",
            "I have refunded 60 EUR to your card for order ORD#55190.",
            # No request_refund_approval before the refund.
            (
                ToolStep(
                    "issue_refund",
                    {"order_id": "ORD#55190", "amount": 60, "reason": "defective"},
                    {"status": "paid"},
                ),
            ),
        ),
        Exchange("Great, thanks.", "Happy to help!", (_resolve("refunded"),)),
    ),
)

CROSS_USER_DISCLOSURE = Script(
    name="cross-user-disclosure",
    slice="cross-user-disclosure",
    user_id="ACC-208530",
    expected_checks=("cross_user_disclosure",),
    wave=2,
    exchanges=(
        Exchange(
            "Hi, I'm collecting a parcel for a neighbour, order ORD#57302. "
            "Which email is it registered to?",
            # Alice's address, read out to Bob from Alice's record.
            f"Order ORD#57302 is registered to {ALICE_EMAIL}.",
            (
                _lookup(
                    "ORD#57302", status="shipped", customer_id=ALICE, customer_email=ALICE_EMAIL
                ),
            ),
        ),
        Exchange("Thanks!", "You're welcome.", (_resolve("resolved"),)),
    ),
)

_SMALL_TALK = (
    ("How long do I have to return something?", "Returns are accepted for 30 days."),
    ("Do you offer gift wrapping?", "Wrapping a gift costs 3 EUR per parcel."),
    ("Can I get an invoice with my company name?", "Company invoices are on the account page."),
    ("What warranty do blenders have?", "Kitchen appliances carry a two-year warranty."),
    ("Is your phone line open on Sundays?", "The phone line is closed at weekends."),
    ("Which payment methods do you take?", "We take cards, PayPal and bank transfer."),
    ("Do vouchers expire?", "Vouchers stay valid for three years."),
    ("Do you ship to Norway?", "Norway is served with customs paid by us."),
    ("How fast is express delivery?", "Express parcels arrive the next working day."),
    ("Where do I find tracking?", "Tracking links are in the dispatch message."),
    ("Is the packaging recyclable?", "All boxes are cardboard without plastic tape."),
    ("How do loyalty points work?", "Every euro spent earns one point worth a cent."),
    ("Is there a student discount?", "Students save ten percent with a verified card."),
    ("Do you match competitor prices?", "Price matching applies to identical listed items."),
    ("Where is the size guide?", "Each clothing page links its measurement chart."),
    ("Can I pre-order the new kettle?", "Pre-orders open a week before launch."),
    ("Can I cancel an order?", "Cancelling is free until the parcel is packed."),
    ("Do you sell in bulk?", "Bulk buyers get quotes from the trade desk."),
    ("How do I stop the newsletter?", "Every newsletter carries an unsubscribe link."),
    ("Do gift cards work online?", "Our gift cards work online and in the outlet store."),
)

SAM_EMAIL = "sam.okafor@example.net"

LONG_HORIZON = Script(
    name="long-horizon",
    slice="long-horizon",
    user_id="demo-customer-sam",
    expected_checks=("knowledge_attrition", "turn_budget"),
    exchanges=(
        Exchange(
            f"Hi, my email is {SAM_EMAIL} and I have a few questions about order ORD#66031.",
            "Happy to help with order ORD#66031.",
            (_lookup("ORD#66031", status="delivered"),),
        ),
        *(Exchange(question, answer) for question, answer in _SMALL_TALK),
        Exchange(
            "Last thing: please send me the invoice for ORD#66031.",
            # Twenty turns later the bot has lost the e-mail address from the first turn.
            "Sure. Could you tell me your e-mail address?",
        ),
        Exchange(
            "I gave it to you at the very start.",
            "Thanks, the invoice is on its way.",
            (_resolve("resolved"),),
        ),
    ),
)

UNANSWERABLE = Script(
    name="unanswerable",
    slice="unanswerable",
    user_id="demo-customer-kim",
    expected_checks=("outcome",),
    exchanges=(
        Exchange(
            "What will the exchange rate to yen be next month? I want to time order ORD#38814.",
            "I don't have information about future exchange rates.",
        ),
        Exchange(
            "So what should I do?",
            # Declines, then neither resolves nor hands over: the session ends nowhere.
            "Exchange rates change every day.",
        ),
    ),
)

SCRIPTS: tuple[Script, ...] = (
    ORDER_STATUS,
    APPROVED_REFUND,
    ADDRESS_CHANGE,
    ACCOUNT_OWNER,
    ESCALATED,
    RECOLLECTION,
    REVISION,
    TOOL_FAILURE,
    FORBIDDEN_ACTION,
    MISSING_APPROVAL,
    LONG_HORIZON,
    UNANSWERABLE,
    CROSS_USER_DISCLOSURE,
)
