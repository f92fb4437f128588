#!/usr/bin/env python3
"""A Dora node that lets Forge's Python nodes talk to a Deno ToolEndpoint.

Forge's Python nodes put a ``forge_msgs.ToolMessage`` on the Dora wire as a one-row Arrow
StructArray. Dora's C node API, which a Deno node uses, carries only bytes, so a Deno endpoint
sends and expects the same ToolMessage as an Arrow IPC stream inside a UInt8 array. This node sits
between the two and converts, in both directions:

    Forge gateway --StructArray--> [tool_request]      forge_adapter [endpoint_request] --UInt8 IPC--> Deno endpoint
    Forge gateway <--StructArray-- [tool_response]     forge_adapter [endpoint_response] <--UInt8 IPC-- Deno endpoint

The conversion functions (``struct_to_ipc``, ``ipc_to_struct``) need only pyarrow; ``dora`` is
imported in ``main`` alone, so they can be imported and tested where Dora is not installed.

The adapter checks the carrier's shape (one row, the exact ten-column ToolMessage schema, no
compression, no dictionaries, bounded size) and copies the values unchanged; the protocol rules
(header matrix, strict payload JSON) are checked by the endpoint and the gateway at each end.
A message that fails a check is logged with its correlation headers and dropped: the adapter
never fabricates an answer, so the caller's own deadline decides.
"""

from __future__ import annotations

import logging
import struct
from typing import Union

import pyarrow as pa

logger = logging.getLogger("forge_adapter")

PROTOCOL = "forge.tool.endpoint/v1alpha1"

#: The exact carrier schema of ``interfaces/forge_msgs/tool.v1.yaml`` (the same ten columns as
#: ``TOOL_MESSAGE_SCHEMA`` in ``src/dora/carrier.ts``).
TOOL_MESSAGE_SCHEMA = pa.schema(
    [
        pa.field("protocol", pa.string(), nullable=False),
        pa.field("message_type", pa.string(), nullable=False),
        pa.field("request_id", pa.string(), nullable=True),
        pa.field("invocation_id", pa.string(), nullable=True),
        pa.field("attempt_id", pa.string(), nullable=True),
        pa.field("endpoint_id", pa.string(), nullable=False),
        pa.field("endpoint_instance_id", pa.string(), nullable=True),
        pa.field("operation", pa.string(), nullable=True),
        pa.field("sequence", pa.int64(), nullable=True),
        pa.field("payload_json", pa.string(), nullable=False),
    ]
)

#: The default limit of one IPC stream and of one in-memory carrier: 1 MiB of logical message
#: plus 64 KiB of Arrow framing, the Deno binding's default carrier limit.
DEFAULT_MAX_BYTES = 1_048_576 + 65_536

ONE_BATCH = "ToolMessage IPC stream must contain exactly one RecordBatch"
ONE_ROW = "ToolMessage RecordBatch must contain exactly one row"
SCHEMA_MISMATCH = "ToolMessage RecordBatch schema must exactly match TOOL_MESSAGE_SCHEMA"

ArrowCarrier = Union[pa.StructArray, pa.RecordBatch, pa.Table]


class ToolMessageAdapterError(ValueError):
    """A value that is not one well-formed ToolMessage carrier; ``str(error)`` says why."""


def _check_limit(max_bytes: int) -> int:
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
        raise ValueError(
            f"Cannot convert as 'max_bytes' must be a positive integer: current value is {max_bytes!r}"
        )
    return max_bytes


def _check_schema(schema: pa.Schema) -> None:
    if not schema.equals(TOOL_MESSAGE_SCHEMA, check_metadata=False):
        raise ToolMessageAdapterError(SCHEMA_MISMATCH)


# -----------------------------------------------------------------------------------------------
# StructArray -> IPC bytes (Forge -> Deno)


def carrier_batch(value: ArrowCarrier) -> pa.RecordBatch:
    """The one-row RecordBatch that a StructArray, RecordBatch or one-batch Table carries.

    Raises ``TypeError`` for another kind of value and ``ToolMessageAdapterError`` when the
    value does not hold exactly one non-null row with exactly ``TOOL_MESSAGE_SCHEMA``.
    """
    if isinstance(value, pa.ChunkedArray):
        chunks = [chunk for chunk in value.chunks if len(chunk) > 0]
        if len(chunks) != 1:
            raise ToolMessageAdapterError(ONE_ROW)
        value = chunks[0]
    if isinstance(value, pa.StructArray):
        if len(value) != 1:
            raise ToolMessageAdapterError(ONE_ROW)
        _check_schema(pa.schema(list(value.type)))
        if value.null_count != 0:
            raise ToolMessageAdapterError("ToolMessage Struct row must not be null")
        # flatten() applies the array's offset and validity to the children.
        return pa.RecordBatch.from_arrays(value.flatten(), schema=TOOL_MESSAGE_SCHEMA)
    if isinstance(value, pa.Table):
        batches = [batch for batch in value.to_batches() if batch.num_rows > 0]
        if len(batches) != 1:
            raise ToolMessageAdapterError("ToolMessage Table must contain exactly one RecordBatch")
        value = batches[0]
    if isinstance(value, pa.RecordBatch):
        if value.num_rows != 1:
            raise ToolMessageAdapterError(ONE_ROW)
        _check_schema(value.schema)
        return value
    raise TypeError(
        "carrier_batch expects a pyarrow StructArray, RecordBatch or Table, "
        f"got: {type(value).__name__}"
    )


def struct_to_ipc(value: ArrowCarrier, *, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """Writes one ToolMessage carrier as an uncompressed Arrow IPC stream (schema, one batch, end).

    ``max_bytes`` bounds both the carrier's in-memory size (checked before writing) and the
    stream written; a larger one is a ``ToolMessageAdapterError``.
    """
    maximum = _check_limit(max_bytes)
    batch = carrier_batch(value)
    if batch.nbytes > maximum:
        raise ToolMessageAdapterError(f"Arrow carrier size {batch.nbytes} exceeds limit {maximum}")
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression=None)
    with pa.ipc.new_stream(sink, TOOL_MESSAGE_SCHEMA, options=options) as writer:
        writer.write_batch(batch)
    data = sink.getvalue().to_pybytes()
    if len(data) > maximum:
        raise ToolMessageAdapterError(f"IPC stream size {len(data)} exceeds limit {maximum}")
    return data


# -----------------------------------------------------------------------------------------------
# IPC bytes -> StructArray (Deno -> Forge)


class _FlatBuffer:
    """Bounds-checked reads of one flatbuffer: an IPC message's metadata."""

    __slots__ = ("_data",)

    def __init__(self, data: bytes) -> None:
        self._data = data

    def _read(self, fmt: str, position: int) -> int:
        size = struct.calcsize(fmt)
        if position < 0 or position + size > len(self._data):
            raise ToolMessageAdapterError("invalid Arrow IPC stream: message metadata is out of bounds")
        return struct.unpack_from(fmt, self._data, position)[0]

    def root(self) -> int:
        return self._read("<I", 0)

    def field(self, table: int, index: int) -> int:
        """The position of field ``index`` of the table at ``table``, or 0 when it is absent."""
        vtable = table - self._read("<i", table)
        slot = 4 + 2 * index
        if slot >= self._read("<H", vtable):
            return 0
        offset = self._read("<H", vtable + slot)
        return table + offset if offset else 0

    def table(self, table: int, index: int) -> int:
        position = self.field(table, index)
        return position + self._read("<I", position) if position else 0

    def int64(self, table: int, index: int) -> int:
        position = self.field(table, index)
        return self._read("<q", position) if position else 0


# Message.fbs: Message { version, header_type, header, bodyLength, custom_metadata };
# RecordBatch { length, nodes, buffers, compression, variadicBufferCounts }.
_MESSAGE_HEADER = 2
_RECORD_BATCH_LENGTH = 0
_RECORD_BATCH_COMPRESSION = 3


def _check_record_batch_message(message: pa.ipc.Message) -> None:
    """Refuses a compressed batch or one of another row count before pyarrow reads its body.

    A compressed buffer states its own decompressed length, which pyarrow would allocate: that
    is how a few bytes could claim gigabytes. Deno endpoints never compress.
    """
    metadata = _FlatBuffer(message.metadata.to_pybytes())
    batch = metadata.table(metadata.root(), _MESSAGE_HEADER)
    if batch == 0:
        raise ToolMessageAdapterError("invalid Arrow IPC stream: record batch header is missing")
    if metadata.field(batch, _RECORD_BATCH_COMPRESSION) != 0:
        raise ToolMessageAdapterError("ToolMessage IPC stream must not be compressed")
    if metadata.int64(batch, _RECORD_BATCH_LENGTH) != 1:
        raise ToolMessageAdapterError(ONE_ROW)


def _next_message(reader: pa.ipc.MessageReader) -> pa.ipc.Message | None:
    try:
        return reader.read_next_message()
    except StopIteration:
        return None


def _ipc_buffer(data: object) -> pa.Buffer:
    """The bytes of ``data``: bytes-like, a pyarrow Buffer, or a UInt8 array as Dora delivers."""
    if isinstance(data, pa.ChunkedArray):
        data = pa.concat_arrays(data.chunks) if data.num_chunks != 1 else data.chunk(0)
    if isinstance(data, pa.Array):
        if data.type != pa.uint8():
            raise TypeError(f"ipc_to_struct expects a UInt8 array, got one of type {data.type}")
        if data.null_count != 0:
            raise ToolMessageAdapterError("ToolMessage IPC bytes must not contain nulls")
        values = data.buffers()[1]
        if values is None:
            return pa.py_buffer(b"")
        return values.slice(data.offset, len(data))
    if isinstance(data, pa.Buffer):
        return data
    if isinstance(data, (bytes, bytearray, memoryview)):
        return pa.py_buffer(data)
    raise TypeError(
        f"ipc_to_struct expects bytes, a pyarrow Buffer or a UInt8 array, got: {type(data).__name__}"
    )


def ipc_to_batch(data: object, *, max_bytes: int = DEFAULT_MAX_BYTES) -> pa.RecordBatch:
    """Reads exactly one ToolMessage carrier from an Arrow IPC stream, bounded.

    The length is checked first; then the stream must hold exactly one schema equal to
    ``TOOL_MESSAGE_SCHEMA``, one uncompressed single-row record batch, and nothing else (no
    dictionary batch, no second batch). Every violation, including pyarrow's own errors on
    corrupted bytes, is a ``ToolMessageAdapterError``.
    """
    maximum = _check_limit(max_bytes)
    buffer = _ipc_buffer(data)
    if buffer.size > maximum:
        raise ToolMessageAdapterError(f"IPC stream size {buffer.size} exceeds limit {maximum}")
    try:
        reader = pa.ipc.MessageReader.open_stream(buffer)
        message = _next_message(reader)
        if message is None or message.type != "schema":
            raise ToolMessageAdapterError("ToolMessage IPC stream must start with a schema")
        schema = pa.ipc.read_schema(message)
        _check_schema(schema)
        message = _next_message(reader)
        if message is None or message.type != "record batch":
            raise ToolMessageAdapterError(ONE_BATCH)
        _check_record_batch_message(message)
        batch = pa.ipc.read_record_batch(message, schema)
        if _next_message(reader) is not None:
            raise ToolMessageAdapterError(ONE_BATCH)
        batch.validate(full=True)
    except ToolMessageAdapterError:
        raise
    except (pa.ArrowException, ValueError, TypeError, OSError) as error:
        raise ToolMessageAdapterError(f"invalid Arrow IPC stream: {error}") from error
    if batch.num_rows != 1:
        raise ToolMessageAdapterError(ONE_ROW)
    return batch


def ipc_to_struct(data: object, *, max_bytes: int = DEFAULT_MAX_BYTES) -> pa.StructArray:
    """Reads one ToolMessage carrier from IPC bytes as the one-row StructArray Forge expects."""
    batch = ipc_to_batch(data, max_bytes=max_bytes)
    return pa.StructArray.from_arrays(batch.columns, fields=list(TOOL_MESSAGE_SCHEMA))


def ipc_bytes_array(data: bytes) -> pa.UInt8Array:
    """The UInt8 array that carries IPC bytes on the Dora wire, without copying them."""
    return pa.Array.from_buffers(pa.uint8(), len(data), [None, pa.py_buffer(data)])


_HEADERS = ("message_type", "request_id", "invocation_id", "attempt_id", "endpoint_id",
            "endpoint_instance_id", "operation", "sequence")


def correlation(value: object) -> str:
    """The correlation headers of a (possibly malformed) carrier for a log line; never raises.

    IPC bytes that failed to convert are not read again (they may claim to decompress to any
    size): the line gives their length.
    """
    try:
        if isinstance(value, pa.StructArray):
            row = (value[0].as_py() if len(value) > 0 else None) or {}
            return " ".join(f"{name}={row.get(name)}" for name in _HEADERS if name in row)
        return f"{_ipc_buffer(value).size} bytes"
    except Exception:  # noqa: BLE001 - best effort for a log line
        return "(headers unreadable)"


# -----------------------------------------------------------------------------------------------
# The Dora node


#: Input id -> (output id, conversion): Forge StructArray in, IPC bytes out, and back.
FROM_FORGE = "tool_request"
TO_ENDPOINT = "endpoint_request"
FROM_ENDPOINT = "endpoint_response"
TO_FORGE = "tool_response"


def convert(input_id: str, value: object, *, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[str, pa.Array]:
    """The output id and value for one input of the adapter node; raises on a bad input."""
    if input_id == FROM_FORGE:
        return TO_ENDPOINT, ipc_bytes_array(struct_to_ipc(value, max_bytes=max_bytes))
    if input_id == FROM_ENDPOINT:
        return TO_FORGE, ipc_to_struct(value, max_bytes=max_bytes)
    raise KeyError(f"unknown input {input_id!r}")


def main() -> None:
    """Runs the adapter as a Dora node until Dora stops it."""
    from dora import Node  # Imported here so the conversions work without Dora installed.

    logging.basicConfig(level=logging.INFO, format="%(name)s %(levelname)s %(message)s")
    node = Node()
    for event in node:
        kind = event["type"]
        if kind == "STOP":
            break
        if kind != "INPUT":
            continue
        input_id = event["id"]
        if input_id not in (FROM_FORGE, FROM_ENDPOINT):
            continue  # timers and other inputs
        try:
            output_id, value = convert(input_id, event["value"])
        except Exception:  # noqa: BLE001 - one bad message never stops the node
            logger.exception(
                "dropped a ToolMessage on input %s: %s", input_id, correlation(event["value"])
            )
            continue
        try:
            metadata = event["metadata"]  # tracing context, passed on unchanged
        except (KeyError, TypeError):
            metadata = None
        node.send_output(output_id, value, metadata)


if __name__ == "__main__":
    main()
