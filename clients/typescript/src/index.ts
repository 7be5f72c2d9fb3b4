// @sbx-sandbox/client: run tool calls under sbx from Node. exec() and fs() run the
// sbx binary once per call (`sbx exec`, docs/json.md); Server holds one
// `sbx serve` for a session's calls (docs/serve.md).

export * from "./types.js";
export * from "./errors.js";
export * from "./client.js";
export * from "./server.js";
