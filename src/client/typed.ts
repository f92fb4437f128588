/**
 * The types of typed calls: the view of a {@linkcode ToolEndpointClient} that
 * {@linkcode ToolEndpointClient.for} returns, typed by an endpoint definition's operations
 * (names by semantics, arguments and outputs types). Types only: the client imports no provider
 * code at run time.
 *
 * @module
 */
import type { ToolResult } from "../endpoint/models.ts";
import type { AnyOperationDefinition } from "../provider/types.ts";
import type { ToolEndpointClient } from "./client.ts";
import type { ToolInvocation } from "./invocation.ts";
import type { ToolClientCallOptions, ToolEndpointClientOptions } from "./options.ts";

/** An operation definitions' record, as `defineEndpoint` keeps it. */
export type ToolOperations = Readonly<Record<string, AnyOperationDefinition>>;

/** The names of the Query operations of `Ops`. */
export type QueryOperationName<Ops extends ToolOperations> = {
  [N in keyof Ops & string]: Ops[N]["semantics"] extends "query" ? N : never;
}[keyof Ops & string];

/** The names of the Action and Session operations of `Ops`. */
export type InvokeOperationName<Ops extends ToolOperations> = {
  [N in keyof Ops & string]: Ops[N]["semantics"] extends "action" | "session" ? N : never;
}[keyof Ops & string];

/** The arguments type a caller sends to a definition (its schema's input type). */
export type OperationArguments<D> = D extends { readonly types?: { readonly arguments: infer A } }
  ? A
  : never;

/** The outputs type of a definition's succeeded result. */
export type OperationOutputs<D> = D extends { readonly types?: { readonly outputs: infer O } } ? O
  : never;

/** The arguments and options of a typed call: the arguments may be left out when `{}` fits. */
export type TypedCallArguments<A> = Record<never, never> extends A
  ? [args?: A, options?: ToolClientCallOptions]
  : [args: A, options?: ToolClientCallOptions];

/**
 * A {@linkcode ToolResult} whose `outputs` are typed `O` once `status` is narrowed to
 * `"succeeded"` (any other status carries what the function returned, or `{}`).
 */
export type TypedToolResult<O> =
  & ToolResult
  & (
    | { readonly status: "succeeded"; readonly outputs: O }
    | { readonly status: Exclude<ToolResult["status"], "succeeded"> }
  );

/** A {@linkcode ToolInvocation} whose `result()` is typed. */
export interface TypedToolInvocation<O> extends ToolInvocation {
  /** The terminal result, as {@linkcode ToolInvocation.result}. */
  result(): Promise<TypedToolResult<O>>;
}

/**
 * The typed view of a {@linkcode ToolEndpointClient} that {@linkcode ToolEndpointClient.for}
 * returns: `query()` takes only Query names, `invoke()` only Action and Session names, each
 * with the arguments type of its definition, and results carry its outputs type. The same
 * object at run time (every other member is the client's).
 */
export interface TypedToolEndpointClient<Ops extends ToolOperations>
  extends Omit<ToolEndpointClient, "query" | "invoke"> {
  /** {@linkcode ToolEndpointClient.query}, typed by the definition. */
  query<N extends QueryOperationName<Ops>>(
    operation: N,
    ...rest: TypedCallArguments<OperationArguments<Ops[N]>>
  ): Promise<TypedToolResult<OperationOutputs<Ops[N]>>>;
  /** {@linkcode ToolEndpointClient.invoke}, typed by the definition. */
  invoke<N extends InvokeOperationName<Ops>>(
    operation: N,
    ...rest: TypedCallArguments<OperationArguments<Ops[N]>>
  ): Promise<TypedToolInvocation<OperationOutputs<Ops[N]>>>;
}

/** Options of {@linkcode ToolEndpointClient.for}: the client's, less what the definition says. */
export type TypedToolEndpointClientOptions = Omit<
  ToolEndpointClientOptions,
  "endpointId" | "descriptor"
>;
