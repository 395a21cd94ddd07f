"""The write-ahead log on its own and under the collector pipeline, in one process.

The files: encrypted and authenticated with a key derived from the deployment secret, private
(0700 / 0600), bounded by bytes, one owner at a time, a torn tail cut off. The pipeline: a "crash"
is the log's files closed with nothing released or flushed; the next start replays what is left
into a fresh pipeline, and the test asserts which sessions come back, with which content, and
which do not (they were on the bus before). Requests go through the real protobuf decoder.
"""

from __future__ import annotations

import asyncio
import os
import stat
import threading

import pytest
from prometheus_client import CollectorRegistry
from turnwatch.collector import otlp_proto
from turnwatch.collector.metrics import CollectorMetrics
from turnwatch.collector.otlp_common import DecodeLimits
from turnwatch.collector.pipeline import CollectorPipeline, PendingSession
from turnwatch.collector.session_keys import conversation_of_key
from turnwatch.collector.wal.durability import Durability
from turnwatch.collector.wal.metrics import WalMetrics
from turnwatch.collector.wal.segments import (
    FRAME_OVERHEAD,
    HEADER,
    MAGIC,
    Kind,
    SegmentLog,
    WalFull,
    WalLocked,
)

from tests.conftest import make_settings
from tests.otlp_requests import chat_span, trace_request
from tests.stages import AssembledAtOnce, assembling_pipeline
from turnwatch.app.settings import Settings
from turnwatch.schema import CloseReason, Session

KEY = bytes(range(32))
SECRET = b"a deployment secret of 32 bytes!"
END = {"turnwatch.session.end": "true"}


def segment_log(directory, key: bytes = KEY, **limits: int) -> SegmentLog:
    segment_bytes = limits.get("segment_bytes", 1 << 20)
    max_bytes = limits.get("max_bytes", 1 << 24)
    return SegmentLog(directory, key, segment_bytes, max_bytes, sync=False)


def test_frames_are_encrypted_and_the_files_private(tmp_path):
    directory = tmp_path / "wal"
    wal = segment_log(directory)
    body = trace_request([chat_span("card-4111-1111-1111-1111", 0)]).SerializeToString()
    assert wal.append(Kind.TRACES_PROTOBUF, body) == 1
    wal.close()
    [segment] = directory.glob("*.wal")
    assert b"4111" not in segment.read_bytes() and b"question 0" not in segment.read_bytes()
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE(segment.stat().st_mode) == 0o600

    reopened = segment_log(directory)
    [left] = reopened.replayable
    [frame] = reopened.frames(left, frozenset({Kind.TRACES_PROTOBUF}))
    assert (frame.seq, frame.kind, frame.payload) == (1, Kind.TRACES_PROTOBUF, body)
    reopened.close()


def written_segment(directory, payloads: list[bytes]):
    """A log with one segment holding `payloads`, closed; the segment's path."""
    wal = segment_log(directory)
    for payload in payloads:
        wal.append(Kind.TRACES_JSON, payload)
    wal.close()
    [path] = directory.glob("*.wal")
    return path


def test_a_changed_byte_or_another_key_fails_authentication(tmp_path):
    directory = tmp_path / "wal"
    path = written_segment(directory, [b'{"request": %d}' % number for number in range(3)])
    data = bytearray(path.read_bytes())
    second_frame = len(MAGIC) + FRAME_OVERHEAD + len(b'{"request": 0}')
    data[second_frame + HEADER.size + 14] ^= 1  # inside the second frame's ciphertext
    path.write_bytes(bytes(data))

    damaged = segment_log(directory)
    frames = list(damaged.frames(damaged.replayable[0], frozenset({Kind.TRACES_JSON})))
    assert [frame.payload for frame in frames] == [b'{"request": 0}']
    assert damaged.corrupt_frames == 1
    damaged.close()

    other_key = segment_log(directory, key=bytes(32))
    segment = next(s for s in other_key.replayable if s.path == path)
    assert list(other_key.frames(segment, frozenset({Kind.TRACES_JSON}))) == []
    assert other_key.corrupt_frames == 1
    other_key.close()


def test_a_torn_tail_is_cut_off_and_numbering_goes_on(tmp_path):
    directory = tmp_path / "wal"
    path = written_segment(directory, [b"request %d" % number for number in range(3)])
    whole = path.stat().st_size
    with open(path, "ab") as handle:  # a crash in the middle of the fourth frame
        handle.write(HEADER.pack(500, 4, Kind.TRACES_JSON) + b"partial")

    reopened = segment_log(directory)
    assert path.stat().st_size == whole
    left = reopened.replayable[0]
    assert (left.first_seq, left.last_seq) == (1, 3)
    assert reopened.append(Kind.TRACES_JSON, b"after the restart") == 4
    assert reopened.active.path != path  # a new run never appends to an old segment
    reopened.close()


def test_the_log_is_bounded_by_bytes_but_done_marks_always_fit(tmp_path):
    wal = segment_log(tmp_path / "wal", segment_bytes=1_000, max_bytes=2_000)
    with pytest.raises(WalFull):
        for _ in range(100):
            wal.append(Kind.TRACES_JSON, b"x" * 300)
    assert wal.size_bytes <= 2_000
    wal.append(Kind.DONE, b"{}", bounded=False)  # what lets the log shrink again
    wal.close()


def test_one_process_owns_a_log_directory(tmp_path):
    wal = segment_log(tmp_path / "wal")
    with pytest.raises(WalLocked):
        segment_log(tmp_path / "wal")
    wal.close()
    segment_log(tmp_path / "wal").close()


class Collector:
    """A pipeline with the write-ahead log, whose next stage keeps what it is offered (a
    session counts as on the bus once the test releases its claim)."""

    def __init__(self, settings: Settings) -> None:
        self.registry = CollectorRegistry()
        self.wal = Durability(
            settings.wal, settings.data_dir / "wal", SECRET, WalMetrics(self.registry)
        )
        self.pipeline: CollectorPipeline
        self.built: AssembledAtOnce
        self.pipeline, self.built = assembling_pipeline(
            settings.collector, CollectorMetrics(self.registry), wal=self.wal
        )

    def send(self, *spans) -> int:
        body = trace_request(list(spans)).SerializeToString()
        seq = self.wal.append(Kind.TRACES_PROTOBUF, body)
        result = otlp_proto.decode_traces(body, DecodeLimits())
        assert self.pipeline.accept_spans(result.items, seq) == 0
        return seq

    def offered(self) -> dict[str, tuple[PendingSession, Session]]:
        return {
            conversation_of_key(pending.closed.state.key): (pending, session)
            for pending, session in zip(self.built.pending, self.built.sessions, strict=True)
        }

    def publish(self, *keys: str) -> None:
        for key in keys:
            pending, _session = self.offered()[key]
            assert pending.claim is not None
            pending.claim.release()

    def crash(self) -> None:
        """Stop without releasing, closing or flushing anything (the descriptors just go)."""
        self.wal.log.close()

    def replay(self) -> int:
        return asyncio.run(
            self.wal.replay(self.pipeline, lambda signal: DecodeLimits(), lambda: False)
        )

    def metric(self, name: str, **labels: str) -> float:
        return self.registry.get_sample_value(name, labels) or 0.0


@pytest.fixture
def settings(tmp_path) -> Settings:
    return make_settings(**{"wal.enabled": True, "data_dir": tmp_path})


def texts(session: Session) -> list[str]:
    return [turn.text for turn in session.turns]


def test_replay_rebuilds_open_and_unpublished_sessions_and_skips_published_ones(settings):
    first = Collector(settings)
    # Batches carry several conversations, as the SDK's batch processor sends them.
    first.send(chat_span("published", 0), chat_span("queued", 0), chat_span("open", 0))
    ends = [chat_span(key, 1, extra=END) for key in ("published", "queued")]
    first.send(*ends, chat_span("open", 1))
    assert set(first.offered()) == {"published", "queued"}
    first.publish("published")  # on the bus; "queued" was still in the handoff queue
    before = {key: texts(session) for key, (_p, session) in first.offered().items()}
    first.crash()

    second = Collector(settings)
    assert second.replay() == 2
    assert set(second.offered()) == {"queued"}
    assert texts(second.offered()["queued"][1]) == before["queued"]
    assert second.metric("turnwatch_wal_replay_skipped_sessions_total") == 1
    assert second.pipeline.sessionizer.open_count == 1
    second.pipeline.close_all()
    _pending, rebuilt = second.offered()["open"]
    assert texts(rebuilt) == ["question 0", "answer 0", "question 1", "answer 1"]
    assert not rebuilt.truncated  # nothing of it went out before: it is whole


def test_a_revision_that_ends_inside_a_request_replays_only_the_part_after_it(settings):
    first = Collector(settings)
    first.send(chat_span("returning", 0, extra=END), chat_span("returning", 1))
    first.publish("returning")  # revision 1 went out; the span after its end opened revision 2
    published = first.offered()["returning"][0].closed.state.revision
    first.crash()

    second = Collector(settings)
    second.replay()
    assert second.offered() == {}
    assert second.metric("turnwatch_wal_replay_skipped_sessions_total") == 1
    second.pipeline.close_all()
    _pending, session = second.offered()["returning"]
    assert session.revision > published
    assert not session.truncated  # it continues revision 1, rebuilt and skipped in this run
    assert texts(session)[-2:] == ["question 1", "answer 1"]


def test_a_session_rebuilt_without_its_published_revision_gets_the_next_number(tmp_path):
    settings = make_settings(
        **{"wal.enabled": True, "data_dir": tmp_path, "wal.segment_bytes": 4096}
    )
    first = Collector(settings)
    first.send(chat_span("returning", 0, extra=END))  # revision 1, in the first segment
    for number in range(8):  # other traffic rolls the log on
        first.send(chat_span(f"other-{number}", 0, extra=END))
        first.publish(f"other-{number}")
    first.send(chat_span("holder", 0))  # open: holds the segment its done mark goes to
    first.publish("returning")
    published = first.offered()["returning"][0].closed.state.revision
    first.wal.maintain(first.pipeline.sessionizer.open_sessions())
    assert first.wal.log.segments[0].first_seq > 1  # revision 1's spans are trimmed ...
    first.send(chat_span("returning", 1))  # ... and revision 2 is open at the crash
    first.crash()

    second = Collector(settings)
    # As if the clock stepped back.
    second.pipeline.sessionizer.revisions.clock.wall_clock = lambda: 0.0
    second.replay()
    second.pipeline.close_all()
    pending, session = second.offered()["returning"]
    assert pending.closed.state.revision > published  # rebuilt from scratch, after revision 1
    assert session.truncated  # revision 1's turns are not in it
    assert texts(session) == ["question 1", "answer 1"]


def test_the_log_is_trimmed_once_nothing_holds_a_segment(tmp_path):
    settings = make_settings(
        **{"wal.enabled": True, "data_dir": tmp_path, "wal.segment_bytes": 4096}
    )
    collector = Collector(settings)
    collector.send(chat_span("long-lived", 0))  # stays open: holds the first segment
    for number in range(30):
        collector.send(chat_span(f"short-{number}", 0, extra=END))
        collector.publish(f"short-{number}")
    segments = list(collector.wal.log.segments)
    assert len(segments) > 3
    assert collector.wal.maintain(collector.pipeline.sessionizer.open_sessions()) == []
    assert collector.wal.log.segments == segments  # only from the front: the first is held

    collector.pipeline.close_all()
    collector.publish("long-lived")
    collector.wal.maintain(collector.pipeline.sessionizer.open_sessions())
    [only] = collector.wal.log.segments
    assert only.last_seq == 0  # empty: an idle log ends empty
    assert sorted(p.name for p in (tmp_path / "wal").glob("*.wal")) == [only.path.name]
    assert collector.metric("turnwatch_wal_trimmed_segments_total") == len(segments)
    assert collector.metric("turnwatch_wal_held_sessions") == 0


def test_past_the_high_watermark_sessions_holding_the_oldest_segment_close_early(tmp_path):
    settings = make_settings(
        **{
            "wal.enabled": True,
            "data_dir": tmp_path,
            "wal.segment_bytes": 4096,
            "wal.max_bytes": 20_000,
            "wal.high_watermark": 0.5,
        }
    )
    collector = Collector(settings)
    collector.send(chat_span("old", 0))
    for number in range(24):
        collector.send(chat_span(f"busy-{number}", 0, extra=END))
        collector.publish(f"busy-{number}")
    assert collector.wal.log.size_bytes > 10_000
    collector.pipeline.sweep()
    pending, session = collector.offered()["old"]
    assert pending.closed.reason is CloseReason.EVICTED and session.truncated
    assert collector.metric("turnwatch_wal_evicted_sessions_total") == 1
    collector.publish("old")
    collector.pipeline.sweep()
    assert collector.wal.log.size_bytes < 10_000


class GatedSync:
    """The log's real fsync, held until the test lets it run (a slow disk)."""

    def __init__(self, log: SegmentLog) -> None:
        self.real = log.sync
        self.gate = threading.Event()
        self.started = threading.Event()
        self.calls = 0
        self.completed = 0
        log.sync = self  # type: ignore[method-assign]

    def __call__(self) -> None:
        self.calls += 1
        self.started.set()
        self.gate.wait(10)
        self.real()
        self.completed += 1


@pytest.mark.parametrize("policy", ["always", "batch"])
async def test_a_request_is_durable_only_after_an_fsync_that_began_after_its_write(
    tmp_path, policy
):
    settings = make_settings(
        **{"wal.enabled": True, "wal.fsync": policy, "wal.group_commit_ms": 20}
    )
    wal = Durability(settings.wal, tmp_path / "wal", SECRET, WalMetrics(CollectorRegistry()))
    gated = GatedSync(wal.log)
    wal.start()

    async def fsyncs_done_when_durable(seq: int) -> int:
        await wal.durable(seq)
        return gated.completed

    first = wal.append(Kind.TRACES_JSON, b"first")
    waiting_first = asyncio.create_task(fsyncs_done_when_durable(first))
    await asyncio.to_thread(gated.started.wait, 10)  # the fsync for `first` is under way ...
    second = wal.append(Kind.TRACES_JSON, b"second")  # ... when `second` is written
    waiting_second = asyncio.create_task(fsyncs_done_when_durable(second))
    gated.gate.set()
    assert await asyncio.wait_for(waiting_first, 5) >= 1
    assert await asyncio.wait_for(waiting_second, 5) == 2  # the first fsync began too early
    assert gated.calls == 2 and wal.committer.synced_seq == second
    await wal.close()


async def test_one_batch_fsync_covers_every_request_written_in_its_interval(tmp_path):
    settings = make_settings(**{"wal.enabled": True, "wal.fsync": "batch"})
    registry = CollectorRegistry()
    wal = Durability(settings.wal, tmp_path / "wal", SECRET, WalMetrics(registry))
    gated = GatedSync(wal.log)
    gated.gate.set()
    wal.start()
    sequences = [wal.append(Kind.TRACES_JSON, b"request %d" % n) for n in range(5)]
    await asyncio.gather(*(wal.durable(seq) for seq in sequences))
    assert gated.calls == 1
    assert registry.get_sample_value("turnwatch_wal_fsync_duration_seconds_count") == 1
    await wal.close()


async def test_with_the_never_policy_a_request_is_durable_once_written(tmp_path):
    settings = make_settings(**{"wal.enabled": True, "wal.fsync": "never"})
    wal = Durability(settings.wal, tmp_path / "wal", SECRET, WalMetrics(CollectorRegistry()))
    wal.start()
    seq = wal.append(Kind.TRACES_JSON, b"request")
    await asyncio.wait_for(wal.durable(seq), 1)
    assert wal.committer.synced_seq == 0  # nothing was fsynced
    await wal.close()
    assert os.path.getsize(next((tmp_path / "wal").glob("*.wal"))) > 0
