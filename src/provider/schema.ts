/**
 * Argument schemas for provider definitions: the Standard Schema v1 interface (implemented by
 * zod ≥ 3.24, valibot ≥ 1, arktype ≥ 2 and others, no dependency needed) and a small JSON Schema
 * subset validator exposed through the same interface, so every definition validates its
 * arguments one way.
 *
 * @module
 */
import { deepEqual, type JsonObject } from "../_internal/json.ts";

/** One segment of a {@linkcode StandardSchemaV1Issue} path, in its object form. */
export interface StandardSchemaV1PathSegment {
  /** The key of this segment. */
  readonly key: PropertyKey;
}

/** One problem a Standard Schema found in a value. */
export interface StandardSchemaV1Issue {
  /** What is wrong, for people. */
  readonly message: string;
  /** Where it is wrong: the keys from the root value to the offending one. */
  readonly path?: ReadonlyArray<PropertyKey | StandardSchemaV1PathSegment> | undefined;
}

/** What a Standard Schema's `validate` returns: the (possibly transformed) value, or issues. */
export type StandardSchemaV1Result<Output> =
  | { readonly value: Output; readonly issues?: undefined }
  | { readonly issues: ReadonlyArray<StandardSchemaV1Issue> };

/** The `~standard` member of a Standard Schema v1 object. */
export interface StandardSchemaV1Props<Input = unknown, Output = Input> {
  /** The version of the Standard Schema specification: 1. */
  readonly version: 1;
  /** The library that implements the schema, for example `"zod"`. */
  readonly vendor: string;
  /** Validates an unknown value, synchronously or not. */
  readonly validate: (
    value: unknown,
  ) => StandardSchemaV1Result<Output> | Promise<StandardSchemaV1Result<Output>>;
  /** Carries the input and output types (types only, usually absent at run time). */
  readonly types?: { readonly input: Input; readonly output: Output } | undefined;
}

/**
 * A Standard Schema v1 object (https://standardschema.dev): any schema of zod ≥ 3.24,
 * valibot ≥ 1 or arktype ≥ 2 is one, as is what {@linkcode jsonSchema} returns.
 */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  /** The Standard Schema interface. */
  readonly "~standard": StandardSchemaV1Props<Input, Output>;
}

/** The validated type a Standard Schema produces. */
export type InferSchemaOutput<S extends StandardSchemaV1> = NonNullable<
  S["~standard"]["types"]
>["output"];

/** The JSON types the JSON Schema subset knows. */
export type JsonSchemaType =
  | "object"
  | "array"
  | "string"
  | "number"
  | "integer"
  | "boolean"
  | "null";

/**
 * The JSON Schema subset {@linkcode jsonSchema} validates: `type`, `properties`, `required`,
 * `additionalProperties`, `items`, `enum`, `const`, `minimum`, `maximum`, plus the annotations
 * `$schema`, `$id`, `$comment`, `title`, `description`, `default` and `examples` (ignored). Any
 * other keyword is refused when the validator is built, so nothing is silently unchecked.
 */
export interface JsonSchema {
  /** The allowed JSON type or types. */
  readonly type?: JsonSchemaType | readonly JsonSchemaType[];
  /** The schema of each named member of an object. */
  readonly properties?: Readonly<Record<string, JsonSchema>>;
  /** The members an object must have. */
  readonly required?: readonly string[];
  /**
   * Whether (or with which schema) members not in `properties` are allowed.
   *
   * @default {true}
   */
  readonly additionalProperties?: boolean | JsonSchema;
  /** The schema of every element of an array. */
  readonly items?: JsonSchema;
  /** The allowed values (compared as JSON). */
  readonly enum?: readonly unknown[];
  /** The one allowed value (compared as JSON). */
  readonly const?: unknown;
  /** The smallest allowed number (inclusive). */
  readonly minimum?: number;
  /** The largest allowed number (inclusive). */
  readonly maximum?: number;
  /** Annotation: the dialect URI (ignored). */
  readonly $schema?: string;
  /** Annotation: the schema's id (ignored). */
  readonly $id?: string;
  /** Annotation: a comment (ignored). */
  readonly $comment?: string;
  /** Annotation: a title (ignored). */
  readonly title?: string;
  /** Annotation: a description (ignored). */
  readonly description?: string;
  /** Annotation: a default value (ignored: defaults are not applied). */
  readonly default?: unknown;
  /** Annotation: example values (ignored). */
  readonly examples?: readonly unknown[];
}

/** The Standard Schema {@linkcode jsonSchema} returns, which also keeps the JSON Schema. */
export interface JsonSchemaValidator<T = JsonObject> extends StandardSchemaV1<unknown, T> {
  /** The JSON Schema this validator checks (the value given, frozen). */
  readonly jsonSchema: JsonSchema;
}

const ANNOTATIONS = new Set([
  "$schema",
  "$id",
  "$comment",
  "title",
  "description",
  "default",
  "examples",
]);
const KEYWORDS = new Set([
  "type",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "enum",
  "const",
  "minimum",
  "maximum",
]);
const TYPES: ReadonlySet<string> = new Set([
  "object",
  "array",
  "string",
  "number",
  "integer",
  "boolean",
  "null",
]);

type Path = readonly (string | number)[];
interface Issue {
  readonly message: string;
  readonly path: Path;
}
type Check = (value: unknown, path: Path, issues: Issue[]) => void;

function schemaError(where: string, why: string, value: unknown): TypeError {
  let shown: string;
  try {
    shown = JSON.stringify(value) ?? String(value);
  } catch {
    shown = String(value);
  }
  return new TypeError(
    `Cannot build a JSON Schema validator as ${where} ${why}: current value is ${shown}`,
  );
}

function typeOf(value: unknown): JsonSchemaType | "undefined" | "other" {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  switch (typeof value) {
    case "string":
      return "string";
    case "boolean":
      return "boolean";
    case "number":
      return Number.isInteger(value) ? "integer" : "number";
    case "object":
      return "object";
    case "undefined":
      return "undefined";
    default:
      return "other";
  }
}

function matchesType(value: unknown, type: string): boolean {
  const actual = typeOf(value);
  return actual === type || (type === "number" && actual === "integer");
}

/** Compiles one schema node into a check; `where` names the node for build errors. */
function compile(schema: unknown, where: string, depth: number): Check {
  if (depth > 64) throw schemaError(where, "is nested deeper than 64 levels", "…");
  if (typeof schema === "boolean") {
    return schema ? () => {} : (_value, path, issues) => {
      issues.push({ message: "no value is allowed here", path });
    };
  }
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) {
    throw schemaError(where, "must be a JSON Schema object or a boolean", schema);
  }
  const node = schema as Record<string, unknown>;
  for (const keyword of Object.keys(node)) {
    if (!KEYWORDS.has(keyword) && !ANNOTATIONS.has(keyword)) {
      throw schemaError(`${where}.${keyword}`, "is not a supported keyword", node[keyword]);
    }
  }
  const checks: Check[] = [];
  if (node.type !== undefined) {
    const types = Array.isArray(node.type) ? node.type : [node.type];
    if (types.length === 0 || !types.every((type) => typeof type === "string" && TYPES.has(type))) {
      throw schemaError(`${where}.type`, "must name JSON types", node.type);
    }
    const expected = types.join(" or ");
    checks.push((value, path, issues) => {
      if (!types.some((type) => matchesType(value, type))) {
        issues.push({ message: `must be of type ${expected}`, path });
      }
    });
  }
  if (node.enum !== undefined) {
    if (!Array.isArray(node.enum)) {
      throw schemaError(`${where}.enum`, "must be an array", node.enum);
    }
    const allowed = node.enum;
    const shown = JSON.stringify(allowed);
    checks.push((value, path, issues) => {
      if (!allowed.some((member) => deepEqual(member, value))) {
        issues.push({ message: `must be one of ${shown}`, path });
      }
    });
  }
  if (Object.hasOwn(node, "const")) {
    const constant = node.const;
    const shown = JSON.stringify(constant);
    checks.push((value, path, issues) => {
      if (!deepEqual(constant, value)) issues.push({ message: `must equal ${shown}`, path });
    });
  }
  for (const bound of ["minimum", "maximum"] as const) {
    const limit = node[bound];
    if (limit === undefined) continue;
    if (typeof limit !== "number" || !Number.isFinite(limit)) {
      throw schemaError(`${where}.${bound}`, "must be a finite number", limit);
    }
    const below = bound === "minimum";
    checks.push((value, path, issues) => {
      if (typeof value !== "number") return;
      if (below ? value < limit : value > limit) {
        issues.push({ message: `must be ${below ? ">=" : "<="} ${limit}`, path });
      }
    });
  }
  const properties = new Map<string, Check>();
  if (node.properties !== undefined) {
    const props = node.properties;
    if (typeof props !== "object" || props === null || Array.isArray(props)) {
      throw schemaError(`${where}.properties`, "must be an object", props);
    }
    for (const [name, sub] of Object.entries(props)) {
      properties.set(name, compile(sub, `${where}.properties.${name}`, depth + 1));
    }
  }
  let required: readonly string[] = [];
  if (node.required !== undefined) {
    if (
      !Array.isArray(node.required) || !node.required.every((name) => typeof name === "string")
    ) {
      throw schemaError(`${where}.required`, "must be an array of strings", node.required);
    }
    required = node.required;
  }
  let additional: Check | undefined;
  if (node.additionalProperties !== undefined) {
    additional = compile(node.additionalProperties, `${where}.additionalProperties`, depth + 1);
  }
  if (properties.size > 0 || required.length > 0 || additional !== undefined) {
    checks.push((value, path, issues) => {
      if (typeOf(value) !== "object") return;
      const object = value as Record<string, unknown>;
      for (const name of required) {
        if (!Object.hasOwn(object, name)) {
          issues.push({ message: `missing required property '${name}'`, path: [...path, name] });
        }
      }
      for (const name of Object.keys(object)) {
        const check = properties.get(name);
        if (check !== undefined) check(object[name], [...path, name], issues);
        else if (additional !== undefined) additional(object[name], [...path, name], issues);
      }
    });
  }
  if (node.items !== undefined) {
    const item = compile(node.items, `${where}.items`, depth + 1);
    checks.push((value, path, issues) => {
      if (!Array.isArray(value)) return;
      for (let i = 0; i < value.length; i++) item(value[i], [...path, i], issues);
    });
  }
  if (checks.length === 1) return checks[0];
  return (value, path, issues) => {
    for (const check of checks) check(value, path, issues);
  };
}

/**
 * Builds a Standard Schema from a JSON Schema of the subset described on
 * {@linkcode JsonSchema}. The schema is checked now: an unsupported keyword or a malformed value
 * is a `TypeError` naming where it is. `T` is the validated type the definition's function
 * receives (default `JsonObject`); it is not inferred from the schema.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { jsonSchema } from "@forge/tool";
 * const schema = jsonSchema<{ x: number }>({
 *   type: "object",
 *   properties: { x: { type: "number", minimum: 0 } },
 *   required: ["x"],
 * });
 * const result = schema["~standard"].validate({ x: -1 });
 * assertEquals(result, { issues: [{ message: "must be >= 0", path: ["x"] }] });
 * ```
 */
export function jsonSchema<T = JsonObject>(schema: JsonSchema): JsonSchemaValidator<T> {
  const check = compile(schema, "schema", 0);
  const frozen = deepFreeze(structuredClone(schema));
  return Object.freeze({
    jsonSchema: frozen,
    "~standard": Object.freeze({
      version: 1 as const,
      vendor: "forge-tool-json-schema",
      validate(value: unknown): StandardSchemaV1Result<T> {
        const issues: Issue[] = [];
        check(value, [], issues);
        return issues.length === 0 ? { value: value as T } : { issues };
      },
    }),
  });
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const member of Object.values(value)) deepFreeze(member);
  }
  return value;
}

/** True when `value` implements the Standard Schema v1 interface. */
export function isStandardSchema(value: unknown): value is StandardSchemaV1 {
  if ((typeof value !== "object" && typeof value !== "function") || value === null) return false;
  const props = (value as { "~standard"?: unknown })["~standard"];
  return typeof props === "object" && props !== null &&
    (props as StandardSchemaV1Props).version === 1 &&
    typeof (props as StandardSchemaV1Props).validate === "function";
}
