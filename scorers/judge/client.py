"""The judge on any OpenAI-compatible chat-completions endpoint (OpenAI, Azure, vLLM, Ollama).

One `ask` = cache lookup, context guard, budget, admission (concurrency with bounded waiters), rate
limit, then the HTTP request with retries on timeouts, connection errors, 429 and 5xx (honouring
Retry-After up to `max_backoff_seconds`), then JSON parsing and pydantic validation with one repair
request. Each request has a wall-clock deadline (connect, send and every read) besides the
per-read timeout, and a bounded answer size. Every way it can fail ends in `Unjudged` with a
reason and a counted metric; nothing raises to the metric. Logs carry reasons and counts, never
prompts, answers or the API key.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import orjson
from pydantic import BaseModel, ValidationError
from turnwatch.scorers.judge import prompt as prompts
from turnwatch.scorers.judge.cache import VerdictCache, cache_key
from turnwatch.scorers.judge.config import EndpointConfig, JudgeConfig
from turnwatch.scorers.judge.exchange import (
    GIVE_UP_REASONS,
    Exchange,
    Failed,
    Unsupported,
    classify_response,
    read_body,
)
from turnwatch.scorers.judge.limits import Admission, HourlyBudget, RateLimiter
from turnwatch.scorers.judge.task import Answer, T, Task, TokenLogprob, Unjudged, Usage
from turnwatch.scorers.judge.telemetry import JudgeTelemetry
from turnwatch.scorers.judge.view import estimate_tokens
from turnwatch.scorers.judge.watch import EndpointWatch
from turnwatch.scorers.judge.wire import Completion, Logprobs, NotFinite, loads, token_counts

from turnwatch.retry import Backoff, Retryable, retry

log = logging.getLogger(__name__)

# Per-message framing the chat format adds around contents, in tokens.
MESSAGE_OVERHEAD = 4
# Kept free in the context window for estimate error.
MARGIN_TOKENS = 64


def read_api_key(config: EndpointConfig) -> str | None:
    """The key from its file or environment variable; None when neither is set (local servers)."""
    if config.api_key_file is not None:
        return config.api_key_file.read_text(encoding="utf-8").strip() or None
    if config.api_key_env:
        return os.environ.get(config.api_key_env) or None
    return None


class _Reply:
    __slots__ = ("content", "logprobs", "refused")

    def __init__(self, content: str, refused: bool, logprobs: list[TokenLogprob] | None) -> None:
        self.content = content
        self.refused = refused
        self.logprobs = logprobs


@dataclass(frozen=True, slots=True)
class _Invalid:
    """An answer that is not the asked-for JSON; `detail` names fields, never the answer text."""

    kind: str
    detail: str
    content: str


@dataclass(slots=True)
class _Request:
    messages: list[dict[str, str]]
    logprobs: bool


def _estimate(messages: list[dict[str, str]]) -> int:
    return sum(estimate_tokens(message["content"]) + MESSAGE_OVERHEAD for message in messages)


def _repair_messages(messages: list[dict[str, str]], invalid: _Invalid) -> list[dict[str, str]]:
    """Show the model its answer and the problem, and ask for the JSON only."""
    return [
        *messages,
        {"role": "assistant", "content": invalid.content[:4000]},
        {"role": "user", "content": prompts.load("repair").render(error=invalid.detail)},
    ]


class EndpointJudge:
    name = "endpoint"
    remote = True

    def __init__(
        self,
        config: JudgeConfig,
        telemetry: JudgeTelemetry,
        cache: VerdictCache | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if config.endpoint.base_url is None:
            raise ValueError("EndpointJudge needs scorers.judge.endpoint.base_url")
        self.config = config.endpoint
        self.model = config.endpoint.model
        self.telemetry = telemetry
        self.cache = cache if cache is not None else VerdictCache(config.cache_size)
        self.budget = HourlyBudget(
            config.budget.calls_per_hour, config.budget.tokens_per_hour, clock
        )
        self.sleep = sleep
        self.clock = clock
        self.json_mode = config.endpoint.json_mode != "off"
        self.system = prompts.load(prompts.SYSTEM).render()
        self.backoff = Backoff(
            config.endpoint.max_retries,
            config.endpoint.backoff_seconds,
            config.endpoint.max_backoff_seconds,
        )
        self._url = f"{config.endpoint.base_url}/chat/completions"
        self._headers = {"content-type": "application/json"}
        key = read_api_key(config.endpoint)
        if key:
            self._headers["authorization"] = f"Bearer {key}"
        self.watch = EndpointWatch(clock)
        telemetry.watch(self.watch)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: httpx.AsyncClient | None = None
        self._admission: Admission | None = None
        self._limiter: RateLimiter | None = None

    # -- sizing ---------------------------------------------------------------------------------

    def input_budget(self, task_overhead_chars: int) -> int:
        fixed = (
            estimate_tokens(self.system)
            + estimate_tokens(" " * task_overhead_chars)
            + 2 * MESSAGE_OVERHEAD
            + self.config.max_output_tokens
            + MARGIN_TOKENS
        )
        return max(0, (self.config.context_tokens - fixed) * 4)

    def unanswered_seconds(self) -> float:
        return self.watch.unanswered_seconds()

    # -- lifecycle ------------------------------------------------------------------------------

    def _bind(self) -> None:
        """Clients, semaphores and locks belong to one event loop: make them for the current one."""
        loop = asyncio.get_running_loop()
        if self._loop is loop:
            return
        self._loop = loop
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(self.config.timeout_seconds),
            limits=httpx.Limits(max_connections=self.config.max_concurrency),
        )
        self._admission = Admission(self.config.max_concurrency, self.config.max_pending)
        self._limiter = RateLimiter(self.config.requests_per_second, self.clock)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
            self._loop = None

    # -- asking ---------------------------------------------------------------------------------

    async def ask(self, task: Task[T], usage: Usage | None = None) -> Answer[T] | Unjudged:
        usage = usage if usage is not None else Usage()
        self._bind()
        messages = [
            {"role": "system", "content": self.system},
            {"role": "user", "content": task.text()},
        ]
        key = cache_key(task.prompt.version, self.model, [messages, task.logprobs])
        hit = self.cache.get(key)
        if hit is not None:
            self.telemetry.cache.labels(task.metric, "hit").inc()
            usage.cached += 1
            return Answer(hit.value, hit.logprobs, cached=True)
        self.telemetry.cache.labels(task.metric, "miss").inc()
        if _estimate(messages) + self.config.max_output_tokens > self.config.context_tokens:
            self.telemetry.skipped.labels("context_overflow").inc()
            return Unjudged("context_overflow")
        answer = await self._judge(task, messages, usage)
        if isinstance(answer, Answer):
            self.cache.put(key, answer)
        return answer

    async def _judge(
        self, task: Task[T], messages: list[dict[str, str]], usage: Usage
    ) -> Answer[T] | Unjudged:
        """Ask, and on an answer that is not the asked-for JSON, ask once more to repair it."""
        verdict = self._verdict(task, await self._request(task, messages, usage))
        if not isinstance(verdict, _Invalid):
            return self._counted(task, verdict, "ok")
        self.telemetry.errors.labels(verdict.kind).inc()
        repair = _repair_messages(messages, verdict)
        verdict = self._verdict(task, await self._request(task, repair, usage))
        if isinstance(verdict, _Invalid):
            self.telemetry.errors.labels(verdict.kind).inc()
            self._failed(task, "invalid", "repair_failed")
            return Unjudged("invalid_verdict")
        return self._counted(task, verdict, "repaired")

    def _verdict(self, task: Task[T], reply: _Reply | Unjudged) -> Answer[T] | Unjudged | _Invalid:
        if isinstance(reply, Unjudged):
            return reply
        if reply.refused:
            self._failed(task, "refused", "refused")
            return Unjudged("refused")
        parsed = _parse(reply.content, task.schema)
        return parsed if isinstance(parsed, _Invalid) else Answer(parsed, reply.logprobs)

    def _counted(
        self, task: Task[Any], verdict: Answer[T] | Unjudged, outcome: str
    ) -> Answer[T] | Unjudged:
        if isinstance(verdict, Answer):
            self.telemetry.calls.labels(task.metric, outcome).inc()
        return verdict

    def _failed(self, task: Task[Any], outcome: str, reason: str) -> None:
        self.telemetry.calls.labels(task.metric, outcome).inc()
        self.telemetry.errors.labels(reason).inc()
        log.warning("judge answer unusable", extra={"metric": task.metric, "reason": reason})

    async def _request(
        self, task: Task[Any], messages: list[dict[str, str]], usage: Usage
    ) -> _Reply | Unjudged:
        estimate = _estimate(messages)
        reserve = estimate + self.config.max_output_tokens
        refused = self.budget.refuse(reserve)
        if refused is not None:
            self.telemetry.skipped.labels(refused).inc()
            return Unjudged(refused)
        assert self._admission is not None
        if self._admission.full():
            self.telemetry.skipped.labels("queue_full").inc()
            return Unjudged("queue_full")
        # Reserve before waiting for a slot: concurrent asks must not all pass the same check.
        entry = self.budget.spend(reserve)
        with self.watch.asking():
            async with self._admission:
                usage.calls += 1
                usage.by_metric[task.metric] = usage.by_metric.get(task.metric, 0) + 1
                started = time.perf_counter()
                try:
                    answer = await self._post_with_retries(task, messages)
                finally:
                    elapsed = time.perf_counter() - started
                    self.telemetry.duration.labels(task.metric).observe(elapsed)
        if isinstance(answer, Unjudged):
            self.telemetry.calls.labels(task.metric, "error").inc()
            return answer
        return self._read(task, answer, estimate, entry, usage)

    # -- one HTTP exchange ----------------------------------------------------------------------

    async def _post_with_retries(
        self, task: Task[Any], messages: list[dict[str, str]]
    ) -> Completion | Unjudged:
        request = _Request(messages, logprobs=task.logprobs and self.config.top_logprobs > 0)
        outcome = await retry(
            lambda: self._attempt(request), self.backoff, log, "judge", self.sleep
        )
        if not isinstance(outcome, Retryable):
            return outcome
        log.warning("judge request failed", extra={"metric": task.metric, "reason": outcome.reason})
        return Unjudged(GIVE_UP_REASONS.get(outcome.reason, "endpoint_error"))

    async def _attempt(self, request: _Request) -> Completion | Unjudged | Retryable:
        """One try; a feature the endpoint rejects is dropped and the request sent again at once."""
        while True:
            outcome = await self._post(request)
            if isinstance(outcome, Unsupported):
                self._drop(outcome, request)
                continue
            if isinstance(outcome, Retryable):
                self.telemetry.errors.labels(outcome.reason).inc()
            elif isinstance(outcome, Failed):
                if outcome.error is not None:
                    self.telemetry.errors.labels(outcome.error).inc()
                return Unjudged(outcome.reason)
            return outcome

    async def _post(self, request: _Request) -> Exchange:
        assert self._client is not None and self._limiter is not None
        await self._limiter.wait()
        with self.watch.sending():
            try:
                # The client's timeout bounds each read; an answer dripping in a byte at a time
                # passes every read, so the whole request has a deadline of its own.
                async with asyncio.timeout(self.config.request_deadline_seconds):
                    response = await self._receive(request)
            except httpx.TimeoutException:
                return Retryable("timeout")
            except TimeoutError:
                return Retryable("deadline")
            except httpx.TransportError:
                return Retryable("connection")
        self.watch.answered()
        if response is None:
            return Failed("bad_response", "too_large")
        optional_json_mode = self.json_mode and self.config.json_mode == "auto"
        return classify_response(response, optional_json_mode, request.logprobs)

    async def _receive(self, request: _Request) -> httpx.Response | None:
        """The response with its body read, None when the body is over `max_response_bytes`."""
        assert self._client is not None
        content, headers = self._body(request), self._headers
        async with self._client.stream("POST", self._url, content=content, headers=headers) as got:
            body = await read_body(got, self.config.max_response_bytes)
        if body is None:
            return None
        return httpx.Response(got.status_code, headers=got.headers, content=body)

    def _body(self, request: _Request) -> bytes:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": request.messages,
            "temperature": 0,
            "max_tokens": self.config.max_output_tokens,
        }
        if self.json_mode:
            body["response_format"] = {"type": "json_object"}
        if request.logprobs:
            body["logprobs"] = True
            body["top_logprobs"] = self.config.top_logprobs
        return orjson.dumps(body)

    def _drop(self, unsupported: Unsupported, request: _Request) -> None:
        if unsupported.feature == "logprobs":
            request.logprobs = False
            return
        # An endpoint without JSON mode: ask in prose from now on (the prompt asks for JSON
        # anyway) instead of failing every call.
        self.json_mode = False
        log.info("judge endpoint rejects json mode; asking without it")

    def _read(
        self, task: Task[Any], answer: Completion, estimate: int, entry: list[float], usage: Usage
    ) -> _Reply:
        choice = answer.choices[0]
        content = choice.message.content or ""
        refused = bool(choice.message.refusal) or choice.finish_reason == "content_filter"
        reported = token_counts(answer.usage, self.config.max_reported_tokens)
        if reported is None:
            # Negative or absurd counts would let the endpoint switch the hourly budget off.
            self.telemetry.errors.labels("invalid_usage").inc()
            log.warning("judge token counts impossible", extra={"metric": task.metric})
            reported = (None, None)
        prompt_tokens = reported[0] or estimate
        completion_tokens = reported[1] or estimate_tokens(content)
        self.budget.settle(entry, prompt_tokens + completion_tokens)
        usage.prompt_tokens += prompt_tokens
        usage.completion_tokens += completion_tokens
        self.telemetry.tokens.labels(task.metric, "prompt").inc(prompt_tokens)
        self.telemetry.tokens.labels(task.metric, "completion").inc(completion_tokens)
        cost = (
            prompt_tokens * self.config.input_per_million_usd
            + completion_tokens * self.config.output_per_million_usd
        ) / 1e6
        if cost:
            self.telemetry.cost.labels(task.metric).inc(cost)
        return _Reply(content, refused, _logprobs(choice.logprobs))


def _parse(content: str, schema: type[BaseModel]) -> Any:
    """The validated answer, or `_Invalid` saying what is wrong with it."""
    text = content.strip()
    if text.startswith("```"):
        # Models wrap JSON in a fence even when told not to; that is not worth a repair call.
        text = text.strip("`")
        text = text[text.find("{") :] if "{" in text else text
    start, end = text.find("{"), text.rfind("}")
    if start == -1 or end < start:
        return _Invalid("invalid_json", "the answer contains no JSON object", content)
    try:
        data = loads(text[start : end + 1])
    except NotFinite:
        return _Invalid("non_finite", "the answer holds NaN or Infinity", content)
    except ValueError:
        return _Invalid("invalid_json", "the answer is not valid JSON", content)
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'answer'}: {error['msg']}"
            for error in exc.errors()[:5]
        )
        return _Invalid("schema", problems, content)


def _logprobs(logprobs: Logprobs | None) -> list[TokenLogprob] | None:
    if logprobs is None or not logprobs.content:
        return None
    found = []
    for item in logprobs.content:
        top = {alt.token: alt.logprob for alt in item.top_logprobs or ()}
        if not top and item.logprob is not None:
            top = {item.token: item.logprob}
        found.append(TokenLogprob(item.token, top))
    return found
