/**
 * The JSON Schema a definition's `arguments` or `outputs` schema offers, for what a definition
 * exposes at run time (the MCP server's `inputSchema` and `outputSchema`).
 *
 * @module
 */
import { copyJsonObject, type JsonObject } from "../_internal/json.ts";
import { isStandardSchema, type JsonSchemaValidator } from "./schema.ts";

/** The dialect asked of a Standard JSON Schema converter (the one MCP assumes by default). */
export const JSON_SCHEMA_TARGET = "draft-2020-12";

/** A Standard Schema that implements the Standard JSON Schema extension (its input converter). */
interface StandardJsonSchemaProps {
  readonly jsonSchema?: { readonly input?: (options: { readonly target: string }) => unknown };
}

/**
 * The JSON Schema of `schema` as a frozen JSON copy: a `jsonSchema()` validator's schema, a plain
 * JSON Schema as given, or what a Standard Schema's `~standard.jsonSchema.input` converter (the
 * Standard JSON Schema extension) returns for {@linkcode JSON_SCHEMA_TARGET}. The input side in
 * both cases: a caller sends the arguments, and the outputs are checked, never transformed, so
 * what a caller receives is the schema's input too. `undefined` without a schema, for a Standard
 * Schema without the extension, and when the converter throws or returns something that is not
 * a JSON object.
 */
export function jsonSchemaOf(schema: unknown): JsonObject | undefined {
  if (schema === undefined) return undefined;
  try {
    if (isStandardSchema(schema)) {
      const props = schema["~standard"];
      if (props.vendor === "forge-tool-json-schema") {
        return copyJsonObject((schema as JsonSchemaValidator).jsonSchema, "jsonSchema");
      }
      const converter = (props as StandardJsonSchemaProps).jsonSchema;
      if (typeof converter?.input !== "function") return undefined;
      return copyJsonObject(converter.input({ target: JSON_SCHEMA_TARGET }), "jsonSchema");
    }
    return copyJsonObject(schema, "jsonSchema");
  } catch {
    return undefined;
  }
}
