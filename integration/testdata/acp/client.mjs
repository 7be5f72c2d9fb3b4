// An ACP client for integration/serve_acp_test.go, built on the official
// TypeScript SDK (@agentclientprotocol/sdk): it listens on the unix socket
// $ACP_SOCKET, takes one connection (sbx serve --acp-socket, or the test's
// own for --acp-fd), and answers session/request_permission as $ACP_ANSWER
// says:
//   allow         selects the option of kind allow_once
//   reject        selects the option of kind reject_once
//   cancel        the cancelled outcome
//   allow_always  selects an option id sbx never offered ("allow-always")
//   hang          never answers; waits for sbx's $/cancel_request
// Every request is checked against the SDK's own zod schema (the SDK also
// parses it before the handler runs) and its raw keys against the ACP
// schema's; every response is checked against the SDK's schema before it is
// sent. What happened goes to $ACP_LOG, one JSON object a line.
import { appendFileSync } from "node:fs";
import { createServer } from "node:net";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

// The SDK's generated zod schemas are not a package export; they are the
// module its entry point validates with, next to it.
const zodURL = new URL("../schema/zod.gen.js", import.meta.resolve("@agentclientprotocol/sdk"));
const { zRequestPermissionRequest, zRequestPermissionResponse, zCancelRequestNotification } = await import(zodURL.href);

const answer = process.env.ACP_ANSWER;
const logPath = process.env.ACP_LOG;
const log = (event) => appendFileSync(logPath, JSON.stringify(event) + "\n");

const keys = (o) => Object.keys(o ?? {}).sort().join(",");
const only = (o, allowed, what) => {
  for (const k of Object.keys(o ?? {})) {
    if (!allowed.includes(k)) throw new Error(`${what}: unknown key ${k}`);
  }
};

// tap logs and checks the raw messages sbx sends, before the SDK reads them.
function tap(readable) {
  return readable.pipeThrough(new TransformStream({
    transform(msg, controller) {
      log({ event: "received", message: msg });
      try {
        if (msg.method === "session/request_permission") {
          only(msg, ["jsonrpc", "id", "method", "params"], "request");
          only(msg.params, ["sessionId", "toolCall", "options", "_meta"], "params");
          only(msg.params.toolCall, ["toolCallId", "title", "kind", "rawInput", "status", "content", "locations", "rawOutput", "name", "_meta"], "toolCall");
          for (const o of msg.params.options) only(o, ["optionId", "name", "kind", "_meta"], "option");
          zRequestPermissionRequest.parse(msg.params);
          log({ event: "valid", id: msg.id });
        } else if (msg.method === "$/cancel_request") {
          zCancelRequestNotification.parse(msg.params);
          log({ event: "valid", method: msg.method, requestId: msg.params.requestId });
        }
      } catch (e) {
        log({ event: "invalid", error: String(e) });
      }
      controller.enqueue(msg);
    },
  }));
}

const app = acp.client({ name: "sbx-acp-test-client" }).onRequest(acp.methods.client.session.requestPermission, async (ctx) => {
  const p = ctx.params;
  const byKind = (kind) => p.options.find((o) => o.kind === kind)?.optionId;
  let result;
  switch (answer) {
    case "allow":
      result = { outcome: { outcome: "selected", optionId: byKind("allow_once") } };
      break;
    case "reject":
      result = { outcome: { outcome: "selected", optionId: byKind("reject_once") } };
      break;
    case "cancel":
      result = { outcome: { outcome: "cancelled" } };
      break;
    case "allow_always":
      result = { outcome: { outcome: "selected", optionId: "allow-always" } };
      break;
    case "hang":
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
      log({ event: "aborted", requestId: ctx.requestId, reason: String(ctx.signal.reason) });
      throw ctx.signal.reason;
    default:
      throw new Error(`ACP_ANSWER ${answer}`);
  }
  zRequestPermissionResponse.parse(result);
  log({ event: "answered", requestId: ctx.requestId, kinds: p.options.map((o) => o.kind), result });
  return result;
});

const server = createServer((sock) => {
  server.close(); // one connection
  const stream = acp.ndJsonStream(Writable.toWeb(sock), Readable.toWeb(sock));
  app.connect({ writable: stream.writable, readable: tap(stream.readable) });
  sock.on("close", () => {
    log({ event: "closed" });
    process.exit(0);
  });
});
server.listen(process.env.ACP_SOCKET, () => {
  log({ event: "listening" });
  process.stdout.write("listening\n");
});
