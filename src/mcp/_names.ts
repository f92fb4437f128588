// MCP tool names and tool entries from the Registry's records.
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import type { ToolSemantics } from "../endpoint/constants.ts";
import type { EndpointRegistryRecord } from "../node/registry_records.ts";
import type { McpToolMetadata } from "./server.ts";
import { fnv1a32 } from "../_internal/hash.ts";

/** The name rule of MCP tools (spec 2025-11-25). */
export const MCP_TOOL_NAME = /^[A-Za-z0-9._-]{1,128}$/;
const UNSAFE = /[^A-Za-z0-9._-]/g;
const MAX = 128;

/** FNV-1a 32 of `text`, 8 hex digits: the suffix that keeps altered names apart. */
function hash(text: string): string {
  return fnv1a32(text).toString(16).padStart(8, "0");
}

/**
 * The MCP tool name of one operation: `<endpointId>.<operation>` when that fits the rule as it
 * is; else the characters outside `[A-Za-z0-9._-]` become `_`, the name is cut to leave room,
 * and `-` plus an 8-digit hash of the exact pair is appended. The same pair always gets the same
 * name.
 */
export function mcpToolName(endpointId: string, operation: string): string {
  const plain = `${endpointId}.${operation}`;
  if (MCP_TOOL_NAME.test(plain)) return plain;
  return hashedName(plain.replace(UNSAFE, "_"), endpointId, operation);
}

function hashedName(base: string, endpointId: string, operation: string): string {
  return `${base.slice(0, MAX - 9)}-${hash(`${endpointId}\u0000${operation}`)}`;
}

/** One MCP tool and the operation it calls. */
export interface ToolEntry {
  readonly name: string;
  readonly endpointId: string;
  readonly operation: string;
  readonly semantics: ToolSemantics;
  readonly cancellable: boolean;
  readonly stoppable: boolean;
  readonly tool: Tool;
}

const SEMANTICS_TEXT: Readonly<Record<ToolSemantics, string>> = {
  query: "Query (answers at once)",
  action: "Action (long-running, cancellable; run it as a task)",
  session: "Session (runs until stopped; run it as a task, cancel the task to stop it)",
};

/**
 * Every operation of every record as an MCP tool, sorted by name. Two pairs whose names collide
 * (`a.b` + `c` and `a` + `b.c`) both take the hashed form, so neither shadows the other.
 */
export function toolEntries(
  records: readonly EndpointRegistryRecord[],
  metadata: Readonly<Record<string, Readonly<Record<string, McpToolMetadata>>>>,
): Map<string, ToolEntry> {
  const pairs: {
    endpointId: string;
    operation: string;
    name: string;
    record: EndpointRegistryRecord;
    index: number;
  }[] = [];
  for (const record of records) {
    record.descriptor.operations.forEach((operation, index) => {
      pairs.push({
        endpointId: record.endpointId,
        operation: operation.name,
        name: mcpToolName(record.endpointId, operation.name),
        record,
        index,
      });
    });
  }
  const counts = new Map<string, number>();
  for (const pair of pairs) counts.set(pair.name, (counts.get(pair.name) ?? 0) + 1);
  const entries: ToolEntry[] = [];
  for (const pair of pairs) {
    const name = (counts.get(pair.name) ?? 0) > 1
      ? hashedName(pair.name.replace(UNSAFE, "_"), pair.endpointId, pair.operation)
      : pair.name;
    const descriptor = pair.record.descriptor.operations[pair.index];
    const meta = metadata[pair.endpointId]?.[pair.operation] ?? {};
    const semantics = descriptor.semantics;
    const description = meta.description ??
      `${
        SEMANTICS_TEXT[semantics]
      }: operation '${pair.operation}' of endpoint '${pair.endpointId}'.`;
    const tool: Tool = {
      name,
      title: `${pair.endpointId} ${pair.operation}`,
      description,
      inputSchema: (meta.inputSchema ?? { type: "object" }) as Tool["inputSchema"],
      ...(meta.outputSchema === undefined
        ? {}
        : { outputSchema: meta.outputSchema as Tool["outputSchema"] }),
      execution: { taskSupport: semantics === "query" ? "forbidden" : "optional" },
      _meta: {
        "forge.tool/endpoint_id": pair.endpointId,
        "forge.tool/operation": pair.operation,
        "forge.tool/semantics": semantics,
      },
    };
    entries.push({
      name,
      endpointId: pair.endpointId,
      operation: pair.operation,
      semantics,
      cancellable: descriptor.cancellable,
      stoppable: descriptor.stoppable,
      tool,
    });
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return new Map(entries.map((entry) => [entry.name, entry]));
}
