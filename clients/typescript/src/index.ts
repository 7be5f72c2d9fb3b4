// sbx-client: run tool calls under sbx from Node. Each call runs the sbx
// binary once (`sbx exec`, docs/json.md).
//
// TODO(serve): a Server class for `sbx serve`'s JSON-RPC, once sbx serve
// exists; until then every call starts one sbx process.

export * from "./types.js";
export * from "./errors.js";
export * from "./client.js";
