/**
 * The settings of one definition, read once from its options (semantics, `maxConcurrency`,
 * whether cancel or stop is accepted, `description`), the operation descriptor derived from them, and the
 * checked options of `implement()`.
 *
 * @module
 */
import { positiveIntegerOption } from "../_internal/options.ts";
import { consoleLogger } from "../endpoint/log.ts";
import { ToolOperationDescriptor } from "../endpoint/models.ts";
import { booleanOption, optionError } from "./_validate.ts";
import type { ImplementOptions } from "./types.ts";

/** What a definition's options settle once. */
export interface Settings {
  readonly semantics: "query" | "action" | "session";
  readonly maxConcurrency: number;
  readonly controllable: boolean;
  readonly description: string | undefined;
}

/** Reads and checks a definition's options. */
export function settingsOf(
  semantics: "query" | "action" | "session",
  options: Record<string, unknown>,
): Settings {
  const label = defining(semantics);
  const control = semantics === "action" ? "cancellable" : "stoppable";
  return {
    semantics,
    maxConcurrency: positiveIntegerOption(label, "maxConcurrency", options.maxConcurrency, 1),
    controllable: semantics === "query"
      ? false
      : booleanOption(options[control], true, label, control),
    description: descriptionOption(label, options.description),
  };
}

function descriptionOption(label: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || value.trim() === "") {
    throw optionError(label, "description", "a non-blank string", value);
  }
  return value;
}

/** "define a query", "define an action", "define a session": the subject of option errors. */
export function defining(semantics: "query" | "action" | "session"): string {
  return `define ${semantics === "action" ? "an" : "a"} ${semantics}`;
}

/** Checks that a definition was given its function. */
export function checkRun(run: unknown, semantics: "query" | "action" | "session"): void {
  if (typeof run !== "function") {
    throw optionError(defining(semantics), "run", "a function", run);
  }
}

/** The operation descriptor of a definition under `name`. */
export function descriptorFor(settings: Settings, name: string): ToolOperationDescriptor {
  return new ToolOperationDescriptor({
    name,
    semantics: settings.semantics,
    cancellable: settings.semantics === "action" && settings.controllable,
    stoppable: settings.semantics === "session" && settings.controllable,
    statusSupported: settings.semantics !== "query",
    maxConcurrency: settings.maxConcurrency,
  });
}

/** Checks the options of `implement()` (defaults applied). */
export function implementOptions(options: ImplementOptions) {
  if (typeof options !== "object" || options === null) {
    throw optionError("implement an operation", "options", "an object", options);
  }
  if (typeof options.name !== "string" || options.name === "") {
    throw optionError("implement an operation", "name", "a non-empty string", options.name);
  }
  const logger = options.logger ?? consoleLogger;
  if (typeof logger !== "function") {
    throw optionError("implement an operation", "logger", "a function", logger);
  }
  const track = options.track;
  if (track !== undefined && typeof track !== "function") {
    throw optionError("implement an operation", "track", "a function", track);
  }
  return {
    logger,
    track,
    maxRetained: positiveIntegerOption(
      "implement an operation",
      "maxRetainedExecutions",
      options.maxRetainedExecutions,
      1024,
    ),
  };
}
