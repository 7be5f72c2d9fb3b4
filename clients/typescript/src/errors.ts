// One error class per error_detail.kind (docs/json.md "Error object"). A
// refusal (exit 125: nothing ran) throws the class of its kind; a command
// that could not start throws ExecFailedError. A denial is not an error: the
// result reports it, with the retry.

import type { ErrorDetail, ExecResult } from "./types.js";

export class SbxError extends Error {
  readonly kind: string | undefined;
  /** The error object sbx printed, when it printed one. */
  readonly detail: ErrorDetail | undefined;
  /** The whole object sbx printed. */
  readonly raw: unknown;
  constructor(message: string, detail?: ErrorDetail, raw?: unknown) {
    super(message);
    this.name = new.target.name;
    this.kind = detail?.kind;
    this.detail = detail;
    this.raw = raw;
  }
}

/** The request is bad; `field` names the field at fault when sbx knows it. */
export class InvalidRequestError extends SbxError {
  get field(): string | undefined {
    return this.detail?.field;
  }
}

/** The escalation was not approved: `outcome` rejected, cancelled, unavailable or never. */
export class DeniedByPolicyError extends SbxError {
  get outcome(): string | undefined {
    return this.detail?.outcome;
  }
}

/** A `require`d feature cannot be enforced on this machine. */
export class UnsupportedError extends SbxError {
  get feature(): string | undefined {
    return this.detail?.feature;
  }
}

/** The command could not be started (126, 127); `result` is the ExecResult. */
export class ExecFailedError extends SbxError {
  constructor(message: string, detail: ErrorDetail, readonly result: ExecResult) {
    super(message, detail, result);
  }
  get errno(): string | undefined {
    return this.detail?.errno;
  }
}

/** sbx itself failed (a pipe, the fs helper). */
export class InternalError extends SbxError {}

/** sbx printed no contract JSON (crashed, killed, or not sbx). */
export class ProtocolError extends SbxError {
  constructor(message: string, readonly exitCode: number | null, readonly stderr: string) {
    super(message);
  }
}

/**
 * sbx serve did not answer a request within its timeout; the client asked the
 * server to cancel it ($/cancelRequest). `method` names the request.
 */
export class RequestTimeoutError extends ProtocolError {
  constructor(message: string, readonly method: string) {
    super(message, null, "");
  }
}

/**
 * The connection to sbx serve ended before it answered (the server exited or
 * restarted). For an exec, `callId` names the call: a restarted server records
 * it `lost` and never runs it again by itself; ask again in a new turn.
 */
export class ConnectionLostError extends ProtocolError {
  constructor(message: string, readonly method: string, readonly callId?: string) {
    super(message, null, "");
  }
}

/** No sbx binary: not given, not in $SBX, not on PATH. */
export class BinaryNotFoundError extends SbxError {}

const byKind: Record<string, new (m: string, d?: ErrorDetail, raw?: unknown) => SbxError> = {
  invalid_request: InvalidRequestError,
  denied_by_policy: DeniedByPolicyError,
  unsupported: UnsupportedError,
  internal: InternalError,
};

/** The error kinds thrown as refusals, each by its class (exec_failed comes with a result). */
export const refusalKinds = Object.keys(byKind);

/** errorFor is the typed error of a refusal; an unknown (newer) kind is a plain SbxError. */
export function errorFor(detail: ErrorDetail, raw: unknown): SbxError {
  const C = byKind[detail.kind] ?? SbxError;
  return new C(detail.message, detail, raw);
}
