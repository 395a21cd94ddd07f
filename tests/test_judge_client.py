"""The endpoint judge's failure handling, limits, cache and key, over real loopback HTTP."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry
from turnwatch.scorers.judge.cache import VerdictCache
from turnwatch.scorers.judge.client import EndpointJudge
from turnwatch.scorers.judge.config import JudgeConfig
from turnwatch.scorers.judge.evaluate import JudgeEvaluator
from turnwatch.scorers.judge.prompt import load
from turnwatch.scorers.judge.schemas import Intentions
from turnwatch.scorers.judge.task import Answer, Task, Unjudged, Usage
from turnwatch.scorers.judge.telemetry import JudgeTelemetry

from tests.test_judge_loopback import LoopbackJudge, Reply, running
from tests.test_judge_metrics import context, conversation

SECRET = "sk-test-never-logged-0123456789"


@pytest.fixture
def server() -> Iterator[LoopbackJudge]:
    with running() as started:
        yield started


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def make(server: LoopbackJudge, registry: CollectorRegistry | None = None, **endpoint: object):
    config = JudgeConfig.model_validate(
        {
            "endpoint": {
                "base_url": server.base_url,
                "model": "judge-test",
                "api_key_env": None,
                "backoff_seconds": 0.01,
                "requests_per_second": 1000,
                "timeout_seconds": 1,
                **endpoint,
            },
        }
    )
    registry = registry or CollectorRegistry()
    sleeps = Sleeps()
    judge = EndpointJudge(config, JudgeTelemetry(registry), VerdictCache(100), sleep=sleeps)
    return judge, registry, sleeps


def task(text: str = "[0] user: I want a refund") -> Task[Intentions]:
    return Task(
        "conversation_completeness", load("intentions"), {"turns": text, "max": "5"}, Intentions
    )


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0


async def test_valid_answer_and_usage(server):
    judge, registry, _ = make(server)
    usage = Usage()
    answer = await judge.ask(task(), usage)
    assert isinstance(answer, Answer) and answer.value.intentions
    assert usage.calls == 1 and usage.prompt_tokens == server.prompt_tokens
    assert (
        sample(
            registry,
            "turnwatch_judge_calls_total",
            metric="conversation_completeness",
            outcome="ok",
        )
        == 1
    )
    assert (
        sample(
            registry,
            "turnwatch_judge_tokens_total",
            metric="conversation_completeness",
            kind="prompt",
        )
        > 0
    )


async def test_malformed_json_gets_one_repair(server):
    judge, registry, _ = make(server)
    server.scripted = [
        Reply(content="Sure! Here are the intentions: refund"),
        Reply(content='```json\n{"intentions": ["refund"]}\n```'),
    ]
    answer = await judge.ask(task())
    assert isinstance(answer, Answer) and answer.value.intentions == ["refund"]
    assert len(server.requests) == 2
    repair = server.requests[1]["messages"]
    assert repair[2]["role"] == "assistant" and "no JSON object" in repair[3]["content"]
    assert (
        sample(
            registry,
            "turnwatch_judge_calls_total",
            metric="conversation_completeness",
            outcome="repaired",
        )
        == 1
    )


async def test_still_malformed_after_repair_is_unscored_not_zero(server):
    server.scripted = [Reply(content='{"intentions": "refund"}'), Reply(content="{not json")]
    config = JudgeConfig.model_validate(
        {
            "metrics": ["conversation_completeness"],
            "endpoint": {"base_url": server.base_url, "api_key_env": None},
        }
    )
    [score] = await JudgeEvaluator(config).evaluate(context(conversation(10)))
    assert score.value is None
    assert score.unscored_reason == "the judge's answer did not match the format, after one repair"
    assert score.metadata["unscored"] == "invalid_verdict"
    assert "intentions" in server.requests[1]["messages"][3]["content"]  # the schema problem


async def test_refusal_is_unscored_without_repair(server):
    judge, registry, _ = make(server)
    server.scripted = [Reply(refusal="I can't help with that.")]
    answer = await judge.ask(task())
    assert isinstance(answer, Unjudged) and answer.reason == "refused"
    assert len(server.requests) == 1
    assert sample(registry, "turnwatch_judge_errors_total", reason="refused") == 1


async def test_timeout_retries_then_gives_up(server):
    judge, registry, sleeps = make(server, timeout_seconds=0.2, max_retries=2)
    server.scripted = [Reply(delay=0.5), Reply(delay=0.5), Reply(delay=0.5)]
    answer = await judge.ask(task())
    assert isinstance(answer, Unjudged) and answer.reason == "timeout"
    assert len(server.requests) == 3 and len(sleeps.delays) == 2
    assert sample(registry, "turnwatch_judge_errors_total", reason="timeout") == 3


async def test_429_honours_retry_after(server):
    judge, registry, sleeps = make(server)
    server.scripted = [Reply(status=429, body={"error": "slow down"}, headers={"Retry-After": "7"})]
    answer = await judge.ask(task())
    assert isinstance(answer, Answer)
    assert sleeps.delays == [7.0]
    assert sample(registry, "turnwatch_judge_errors_total", reason="http_429") == 1


async def test_retry_after_beyond_the_cap_gives_up(server):
    judge, _, sleeps = make(server, max_backoff_seconds=5)
    server.scripted = [Reply(status=429, body={}, headers={"Retry-After": "120"})]
    answer = await judge.ask(task())
    assert isinstance(answer, Unjudged) and answer.reason == "rate_limited"
    assert sleeps.delays == [] and len(server.requests) == 1


async def test_5xx_backs_off_exponentially(server):
    judge, _, sleeps = make(server, backoff_seconds=1.0, max_retries=3)
    server.scripted = [Reply(status=503, body={}), Reply(status=502, body={})]
    answer = await judge.ask(task())
    assert isinstance(answer, Answer) and len(server.requests) == 3
    assert 0.5 <= sleeps.delays[0] <= 1.0 and 1.0 <= sleeps.delays[1] <= 2.0


async def test_context_overflow_from_the_endpoint_is_unscored(server):
    judge, registry, _ = make(server)
    error = {"error": {"code": "context_length_exceeded", "message": "maximum context length"}}
    server.scripted = [Reply(status=400, body=error)]
    answer = await judge.ask(task())
    assert isinstance(answer, Unjudged) and answer.reason == "context_overflow"
    assert sample(registry, "turnwatch_judge_errors_total", reason="context_overflow") == 1


async def test_context_guard_refuses_before_sending(server):
    judge, registry, _ = make(server, context_tokens=600, max_output_tokens=100)
    answer = await judge.ask(task("x" * 5_000))
    assert isinstance(answer, Unjudged) and answer.reason == "context_overflow"
    assert server.requests == []
    assert sample(registry, "turnwatch_judge_skipped_total", reason="context_overflow") == 1


async def test_long_turns_are_cut_so_metrics_still_fit(server):
    config = JudgeConfig.model_validate(
        {
            "metrics": ["turn_relevancy", "role_adherence", "knowledge_retention"],
            "max_turn_chars": 300,
            "endpoint": {
                "base_url": server.base_url,
                "api_key_env": None,
                "requests_per_second": 1000,
                "context_tokens": 1_000,
                "max_output_tokens": 100,
            },
        }
    )
    long = conversation(20)
    for turn in long.turns:
        turn.text = (turn.text or "") + " padding" * 400
    scores = await JudgeEvaluator(config).evaluate(context(long))
    assert all(score.value is not None for score in scores), [s.unscored_reason for s in scores]
    assert all(len(r["messages"][1]["content"]) < 4_000 for r in server.requests)


async def test_budget_exhaustion_skips_and_counts(server):
    registry = CollectorRegistry()
    config = JudgeConfig.model_validate(
        {
            "metrics": ["turn_relevancy", "role_adherence", "conversation_completeness"],
            "budget": {"calls_per_hour": 2},
            "endpoint": {"base_url": server.base_url, "api_key_env": None, "max_concurrency": 1},
        }
    )
    evaluator = JudgeEvaluator(config, registry)
    scores = await evaluator.evaluate(context(conversation(10)))
    assert len(server.requests) == 2
    skipped = [score for score in scores if score.value is None]
    assert skipped and all(s.metadata["unscored"] == "budget_calls" for s in skipped)
    assert sample(registry, "turnwatch_judge_skipped_total", reason="budget_calls") >= 1
    # A different session later in the hour: nothing sent, nothing queued.
    await evaluator.evaluate(context(conversation(12)))
    assert len(server.requests) == 2


async def test_token_budget(server):
    judge, _, _ = make(server, max_output_tokens=100)
    judge.budget.max_tokens = 150
    answer = await judge.ask(task())
    assert isinstance(answer, Unjudged) and answer.reason == "budget_tokens"
    assert server.requests == []


async def test_queue_is_bounded(server):
    judge, registry, _ = make(server, max_concurrency=1, max_pending=0)
    server.scripted = [Reply(delay=0.3)]
    import asyncio

    first, second = await asyncio.gather(
        judge.ask(task("[0] user: a")), judge.ask(task("[0] user: b"))
    )
    assert isinstance(first, Answer) and isinstance(second, Unjudged)
    assert second.reason == "queue_full"
    assert sample(registry, "turnwatch_judge_skipped_total", reason="queue_full") == 1


async def test_json_mode_falls_back_when_unsupported(server):
    judge, _, _ = make(server)
    server.scripted = [
        Reply(status=400, body={"error": {"message": "response_format is not supported"}})
    ]
    assert isinstance(await judge.ask(task()), Answer)
    assert "response_format" in server.requests[0] and "response_format" not in server.requests[1]
    await judge.ask(task("[0] user: other"))
    assert "response_format" not in server.requests[2]


async def test_cache_hit_sends_nothing(server):
    judge, registry, _ = make(server)
    await judge.ask(task())
    usage = Usage()
    again = await judge.ask(task(), usage)
    assert isinstance(again, Answer) and again.cached and usage.cached == 1
    assert len(server.requests) == 1
    assert (
        sample(
            registry,
            "turnwatch_judge_cache_total",
            metric="conversation_completeness",
            result="hit",
        )
        == 1
    )


async def test_api_key_from_env_or_file_never_logged(server, monkeypatch, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("TW_JUDGE_KEY", SECRET)
    judge, _, _ = make(server, api_key_env="TW_JUDGE_KEY")
    server.scripted = [Reply(status=500, body={})]
    await judge.ask(task())
    assert server.headers[0]["authorization"] == f"Bearer {SECRET}"
    key_file = tmp_path / "key"
    key_file.write_text(SECRET + "\n")
    judge, _, _ = make(server, api_key_env=None, api_key_file=str(key_file))
    await judge.ask(task("[0] user: other"))
    assert server.headers[-1]["authorization"] == f"Bearer {SECRET}"
    logged = " ".join(f"{record.getMessage()} {record.__dict__}" for record in caplog.records)
    assert SECRET not in logged and "I want a refund" not in logged
    assert SECRET not in repr(judge.config)
