"""The write-ahead log's Prometheus metrics. Label values come from fixed sets only."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

FSYNC_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)


class WalMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.appended = Counter(
            "turnwatch_wal_appended_frames_total",
            "Frames written to the write-ahead log, by kind (request, done).",
            ["kind"],
            registry=registry,
        )
        self.appended_bytes = Counter(
            "turnwatch_wal_appended_bytes_total",
            "Bytes written to the write-ahead log (frames, encrypted).",
            registry=registry,
        )
        self.size = Gauge(
            "turnwatch_wal_bytes", "Size of the write-ahead log on disk.", registry=registry
        )
        self.segments = Gauge(
            "turnwatch_wal_segments", "Segment files of the write-ahead log.", registry=registry
        )
        self.unsynced_frames = Gauge(
            "turnwatch_wal_unsynced_frames",
            "Frames written but not yet covered by an fsync (0 with the `never` policy means "
            "nothing waits for one).",
            registry=registry,
        )
        self.fsync_duration = Histogram(
            "turnwatch_wal_fsync_duration_seconds",
            "Time of one group fsync of the write-ahead log.",
            buckets=FSYNC_BUCKETS,
            registry=registry,
        )
        self.full = Counter(
            "turnwatch_wal_full_total",
            "OTLP requests refused (503, Retry-After) because the write-ahead log was full.",
            registry=registry,
        )
        self.write_errors = Counter(
            "turnwatch_wal_write_errors_total",
            "Failed writes and fsyncs of the write-ahead log, by operation (write, fsync); the "
            "requests concerned are answered 503.",
            ["operation"],
            registry=registry,
        )
        self.held_sessions = Gauge(
            "turnwatch_wal_held_sessions",
            "Sessions whose spans the log keeps: open, or closed and not yet on the bus.",
            registry=registry,
        )
        self.trimmed = Counter(
            "turnwatch_wal_trimmed_segments_total",
            "Segments deleted because every session with spans in them was on the bus, dropped "
            "by sampling or counted as dropped.",
            registry=registry,
        )
        self.evicted = Counter(
            "turnwatch_wal_evicted_sessions_total",
            "Open sessions closed early (reason evicted) because they held the oldest segment "
            "of a log past `wal.high_watermark`.",
            registry=registry,
        )
        self.replayed = Counter(
            "turnwatch_wal_replayed_frames_total",
            "Frames read back at start, by kind (request, done; undecodable: a request the current "
            "limits refuse, skipped).",
            ["kind"],
            registry=registry,
        )
        self.replay_skipped = Counter(
            "turnwatch_wal_replay_skipped_sessions_total",
            "Sessions rebuilt at start whose spans were all on the bus (or dropped) before: "
            "not published again.",
            registry=registry,
        )
        self.corrupt = Counter(
            "turnwatch_wal_corrupt_frames_total",
            "Frames that failed authentication at replay (damaged or not written with this "
            "key); the rest of their segment is skipped.",
            registry=registry,
        )
