// An agent loop around sbx: run a tool call, get a denial, ask the user,
// apply the exact retry, succeed. The "model" and the "user" are scripted so
// it runs unattended:
//
//   npm run build && SBX=/path/to/sbx node dist/examples/agent-loop.js
//
// It exits 0 when the call succeeded after the retry, 1 otherwise.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import * as sbx from "../src/index.js";

// Stands in for the person at the agent's UI: says yes, and says so.
async function scriptedUser(question: string): Promise<boolean> {
  console.log(`  user asked: ${question}`);
  console.log("  user: yes, for this turn");
  return true;
}

function describeGrant(g: sbx.Profile): string {
  const parts: string[] = [];
  if (g.file_system?.write?.length) parts.push(`write to ${g.file_system.write.join(", ")}`);
  if (g.file_system?.read?.length) parts.push(`read ${g.file_system.read.join(", ")}`);
  if (g.network?.enabled) parts.push("use the network");
  return parts.join(" and ") || "nothing more";
}

// toolCall runs one tool call, asking the user whenever the sandbox denies it
// and sbx says which grant would let it through.
async function toolCall(request: sbx.ExecRequest, maxAttempts = 3): Promise<sbx.ExecResult> {
  let result!: sbx.ExecResult;
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    result = await sbx.exec(request);
    console.log(`attempt ${attempt}: exit ${result.exit_code}, ${result.denials.length} denial(s)`);
    if (!sbx.denied(result)) return result;
    for (const d of result.denials) console.log(`  denied: ${d.operation} ${d.path ?? JSON.stringify(d.address)} (${d.reason})`);
    const grant = result.retry?.grant;
    if (!grant) {
      console.log("  no grant would help:", JSON.stringify(result.retry?.unresolved));
      return result;
    }
    if (!(await scriptedUser(`allow the command to ${describeGrant(grant)}?`))) return result;
    // The user approved outside sbx: add the grant to this turn's grants and
    // send the same call again; sbx asks nobody.
    request = sbx.withGrant(request, grant, "turn");
  }
  return result;
}

async function main(): Promise<number> {
  const workspace = mkdtempSync(join(tmpdir(), "agent-ws-"));
  console.log(`workspace ${workspace}, sandbox mode read-only`);
  // The model's tool call: write a file in a read-only sandbox.
  const request: sbx.ExecRequest = {
    command: ["sh", "-c", "echo 'build ok' > status.txt && cat status.txt"],
    cwd: workspace,
    sandbox_mode: "read-only",
    call_id: "call-1",
    environment_id: "session-1",
  };
  try {
    const r = await toolCall(request);
    console.log(`final: exit ${r.exit_code}, stdout ${JSON.stringify(r.stdout)}, via ${r.permissions.via}`);
    return r.exit_code === 0 && r.stdout === "build ok\n" ? 0 : 1;
  } catch (e) {
    if (e instanceof sbx.SbxError) {
      console.log(`sbx refused the call (${e.name}): ${e.message}`);
      return 1;
    }
    throw e;
  } finally {
    rmSync(workspace, { recursive: true, force: true });
  }
}

process.exitCode = await main();
