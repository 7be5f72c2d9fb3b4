// Running the sbx binary: one `sbx exec` process per call.

import { spawn } from "node:child_process";
import { accessSync, constants, statSync } from "node:fs";
import { delimiter, join, sep } from "node:path";

import { BinaryNotFoundError, ExecFailedError, ProtocolError, errorFor } from "./errors.js";
import type { ErrorDetail, ExecRequest, ExecResult, FsResult } from "./types.js";

/** sbx exec's status for a refusal (nothing ran); 0 means a result. */
export const EXIT_REFUSED = 125;

export interface Options {
  /** The sbx binary; default $SBX, else `sbx` on PATH. */
  sbx?: string;
  /** Kill sbx after this many ms (use the request's timeout_ms to have sbx kill the command and report). */
  timeoutMs?: number;
}

function executable(p: string): boolean {
  try {
    accessSync(p, constants.X_OK);
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

/** findBinary returns the sbx to run: `sbx` if given, else $SBX, else `sbx` on PATH. */
export function findBinary(sbx?: string): string {
  const candidate = sbx || process.env.SBX || "sbx";
  if (candidate.includes(sep)) {
    if (executable(candidate)) return candidate;
  } else {
    for (const dir of (process.env.PATH ?? "").split(delimiter)) {
      if (dir && executable(join(dir, candidate))) return join(dir, candidate);
    }
  }
  throw new BinaryNotFoundError(`sbx binary not found: ${JSON.stringify(candidate)} (pass sbx, set $SBX, or put sbx on PATH)`);
}

function run(request: ExecRequest, opts: Options): Promise<Record<string, unknown>> {
  if (request.stream) throw new TypeError("stream: not supported by this client (it reads one result object)");
  const bin = findBinary(opts.sbx);
  return new Promise((resolve, reject) => {
    const child = spawn(bin, ["exec"], { stdio: ["pipe", "pipe", "pipe"], timeout: opts.timeoutMs });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (b: Buffer) => out.push(b));
    child.stderr.on("data", (b: Buffer) => err.push(b));
    child.on("error", reject);
    child.on("close", (code) => {
      const stderr = Buffer.concat(err).toString();
      let obj: unknown;
      try {
        obj = JSON.parse(Buffer.concat(out).toString());
      } catch {
        reject(new ProtocolError(`sbx exec exited ${code} without a JSON result: ${stderr.trim() || "(no stderr)"}`, code, stderr));
        return;
      }
      if (typeof obj !== "object" || obj === null || Array.isArray(obj)) {
        reject(new ProtocolError(`sbx exec printed no object`, code, stderr));
        return;
      }
      const o = obj as Record<string, unknown>;
      if (code === EXIT_REFUSED || (!("exit_code" in o) && "error_detail" in o)) {
        const d = o.error_detail as ErrorDetail | undefined;
        if (!d || typeof d.kind !== "string") {
          reject(new ProtocolError(`sbx exec exited ${code} without error_detail: ${stderr.trim()}`, code, stderr));
          return;
        }
        reject(errorFor(d, o));
        return;
      }
      if (code !== 0) {
        reject(new ProtocolError(`sbx exec exited ${code}: ${stderr.trim()}`, code, stderr));
        return;
      }
      resolve(o);
    });
    child.stdin.on("error", () => {}); // sbx may exit before reading it all; close reports
    child.stdin.end(JSON.stringify(request));
  });
}

/**
 * exec runs a request with `command` or `shell` under sbx. It resolves to the
 * result whatever the command's status and whatever the sandbox denied
 * (`denials`, `retry`); it rejects with the typed error of a refusal
 * (InvalidRequestError, DeniedByPolicyError, UnsupportedError, InternalError),
 * ExecFailedError when the command could not start, ProtocolError when sbx
 * printed no result.
 */
export async function exec(request: ExecRequest, opts: Options = {}): Promise<ExecResult> {
  if (request.fs !== undefined) throw new TypeError("fs: use fs() for a file-system change");
  const r = (await run(request, opts)) as unknown as ExecResult;
  if (r.error_detail?.kind === "exec_failed") throw new ExecFailedError(r.error_detail.message, r.error_detail, r);
  return r;
}

/** fs makes the change of `request.fs` under sbx's sandbox; refusals reject as for exec. */
export async function fs(request: ExecRequest, opts: Options = {}): Promise<FsResult> {
  if (request.fs === undefined) throw new TypeError("fs: the request has no fs change (use exec() for a command)");
  const r = await run(request, opts);
  if (!("op" in r)) throw new ProtocolError("sbx exec printed no fs result (no op)", 0, "");
  return r as unknown as FsResult;
}
