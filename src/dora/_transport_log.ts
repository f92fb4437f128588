/**
 * The default logger of the Dora nodes (runner, gateway node): their warnings and errors go to
 * the transport's log (the Dora log) as the text the default logger writes.
 *
 * @module
 */
import { consoleLogger, lineLogger, type ToolLogger, warningsAndErrors } from "../endpoint/log.ts";
import type { DoraTransport } from "./transport.ts";

/**
 * Warnings and errors to `transport.log` as {@linkcode consoleLogger}'s text, or to
 * {@linkcode consoleLogger} when the transport has no log; `debug` and `info` are dropped.
 */
export function transportLogger(transport: DoraTransport): ToolLogger {
  return warningsAndErrors(
    typeof transport.log === "function"
      ? lineLogger((level, message) => transport.log!(level, message))
      : consoleLogger,
  );
}
