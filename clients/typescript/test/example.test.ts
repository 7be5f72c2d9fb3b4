// examples/agent-loop.ts runs to its end: denial, scripted approval, retry,
// success (it exits 1 when any step goes otherwise).

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { it } from "node:test";

import { sbxBinary } from "./support.js";

it("agent loop", () => {
  const example = join(dirname(fileURLToPath(import.meta.url)), "..", "examples", "agent-loop.js");
  const p = spawnSync(process.execPath, [example], { env: { ...process.env, SBX: sbxBinary() }, encoding: "utf8", timeout: 120_000 });
  assert.equal(p.status, 0, p.stdout + p.stderr);
  assert.match(p.stdout, /1 denial\(s\)/);
  assert.match(p.stdout, /via grant/);
});
