"""Judge cost benchmark: calls and prompt tokens for the four conversational metrics.

On the same 10-, 20- and 40-turn de-identified support sessions (about 60 tokens a turn), it counts
turnwatch's judge calls and prompt tokens by pointing the metrics at a loopback OpenAI-compatible
server (real HTTP) and counting what arrives, next to DeepEval's per-metric call pattern computed
from its algorithm (research/anchors.md A.2: relevancy one call per exchange window + a reason,
role adherence 2, knowledge retention one extraction per user turn with all earlier turns + one
verdict per assistant turn + a reason, completeness 1 + k + 1), with its prompts modelled as
its template sizes (v4 templates: relevancy 1,690 chars, role 2,204, extraction 2,288, retention
verdict 2,156, intentions 1,312, satisfaction 1,801; reason templates taken as 1,000) plus the
turns as indented JSON, as DeepEval sends them. Both sides count tokens as characters / 4.
DeepEval's own measured figures (o200k tokens, DESIGN.md) are printed for reference.

    python benchmarks/judge_cost.py [--window 3] [--stride 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from turnwatch.scorers.judge.config import JudgeConfig
from turnwatch.scorers.judge.evaluate import JudgeEvaluator

from tests.test_judge_loopback import running
from tests.test_judge_metrics import context
from tests.test_scorers_builders import bot, session, user
from turnwatch.schema import Session

ROLE = (
    "You are Sam, a friendly and professional support agent for an online electronics shop. "
    "Be concise, never rude, and only help with orders, returns, refunds and products."
)
FOUR = ["turn_relevancy", "role_adherence", "knowledge_retention", "conversation_completeness"]
TEMPLATE = {
    "relevancy": 1690,
    "role": 2204,
    "extract": 2288,
    "retention": 2156,
    "intentions": 1312,
    "satisfaction": 1801,
    "reason": 1000,
}
INTENTIONS = {10: 2, 20: 3, 40: 5}  # k as in anchors.md A.3
MEASURED = {10: (23, 13_100), 20: (39, 28_900), 40: (75, 77_000)}  # DESIGN.md, o200k tokens

USER = [
    "Hi, my order {order} arrived yesterday but the headphones do not charge at all, even "
    "with a different cable. I would like a replacement or a refund please.",
    "My e-mail is {email} and the order was paid with the card ending in the usual number. I "
    "am travelling next week, so a quick solution would really help me a lot.",
    "The charging light never turns on. I tried two wall adapters and a laptop port, and I "
    "also reset them by holding the power button for ten seconds as the manual says.",
    "A replacement is fine, but can you ship it to my office at {address} instead of home? I "
    "am there every weekday between nine and six, so someone can sign for the parcel.",
    "Great. Also, do I need to send the broken pair back first, or can I keep them until the "
    "new ones arrive? I would rather not be without headphones on my trip.",
]
BOT = [
    "I am sorry the headphones are not charging. I can help with a replacement or a refund. "
    "Could you tell me the e-mail address on the order so I can find it?",
    "Thank you. I found order {order} for the wireless headphones. Before we go further, "
    "could you describe what happens when you plug them in to charge?",
    "Thanks for trying those steps; that points to a battery fault covered by the warranty. "
    "I can send a replacement pair today at no cost. Would that work for you?",
    "Of course. I have changed the delivery address for the replacement to {address}. It "
    "will ship today by express courier and should arrive within two working days.",
    "You can keep the faulty pair until the new ones arrive. I will e-mail a prepaid return "
    "label to {email}; please send them back within thirty days. Anything else?",
]


def build(turns: int, number: int) -> Session:
    values = {
        "order": f"<ORDER_NUMBER_{number:08x}>",
        "email": f"<EMAIL_ADDRESS_{number + 1:08x}>",
        "address": f"<STREET_ADDRESS_{number + 2:08x}>",
    }
    built = []
    for position in range(turns // 2):
        built.append(user(USER[position % len(USER)].format(**values)))
        built.append(bot(BOT[position % len(BOT)].format(**values)))
    return session(*built, session_id=f"bench-{turns}")


def tokens(chars: int) -> int:
    return chars // 4 + 1


def turn_json(session: Session) -> list[str]:
    """Each turn as DeepEval renders it into a prompt (an indented role/content object)."""
    return [
        json.dumps({"role": turn.role.value, "content": turn.text}, indent=4)
        for turn in session.turns
    ]


def deepeval(session: Session, window: int = 10) -> tuple[int, int]:
    """(calls, prompt tokens) of DeepEval's four metrics with default settings."""
    rendered = turn_json(session)
    units = [rendered[i : i + 2] for i in range(0, len(rendered), 2)]
    calls = prompt = 0

    def call(chars: int) -> None:
        nonlocal calls, prompt
        calls += 1
        prompt += tokens(chars) + 4

    everything = sum(map(len, rendered)) + len(rendered) * 2
    for i in range(len(units)):  # relevancy: one window per unit
        call(
            TEMPLATE["relevancy"]
            + sum(len(t) + 2 for u in units[max(0, i - window + 1) : i + 1] for t in u)
        )
    call(TEMPLATE["reason"] + 200)
    call(TEMPLATE["role"] + len(ROLE) + everything)  # role adherence: one pass + a reason
    call(TEMPLATE["reason"] + len(ROLE) + 200)
    knowledge = 0
    for j in range(0, len(rendered), 2):  # retention: extraction with all earlier turns
        call(TEMPLATE["extract"] + sum(len(t) + 2 for t in rendered[:j]) + len(rendered[j]))
        knowledge += 60  # about one extracted fact per user turn, as JSON
        call(TEMPLATE["retention"] + len(rendered[j + 1]) + knowledge)  # verdict per reply
    call(TEMPLATE["reason"] + 200)
    k = INTENTIONS[len(rendered)]
    call(TEMPLATE["intentions"] + everything)  # completeness: 1 + k + reason
    for _ in range(k):
        call(TEMPLATE["satisfaction"] + everything + 60)
    call(TEMPLATE["reason"] + 200)
    return calls, prompt


async def turnwatch(session: Session, window: int, stride: int) -> tuple[int, int, dict]:
    with running() as server:
        config = JudgeConfig.model_validate(
            {
                "metrics": FOUR,
                "relevancy": {"window": window, "stride": stride},
                "endpoint": {
                    "base_url": server.base_url,
                    "api_key_env": None,
                    "requests_per_second": 1000,
                },
            }
        )
        evaluator = JudgeEvaluator(config)
        scores = await evaluator.evaluate(context(session, ROLE))
        await evaluator.aclose()
        unscored = [score.name for score in scores if score.value is None]
        if unscored:
            raise SystemExit(f"unscored: {unscored}")
        per_metric = {score.name: score.metadata["calls"] for score in scores}
        return len(server.requests), server.prompt_tokens, per_metric


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=int, default=3)
    parser.add_argument("--stride", type=int, default=1)
    args = parser.parse_args()
    print(
        f"turnwatch: relevancy window k={args.window} exchanges, stride s={args.stride}; "
        "DeepEval: defaults (window 10, reasons on)"
    )
    header = (
        f"{'turns':>5} | {'tw calls':>8} | {'tw tokens':>9} | {'DE calls':>8} | "
        f"{'DE tokens':>9} | {'calls %':>7} | {'tokens %':>8} | {'DE measured':>14} | "
        "turnwatch calls per metric (TR/RA/KR/CC)"
    )
    print(header)
    print("-" * len(header))
    for turns in (10, 20, 40):
        sample = build(turns, turns)
        calls, prompt, per_metric = asyncio.run(turnwatch(sample, args.window, args.stride))
        de_calls, de_prompt = deepeval(sample)
        measured = MEASURED[turns]
        split = "/".join(str(per_metric[name]) for name in FOUR)
        print(
            f"{turns:>5} | {calls:>8} | {prompt:>9,} | {de_calls:>8} | {de_prompt:>9,} | "
            f"{100 * calls / de_calls:>6.0f}% | {100 * prompt / de_prompt:>7.0f}% | "
            f"{measured[0]:>3} / {measured[1]:>7,} | {split}"
        )


if __name__ == "__main__":
    main()
