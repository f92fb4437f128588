/**
 * The Dora bridge of forge-tool: the Arrow ToolMessage carrier, the Dora endpoint binding, the
 * FFI node and the node runner. Imports `apache-arrow`; the base entry `mod.ts` does not.
 *
 * @module
 */
export { TOOL_ENDPOINT_PROTOCOL } from "./src/endpoint/constants.ts";
