// examples/agent-loop.ts and the README's example run to their end: denial, scripted approval, retry,
// success (it exits 1 when any step goes otherwise).

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { it } from "node:test";

import { REPO, sbxBinary } from "./support.js";

it("agent loop", () => {
  const example = join(dirname(fileURLToPath(import.meta.url)), "..", "examples", "agent-loop.js");
  const p = spawnSync(process.execPath, [example], { env: { ...process.env, SBX: sbxBinary() }, encoding: "utf8", timeout: 120_000 });
  assert.equal(p.status, 0, p.stdout + p.stderr);
  assert.match(p.stdout, /1 denial\(s\)/);
  assert.match(p.stdout, /via grant/);
});

it("README example", () => {
  // The README's example is examples/readme.ts, word for word, and it runs: a
  // shell call denied, its retry's grant applied, the call again.
  const here = dirname(fileURLToPath(import.meta.url));
  const src = readFileSync(join(here, "..", "..", "examples", "readme.ts"), "utf8");
  // The client's README, and the repository's.
  for (const readme of [join(here, "..", "..", "README.md"), join(REPO, "README.md")]) {
    assert.ok(readFileSync(readme, "utf8").includes("```ts\n" + src + "```"), `${readme}'s example is not examples/readme.ts`);
  }
  const tmp = mkdtempSync(join(tmpdir(), "sbx-tsreadme-"));
  try {
    const p = spawnSync(process.execPath, [join(here, "..", "examples", "readme.js")], {
      env: { ...process.env, SBX: sbxBinary(), TMPDIR: tmp },
      encoding: "utf8",
      timeout: 120_000,
    });
    const m = /denied: create (\/var\/tmp\/out-\S+)\/note \(/.exec(p.stdout);
    if (m) rmSync(m[1], { recursive: true, force: true });
    assert.equal(p.status, 0, p.stdout + p.stderr);
    assert.ok(m, p.stdout);
    assert.ok(p.stdout.includes(`the user allows: {"file_system":{"write":["${m[1]}"]}}`), p.stdout);
    assert.match(p.stdout, /exit 0 note: hi/);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});
