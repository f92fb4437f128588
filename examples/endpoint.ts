/**
 * An example endpoint: a detector Query, an arm Action with progress events and cancel, and a
 * policy Session with heartbeats and stop, each written as one function with the provider
 * definitions. Used by the demo and the examples test.
 *
 * @module
 */
import {
  defineAction,
  defineEndpoint,
  defineQuery,
  defineSession,
  jsonSchema,
  type ToolEndpointDefinition,
  type ToolEndpointDescriptor,
  type ToolEndpointHandler,
  type ToolLogger,
} from "../mod.ts";

/** Waits `ms`; false when `signal` aborted first (at once if it already has). */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const id = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(id);
      resolve(false);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** The example endpoint; `stepMs` paces the Action and Session loops. */
export function demoEndpoint(stepMs = 20, logger?: ToolLogger): ToolEndpointDefinition {
  return defineEndpoint({
    endpointId: "robot.demo",
    logger,
    operations: {
      // A detector that "sees" the classes it is asked for.
      detect: defineQuery(
        {
          description: "Detects objects of the given classes in the camera image (Query).",
          maxConcurrency: 4,
          arguments: jsonSchema<{ classes?: string[] }>({
            type: "object",
            properties: { classes: { type: "array", items: { type: "string" } } },
          }),
          outputs: jsonSchema({
            type: "object",
            properties: { objects: { type: "array" } },
            required: ["objects"],
          }),
        },
        ({ classes = [] }) => ({
          objects: classes.map((name, i) => ({
            class: name,
            score: 0.9 - i * 0.1,
            box: [10 * i, 20, 32, 32],
          })),
        }),
      ),
      // The arm moves in ten steps; a cancel stops it where it is.
      move: defineAction(
        {
          description:
            "Moves the arm to `target` in ten steps with progress; cancel stops it (Action).",
          arguments: jsonSchema<{ target?: string }>({
            type: "object",
            properties: { target: { type: "string" } },
          }),
        },
        async (args, { signal, progress }) => {
          await progress({ fraction: 0 });
          for (let step = 1; step <= 10; step++) {
            if (!(await sleep(stepMs, signal))) return { stoppedAt: (step - 1) / 10 };
            await progress({ fraction: step / 10 });
          }
          return { pose: args.target ?? null };
        },
      ),
      // The policy ticks with heartbeats until it is stopped.
      policy: defineSession(
        {
          description: "Runs a policy with heartbeats until stopped (Session).",
          arguments: jsonSchema({ type: "object", properties: { task: { type: "string" } } }),
        },
        async (_args, { signal, emit }) => {
          let ticks = 0;
          while (await sleep(stepMs, signal)) await emit("heartbeat", { ticks: ++ticks });
          return { ticks };
        },
      ),
    },
  });
}

/** The example endpoint's descriptor. */
export const demoDescriptor: ToolEndpointDescriptor = demoEndpoint().descriptor;

/** Builds the example handler; `stepMs` paces the Action and Session loops. */
export function createDemoHandler(
  endpointInstanceId = "demo-instance-1",
  stepMs = 20,
): ToolEndpointHandler {
  return demoEndpoint(stepMs).createHandler({ endpointInstanceId });
}
