// A client of `sbx serve`: one long-lived server process, JSON-RPC 2.0 over
// its stdin and stdout (docs/serve.md), many calls without a start each.
//
//   const srv = await Server.start();
//   const s = await srv.openSession("/src", { preset: "auto" });
//   const turn = await srv.beginTurn(s);
//   const r = await srv.exec(s, turn, "c1", { command: ["make", "test"], cwd: "/src" });
//   await srv.close();
//
// Server.connect(path) speaks to `sbx serve --listen path` instead, and picks
// its sessions up again after it restarts (resume).

import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createConnection, type Socket } from "node:net";
import { createInterface } from "node:readline";

import { findBinary } from "./client.js";
import { ConnectionLostError, ProtocolError, RequestTimeoutError, SbxError } from "./errors.js";
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

/** CallStatus is call/status's result (docs/serve.md). */
export interface CallStatus {
  session_id: string;
  call_id: string;
  status: "running" | "finished" | "lost" | "started" | "unknown";
  outcome?: string;
  exit_code?: number;
  error?: string;
}

export interface ServerOptions {
  /** The sbx binary; default $SBX, else `sbx` on PATH. */
  sbx?: string;
  /** Extra flags of sbx serve, e.g. ["--ephemeral"]. */
  args?: string[];
  /**
   * Bounds every request, in milliseconds (exec takes its own): one not answered in time rejects
   * with RequestTimeoutError, and the server is asked to cancel it. Default: none.
   */
  timeoutMs?: number;
  /**
   * Answers the server's approvals (this client then declares `approvals` at
   * initialize): "allowed-once" or "rejected"; anything else, or a throw,
   * answers "rejected".
   */
  onApproval?: (q: ApprovalQuestion) => Promise<string> | string;
}

export interface ConnectOptions extends Omit<ServerOptions, "sbx" | "args"> {
  /** How long a reconnect waits for a restarted server's socket, in milliseconds (default 30000). */
  reconnectWaitMs?: number;
}

type Pending = { resolve: (v: unknown) => void; reject: (e: Error) => void; method: string; callId?: string };

/** One connection: a process's pipes or a unix socket, with its own requests in flight. */
class Link {
  readonly pending = new Map<number, Pending>();
  closed = false;
  constructor(readonly write: (line: string) => void, readonly end: () => void) {}
}

/**
 * dial connects to the socket at path, retrying for waitMs while it is missing or refuses (a server
 * restarting binds it anew).
 *
 * IMPORTANT: the server is whoever listens at path: the server checks its peer, this client does
 * not check the server. The socket's directory must be one only its user can write
 * (docs/security.md, known gaps).
 */
async function dial(path: string, waitMs: number): Promise<Socket> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      return await new Promise<Socket>((resolve, reject) => {
        const sock = createConnection(path);
        sock.once("connect", () => {
          sock.off("error", reject);
          resolve(sock);
        });
        sock.once("error", reject);
      });
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if ((code !== "ENOENT" && code !== "ECONNREFUSED") || Date.now() >= deadline) {
        throw new ProtocolError(`sbx serve: connect ${path}: ${(e as Error).message}`, null, "");
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

export class Server {
  private child?: ChildProcessWithoutNullStreams;
  private link!: Link;
  private readonly outputs = new Map<string, (event: Record<string, unknown>) => void>();
  private readonly turns = new Map<string, string>();
  private nextId = 1;
  private shut = false;
  private exited: Promise<number | null> = Promise.resolve(0);
  private path?: string;
  private reconnectWaitMs = 30000;
  private reconnecting?: Promise<void>;
  /** initialize's result. */
  info: Record<string, unknown> = {};
  /** The call ids of the exec requests a lost connection took with it, oldest first. */
  readonly lostCalls: string[] = [];

  private constructor(private readonly opts: ServerOptions) {}

  /** start runs sbx serve and initializes it. */
  static async start(opts: ServerOptions = {}): Promise<Server> {
    const srv = new Server(opts);
    const child = spawn(findBinary(opts.sbx), ["serve", ...(opts.args ?? [])], { stdio: ["pipe", "pipe", "pipe"] });
    srv.child = child;
    // The server's stderr (warnings, refused peers) goes to this process's.
    child.stderr.pipe(process.stderr);
    srv.exited = new Promise((res) => child.on("close", (code) => res(code)));
    child.stdin.on("error", () => {});
    srv.link = srv.attach(child.stdout, (line) => child.stdin.write(line), () => child.stdin.end());
    await srv.initialize();
    return srv;
  }

  /**
   * connect speaks to `sbx serve --listen path` and initializes. Closing it closes the connection,
   * not the server. When the connection ends (the server restarted), the requests waiting on it
   * reject with ConnectionLostError and the next request connects anew, waiting up to
   * reconnectWaitMs for the socket; resume(sessionId) then picks a session up from the server's
   * durable log.
   */
  static async connect(path: string, opts: ConnectOptions = {}): Promise<Server> {
    const srv = new Server(opts);
    srv.path = path;
    srv.reconnectWaitMs = opts.reconnectWaitMs ?? 30000;
    srv.link = srv.attachSocket(await dial(path, 0));
    await srv.initialize();
    return srv;
  }

  private attach(input: NodeJS.ReadableStream, write: (line: string) => void, end: () => void): Link {
    const link = new Link(write, end);
    const lines = createInterface({ input });
    lines.on("line", (line) => this.onLine(link, line));
    // A socket reset by its peer closes without an end: either ends the link.
    input.on("close", () => lines.close());
    lines.on("close", () => {
      // The connection ended: every request still waiting on it fails, and
      // the calls among them are lost (a restarted server records them so).
      link.closed = true;
      for (const p of link.pending.values()) {
        if (p.callId !== undefined) this.lostCalls.push(p.callId);
        const what = this.child ? `sbx serve exited before it answered ${p.method}` : `sbx serve: the connection ended before the answer to ${p.method}`;
        p.reject(new ConnectionLostError(what, p.method, p.callId));
      }
      link.pending.clear();
    });
    return link;
  }

  private attachSocket(sock: Socket): Link {
    sock.on("error", () => {}); // the end of the stream reports it: readline closes
    return this.attach(sock, (line) => sock.write(line), () => sock.destroy());
  }

  private async initialize(): Promise<void> {
    this.info = (await this.request("initialize", this.opts.onApproval ? { capabilities: { approvals: true } } : {})) as Record<string, unknown>;
  }

  private send(link: Link, msg: Record<string, unknown>): void {
    if (link.closed) throw new ConnectionLostError("sbx serve: the connection is closed", String(msg.method ?? ""));
    link.write(JSON.stringify(msg) + "\n");
  }

  private onLine(link: Link, line: string): void {
    let msg: Record<string, unknown>;
    try {
      msg = JSON.parse(line);
    } catch {
      return;
    }
    if (typeof msg !== "object" || msg === null) return;
    if ("id" in msg && ("result" in msg || "error" in msg)) {
      const p = link.pending.get(msg.id as number);
      if (!p) return;
      link.pending.delete(msg.id as number);
      if ("error" in msg) {
        const e = (msg.error ?? {}) as { code?: number; message?: string; data?: Record<string, unknown> };
        p.reject(new ServerError(e.code ?? 0, e.message ?? "", e.data));
      } else {
        p.resolve(msg.result);
      }
    } else if (msg.method === "approval/requested" && "id" in msg && this.opts.onApproval) {
      void this.answer(link, msg.id, (msg.params ?? {}) as ApprovalQuestion);
    } else if (msg.method === "exec/output") {
      const params = (msg.params ?? {}) as Record<string, unknown>;
      this.outputs.get(params.call_id as string)?.(params);
    }
  }

  private async answer(link: Link, rpcId: unknown, q: ApprovalQuestion): Promise<void> {
    let outcome = "rejected";
    try {
      const got = await this.opts.onApproval!(q);
      if (got === "allowed-once" || got === "rejected") outcome = got;
    } catch {
      outcome = "rejected";
    }
    try {
      this.send(link, { jsonrpc: "2.0", id: rpcId, result: { session_id: q.session_id, approval_id: q.approval_id, outcome } });
    } catch {
      // the server went away: nothing to answer
    }
  }

  /**
   * reconnect connects anew to the socket (waiting up to reconnectWaitMs for a restarted server)
   * and initializes again. The old connection's waiting requests have rejected with
   * ConnectionLostError; lostCalls names their calls. Only for a client made by connect.
   */
  async reconnect(): Promise<void> {
    if (this.path === undefined) throw new ProtocolError("sbx serve: reconnect: this client spawned its server (use Server.connect)", null, "");
    this.link.end();
    this.link = this.attachSocket(await dial(this.path, this.reconnectWaitMs));
    await this.initialize();
  }

  /**
   * request sends one request; an error response rejects with ServerError, no answer within
   * timeoutMs (default: the client's) with RequestTimeoutError, a connection that ended first with
   * ConnectionLostError. A client made by connect whose connection had ended connects anew first.
   */
  async request(method: string, params: unknown = null, timeoutMs?: number): Promise<unknown> {
    if (this.link.closed && this.path !== undefined && !this.shut) {
      // One reconnect for all the requests that found the connection gone.
      this.reconnecting ??= this.reconnect().finally(() => (this.reconnecting = undefined));
      await this.reconnecting;
    }
    const link = this.link;
    const id = this.nextId++;
    const callId = method === "exec" && params && typeof params === "object" ? ((params as { call_id?: string }).call_id) : undefined;
    const limit = timeoutMs ?? this.opts.timeoutMs;
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const done = () => timer !== undefined && clearTimeout(timer);
      link.pending.set(id, { resolve: (v) => (done(), resolve(v)), reject: (e) => (done(), reject(e)), method, callId });
      try {
        this.send(link, { jsonrpc: "2.0", id, method, params });
      } catch (e) {
        link.pending.delete(id);
        done();
        reject(e as Error);
        return;
      }
      if (limit !== undefined) {
        timer = setTimeout(() => {
          if (!link.pending.delete(id)) return;
          // Whatever the server is doing for it would go on: ask it to stop
          // (an exec not started yet is not run, a running one is killed).
          try {
            this.send(link, { jsonrpc: "2.0", method: "$/cancelRequest", params: { id } });
          } catch {
            // the connection is gone: so is the request
          }
          reject(new RequestTimeoutError(`sbx serve: no response to ${method} in time`, method));
        }, limit);
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

  /** permissions is the projection a client draws a permission selector from (session/permissions). */
  async permissions(sessionId: string): Promise<Record<string, unknown>> {
    return (await this.request("session/permissions", { session_id: sessionId })) as Record<string, unknown>;
  }

  async beginTurn(sessionId: string): Promise<string> {
    const turn = ((await this.request("turn/begin", { session_id: sessionId })) as { turn_id: string }).turn_id;
    this.turns.set(sessionId, turn);
    return turn;
  }

  /**
   * resume picks a session up again after the connection ended and resolves to the turn to go on
   * in. A restarted server rebuilt the session from its durable log (its grants included), ended
   * its open turn and recorded the calls it found unfinished `lost`: a new turn begins. A server
   * that kept running kept the turn: it goes on. A session the server does not know (an
   * --ephemeral server restarted, or the session was closed) rejects with ServerError
   * unknown_session.
   */
  async resume(sessionId: string): Promise<string> {
    try {
      return await this.beginTurn(sessionId);
    } catch (e) {
      if (!(e instanceof ServerError) || e.data.kind !== "conflict") throw e;
      // Another client (or this process before a restart) began it: session/permissions names
      // the open turn.
      const known = this.turns.get(sessionId) ?? ((await this.permissions(sessionId)).turn_id as string | undefined);
      if (known === undefined) throw e;
      this.turns.set(sessionId, known);
      return known;
    }
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
  async exec(sessionId: string, turnId: string, callId: string, request: ExecRequest, onOutput?: (event: Record<string, unknown>) => void, timeoutMs?: number): Promise<ExecResult | FsResult> {
    const params: Record<string, unknown> = { ...request, session_id: sessionId, turn_id: turnId, call_id: callId };
    if (onOutput) {
      params.stream = true;
      this.outputs.set(callId, onOutput);
    }
    try {
      return (await this.request("exec", params, timeoutMs)) as ExecResult | FsResult;
    } finally {
      this.outputs.delete(callId);
    }
  }

  /**
   * callStatus says what became of a call of the session (call/status), for a client that lost
   * its answer: running, finished (with its outcome and exit_code), lost (a restarted server found
   * it unfinished), started, or unknown.
   */
  async callStatus(sessionId: string, callId: string): Promise<CallStatus> {
    return (await this.request("call/status", { session_id: sessionId, call_id: callId })) as CallStatus;
  }

  async cancel(callId: string): Promise<boolean> {
    return ((await this.request("exec/cancel", { call_id: callId })) as { cancelled: boolean }).cancelled;
  }

  /**
   * close sends a spawned server shutdown and exit and resolves to its exit status; a client made
   * by connect only closes its connection (the server serves others) and resolves to 0.
   */
  async close(): Promise<number | null> {
    const link = this.link;
    if (!this.child) {
      this.shut = true;
      link.closed = true;
      link.end();
      return 0;
    }
    if (!link.closed && !this.shut) {
      try {
        await this.request("shutdown");
        this.send(link, { jsonrpc: "2.0", method: "exit" });
      } catch {
        // already gone
      }
    }
    this.shut = true;
    link.closed = true;
    link.end();
    return this.exited;
  }
}
