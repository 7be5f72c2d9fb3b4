// Server against the real `sbx serve`: a denial and its grant in one session,
// streaming, an fs change, typed errors, approvals answered by onApproval,
// concurrent calls and shutdown.

import assert from "node:assert/strict";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { before, describe, it } from "node:test";

import * as sbx from "../src/index.js";
import { sbxBinary, tempDir } from "./support.js";

let bin: string;
before(() => {
  bin = sbxBinary();
});

describe("Server", () => {
  it("reports a denial, and a turn grant lets the same call through until the turn ends", async () => {
    const ws = tempDir("sbx-tsserve-");
    const out = tempDir("sbx-tsserve-out-", "/var/tmp", 0o777);
    const srv = await sbx.Server.start({ sbx: bin, args: ["--ephemeral"] });
    try {
      assert.equal((srv.info as { protocol_version: string }).protocol_version, "1");
      const s = await srv.openSession(ws, { preset: "auto" });
      const turn = await srv.beginTurn(s);
      const target = join(out, "f");
      const req: sbx.ExecRequest = { command: ["sh", "-c", `echo inside > in.txt; echo out > ${target}`], cwd: ws };
      let r = (await srv.exec(s, turn, "c1", req)) as sbx.ExecResult;
      assert.notEqual(r.exit_code, 0);
      assert.ok(sbx.denied(r));
      assert.equal(existsSync(target), false);
      assert.equal(readFileSync(join(ws, "in.txt"), "utf8"), "inside\n");
      const want = { file_system: { write: [out] } };
      await srv.applyGrant(s, want, want, { scope: "turn" });
      r = (await srv.exec(s, turn, "c2", req)) as sbx.ExecResult;
      assert.equal(r.exit_code, 0);
      assert.equal(readFileSync(target, "utf8"), "out\n");
      await srv.endTurn(s, turn);
      rmSync(target);
      r = (await srv.exec(s, await srv.beginTurn(s), "c3", req)) as sbx.ExecResult;
      assert.ok(sbx.denied(r));
      assert.equal(existsSync(target), false);
    } finally {
      assert.equal(await srv.close(), 0);
    }
  });

  it("streams output, makes fs changes, runs calls concurrently", async () => {
    const ws = tempDir("sbx-tsserve-");
    const srv = await sbx.Server.start({ sbx: bin, args: ["--ephemeral"] });
    try {
      const s = await srv.openSession(ws, { preset: "auto" });
      const turn = await srv.beginTurn(s);
      const events: Record<string, unknown>[] = [];
      const r = (await srv.exec(s, turn, "c1", { command: ["sh", "-c", "echo one; echo two >&2"], cwd: ws }, (e) => events.push(e))) as sbx.ExecResult;
      assert.equal(r.exit_code, 0);
      const got = events.filter((e) => e.event === "output").map((e) => `${e.stream}:${e.data}`).sort();
      assert.deepEqual(got, ["stderr:two\n", "stdout:one\n"]);
      const f = (await srv.exec(s, turn, "c2", { fs: { op: "write", path: "notes.txt", content: "hi\n" }, cwd: ws })) as sbx.FsResult;
      assert.equal(f.ok, true);
      assert.equal(readFileSync(join(ws, "notes.txt"), "utf8"), "hi\n");
      const rs = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => srv.exec(s, turn, `p${i}`, { command: ["sh", "-c", `echo ${i}`], cwd: ws })));
      assert.deepEqual(rs.map((x) => (x as sbx.ExecResult).stdout), ["0\n", "1\n", "2\n", "3\n", "4\n", "5\n"]);
    } finally {
      await srv.close();
    }
  });

  it("rejects with typed ServerErrors", async () => {
    const ws = tempDir("sbx-tsserve-");
    const srv = await sbx.Server.start({ sbx: bin, args: ["--ephemeral"] });
    try {
      await assert.rejects(srv.beginTurn("nope"), (e: unknown) => e instanceof sbx.ServerError && e.kind === "unknown_session");
      const s = await srv.openSession(ws, { preset: "auto" });
      await assert.rejects(srv.exec(s, "t-none", "c1", { command: ["true"], cwd: ws }), (e: unknown) => e instanceof sbx.ServerError && e.kind === "no_open_turn");
      const turn = await srv.beginTurn(s);
      const bad = { command: ["true"], cwd: ws, SANDBOX_MODE: "danger-full-access" } as unknown as sbx.ExecRequest;
      await assert.rejects(srv.exec(s, turn, "c2", bad), (e: unknown) => e instanceof sbx.ServerError && e.kind === "invalid_params");
      const esc: sbx.ExecRequest = { command: ["true"], cwd: ws, sandbox_permissions: "with_additional_permissions", justification: "test", additional_permissions: { network: { enabled: true } } };
      await assert.rejects(srv.exec(s, turn, "c3", esc), (e: unknown) => e instanceof sbx.ServerError && e.kind === "denied" && e.outcome === "unavailable");
    } finally {
      await srv.close();
    }
    await assert.rejects(srv.openSession(ws), (e: unknown) => e instanceof sbx.ProtocolError);
  });

  it("closes a session", async () => {
    const ws = tempDir("sbx-tsserve-");
    const srv = await sbx.Server.start({ sbx: bin, args: ["--ephemeral"] });
    try {
      const s = await srv.openSession(ws, { preset: "auto" });
      await srv.beginTurn(s);
      assert.equal(await srv.closeSession(s), undefined);
      await assert.rejects(srv.setPreset(s, "auto"), (e: unknown) => e instanceof sbx.ServerError && e.kind === "unknown_session");
      await assert.rejects(srv.closeSession(s), (e: unknown) => e instanceof sbx.ServerError && e.kind === "unknown_session");
      await assert.rejects(srv.closeSession(""), (e: unknown) => e instanceof sbx.ServerError && e.kind === "invalid_params");
    } finally {
      await srv.close();
    }
  });

  for (const [answer, runs] of [["allowed-once", true], ["rejected", false], ["yes", false]] as const) {
    it(`answers approvals with onApproval: ${answer}`, async () => {
      const ws = tempDir("sbx-tsserve-");
      const out = tempDir("sbx-tsserve-out-", "/var/tmp", 0o777);
      const asked: sbx.ApprovalQuestion[] = [];
      const srv = await sbx.Server.start({ sbx: bin, args: ["--ephemeral"], onApproval: (q) => { asked.push(q); return answer; } });
      const target = join(out, "f");
      try {
        const s = await srv.openSession(ws, { preset: "auto" });
        const turn = await srv.beginTurn(s);
        const req: sbx.ExecRequest = { command: ["touch", target], cwd: ws, sandbox_permissions: "with_additional_permissions", justification: "write the build output", additional_permissions: { file_system: { write: [out] } } };
        if (runs) {
          const r = (await srv.exec(s, turn, "c1", req)) as sbx.ExecResult;
          assert.equal(r.exit_code, 0);
        } else {
          await assert.rejects(srv.exec(s, turn, "c1", req), (e: unknown) => e instanceof sbx.ServerError && e.kind === "denied" && e.outcome === "rejected");
        }
      } finally {
        await srv.close();
      }
      assert.equal(asked.length, 1);
      assert.equal(asked[0].call_id, "c1");
      assert.deepEqual(asked[0].command, ["touch", target]);
      assert.equal(existsSync(target), runs);
    });
  }
});
