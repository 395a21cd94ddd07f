"""Deterministic checks benchmark: sessions/s through every check, 10- to 200-turn sessions.

Sessions look like de-identified support conversations scored against the shipped support-bot
contract: user turns carrying tokens, assistant questions and answers, a tool call every few turns
(lookups, approvals, refunds, a failing call with a retry), token usage and latency on every model
call. The scorer keeps its cross-user owner index between sessions, as in production; each
session has its own user. Cost per turn (us/turn) staying flat across lengths means cost per
session grows linearly with turns.

    python benchmarks/checks.py [--seconds 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.test_scorers_builders import bot, call, session, support_scorer, usage, user
from turnwatch.schema import Session

PRICES = {"gpt-4o-mini": {"input_per_million_usd": 0.15, "output_per_million_usd": 0.6}}


def build(turns: int, number: int) -> Session:
    order = f"<ORDER_NUMBER_{number:08x}>"
    email = f"<EMAIL_ADDRESS_{number + 1:08x}>"
    model = {"model": "gpt-4o-mini", "usage": usage(400, 40), "latency_ms": 800.0}
    cycle = [
        user(f"Hi, my order {order} arrived damaged, my email is {email}."),
        bot(None, call("lookup_order", {"order_id": order}, {"status": "delivered"}), **model),
        bot("I see the order was delivered. What is the damage exactly?", **model),
        user("The lid is cracked and the handle fell off."),
        bot(
            None,
            call("request_refund_approval", {"order_id": order, "amount": 40}, error="Timeout"),
            call(
                "request_refund_approval", {"order_id": order, "amount": 40}, {"status": "approved"}
            ),
            **model,
        ),
        bot(None, call("issue_refund", {"order_id": order, "amount": 40}, {"ok": True}), **model),
        bot(f"The refund of 40 is approved and on its way to {email}.", **model),
        user("Thanks, can you also confirm the delivery address?"),
        bot("Could you share the address you would like to use?", **model),
        user("Same as before, <STREET_ADDRESS_0000abcd>."),
    ]
    shaped = [cycle[i % len(cycle)] for i in range(turns - 1)]
    shaped.append(bot(None, call("record_resolution", {"outcome": "refunded"}, {"ok": True})))
    return session(*shaped, user_id=f"<USER_ID_{number:08x}>", session_id=f"s-{number}")


def run(turns: int, seconds: float) -> tuple[int, float]:
    scorer = support_scorer(prices=PRICES)
    sessions = [build(turns, number) for number in range(64)]
    scorer.score(sessions[0])  # warm-up: compiled patterns, validators
    scored, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        for item in sessions:
            scorer.score(item)
        scored += len(sessions)
    return scored, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="time per session length")
    args = parser.parse_args()
    print(f"{'turns':>6}{'sessions/s':>12}{'ms/session':>12}{'us/turn':>10}")
    for turns in (10, 40, 200):
        scored, elapsed = run(turns, args.seconds)
        per_session = elapsed / scored
        print(
            f"{turns:>6}{scored / elapsed:>12.0f}{per_session * 1e3:>12.2f}"
            f"{per_session / turns * 1e6:>10.1f}"
        )


if __name__ == "__main__":
    main()
