// A client of `sbx serve`: one long-lived server process, JSON-RPC 2.0 over
// its stdin and stdout (docs/serve.md), many calls without a start each.
//
//   const srv = await Server.start();
//   const s = await srv.openSession("/src", { preset: "auto" });
//   const turn = await srv.beginTurn(s);
//   const r = await srv.exec(s, turn, "c1", { command: ["make", "test"], cwd: "/src" });
//   await srv.close();

import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createInterface } from "node:readline";

import { findBinary } from "./client.js";
import { ProtocolError, SbxError } from "./errors.js";
import type { ErrorDetail, ExecRequest, ExecResult, FsResult, Profile } from "./types.js";

/**
 * A JSON-RPC error of sbx serve: `code`, `kind` (its `data.kind`:
 * unknown_session, no_open_turn, denied, invalid_params, ...; docs/serve.md
 * "Errors") and the whole `data`.
 */
export class ServerError extends SbxError {
  readonly code: number;
  readonly data: Record<string, unknown>;
  constructor(code: number, message: string, data: Record<string, unknown> | undefined) {
    const d = data ?? {};
    super(message, { ...(d as object), kind: String(d.kind ?? ""), message } as ErrorDetail, d);
    this.code = code;
    this.data = d;
  }
  get field(): string | undefined {
    return typeof this.data.field === "string" ? this.data.field : undefined;
  }
  get outcome(): string | undefined {
    return typeof this.data.outcome === "string" ? this.data.outcome : undefined;
  }
}

/** What approval/requested carries (docs/serve.md "Answerers"). */
export interface ApprovalQuestion {
  session_id: string;
  approval_id: string;
  tool_name: string;
  reason: string;
  call_id?: string;
  command?: string[];
  /** The rest of the one question every answerer gets (docs/json.md "Approver request"). */
  tool?: string;
  justification?: string;
  cwd?: string;
  standing_mode?: string;
  target_mode?: string;
  additional_permissions?: Record<string, unknown>;
  new_permissions?: Record<string, unknown>;
  merged_permissions?: Record<string, unknown>;
  cap_add?: string[];
  environment_id?: string;
  turn_id?: string;
  acp_session_id?: string;
}

export interface ServerOptions {
  /** The sbx binary; default $SBX, else `sbx` on PATH. */
  sbx?: string;
  /** Extra flags of sbx serve, e.g. ["--ephemeral"]. */
  args?: string[];
  /**
   * Answers the server's approvals (this client then declares `approvals` at
   * initialize): "allowed-once" or "rejected"; anything else, or a throw,
   * answers "rejected".
   */
  onApproval?: (q: ApprovalQuestion) => Promise<string> | string;
}

type Pending = { resolve: (v: unknown) => void; reject: (e: Error) => void };

export class Server {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly pending = new Map<number, Pending>();
  private readonly outputs = new Map<string, (event: Record<string, unknown>) => void>();
  private nextId = 1;
  private closed = false;
  private readonly exited: Promise<number | null>;
  /** initialize's result. */
  info: Record<string, unknown> = {};

  private constructor(private readonly opts: ServerOptions) {
    this.child = spawn(findBinary(opts.sbx), ["serve", ...(opts.args ?? [])], { stdio: ["pipe", "pipe", "pipe"] });
    // The server's stderr (warnings, refused peers) goes to this process's.
    this.child.stderr.pipe(process.stderr);
    this.exited = new Promise((res) => this.child.on("close", (code) => res(code)));
    this.child.stdin.on("error", () => {});
    const lines = createInterface({ input: this.child.stdout });
    lines.on("line", (line) => this.onLine(line));
    lines.on("close", () => {
      this.closed = true;
      for (const p of this.pending.values()) p.reject(new ProtocolError("sbx serve exited before it answered", null, ""));
      this.pending.clear();
    });
  }

  /** start runs sbx serve and initializes it. */
  static async start(opts: ServerOptions = {}): Promise<Server> {
    const srv = new Server(opts);
    srv.info = (await srv.request("initialize", opts.onApproval ? { capabilities: { approvals: true } } : {})) as Record<string, unknown>;
    return srv;
  }

  private send(msg: Record<string, unknown>): void {
    if (this.closed) throw new ProtocolError("sbx serve: the connection is closed", null, "");
    this.child.stdin.write(JSON.stringify(msg) + "\n");
  }

  private onLine(line: string): void {
    let msg: Record<string, unknown>;
    try {
      msg = JSON.parse(line);
    } catch {
      return;
    }
    if (typeof msg !== "object" || msg === null) return;
    if ("id" in msg && ("result" in msg || "error" in msg)) {
      const p = this.pending.get(msg.id as number);
      if (!p) return;
      this.pending.delete(msg.id as number);
      if ("error" in msg) {
        const e = (msg.error ?? {}) as { code?: number; message?: string; data?: Record<string, unknown> };
        p.reject(new ServerError(e.code ?? 0, e.message ?? "", e.data));
      } else {
        p.resolve(msg.result);
      }
    } else if (msg.method === "approval/requested" && "id" in msg && this.opts.onApproval) {
      void this.answer(msg.id, (msg.params ?? {}) as ApprovalQuestion);
    } else if (msg.method === "exec/output") {
      const params = (msg.params ?? {}) as Record<string, unknown>;
      this.outputs.get(params.call_id as string)?.(params);
    }
  }

  private async answer(rpcId: unknown, q: ApprovalQuestion): Promise<void> {
    let outcome = "rejected";
    try {
      const got = await this.opts.onApproval!(q);
      if (got === "allowed-once" || got === "rejected") outcome = got;
    } catch {
      outcome = "rejected";
    }
    try {
      this.send({ jsonrpc: "2.0", id: rpcId, result: { session_id: q.session_id, approval_id: q.approval_id, outcome } });
    } catch {
      // the server went away: nothing to answer
    }
  }

  /** request sends one request; an error response rejects with ServerError. */
  request(method: string, params: unknown = null): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      try {
        this.send({ jsonrpc: "2.0", id, method, params });
      } catch (e) {
        this.pending.delete(id);
        reject(e as Error);
      }
    });
  }

  async openSession(cwd: string, opts: { session_id?: string; preset?: string; sandbox_mode?: string; approval_policy?: string; environment_id?: string; guard?: string; acp_session_id?: string } = {}): Promise<string> {
    const r = (await this.request("session/open", { cwd, ...opts })) as { session_id: string };
    return r.session_id;
  }

  setPreset(sessionId: string, key: string): Promise<unknown> {
    return this.request("session/set_preset", { session_id: sessionId, key });
  }

  /**
   * closeSession closes the session for good: its running calls are killed, its pending approvals
   * settle cancelled, its turn ends; afterwards its id is unknown_session (docs/serve.md, "Closing a
   * session").
   */
  async closeSession(sessionId: string): Promise<void> {
    await this.request("session/close", { session_id: sessionId });
  }

  async beginTurn(sessionId: string): Promise<string> {
    return ((await this.request("turn/begin", { session_id: sessionId })) as { turn_id: string }).turn_id;
  }

  async endTurn(sessionId: string, turnId: string): Promise<void> {
    await this.request("turn/end", { session_id: sessionId, turn_id: turnId });
  }

  /** applyGrant stores what the user granted of a request_permissions request. */
  applyGrant(sessionId: string, requested: Profile, granted: Profile, opts: { scope?: "turn" | "session"; environment_id?: string; strict_auto_review?: boolean } = {}): Promise<unknown> {
    const response: Record<string, unknown> = { granted, scope: opts.scope ?? "turn" };
    if (opts.strict_auto_review) response.strict_auto_review = true;
    const params: Record<string, unknown> = { session_id: sessionId, requested, response };
    if (opts.environment_id !== undefined) params.environment_id = opts.environment_id;
    return this.request("grants/apply", params);
  }

  /**
   * exec runs one call of the turn, its output streamed to onOutput (one
   * event each) when given. A refused or unapproved call rejects with
   * ServerError (invalid_params, denied, cancelled, ...).
   */
  async exec(sessionId: string, turnId: string, callId: string, request: ExecRequest, onOutput?: (event: Record<string, unknown>) => void): Promise<ExecResult | FsResult> {
    const params: Record<string, unknown> = { ...request, session_id: sessionId, turn_id: turnId, call_id: callId };
    if (onOutput) {
      params.stream = true;
      this.outputs.set(callId, onOutput);
    }
    try {
      return (await this.request("exec", params)) as ExecResult | FsResult;
    } finally {
      this.outputs.delete(callId);
    }
  }

  async cancel(callId: string): Promise<boolean> {
    return ((await this.request("exec/cancel", { call_id: callId })) as { cancelled: boolean }).cancelled;
  }

  /** close sends shutdown and exit and resolves to the server's exit status. */
  async close(): Promise<number | null> {
    if (!this.closed) {
      try {
        await this.request("shutdown");
        this.send({ jsonrpc: "2.0", method: "exit" });
      } catch {
        // already gone
      }
      this.closed = true;
      this.child.stdin.end();
    }
    return this.exited;
  }
}
