import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Server, denied, type ExecResult } from "@sbx-sandbox/client";

const ws = mkdtempSync(join(tmpdir(), "ws-")), elsewhere = mkdtempSync("/var/tmp/out-"); // the workspace, a place outside it
const srv = await Server.start({ args: ["--ephemeral"], timeoutMs: 60_000 }); // or Server.connect("/run/user/1000/sbx/sock")
const s = await srv.openSession(ws, { preset: "auto" }); // writes in the workspace; anything more needs a grant
const turn = await srv.beginTurn(s);
const call = { shell: { kind: "sh" as const, script: `echo hi > ${elsewhere}/note` }, cwd: ws };
let r = (await srv.exec(s, turn, "c1", call)) as ExecResult;
for (const d of r.denials) console.log(`denied: ${d.operation} ${d.path} (${d.reason})`);
if (denied(r) && r.retry?.grant) { // the smallest grant that lets the call through
  console.log("the user allows:", JSON.stringify(r.retry.grant)); // ask your user here
  await srv.applyGrant(s, r.retry.grant, r.retry.grant, { scope: "turn" });
  r = (await srv.exec(s, turn, "c2", call)) as ExecResult; // the same call, again
}
console.log("exit", r.exit_code, "note:", readFileSync(`${elsewhere}/note`, "utf8").trim());
await srv.close();
process.exit(r.exit_code);
