"""The judge on any OpenAI-compatible chat-completions endpoint (OpenAI, Azure, vLLM, Ollama).

One `ask` = cache lookup, context guard, budget, admission (concurrency with bounded waiters), rate
limit, then the HTTP request with retries on timeouts, connection errors, 429 and 5xx (honouring
Retry-After up to `max_backoff_seconds`), then JSON parsing and pydantic validation with one repair
request. Every way it can fail ends in `Unjudged` with a reason and a counted metric; nothing
raises to the metric. Logs carry reasons and counts, never prompts, answers or the API key.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import os
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import orjson
from pydantic import BaseModel, ValidationError
from turnwatch.scorers.judge import prompt as prompts
from turnwatch.scorers.judge.cache import VerdictCache, cache_key
from turnwatch.scorers.judge.config import EndpointConfig, JudgeConfig
from turnwatch.scorers.judge.limits import Admission, HourlyBudget, RateLimiter
from turnwatch.scorers.judge.task import Answer, T, Task, TokenLogprob, Unjudged, Usage
from turnwatch.scorers.judge.telemetry import JudgeTelemetry
from turnwatch.scorers.judge.view import estimate_tokens

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


def retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class _Reply:
    __slots__ = ("content", "logprobs", "refused")

    def __init__(self, content: str, refused: bool, logprobs: list[TokenLogprob] | None) -> None:
        self.content = content
        self.refused = refused
        self.logprobs = logprobs


class EndpointJudge:
    name = "endpoint"

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
        self._key = read_api_key(config.endpoint)
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
        estimate = sum(estimate_tokens(m["content"]) + MESSAGE_OVERHEAD for m in messages)
        if estimate + self.config.max_output_tokens > self.config.context_tokens:
            self.telemetry.skipped.labels("context_overflow").inc()
            return Unjudged("context_overflow")
        reply = await self._request(task, messages, estimate, usage)
        if isinstance(reply, Unjudged):
            return reply
        if reply.refused:
            self._failed(task, "refused", "refused")
            return Unjudged("refused")
        parsed = _parse(reply.content, task.schema)
        outcome = "ok"
        if isinstance(parsed, str):
            self.telemetry.errors.labels(parsed.split(":")[0]).inc()
            # One repair: show the model its answer and the problem, ask for the JSON only.
            repair = [
                *messages,
                {"role": "assistant", "content": reply.content[:4000]},
                {
                    "role": "user",
                    "content": prompts.load("repair").render(error=parsed.split(":", 1)[1]),
                },
            ]
            estimate = sum(estimate_tokens(m["content"]) + MESSAGE_OVERHEAD for m in repair)
            reply = await self._request(task, repair, estimate, usage)
            if isinstance(reply, Unjudged):
                return reply
            if reply.refused:
                self._failed(task, "refused", "refused")
                return Unjudged("refused")
            parsed = _parse(reply.content, task.schema)
            if isinstance(parsed, str):
                self._failed(task, "invalid", parsed.split(":")[0])
                return Unjudged("invalid_verdict")
            outcome = "repaired"
        self.telemetry.calls.labels(task.metric, outcome).inc()
        answer = Answer(parsed, reply.logprobs)
        self.cache.put(key, answer)
        return answer

    def _failed(self, task: Task[Any], outcome: str, reason: str) -> None:
        self.telemetry.calls.labels(task.metric, outcome).inc()
        self.telemetry.errors.labels(reason).inc()
        log.warning("judge answer unusable", extra={"metric": task.metric, "reason": reason})

    async def _request(
        self, task: Task[Any], messages: list[dict[str, str]], estimate: int, usage: Usage
    ) -> _Reply | Unjudged:
        reserve = estimate + self.config.max_output_tokens
        refused = self.budget.refuse(reserve)
        if refused is not None:
            self.telemetry.skipped.labels(refused).inc()
            return Unjudged(refused)
        assert self._admission is not None and self._limiter is not None
        if self._admission.full():
            self.telemetry.skipped.labels("queue_full").inc()
            return Unjudged("queue_full")
        # Reserve before waiting for a slot: concurrent asks must not all pass the same check.
        entry = self.budget.spend(reserve)
        async with self._admission:
            usage.calls += 1
            usage.by_metric[task.metric] = usage.by_metric.get(task.metric, 0) + 1
            started = time.perf_counter()
            try:
                body = await self._post_with_retries(task, messages)
            finally:
                self.telemetry.duration.labels(task.metric).observe(time.perf_counter() - started)
        if isinstance(body, Unjudged):
            self.telemetry.calls.labels(task.metric, "error").inc()
            return body
        return self._read(task, body, estimate, entry, usage)

    async def _post_with_retries(
        self, task: Task[Any], messages: list[dict[str, str]]
    ) -> dict[str, Any] | Unjudged:
        assert self._client is not None and self._limiter is not None
        want_logprobs = task.logprobs and self.config.top_logprobs > 0
        headers = {"content-type": "application/json"}
        if self._key:
            headers["authorization"] = f"Bearer {self._key}"
        url = f"{self.config.base_url}/chat/completions"
        attempt = 0
        last = "endpoint_error"
        while True:
            body: dict[str, Any] = {
                "model": self.model,
                "messages": messages,
                "temperature": 0,
                "max_tokens": self.config.max_output_tokens,
            }
            if self.json_mode:
                body["response_format"] = {"type": "json_object"}
            if want_logprobs:
                body["logprobs"] = True
                body["top_logprobs"] = self.config.top_logprobs
            await self._limiter.wait()
            delay: float | None = None
            try:
                response = await self._client.post(url, content=orjson.dumps(body), headers=headers)
            except httpx.TimeoutException:
                reason = last = "timeout"
            except httpx.TransportError:
                reason = last = "connection"
            else:
                status = response.status_code
                if status == 200:
                    try:
                        parsed = orjson.loads(response.content)
                    except orjson.JSONDecodeError:
                        self.telemetry.errors.labels("invalid_json").inc()
                        return Unjudged("bad_response")
                    return parsed if isinstance(parsed, dict) else Unjudged("bad_response")
                text = response.text[:2000].lower()
                if status == 400 and "context" in text and ("length" in text or "window" in text):
                    self.telemetry.errors.labels("context_overflow").inc()
                    return Unjudged("context_overflow")
                if (
                    status == 400
                    and self.json_mode
                    and "response_format" in text
                    and self.config.json_mode == "auto"
                ):
                    # An endpoint without JSON mode: ask in prose from now on (the prompt asks for
                    # JSON anyway) instead of failing every call.
                    self.json_mode = False
                    log.info("judge endpoint rejects json mode; asking without it")
                    continue
                if status == 400 and want_logprobs and "logprobs" in text:
                    want_logprobs = False
                    continue
                if status == 429:
                    reason = last = "http_429"
                    delay = retry_after(response)
                elif status >= 500:
                    reason = last = "http_5xx"
                    delay = retry_after(response)
                else:
                    self.telemetry.errors.labels("http_4xx").inc()
                    log.warning("judge request refused", extra={"status": status})
                    return Unjudged("endpoint_error")
            self.telemetry.errors.labels(reason).inc()
            if attempt >= self.config.max_retries:
                break
            if delay is None:
                delay = self.config.backoff_seconds * (2**attempt) * (0.5 + random.random() / 2)
            if delay > self.config.max_backoff_seconds:
                log.warning("judge retry-after too long", extra={"retry_after_s": round(delay)})
                break
            log.info("judge retry", extra={"reason": reason, "attempt": attempt + 1})
            attempt += 1
            await self.sleep(delay)
        log.warning("judge request failed", extra={"metric": task.metric, "reason": last})
        return Unjudged(
            {"http_429": "rate_limited", "timeout": "timeout"}.get(last, "endpoint_error")
        )

    def _read(
        self, task: Task[Any], body: dict[str, Any], estimate: int, entry: list[float], usage: Usage
    ) -> _Reply | Unjudged:
        try:
            choice = body["choices"][0]
            message = choice.get("message") or {}
        except (KeyError, IndexError, TypeError, AttributeError):
            self.telemetry.errors.labels("invalid_json").inc()
            return Unjudged("bad_response")
        content = message.get("content") or ""
        refused = bool(message.get("refusal")) or choice.get("finish_reason") == "content_filter"
        reported = body.get("usage") or {}
        prompt_tokens = int(reported.get("prompt_tokens") or estimate)
        completion_tokens = int(reported.get("completion_tokens") or estimate_tokens(content))
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
        return _Reply(content, refused, _logprobs(choice.get("logprobs")))


def _parse(content: str, schema: type[BaseModel]) -> Any:
    """The validated answer, or "reason:detail" (detail names fields, never the answer text)."""
    text = content.strip()
    if text.startswith("```"):
        # Models wrap JSON in a fence even when told not to; that is not worth a repair call.
        text = text.strip("`")
        text = text[text.find("{") :] if "{" in text else text
    start, end = text.find("{"), text.rfind("}")
    if start == -1 or end < start:
        return "invalid_json:the answer contains no JSON object"
    try:
        data = orjson.loads(text[start : end + 1])
    except orjson.JSONDecodeError:
        return "invalid_json:the answer is not valid JSON"
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'answer'}: {error['msg']}"
            for error in exc.errors()[:5]
        )
        return f"schema:{problems}"


def _logprobs(raw: Any) -> list[TokenLogprob] | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("content"), list):
        return None
    found = []
    for item in raw["content"]:
        if not isinstance(item, dict) or not isinstance(item.get("token"), str):
            continue
        top = {
            alt["token"]: float(alt["logprob"])
            for alt in item.get("top_logprobs") or []
            if isinstance(alt, dict) and isinstance(alt.get("token"), str) and "logprob" in alt
        }
        if not top and "logprob" in item:
            top = {item["token"]: float(item["logprob"])}
        found.append(TokenLogprob(item["token"], top))
    return found or None
