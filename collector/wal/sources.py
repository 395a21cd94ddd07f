"""Which write-ahead log frames a session holds: frame sequence number -> [first, last] index of
the items the session took from that frame, frames in ascending order (the sessionizer keeps
them per session, the log trims past them)."""

from __future__ import annotations

Sources = dict[int, list[int]]


def note_source(sources: Sources, seq: int, index: int) -> bool:
    """Record item `index` of frame `seq`; True when the frame is new to the session."""
    held = sources.get(seq)
    if held is None:
        sources[seq] = [index, index]
        return True
    held[1] = index
    return False


def merged_sources(first: Sources, second: Sources) -> Sources:
    """Both sessions' frames in ascending order; a frame both took items from spans both ranges."""
    merged = {seq: list(held) for seq, held in first.items()}
    for seq, (start, end) in second.items():
        held = merged.get(seq)
        merged[seq] = [start, end] if held is None else [min(held[0], start), max(held[1], end)]
    return dict(sorted(merged.items()))
