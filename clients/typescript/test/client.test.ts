// The client against the real sbx binary: denials, both retry paths, and
// the typed errors of bad input.

import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { before, describe, it } from "node:test";

import * as sbx from "../src/index.js";
import { sbxBinary, tempDir } from "./support.js";

let bin: string;
before(() => {
  bin = sbxBinary();
});

// Answers what $ANSWER says and logs the question (docs/json.md "Approver request").
const APPROVER = `
const fs = require("node:fs");
const q = JSON.parse(fs.readFileSync(0, "utf8"));
fs.writeFileSync(process.env.QUESTION_LOG, JSON.stringify(q));
process.stdout.write(JSON.stringify({ outcome: process.env.ANSWER }));
`;

function approver(answer: string): { argv: string[]; log: string } {
  const d = tempDir("sbx-ts-approver-");
  const script = join(d, "approver.cjs");
  writeFileSync(script, APPROVER);
  const log = join(d, "question.json");
  return { argv: ["env", `ANSWER=${answer}`, `QUESTION_LOG=${log}`, process.execPath, script], log };
}

describe("exec", () => {
  it("reports a denial, and the grant retry succeeds", async () => {
    const ws = tempDir("sbx-ts-");
    const target = join(ws, "out.txt");
    const req: sbx.ExecRequest = { command: ["sh", "-c", "echo hi > out.txt"], cwd: ws, sandbox_mode: "read-only" };
    const r = await sbx.exec(req, { sbx: bin });
    assert.notEqual(r.exit_code, 0);
    assert.ok(sbx.denied(r));
    assert.equal(r.denials[0].operation, "create");
    assert.equal(r.denials[0].path, target);
    assert.ok(!existsSync(target), "the denied write happened");
    assert.deepEqual(r.retry?.grant, { file_system: { write: [ws] } });

    const again = await sbx.exec(sbx.withGrant(req, r.retry!.grant!), { sbx: bin });
    assert.equal(again.exit_code, 0, again.stderr);
    assert.deepEqual(again.denials, []);
    assert.equal(again.permissions.via, "grant");
    assert.equal(readFileSync(target, "utf8"), "hi\n");
  });

  it("applies retry.request through an approver; never and rejected are typed refusals", async () => {
    const ws = tempDir("sbx-ts-");
    const r = await sbx.exec({ command: ["sh", "-c", "echo ok > out.txt"], cwd: ws, call_id: "call-1" }, { sbx: bin });
    assert.ok(sbx.denied(r));
    const retry: sbx.ExecRequest = { ...r.retry!.request!, justification: "write the test output" };
    assert.equal(retry.sandbox_permissions, "with_additional_permissions");

    await assert.rejects(sbx.exec(retry, { sbx: bin }), (e: unknown) => {
      assert.ok(e instanceof sbx.DeniedByPolicyError);
      assert.equal(e.outcome, "never");
      return true;
    });
    const no = approver("rejected");
    await assert.rejects(sbx.exec({ ...retry, approval_policy: "on-request", approver: no.argv }, { sbx: bin }), (e: unknown) => {
      assert.ok(e instanceof sbx.DeniedByPolicyError);
      assert.equal(e.outcome, "rejected");
      return true;
    });
    assert.ok(!existsSync(join(ws, "out.txt")));

    const yes = approver("allowed-once");
    const ok = await sbx.exec({ ...retry, approval_policy: "on-request", approver: yes.argv }, { sbx: bin });
    assert.equal(ok.exit_code, 0, ok.stderr);
    assert.equal(ok.permissions.via, "approval");
    const q = JSON.parse(readFileSync(yes.log, "utf8"));
    assert.equal(q.call_id, "call-1");
    assert.equal(q.justification, "write the test output");
  });

  it("rejects bad input with InvalidRequestError naming the field, running nothing", async () => {
    const ws = tempDir("sbx-ts-");
    const marker = join(ws, "ran");
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ cwd: ws, command: ["touch", marker], sandbox_mode: "writable" }, "sandbox_mode"],
      [{ cwd: ws, command: ["touch", marker], SANDBOX_MODE: "danger-full-access" }, "SANDBOX_MODE"],
      [{ cwd: ws, command: ["touch", marker], timeout_ms: -1 }, "timeout_ms"],
      [{ command: ["touch", marker] }, "cwd"],
    ];
    for (const [body, field] of cases) {
      await assert.rejects(sbx.exec(body as unknown as sbx.ExecRequest, { sbx: bin }), (e: unknown) => {
        assert.ok(e instanceof sbx.InvalidRequestError, String(e));
        assert.equal(e.kind, "invalid_request");
        assert.match(e.message, new RegExp(field));
        return true;
      });
      assert.ok(!existsSync(marker), "a refused request ran");
    }
  });

  it("throws ExecFailedError for a command that is not there", async () => {
    const ws = tempDir("sbx-ts-");
    await assert.rejects(sbx.exec({ command: ["no-such-command-sbx"], cwd: ws }, { sbx: bin }), (e: unknown) => {
      assert.ok(e instanceof sbx.ExecFailedError);
      assert.equal(e.errno, "ENOENT");
      assert.equal(e.result.exit_code, 127);
      return true;
    });
  });

  it("throws BinaryNotFoundError and ProtocolError", async () => {
    await assert.rejects(sbx.exec({ command: ["true"], cwd: "/" }, { sbx: "/nonexistent/sbx" }), sbx.BinaryNotFoundError);
    await assert.rejects(sbx.exec({ command: ["true"], cwd: "/" }, { sbx: "/bin/false" }), sbx.ProtocolError);
  });
});

describe("fs", () => {
  it("reports a denied write, and the grant retry writes it", async () => {
    const ws = tempDir("sbx-ts-");
    const outside = tempDir("sbx-ts-outside-", "/var/tmp");
    const target = join(outside, "notes.txt");
    const req: sbx.ExecRequest = { cwd: ws, sandbox_mode: "workspace-write", fs: { op: "write", path: target, content: "hello\n" } };
    const r = await sbx.fs(req, { sbx: bin });
    assert.equal(r.ok, false);
    assert.equal(r.error?.kind, "denied");
    assert.ok(sbx.denied(r));
    assert.ok(!existsSync(target));
    const ok = await sbx.fs(sbx.withGrant(req, r.retry!.grant!), { sbx: bin });
    assert.equal(ok.ok, true, JSON.stringify(ok.error));
    assert.equal(readFileSync(target, "utf8"), "hello\n");
  });

  it("reports an ordinary failure as failed, not denied", async () => {
    const ws = tempDir("sbx-ts-");
    const r = await sbx.fs({ cwd: ws, sandbox_mode: "workspace-write", fs: { op: "remove", path: "missing.txt" } }, { sbx: bin });
    assert.equal(r.ok, false);
    assert.equal(r.error?.kind, "failed");
    assert.ok(!sbx.denied(r));
  });
});

describe("withGrant", () => {
  it("keeps what the grants had and adds no duplicates", () => {
    let req: sbx.ExecRequest = { cwd: "/", command: ["true"] };
    req = sbx.withGrant(req, { file_system: { read: ["/opt"] } }, "session");
    req = sbx.withGrant(req, { file_system: { write: ["/a"] } });
    req = sbx.withGrant(req, { file_system: { write: ["/a", "/b"] }, network: { enabled: true } });
    assert.deepEqual(req.grants, {
      session: { file_system: { read: ["/opt"] } },
      turn: { file_system: { write: ["/a", "/b"] }, network: { enabled: true } },
    });
  });
});
