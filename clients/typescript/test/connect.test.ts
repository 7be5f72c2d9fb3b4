// Server.connect against the real `sbx serve --listen`: calls and
// permissions() over the socket, a server restart that loses a running call
// (the client says which, the server's durable log says `lost`), the session
// picked up again in a new turn with its grant, and the request timeout.

import assert from "node:assert/strict";
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";

import * as sbx from "../src/index.js";
import { sbxBinary, tempDir } from "./support.js";

let bin: string;
before(() => {
  bin = sbxBinary();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A server on a socket of its own directory, with a state directory that outlives it. */
class Listening {
  readonly ws: string;
  readonly state: string;
  readonly sock: string;
  proc?: ChildProcess;
  constructor() {
    const tmp = tempDir("sbx-tsconnect-");
    this.ws = join(tmp, "ws");
    this.state = join(tmp, "state");
    mkdirSync(this.ws, { mode: 0o755 });
    mkdirSync(this.state, { mode: 0o700 });
    mkdirSync(join(tmp, "run"), { mode: 0o700 });
    this.sock = join(tmp, "run", "sbx.sock");
  }
  async start(): Promise<void> {
    const proc = spawn(bin, ["serve", "--listen", this.sock, "--state-dir", this.state], { stdio: ["ignore", "inherit", "inherit"] });
    this.proc = proc;
    const deadline = Date.now() + 30000;
    while (!existsSync(this.sock)) {
      if (proc.exitCode !== null || Date.now() > deadline) throw new Error(`sbx serve --listen did not make ${this.sock}`);
      await sleep(50);
    }
  }
  async stop(signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
    const proc = this.proc;
    this.proc = undefined;
    if (proc && proc.exitCode === null && proc.signalCode === null) {
      const gone = new Promise((r) => proc.once("exit", r));
      proc.kill(signal);
      await gone;
    }
    // A SIGKILLed server leaves its socket file: the next one is not bound over it.
    rmSync(this.sock, { force: true });
  }
}

describe("Server.connect", () => {
  const servers: Listening[] = [];
  after(async () => {
    for (const l of servers) await l.stop();
  });
  async function listening(): Promise<Listening> {
    const l = new Listening();
    servers.push(l);
    await l.start();
    return l;
  }

  it("runs calls and permissions() over the socket; close leaves the server serving", async () => {
    const l = await listening();
    const srv = await sbx.Server.connect(l.sock, { timeoutMs: 60000 });
    assert.equal((srv.info as { protocol_version: string }).protocol_version, "1");
    const s = await srv.openSession(l.ws, { session_id: "s1", preset: "auto" });
    const perms = (await srv.permissions(s)) as { current: { session_id: string; preset: string } };
    assert.deepEqual([perms.current.session_id, perms.current.preset], ["s1", "auto"]);
    const r = (await srv.exec(s, await srv.beginTurn(s), "c1", { shell: { kind: "sh", script: "echo hi" }, cwd: l.ws })) as sbx.ExecResult;
    assert.deepEqual([r.exit_code, r.stdout], [0, "hi\n"]);
    assert.equal(await srv.close(), 0);
    const other = await sbx.Server.connect(l.sock);
    assert.equal(((await other.permissions(s)) as { current: { session_id: string } }).current.session_id, "s1");
    await other.close();
  });

  it("loses the running call at a restart, and resumes the session in a new turn with its grant", async () => {
    const l = await listening();
    const srv = await sbx.Server.connect(l.sock, { timeoutMs: 60000, reconnectWaitMs: 30000 });
    const s = await srv.openSession(l.ws, { session_id: "s1", preset: "auto" });
    const turn = await srv.beginTurn(s);
    const outside = tempDir("sbx-tsconnect-out-", "/var/tmp", 0o777);
    await srv.applyGrant(s, { file_system: { write: [outside] } }, { file_system: { write: [outside] } }, { scope: "session" });
    const marker = join(l.ws, "started");
    const long = srv.exec(s, turn, "c-long", { shell: { kind: "sh", script: `touch ${marker}; sleep 60` }, cwd: l.ws }).then(
      () => undefined,
      (e: unknown) => e,
    );
    const deadline = Date.now() + 30000;
    while (!existsSync(marker) && Date.now() < deadline) await sleep(50);
    assert.ok(existsSync(marker), "the long call never started");
    const watcher = await sbx.Server.connect(l.sock);
    assert.equal((await watcher.callStatus(s, "c-long")).status, "running");
    await watcher.close();
    // The server dies with the call running (SIGKILL: no goodbye) and comes
    // back on the same socket and state directory.
    await l.stop("SIGKILL");
    const err = await long;
    assert.ok(err instanceof sbx.ConnectionLostError, String(err));
    assert.equal(err.callId, "c-long");
    assert.deepEqual(srv.lostCalls, ["c-long"]);
    await l.start();
    const turn2 = await srv.resume(s);
    assert.notEqual(turn2, turn);
    await assert.rejects(srv.exec(s, turn, "c-old", { shell: { kind: "sh", script: "true" }, cwd: l.ws }), (e: unknown) => e instanceof sbx.ServerError && e.data.kind === "no_open_turn");
    const r = (await srv.exec(s, turn2, "c-after", { shell: { kind: "sh", script: `echo ok > ${join(outside, "f")}` }, cwd: l.ws })) as sbx.ExecResult;
    assert.equal(r.exit_code, 0);
    assert.equal(sbx.denied(r), false);
    // callStatus says the same as the log: c-long lost, c-after finished.
    assert.equal((await srv.callStatus(s, "c-long")).status, "lost");
    const done = await srv.callStatus(s, "c-after");
    assert.deepEqual([done.status, done.exit_code, done.outcome], ["finished", 0, "exited"]);
    assert.equal((await srv.callStatus(s, "c-never")).status, "unknown");
    // The durable log says what the client was told: c-long was lost.
    const show = execFileSync(bin, ["log", "show", "--json", l.state]).toString();
    assert.match(show, /"call_id":\s*"c-long"[^}]*"outcome":\s*"lost"|"outcome":\s*"lost"[^}]*"call_id":\s*"c-long"/);
    // Without a restart, resume keeps the open turn; an unknown session is refused.
    assert.equal(await srv.resume(s), turn2);
    assert.equal((await srv.permissions(s)).turn_id, turn2);
    // A client that did not begin the turn learns it from session/permissions.
    const other = await sbx.Server.connect(l.sock);
    assert.equal(await other.resume(s), turn2);
    await other.close();
    await assert.rejects(srv.resume("nope"), (e: unknown) => e instanceof sbx.ServerError && e.data.kind === "unknown_session");
    await srv.close();
  });

  it("times a request out and has the server cancel it", async () => {
    const l = await listening();
    const srv = await sbx.Server.connect(l.sock, { timeoutMs: 60000 });
    const s = await srv.openSession(l.ws, { session_id: "s1", preset: "auto" });
    const turn = await srv.beginTurn(s);
    const start = Date.now();
    await assert.rejects(
      srv.exec(s, turn, "c-slow", { shell: { kind: "sh", script: "sleep 60" }, cwd: l.ws }, undefined, 1000),
      (e: unknown) => e instanceof sbx.RequestTimeoutError && e.method === "exec",
    );
    assert.ok(Date.now() - start < 10000);
    // Cancelled: the call id is free again once that call has finished.
    const deadline = Date.now() + 20000;
    for (;;) {
      try {
        const r = (await srv.exec(s, turn, "c-slow", { shell: { kind: "sh", script: "echo again" }, cwd: l.ws })) as sbx.ExecResult;
        assert.equal(r.stdout, "again\n");
        break;
      } catch (e) {
        if (!(e instanceof sbx.ServerError && e.data.kind === "conflict") || Date.now() > deadline) throw e;
        await sleep(100);
      }
    }
    await srv.close();
  });
});
