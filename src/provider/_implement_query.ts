/**
 * The SPI Query provider of a Query definition: validate, run the function, check the outputs,
 * answer the outcome of `_outcome.ts`.
 *
 * @module
 */
import { ToolEndpointError } from "../endpoint/errors.ts";
import { type ToolContext, type ToolRequest, ToolResult } from "../endpoint/models.ts";
import type { QueryToolEndpoint } from "../endpoint/spi.ts";
import { outcomeOf } from "./_outcome.ts";
import { implementOptions } from "./_settings.ts";
import type { CheckOutputs, Validate } from "./_validate.ts";
import type { ImplementOptions, QueryFunction } from "./types.ts";

/** The Query provider of a definition. */
export function implementQuery<A>(
  run: QueryFunction<A>,
  validate: Validate<A>,
  checkOutputs: CheckOutputs | undefined,
  options: ImplementOptions,
): QueryToolEndpoint {
  const { logger } = implementOptions(options);
  const execute = async (
    args: A,
    request: ToolRequest,
    context: ToolContext,
    signal: AbortSignal,
  ): Promise<ToolResult> => {
    let fulfilled = true;
    let value: unknown;
    try {
      value = await run(args, { signal, context, request });
    } catch (error) {
      // The provider's rejection, answered `rejected` as for an SPI query() (module doc).
      if (error instanceof ToolEndpointError) throw error;
      fulfilled = false;
      value = error;
    }
    if (fulfilled && checkOutputs !== undefined && !signal.aborted) {
      const error = await checkOutputs(value, context, logger);
      if (error !== undefined) return new ToolResult({ status: "failed", error });
    }
    return outcomeOf(fulfilled, value, undefined, signal, context, logger);
  };
  return {
    query(request, context, { signal }) {
      const args = validate(request, context, logger);
      if (args instanceof Promise) {
        return args.then((valid) => execute(valid, request, context, signal));
      }
      return execute(args, request, context, signal);
    },
  };
}
