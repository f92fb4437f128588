#!/usr/bin/env python3
"""Tests of the adapter's conversion functions (unittest; needs pyarrow, not dora).

    cd examples/forge_adapter && python3 -m unittest -v test_forge_adapter

``tests/forge_adapter_test.ts`` runs them through Deno. It first writes IPC streams made by the
project's own Deno encoder into a folder named by ``FORGE_ADAPTER_VECTORS`` (``NAME.arrows`` and
the expected values in ``NAME.json``); ``ProjectBytesTest`` converts each to a StructArray, checks
every column, converts it back and writes ``NAME.out.arrows``, which the Deno test decodes again.
Without that variable ``ProjectBytesTest`` is skipped.
"""

from __future__ import annotations

import json
import os
import sys
import types
import unittest
from pathlib import Path

import pyarrow as pa

import forge_adapter
from forge_adapter import (
    DEFAULT_MAX_BYTES,
    TOOL_MESSAGE_SCHEMA,
    ToolMessageAdapterError,
    convert,
    correlation,
    ipc_bytes_array,
    ipc_to_batch,
    ipc_to_struct,
    struct_to_ipc,
)

VECTORS = os.environ.get("FORGE_ADAPTER_VECTORS")
HERE = Path(__file__).resolve().parent

try:
    import yaml
except ImportError:  # PyYAML is optional: only the dataflow checks need it
    yaml = None


def carrier_row(**overrides: object) -> dict:
    row = {
        "protocol": "forge.tool.endpoint/v1alpha1",
        "message_type": "tool.invoke.request",
        "request_id": "request-1",
        "invocation_id": "invocation-1",
        "attempt_id": "attempt-1",
        "endpoint_id": "vision.yolo",
        "endpoint_instance_id": "instance-1",
        "operation": "detect",
        "sequence": None,
        "payload_json": '{"arguments":{"class":"cube"},"context":{"implementation_id":"yolo",'
        '"metadata":{},"tool_id":"forge.tool.detect"}}',
    }
    row.update(overrides)
    return row


def carrier_struct(rows: list[dict] | None = None) -> pa.StructArray:
    rows = [carrier_row()] if rows is None else rows
    return pa.array(rows, type=pa.struct(list(TOOL_MESSAGE_SCHEMA)))


def stream(batches: list[pa.RecordBatch], schema: pa.Schema = TOOL_MESSAGE_SCHEMA,
           options: pa.ipc.IpcWriteOptions | None = None) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema, options=options) as writer:
        for batch in batches:
            writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


def batch_of(struct_array: pa.StructArray) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(struct_array.flatten(), schema=TOOL_MESSAGE_SCHEMA)


@unittest.skipIf(VECTORS is None, "FORGE_ADAPTER_VECTORS is not set (run tests/forge_adapter_test.ts)")
class ProjectBytesTest(unittest.TestCase):
    """IPC bytes written by the Deno encoder, through the adapter and back."""

    def test_project_bytes(self) -> None:
        folder = Path(VECTORS or ".")
        names = sorted(path.stem for path in folder.glob("*.json"))
        self.assertGreater(len(names), 0)
        for name in names:
            with self.subTest(name=name):
                data = (folder / f"{name}.arrows").read_bytes()
                expected = json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))
                struct_array = ipc_to_struct(data)
                self.assertIsInstance(struct_array, pa.StructArray)
                self.assertEqual(struct_array.type, pa.struct(list(TOOL_MESSAGE_SCHEMA)))
                row = struct_array[0].as_py()
                payload = expected.pop("payload")
                self.assertEqual({key: row[key] for key in expected}, expected)
                self.assertEqual(json.loads(row["payload_json"]), payload)
                # The Deno side writes compact JSON with sorted keys and raw non-ASCII.
                self.assertEqual(
                    row["payload_json"],
                    json.dumps(payload, ensure_ascii=False, separators=(",", ":"), sort_keys=True),
                )
                # The Dora wire form (a UInt8 array) reads the same.
                self.assertEqual(ipc_to_struct(ipc_bytes_array(data)).to_pylist(), [row])
                out = struct_to_ipc(struct_array)
                # A RecordBatch and a Table of the same row write the same bytes.
                self.assertEqual(struct_to_ipc(batch_of(struct_array)), out)
                self.assertEqual(struct_to_ipc(pa.Table.from_batches([batch_of(struct_array)])), out)
                (folder / f"{name}.out.arrows").write_bytes(out)


class RoundTripTest(unittest.TestCase):
    def test_struct_to_ipc_and_back_keeps_every_value(self) -> None:
        rows = [
            carrier_row(),
            carrier_row(message_type="tool.event", request_id=None, sequence=9_007_199_254_740_991,
                        payload_json='{"data":{"label":"方块"},"type":"progress"}'),
            carrier_row(endpoint_instance_id=None, operation=None),
        ]
        for row in rows:
            with self.subTest(row=row["message_type"]):
                self.assertEqual(ipc_to_struct(struct_to_ipc(carrier_struct([row]))).to_pylist(), [row])

    def test_a_sliced_struct_array_writes_only_its_row(self) -> None:
        second = carrier_row(request_id="request-2")
        array = carrier_struct([carrier_row(), second, carrier_row(request_id="request-3")])
        self.assertEqual(ipc_to_struct(struct_to_ipc(array.slice(1, 1))).to_pylist(), [second])

    def test_a_sliced_uint8_array_reads_only_its_bytes(self) -> None:
        data = struct_to_ipc(carrier_struct())
        padded = ipc_bytes_array(b"\xff" * 5 + data + b"\xff" * 3).slice(5, len(data))
        self.assertEqual(ipc_to_struct(padded).to_pylist(), [carrier_row()])

    def test_written_streams_are_uncompressed_with_one_batch(self) -> None:
        reader = pa.ipc.open_stream(struct_to_ipc(carrier_struct()))
        self.assertTrue(reader.schema.equals(TOOL_MESSAGE_SCHEMA))
        self.assertEqual(len(list(reader)), 1)

    def test_convert_routes_each_input_to_its_output(self) -> None:
        output, value = convert("tool_request", carrier_struct())
        self.assertEqual(output, "endpoint_request")
        self.assertEqual(value.type, pa.uint8())
        output, back = convert("endpoint_response", value)
        self.assertEqual(output, "tool_response")
        self.assertEqual(back.to_pylist(), [carrier_row()])
        with self.assertRaises(KeyError):
            convert("tick", value)

    def test_the_conversions_import_without_dora(self) -> None:
        self.assertNotIn("dora", sys.modules)
        self.assertNotIn("dora", forge_adapter.__dict__)
        self.assertTrue(callable(forge_adapter.main))


class NodeLoopTest(unittest.TestCase):
    """main() against a stand-in for the dora module (the real one is not needed to test it)."""

    def run_node(self, events: list[dict]) -> list[tuple]:
        sent: list[tuple] = []

        class Node:
            def __iter__(self):
                return iter(events)

            def send_output(self, output_id, data, metadata=None):
                sent.append((output_id, data, metadata))

        sys.modules["dora"] = types.SimpleNamespace(Node=Node)  # type: ignore[assignment]
        try:
            with self.assertLogs("forge_adapter", level="ERROR") as logs:
                forge_adapter.logger.error("start")  # assertLogs needs one record at least
                forge_adapter.main()
        finally:
            del sys.modules["dora"]
        self.logs = logs.output
        return sent

    def test_converts_both_ways_drops_bad_messages_and_stops(self) -> None:
        struct_array = carrier_struct()
        data = struct_to_ipc(struct_array)
        sent = self.run_node([
            {"type": "INPUT", "id": "tool_request", "value": struct_array, "metadata": {"trace": "t1"}},
            {"type": "INPUT", "id": "tool_request", "value": carrier_struct([carrier_row()] * 2)},
            {"type": "INPUT", "id": "endpoint_response", "value": pa.array([1, 2, 3], type=pa.uint8())},
            {"type": "INPUT", "id": "tick", "value": pa.array([], type=pa.uint8())},
            {"type": "INPUT", "id": "endpoint_response", "value": ipc_bytes_array(data)},
            {"type": "STOP"},
            {"type": "INPUT", "id": "tool_request", "value": struct_array},
        ])
        self.assertEqual([output for output, _, _ in sent], ["endpoint_request", "tool_response"])
        self.assertEqual(sent[0][1].type, pa.uint8())
        self.assertEqual(sent[0][2], {"trace": "t1"})
        self.assertEqual(sent[1][1].to_pylist(), [carrier_row()])
        self.assertIsNone(sent[1][2])
        dropped = [line for line in self.logs if "dropped a ToolMessage" in line]
        self.assertEqual(len(dropped), 2)
        self.assertIn("on input tool_request: message_type=tool.invoke.request request_id=request-1", dropped[0])
        self.assertIn("on input endpoint_response: 3 bytes", dropped[1])


@unittest.skipIf(yaml is None, "PyYAML is not installed")
class DataflowTest(unittest.TestCase):
    """The dataflow YAMLs wire what the nodes actually read and write."""

    def load(self, path: Path) -> dict[str, dict]:
        nodes = {node["id"]: node for node in yaml.safe_load(path.read_text(encoding="utf-8"))["nodes"]}
        for node in nodes.values():
            for input_id, source in (node.get("inputs") or {}).items():
                with self.subTest(node=node["id"], input=input_id):
                    if source.startswith("dora/timer/"):
                        continue
                    producer, output = source.split("/", 1)
                    self.assertIn(producer, nodes)
                    self.assertIn(output, nodes[producer].get("outputs", []))
        return nodes

    def test_the_adapter_sits_between_the_forge_gateway_and_the_endpoint(self) -> None:
        nodes = self.load(HERE / "dataflow.yml")
        adapter = nodes["forge_adapter"]
        self.assertEqual(adapter["path"], "examples/forge_adapter/forge_adapter.py")
        self.assertEqual(
            adapter["inputs"],
            {forge_adapter.FROM_FORGE: "forge_gateway/tool_request",
             forge_adapter.FROM_ENDPOINT: "detector/tool_response"},
        )
        self.assertEqual(sorted(adapter["outputs"]), sorted([forge_adapter.TO_ENDPOINT, forge_adapter.TO_FORGE]))
        self.assertEqual(nodes["detector"]["inputs"]["tool_request"], f"forge_adapter/{forge_adapter.TO_ENDPOINT}")
        self.assertEqual(nodes["forge_gateway"]["inputs"]["tool_response"], f"forge_adapter/{forge_adapter.TO_FORGE}")

    def test_the_gateway_dataflow_is_wired_both_ways(self) -> None:
        nodes = self.load(HERE.parent / "gateway_dataflow.yml")
        # runToolGatewayNode's defaults for route "detector", and the caller pair of gateway_node.ts.
        self.assertEqual(nodes["gateway"]["inputs"]["detector_response"], "detector/tool_response")
        self.assertEqual(nodes["detector"]["inputs"]["tool_request"], "gateway/detector_request")
        self.assertEqual(nodes["planner"]["inputs"]["tool_response"], "gateway/planner_response")
        node_script = (HERE.parent / "gateway_node.ts").read_text(encoding="utf-8")
        self.assertIn('callers: { planner_request: "planner_response" }', node_script)
        self.assertIn("routes: { detector: ", node_script)


class RejectionTest(unittest.TestCase):
    def assert_rejected(self, data: object, message: str, **options: int) -> None:
        with self.assertRaises(ToolMessageAdapterError) as caught:
            ipc_to_struct(data, **options)
        self.assertIn(message, str(caught.exception))

    def test_garbage_empty_and_truncated_bytes(self) -> None:
        data = struct_to_ipc(carrier_struct())
        self.assert_rejected(b"", "ToolMessage IPC stream must start with a schema")
        self.assert_rejected(b"\x01\x02\x03", "invalid Arrow IPC stream")
        self.assert_rejected(b"\xff" * 64, "invalid Arrow IPC stream")
        for end in (8, len(data) // 2, len(data) - 9):
            with self.subTest(end=end):
                with self.assertRaises(ToolMessageAdapterError):
                    ipc_to_struct(data[:end])

    def test_size_is_checked_before_reading(self) -> None:
        data = struct_to_ipc(carrier_struct())
        self.assert_rejected(data, f"IPC stream size {len(data)} exceeds limit 100", max_bytes=100)
        self.assert_rejected(b"\x00" * (DEFAULT_MAX_BYTES + 1), f"IPC stream size {DEFAULT_MAX_BYTES + 1}")
        with self.assertRaises(ToolMessageAdapterError) as caught:
            struct_to_ipc(carrier_struct(), max_bytes=100)
        self.assertIn("exceeds limit 100", str(caught.exception))

    def test_compressed_streams_are_refused_before_decompression(self) -> None:
        # Two megabytes of zeros compress to a few hundred bytes: the limit alone cannot stop it.
        big = carrier_struct([carrier_row(payload_json='{"z":"' + "0" * 2_000_000 + '"}')])
        data = stream([batch_of(big)], options=pa.ipc.IpcWriteOptions(compression="zstd"))
        self.assertLess(len(data), 100_000)
        self.assert_rejected(data, "ToolMessage IPC stream must not be compressed")

    def test_two_batches_or_rows_are_refused(self) -> None:
        one = batch_of(carrier_struct())
        self.assert_rejected(stream([one, one]), "exactly one RecordBatch")
        self.assert_rejected(stream([]), "exactly one RecordBatch")
        self.assert_rejected(stream([batch_of(carrier_struct([carrier_row()] * 2))]),
                             "exactly one row")
        self.assert_rejected(stream([one.slice(0, 0)]), "exactly one row")

    def test_another_schema_is_refused(self) -> None:
        fields = list(TOOL_MESSAGE_SCHEMA)
        fields[9] = pa.field("payload_json", pa.large_string(), nullable=False)
        schema = pa.schema(fields)
        batch = pa.RecordBatch.from_arrays(
            [column.cast(field.type) for column, field in zip(batch_of(carrier_struct()).columns, fields)],
            schema=schema,
        )
        self.assert_rejected(stream([batch], schema=schema), "schema must exactly match")
        dictionary = batch_of(carrier_struct()).columns[1].dictionary_encode()
        fields = list(TOOL_MESSAGE_SCHEMA)
        fields[1] = pa.field("message_type", dictionary.type, nullable=False)
        schema = pa.schema(fields)
        columns = list(batch_of(carrier_struct()).columns)
        columns[1] = dictionary
        self.assert_rejected(stream([pa.RecordBatch.from_arrays(columns, schema=schema)], schema=schema),
                             "schema must exactly match")
        with self.assertRaises(ToolMessageAdapterError):
            struct_to_ipc(pa.RecordBatch.from_arrays(columns, schema=schema))

    def test_struct_inputs_of_another_shape_are_refused(self) -> None:
        with self.assertRaises(ToolMessageAdapterError):
            struct_to_ipc(carrier_struct([carrier_row(), carrier_row()]))
        with self.assertRaises(ToolMessageAdapterError):
            struct_to_ipc(carrier_struct([]))
        null_row = pa.array([None], type=pa.struct(list(TOOL_MESSAGE_SCHEMA)))
        with self.assertRaises(ToolMessageAdapterError) as caught:
            struct_to_ipc(null_row)
        self.assertIn("must not be null", str(caught.exception))
        narrow = pa.array([{"protocol": "x"}], type=pa.struct([pa.field("protocol", pa.string())]))
        with self.assertRaises(ToolMessageAdapterError):
            struct_to_ipc(narrow)

    def test_arguments_of_another_type(self) -> None:
        with self.assertRaises(TypeError):
            struct_to_ipc({"protocol": "x"})  # type: ignore[arg-type]
        with self.assertRaises(TypeError):
            ipc_to_struct("not bytes")
        with self.assertRaises(TypeError):
            ipc_to_struct(pa.array([1], type=pa.int32()))
        self.assert_rejected(pa.array([1, None], type=pa.uint8()), "must not contain nulls")
        for bad in (0, -1, True, 1.5):
            with self.subTest(max_bytes=bad):
                with self.assertRaises(ValueError) as caught:
                    ipc_to_batch(b"", max_bytes=bad)  # type: ignore[arg-type]
                self.assertEqual(
                    str(caught.exception),
                    "Cannot convert as 'max_bytes' must be a positive integer: "
                    f"current value is {bad!r}",
                )

    def test_correlation_names_the_headers_and_never_raises(self) -> None:
        self.assertIn("request_id=request-1", correlation(carrier_struct()))
        self.assertEqual(correlation(b"\x00\x01"), "2 bytes")
        self.assertEqual(correlation(object()), "(headers unreadable)")


if __name__ == "__main__":
    unittest.main()
