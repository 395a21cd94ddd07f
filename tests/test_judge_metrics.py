"""Judge metrics against the loopback endpoint: windows, strides, batching, chunking, calls."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

import pytest
from turnwatch.scorers.contract import Contract
from turnwatch.scorers.judge.config import JudgeConfig
from turnwatch.scorers.judge.evaluate import JudgeEvaluator
from turnwatch.scorers.judge.relevancy import targets
from turnwatch.scorers.scorer import Context

from tests.test_judge_loopback import LoopbackJudge, Reply, prompt_of, running
from tests.test_scorers_builders import bot, session, user
from turnwatch.schema import Session


@pytest.fixture
def server() -> Iterator[LoopbackJudge]:
    with running() as started:
        yield started


ROLE = "A polite, concise support agent for an online shop."


def conversation(turns: int, *, revision: int = 1) -> Session:
    """Alternating user/assistant support turns carrying de-identification tokens."""
    built = []
    for number in range(turns // 2):
        if number == 0:
            built.append(user("Hi, my order <ORDER_NUMBER_0000aaaa> arrived damaged."))
            built.append(bot("Sorry to hear that. What is your e-mail address?"))
        elif number == 1:
            built.append(user("It is <EMAIL_ADDRESS_0000bbbb>, and I am allergic to latex."))
            built.append(bot("Thanks. Is the box or the item damaged?"))
        else:
            built.append(user(f"The lid is cracked, photo number {number} is attached."))
            built.append(bot(f"I have noted the damage on photo {number}; a refund is possible."))
    result = session(*built)
    result.revision = revision
    return result


def context(built: Session, role: str | None = ROLE) -> Context:
    """What the scorer hands a judge metric: the session, and a contract naming only the persona."""
    contract = Contract(service=built.service, version="1", chatbot_role=role) if role else None
    return Context.of(built, contract)


def endpoint_config(server: LoopbackJudge, **overrides: object) -> JudgeConfig:
    endpoint = {
        "base_url": server.base_url,
        "model": "judge-test",
        "api_key_env": None,
        "backoff_seconds": 0.01,
        "requests_per_second": 1000,
        "timeout_seconds": 2,
        **overrides.pop("endpoint", {}),  # type: ignore[dict-item]
    }
    return JudgeConfig.model_validate({"endpoint": endpoint, **overrides})


def by_name(scores: list) -> dict:
    return {score.name: score for score in scores}


def test_targets_follow_the_stride_from_the_start():
    assert targets(10, 1) == list(range(10))
    assert targets(10, 3) == [2, 5, 8]
    assert targets(2, 5) == [1]
    assert targets(0, 2) == []


async def test_four_metrics_on_twenty_turns_take_at_most_eight_calls(server):
    config = endpoint_config(
        server,
        metrics=[
            "turn_relevancy",
            "role_adherence",
            "knowledge_retention",
            "conversation_completeness",
        ],
    )
    scores = by_name(await JudgeEvaluator(config).evaluate(context(conversation(20))))
    assert len(server.requests) <= 8
    assert all(score.value is not None for score in scores.values()), scores
    relevancy = scores["turn_relevancy"]
    assert relevancy.value == 1.0
    assert relevancy.metadata["window"] == 3 and relevancy.metadata["stride"] == 1
    assert relevancy.metadata["windows_judged"] == 10 and relevancy.metadata["batches"] == 1
    assert all(score.metadata["judge"] == "endpoint" for score in scores.values())
    assert all(score.metadata["model"] == "judge-test" for score in scores.values())
    # Every request asked for JSON mode, at temperature 0, for the configured model.
    assert all(r["response_format"] == {"type": "json_object"} for r in server.requests)
    assert {r["model"] for r in server.requests} == {"judge-test"}


async def test_relevancy_windows_stride_and_batches(server):
    config = endpoint_config(
        server,
        metrics=["turn_relevancy"],
        relevancy={"window": 2, "stride": 2, "windows_per_call": 3},
    )
    server.irrelevant_turns = {7}
    [score] = await JudgeEvaluator(config).evaluate(context(conversation(40)))
    # 20 exchanges, stride 2 -> windows 1, 3, ..., 19 (10 windows) in batches of 3 -> 4 calls.
    prompts = server.prompts("turn relevancy")
    assert len(prompts) == 4
    listed = [int(n) for p in prompts for n in re.findall(r"^window (\d+):", p, re.M)]
    assert sorted(listed) == list(range(1, 20, 2))
    # Window 3 (exchange 3 = turns 6, 7) has k=2: its context starts at exchange 2 (turn 4).
    assert "window 3: reply turn(s) 7; context turns 4-6" in "".join(prompts)
    assert score.value == 0.9
    assert score.metadata["irrelevant_turns"] == [7]
    assert score.metadata["windows_judged"] == 10
    assert "turns 7" in score.explanation


async def test_relevancy_span_is_sent_once_per_batch(server):
    config = endpoint_config(server, metrics=["turn_relevancy"])
    await JudgeEvaluator(config).evaluate(context(conversation(20)))
    [prompt] = server.prompts("turn relevancy")
    # Each turn appears once although it is context of up to three windows.
    assert prompt.count("[5] assistant:") == 1


async def test_role_adherence_chunks_long_sessions_with_overlap(server):
    config = endpoint_config(
        server,
        metrics=["role_adherence"],
        endpoint={"context_tokens": 900, "max_output_tokens": 100},
        role={"overlap_turns": 2},
    )
    server.out_of_character = {13, 33}
    [score] = await JudgeEvaluator(config).evaluate(context(conversation(40)))
    prompts = server.prompts("role adherence")
    assert len(prompts) > 1
    shown = [[int(n) for n in re.findall(r"^\[(\d+)\] ", p, re.M)] for p in prompts]
    for before, after in itertools.pairwise(shown):
        assert after[0] <= before[-1]  # chunks overlap
    assert set().union(*map(set, shown)) == set(range(40))
    assert score.metadata["out_of_character_turns"] == [13, 33]
    assert score.value == 18 / 20
    assert score.metadata["chunks"] == len(prompts)


async def test_role_adherence_single_pass_and_needs_a_persona(server):
    config = endpoint_config(server, metrics=["role_adherence"])
    [score] = await JudgeEvaluator(config).evaluate(context(conversation(20)))
    assert len(server.requests) == 1 and score.value == 1.0
    assert ROLE in prompt_text(server)
    [missing] = await JudgeEvaluator(config).evaluate(context(conversation(20), None))
    assert missing.value is None and "persona" in missing.unscored_reason


def prompt_text(server: LoopbackJudge) -> str:
    return server.requests[-1]["messages"][1]["content"]


async def test_knowledge_retention_extracts_with_tokens_and_batches_verification(server):
    config = endpoint_config(server, metrics=["knowledge_retention"])
    [score] = await JudgeEvaluator(config).evaluate(context(conversation(20)))
    extraction = server.prompts("extract facts")
    verification = server.prompts("knowledge retention")
    # Turns 0 and 2 carry tokens / patterns; the others mention numbers and go to one call.
    assert len(extraction) == 1 and "[0] user" not in extraction[0]
    assert "[4] user" in extraction[0]
    assert len(verification) == 1
    assert "ORDER_NUMBER: <ORDER_NUMBER_0000aaaa>" in verification[0]
    assert "allergic to latex" in verification[0]
    assert score.value == 1.0
    assert score.metadata["facts_without_judge"] >= 3


async def test_knowledge_retention_counts_attrition_of_earlier_facts_only(server):
    config = endpoint_config(server, metrics=["knowledge_retention"])

    def answer(request):
        if prompt_of(request).startswith("Task: knowledge retention"):
            # Fact 0 (turn 0) forgotten at turn 5; a fact from turn 2 "forgotten" at turn 1: bogus.
            return Reply(content='{"attritions": [{"turn": 5, "fact": 0}, {"turn": 1, "fact": 2}]}')
        return None

    server.responder = answer
    [score] = await JudgeEvaluator(config).evaluate(context(conversation(10)))
    assert score.metadata["attrition_turns"] == [5]
    assert score.value == 4 / 5


async def test_completeness_two_calls_whatever_the_intentions(server):
    config = endpoint_config(server, metrics=["conversation_completeness"])
    [score] = await JudgeEvaluator(config).evaluate(context(conversation(20)))
    assert len(server.requests) == 2
    [intentions] = server.prompts("user intentions")
    assert "assistant:" not in intentions  # user turns only
    [verdicts] = server.prompts("conversation completeness")
    assert "0. get a refund" in verdicts and "2. track the order" in verdicts
    assert score.value == 1.0 and score.metadata["intentions"] == 3


async def test_geval_steps_once_and_logprob_weighting(server):
    logprobs = {
        "content": [
            {"token": '{"', "logprob": 0.0, "top_logprobs": []},
            {"token": "score", "logprob": 0.0, "top_logprobs": []},
            {"token": '":', "logprob": 0.0, "top_logprobs": []},
            {
                "token": "8",
                "logprob": -0.2231,
                "top_logprobs": [
                    {"token": "8", "logprob": -0.2231},  # p = 0.8
                    {"token": "6", "logprob": -1.6094},  # p = 0.2
                ],
            },
        ]
    }

    def answer(request):
        if prompt_of(request).startswith("Task: score a conversation"):
            assert request["logprobs"] is True and request["top_logprobs"] == 5
            return Reply(content='{"score": 8, "reason": "ok"}', logprobs=logprobs)
        return None

    server.responder = answer
    config = endpoint_config(
        server,
        metrics=["geval"],
        geval=[{"name": "empathy", "criteria": "The agent acknowledges the user's frustration."}],
    )
    evaluator = JudgeEvaluator(config)
    [first] = await evaluator.evaluate(context(conversation(10)))
    [second] = await evaluator.evaluate(context(conversation(12)))
    assert len(server.prompts("write evaluation steps")) == 1
    assert len(server.prompts("score a conversation")) == 2
    assert first.name == "geval.empathy"
    assert abs(first.value - 0.76) < 1e-3  # (0.8 * 8 + 0.2 * 6) / 10
    assert first.metadata["weighted"] is True and second.metadata["raw_score"] == 8


async def test_revision_rejudges_only_what_changed(server):
    config = endpoint_config(
        server,
        metrics=["turn_relevancy", "knowledge_retention"],
        relevancy={"windows_per_call": 5},
    )
    evaluator = JudgeEvaluator(config)
    await evaluator.evaluate(context(conversation(20)))
    first = len(server.requests)
    scores = by_name(await evaluator.evaluate(context(conversation(22, revision=2))))
    sent = server.requests[first:]
    # Relevancy windows 0-4 and 5-9 are cached; only the batch with window 10 is sent.
    relevancy = [r for r in sent if r["messages"][1]["content"].startswith("Task: turn rel")]
    assert len(relevancy) == 1
    assert "window 10:" in relevancy[0]["messages"][1]["content"]
    assert scores["turn_relevancy"].metadata["cached_calls"] == 2
    assert scores["turn_relevancy"].metadata["calls"] == 1
    # Unchanged revision: everything from the cache, nothing sent.
    again = len(server.requests)
    await evaluator.evaluate(context(conversation(22, revision=2)))
    assert len(server.requests) == again
