"""The protobuf wire format, read by hand where upb would allocate before anything can be counted.

upb builds a whole message tree before any of it can be looked at, and a small encoding can
stand for a large tree: 64 MiB of spans that carry only their two ids is 2.2 million spans and
about 440 MiB once parsed; an event or an attribute costs two bytes on the wire. So an OTLP
request is split here into its resource blocks, scope blocks and items (spans or log records)
without parsing them, refusing it past `max_items` before anything is allocated; items are then
parsed one at a time (otlp_proto.py), and an item too big to parse blindly has its values
counted here first (`count_values`).

Refusals match upb's: a field number 0, an unknown wire type, a truncated or overlong varint, a
length past the end or a stray end-group are Undecodable, and nothing upb accepts is refused, so
a request that passes parses exactly as it did whole. A known field sent with another wire type
is skipped, as upb keeps it as an unknown field.
"""

from __future__ import annotations

from turnwatch.collector.otlp_common import MAX_VALUE_DEPTH, TooLarge, Undecodable

MALFORMED = "body is not an OTLP request"


def varint(body: bytes, position: int, end: int, max_bytes: int) -> tuple[int, int]:
    """(value, position after it); Undecodable when truncated or longer than `max_bytes`."""
    value = shift = 0
    stop = min(end, position + max_bytes)
    while position < stop:
        byte = body[position]
        position += 1
        value |= (byte & 127) << shift
        if byte < 128:
            return value, position
        shift += 7
    raise Undecodable(MALFORMED)


def tag_at(body: bytes, position: int, end: int) -> tuple[int, int, int]:
    """(field number, wire type, position after the tag)."""
    tag, position = varint(body, position, end, 5)
    if tag >> 3 == 0 or tag > 0xFFFFFFFF:
        raise Undecodable(MALFORMED)
    return tag >> 3, tag & 7, position


def length_at(body: bytes, position: int, end: int) -> tuple[int, int]:
    """(start, end) of a length-delimited value whose length varint is at `position`."""
    # Lengths under 16 KiB (one or two bytes) are nearly all of them: read inline.
    if position < end and body[position] < 128:
        start = position + 1
        stop = start + body[position]
    elif position + 1 < end and body[position + 1] < 128:
        start = position + 2
        stop = start + ((body[position] & 127) | body[position + 1] << 7)
    else:
        length, start = varint(body, position, end, 5)
        stop = start + length
    if stop > end:
        raise Undecodable(MALFORMED)
    return start, stop


def skip(body: bytes, position: int, end: int, wire_type: int, number: int) -> int:
    """The position after a field's value."""
    if wire_type == 0:
        return varint(body, position, end, 10)[1]
    if wire_type == 2:
        return length_at(body, position, end)[1]
    if wire_type in (1, 5):
        size = 8 if wire_type == 1 else 4
        if size > end - position:
            raise Undecodable(MALFORMED)
        return position + size
    if wire_type == 3:  # a (deprecated) group, kept by upb as an unknown field
        open_groups = [number]
        while open_groups:
            inner, inner_type, position = tag_at(body, position, end)
            if inner_type == 4:
                if inner != open_groups.pop():
                    raise Undecodable(MALFORMED)
            elif inner_type == 3:
                open_groups.append(inner)
            else:
                position = skip(body, position, end, inner_type, inner)
        return position
    raise Undecodable(MALFORMED)


def fields(
    body: bytes, start: int, end: int, wanted: frozenset[int], limit: int = 1 << 62
) -> list[tuple[int, int, int]]:
    """(field number, start, end) of each length-delimited field in `wanted`, in order; every
    other field is checked and skipped. With a `limit`, stops once it has found more."""
    found: list[tuple[int, int, int]] = []
    position = start
    while position < end and len(found) <= limit:
        number, wire_type, position = tag_at(body, position, end)
        if wire_type == 2 and number in wanted:
            value_start, position = length_at(body, position, end)
            found.append((number, value_start, position))
        else:
            position = skip(body, position, end, wire_type, number)
    return found


def first_attribute(
    body: bytes, start: int, end: int, number: int, heads: tuple[bytes, ...]
) -> int:
    """Where the first field `number` of the message at [start, end) starts (its tag) whose value
    is a KeyValue with a key (under 128 bytes) under one of `heads`; -1 if there is none."""
    position = start
    while position < end:
        field_start = position
        tag = body[position]
        if 8 <= tag < 128:  # a one-byte tag (fields 1 to 15), as every field of a Span has
            field, wire_type, position = tag >> 3, tag & 7, position + 1
        else:
            field, wire_type, position = tag_at(body, position, end)
        if wire_type != 2:
            position = skip(body, position, end, wire_type, field)
            continue
        value_start, position = length_at(body, position, end)
        if (
            field == number
            and position - value_start > 2
            and body[value_start] == 10
            and body[value_start + 1] < 128
            and body.startswith(heads, value_start + 2, position)
        ):
            return field_start
    return -1


class ScopeBlock:
    """One ScopeSpans / ScopeLogs: where its scope and its items are in the body (each item as
    the start of its field, and the start and end of its encoding)."""

    def __init__(self) -> None:
        self.scope: list[tuple[int, int]] = []
        self.items: list[tuple[int, int, int]] = []
        self.schema_urls: list[tuple[int, int]] = []


class ResourceBlock:
    """One ResourceSpans / ResourceLogs: its resource and scope blocks."""

    def __init__(self) -> None:
        self.resource: list[tuple[int, int]] = []
        self.scopes: list[ScopeBlock] = []
        self.schema_urls: list[tuple[int, int]] = []


BLOCK_FIELDS = frozenset({1, 2, 3})


def split_request(body: bytes, max_items: int, item_name: str) -> list[ResourceBlock]:
    """The blocks of an Export*ServiceRequest (resource blocks in field 1, scope blocks in their
    field 2, items in the scope blocks' field 2; both carry their resource or scope in field 1
    and a schema URL in field 3); TooLarge past `max_items` items."""
    blocks: list[ResourceBlock] = []
    items = 0
    for _, start, end in fields(body, 0, len(body), frozenset({1})):
        block = ResourceBlock()
        blocks.append(block)
        for number, block_start, block_end in fields(body, start, end, BLOCK_FIELDS):
            if number == 1:
                block.resource.append((block_start, block_end))
            elif number == 3:
                block.schema_urls.append((block_start, block_end))
            else:
                scope = _scope_block(body, block_start, block_end, max_items - items)
                if scope is None:
                    raise TooLarge(
                        f"too_many_{item_name}",
                        f"more than {max_items} {item_name.replace('_', ' ')} in one request",
                    )
                block.scopes.append(scope)
                items += len(scope.items)
    return blocks


def _scope_block(body: bytes, start: int, end: int, allowed: int) -> ScopeBlock | None:
    """The scope block at [start, end); None as soon as it holds more than `allowed` items."""
    scope = ScopeBlock()
    items = scope.items
    position = start
    while position < end:
        if len(items) > allowed:
            return None
        field_start = position
        # The items are nearly every field here: tag 0x12 (field 2, length-delimited) and a
        # length under 16 KiB, read inline; anything else takes the general path.
        if body[position] == 0x12 and position + 2 < end:
            length = body[position + 1]
            if length < 128:
                item_start = position + 2
            elif body[position + 2] < 128:
                length = (length & 127) | body[position + 2] << 7
                item_start = position + 3
            else:
                item_start = -1
            if item_start >= 0:
                position = item_start + length
                if position > end:
                    raise Undecodable(MALFORMED)
                items.append((field_start, item_start, position))
                continue
        number, wire_type, position = tag_at(body, position, end)
        if wire_type != 2 or number not in BLOCK_FIELDS:
            position = skip(body, position, end, wire_type, number)
            continue
        value_start, position = length_at(body, position, end)
        if number == 2:
            items.append((field_start, value_start, position))
        elif number == 1:
            scope.scope.append((value_start, position))
        else:
            scope.schema_urls.append((value_start, position))
    return None if len(items) > allowed else scope


# Counted when counting the values of one item: field number -> the fields of that sub-message
# counted in turn (none for a field counted as one value: an attribute, a log body).
NO_FIELDS: frozenset[int] = frozenset()
SPAN_VALUES = {9: NO_FIELDS, 11: frozenset({3}), 13: frozenset({4})}
LOG_RECORD_VALUES = {5: NO_FIELDS, 6: NO_FIELDS}


def count_values(
    body: bytes, start: int, end: int, counted: dict[int, frozenset[int]], budget: int
) -> int:
    """The values of one item as otlp_proto counts them (the item, and each attribute, event,
    link and log body in it), or some number past `budget` as soon as they pass it."""
    count = 1
    for number, value_start, value_end in fields(body, start, end, frozenset(counted), budget):
        inner = counted[number]
        count += 1
        if inner:
            count += len(fields(body, value_start, value_end, inner, budget - count))
        if count > budget:
            break
    return count


# AnyValue nesting, walked to tell a value nested past MAX_VALUE_DEPTH from a broken one:
# KeyValue.value (2) -> AnyValue; AnyValue.array_value (5) / kvlist_value (6) -> a container;
# ArrayValue.values (1) -> AnyValue; KeyValueList.values (1) -> KeyValue; and where values are
# held: Resource.attributes (1), InstrumentationScope.attributes (3), LogRecord.body (5) and
# LogRecord.attributes (6).
KEY_VALUE, ANY_VALUE, ARRAY_VALUE, KVLIST_VALUE, RESOURCE, SCOPE, LOG_RECORD = range(7)
_NESTED = {
    KEY_VALUE: {2: ANY_VALUE},
    ANY_VALUE: {5: ARRAY_VALUE, 6: KVLIST_VALUE},
    ARRAY_VALUE: {1: ANY_VALUE},
    KVLIST_VALUE: {1: KEY_VALUE},
    RESOURCE: {1: KEY_VALUE},
    SCOPE: {3: KEY_VALUE},
    LOG_RECORD: {5: ANY_VALUE, 6: KEY_VALUE},
}


def nested_too_deep(raw: bytes, kind: int) -> bool:
    """True when the encoding of a message of `kind` nests arrays and kvlists deeper than
    MAX_VALUE_DEPTH in one of its values. False for one that is not deep, or that breaks off
    before it is."""
    # (kind, end, containers above) of each message being read; explicit, as the nesting is
    # the client's choice and need not fit the interpreter's stack.
    stack = [(kind, len(raw), 0)]
    position = 0
    try:
        while stack:
            current, end, depth = stack[-1]
            if position >= end:
                stack.pop()
                continue
            number, wire_type, position = tag_at(raw, position, end)
            child = _NESTED[current].get(number, -1) if wire_type == 2 else -1
            if child < 0:
                position = skip(raw, position, end, wire_type, number)
                continue
            value_start, value_end = length_at(raw, position, end)
            position = value_start
            if child in (ARRAY_VALUE, KVLIST_VALUE):
                depth += 1
                if depth > MAX_VALUE_DEPTH:
                    return True
            stack.append((child, value_end, depth))
    except Undecodable:
        return False
    return False
