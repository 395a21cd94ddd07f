"""Hostile and broken judge answers, over real loopback HTTP: each is refused, counted by reason,
and never reaches a score; impossible token counts never reach the budget; a judge dripping its
answer is cut at the request deadline and shows as unanswered."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry
from turnwatch.scorers.judge.config import JudgeConfig
from turnwatch.scorers.judge.evaluate import JudgeEvaluator
from turnwatch.scorers.judge.prompt import load
from turnwatch.scorers.judge.schemas import GEvalScore
from turnwatch.scorers.judge.task import Answer, Task, Unjudged

from tests.test_judge_client import make, sample, task
from tests.test_judge_loopback import LoopbackJudge, Reply, auto_answer, running, score_logprobs
from tests.test_judge_metrics import context, conversation


@pytest.fixture
def server() -> Iterator[LoopbackJudge]:
    with running() as started:
        yield started


async def until(predicate) -> None:
    while not predicate():
        await asyncio.sleep(0.01)


def errors(registry: CollectorRegistry, reason: str) -> float:
    return sample(registry, "turnwatch_judge_errors_total", reason=reason)


def scored(logprob: object) -> Reply:
    """A G-Eval answer whose score token carries `logprob` (written by json.dumps as is)."""
    alternatives = [{"token": "7", "logprob": logprob}, {"token": "8", "logprob": -2.0}]
    return Reply(content='{"score": 7}', logprobs=score_logprobs(alternatives))


def geval_task() -> Task[GEvalScore]:
    values = {"criteria": "polite", "steps": "1. Read.", "transcript": "[0] user: hi"}
    return Task("geval", load("geval_score"), values, GEvalScore, logprobs=True)


@pytest.mark.parametrize("logprob", [float("nan"), float("inf"), "NaN", "-Infinity", "inf"])
async def test_a_non_finite_logprob_is_refused_and_counted(server, logprob):
    judge, registry, _ = make(server)
    server.scripted = [scored(logprob)]
    answer = await judge.ask(geval_task())
    assert isinstance(answer, Unjudged) and answer.reason == "non_finite"
    assert errors(registry, "non_finite") == 1
    assert len(server.requests) == 1  # not an answer format problem: no repair asked


async def test_a_finite_logprob_weights_the_score(server):
    judge, _, _ = make(server)
    server.scripted = [scored(-0.5)]
    answer = await judge.ask(geval_task())
    assert isinstance(answer, Answer) and answer.logprobs is not None
    assert answer.logprobs[3].top == {"7": -0.5, "8": -2.0}


async def test_a_non_finite_number_in_the_verdict_gets_one_repair(server):
    judge, registry, _ = make(server)
    server.scripted = [Reply(content='{"score": NaN}'), Reply(content='{"score": 1e999}')]
    answer = await judge.ask(geval_task())
    assert isinstance(answer, Unjudged) and answer.reason == "invalid_verdict"
    assert "NaN or Infinity" in server.requests[1]["messages"][3]["content"]
    assert errors(registry, "non_finite") == 2 and errors(registry, "repair_failed") == 1


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"choices": []}, "malformed_response"),
        ({"choices": "all of them"}, "malformed_response"),
        ({"choices": [{"message": {"content": ["part one"]}}]}, "malformed_response"),
        ({"choices": [{"message": "hello"}]}, "malformed_response"),
        (
            {"choices": [{"message": {"content": "{}"}, "logprobs": {"content": 3}}]},
            "malformed_response",
        ),
        ([1, 2, 3], "malformed_response"),
    ],
)
async def test_a_body_of_the_wrong_shape_is_counted(server, body, reason):
    judge, registry, _ = make(server)
    server.scripted = [Reply(body=body)]
    answer = await judge.ask(task())
    assert isinstance(answer, Unjudged) and answer.reason == "bad_response"
    assert errors(registry, reason) == 1
    assert (
        sample(
            registry,
            "turnwatch_judge_calls_total",
            metric="conversation_completeness",
            outcome="error",
        )
        == 1
    )


async def test_an_answer_over_the_size_limit_is_not_read(server):
    judge, registry, _ = make(server, max_response_bytes=2048)
    server.scripted = [Reply(content="x" * 10_000)]
    answer = await judge.ask(task())
    assert isinstance(answer, Unjudged) and answer.reason == "bad_response"
    assert errors(registry, "too_large") == 1


async def test_a_failed_repair_is_counted_as_such(server):
    judge, registry, _ = make(server)
    server.scripted = [Reply(content='{"intentions": "refund"}'), Reply(content="{not json")]
    answer = await judge.ask(task())
    assert isinstance(answer, Unjudged) and answer.reason == "invalid_verdict"
    assert errors(registry, "schema") == 1 and errors(registry, "invalid_json") == 1
    assert errors(registry, "repair_failed") == 1


async def test_verdicts_left_out_are_counted(server):
    registry = CollectorRegistry()
    config = JudgeConfig.model_validate(
        {
            "metrics": ["turn_relevancy"],
            "endpoint": {"base_url": server.base_url, "api_key_env": None},
        }
    )
    server.scripted = [Reply(content='{"verdicts": [{"window": 0, "verdict": "yes"}]}')]
    [score] = await JudgeEvaluator(config, registry).evaluate(context(conversation(10)))
    assert score.value is None and score.metadata["unscored"] == "incomplete_verdict"
    assert errors(registry, "incomplete_verdict") == 1


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": -1_000_000, "completion_tokens": 5},
        {"prompt_tokens": 40, "completion_tokens": -1_000_000},
        {"prompt_tokens": 12.5, "completion_tokens": 5},
        {"prompt_tokens": 10**12, "completion_tokens": 5},
        {"prompt_tokens": True, "completion_tokens": 5},
        {"prompt_tokens": "40", "completion_tokens": 5},
        [40, 5],
    ],
)
async def test_impossible_token_counts_cannot_switch_the_budget_off(server, usage):
    judge, registry, _ = make(server, max_output_tokens=100)

    def reply(request):
        content = auto_answer(request, set(), set())
        return Reply(body={"choices": [{"message": {"content": content}}], "usage": usage})

    server.responder = reply
    first = await judge.ask(task("[0] user: first"))
    assert isinstance(first, Answer)  # the verdict stands; only the report is refused
    assert errors(registry, "invalid_usage") == 1
    charged_prompt = sample(
        registry, "turnwatch_judge_tokens_total", metric="conversation_completeness", kind="prompt"
    )
    charged = charged_prompt + sample(
        registry,
        "turnwatch_judge_tokens_total",
        metric="conversation_completeness",
        kind="completion",
    )
    assert charged_prompt > 0 and charged > charged_prompt  # the estimates, both positive
    # Room for exactly what the estimates charged, not for one more call of the same size: a
    # budget the report had driven below zero would let it through.
    judge.budget.max_tokens = int(charged + charged_prompt + 100 - 1)
    second = await judge.ask(task("[0] user: other"))
    assert isinstance(second, Unjudged) and second.reason == "budget_tokens"
    assert len(server.requests) == 1


async def test_a_dripping_answer_is_cut_at_the_request_deadline(server):
    judge, registry, _ = make(
        server, timeout_seconds=0.5, request_deadline_seconds=1.0, max_retries=1
    )
    server.responder = lambda request: Reply(drip=0.1)
    started = time.monotonic()
    asked = asyncio.ensure_future(judge.ask(task()))
    await asyncio.wait_for(until(lambda: judge.watch.inflight), timeout=5)
    assert sample(registry, "turnwatch_judge_inflight") == 1
    answer = await asked
    elapsed = time.monotonic() - started
    assert isinstance(answer, Unjudged) and answer.reason == "deadline"
    assert errors(registry, "deadline") == 2 and len(server.requests) == 2
    # Two attempts of one second each (every 0.1 s read would pass the 0.5 s read timeout).
    assert 2.0 <= elapsed < 5.0
    assert sample(registry, "turnwatch_judge_inflight") == 0


async def test_unanswered_time_grows_across_retries_until_an_answer(server):
    judge, registry, _ = make(
        server, timeout_seconds=0.5, request_deadline_seconds=0.6, max_retries=1
    )
    server.responder = lambda request: Reply(drip=0.1)
    asked = asyncio.ensure_future(judge.ask(task()))
    seen: list[float] = []
    while not asked.done():
        seen.append(sample(registry, "turnwatch_judge_unanswered_seconds"))
        await asyncio.sleep(0.05)
    # One clock over both attempts (0.6 s each): the retry did not start it again.
    assert seen == sorted(seen) and seen[-1] > 0.9
    assert sample(registry, "turnwatch_judge_unanswered_seconds") == 0  # nothing waits now
    server.responder = None
    assert isinstance(await judge.ask(task("[0] user: other")), Answer)
    assert judge.watch.unanswered_seconds() == 0
