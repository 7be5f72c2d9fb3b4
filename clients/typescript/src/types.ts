// Types of sbx's JSON contract (docs/json.md, docs/schema/), spelled as on
// the wire. Requests are plain objects: omit a field for its default (sbx
// reads an absent field as its default; the schema does not allow null).
// test/schema.test.ts checks that each interface here names exactly the
// properties of its schema object, so the two cannot drift.

export const SCHEMA_VERSION = "1";

export type SandboxMode = "read-only" | "workspace-write" | "danger-full-access";
export type ApprovalPolicy = "never" | "on-request" | "on-failure" | "untrusted";
export type SandboxPermissions = "use_default" | "with_additional_permissions" | "require_escalated";
export type FsOpName = "write" | "append" | "mkdir" | "remove" | "move" | "copy" | "chmod" | "apply-patch";
export type ErrorKind = "invalid_request" | "denied_by_policy" | "unsupported" | "exec_failed" | "internal" | "denied" | "failed";

export interface NetworkPermission {
  enabled: boolean;
  allowed_domains?: string[];
  denied_domains?: string[];
  allow_private_addresses?: boolean;
}

export interface FileSystemPermissions {
  read?: string[];
  write?: string[];
  // Deny patterns (globs such as "**/.env"): they only narrow.
  deny_read?: string[];
  deny_write?: string[];
}

/** A permission profile. */
export interface Profile {
  network?: NetworkPermission;
  file_system?: FileSystemPermissions;
}

export interface Shell {
  kind: "bash" | "sh" | "zsh" | "pwsh" | "powershell" | "cmd";
  script?: string;
  login?: boolean;
  path?: string;
}

export interface EnvPolicy {
  mode?: "inherit" | "clean" | "allow-list";
  allow?: string[];
}

/** One file-system change; each op takes its own fields (docs/json.md "Fs"). */
export interface FsOp {
  op: FsOpName;
  path?: string;
  dest?: string;
  mode?: string;
  parents?: boolean;
  recursive?: boolean;
  content?: string;
  patch?: string;
}

export interface Limits {
  memory_bytes?: number;
  pids?: number;
  cpus?: number;
}

export interface Pty {
  rows?: number;
  cols?: number;
}

export interface Grants {
  session?: Profile;
  turn?: Profile;
  turn_strict?: boolean;
}

/** The request `sbx exec` reads: `cwd` and exactly one of `command`, `shell`, `fs`. */
export interface ExecRequest {
  cwd: string;
  command?: string[];
  shell?: Shell;
  fs?: FsOp;
  sandbox_mode?: SandboxMode;
  writable_roots?: string[];
  exclude_tmp?: boolean;
  exclude_tmpdir?: boolean;
  read_only?: string[];
  protect?: string[];
  no_default_protect?: boolean;
  network_access?: boolean;
  additional_permissions?: Profile;
  /** HOST:PORT:ADDR pins for sbx's proxy, as `sbx run --resolve`. */
  resolve?: string[];
  /** Tool table rows to opt into (`sbx run --tool`): their caches writable, registries reachable. */
  tools?: string[];
  env_policy?: EnvPolicy;
  env?: Record<string, string>;
  timeout_ms?: number;
  kill_grace_ms?: number;
  limits?: Limits;
  max_output_bytes?: number;
  pty?: Pty;
  stdin?: string;
  stream?: boolean;
  require?: string[];
  cap_add?: string[];
  /** The retry even when the call succeeded (its denials are tolerated). */
  retry_on_success?: boolean;
  call_id?: string;
  environment_id?: string;
  grants?: Grants;
  sandbox_permissions?: SandboxPermissions;
  preauthorized?: boolean;
  justification?: string;
  escalate_to?: SandboxMode;
  approval_policy?: ApprovalPolicy;
  approver?: string[];
  guard?: string;
}

/** The error object: tell errors apart by `kind`, never by `message`. */
export interface ErrorDetail {
  kind: ErrorKind | string;
  message: string;
  field?: string;
  outcome?: "rejected" | "cancelled" | "unavailable" | "never" | string;
  feature?: string;
  errno?: string;
}

export interface Downgrade {
  feature: string;
  reason: string;
}

export interface Denial {
  operation: string;
  pid: number;
  source: string;
  confidence: string;
  count: number;
  path?: string;
  address?: { family: string; address?: string; port?: number };
  /** A proxy denial (network by domain): the host and port asked for. */
  domain?: string;
  port?: number;
  syscall?: string;
  reason?: string;
  /** The call succeeded with this refused (exit 0; fs: ok): it did not fail the call, and the result has no retry unless the request set retry_on_success. */
  tolerated?: true;
}

/** The exact-retry hint (docs/json.md "Retry"). */
export interface Retry {
  sandbox_permissions?: SandboxPermissions;
  additional_permissions?: Profile;
  escalate_to?: SandboxMode;
  justification?: string;
  reason?: string;
  unresolved?: Array<{ operation: string; path?: string; address?: Denial["address"]; reason: string }>;
  /** Add to the same request's grants once the user approved: withGrant(). */
  grant?: Profile;
  /** Capabilities to keep (root over another uid's files): send as cap_add, asked about. */
  cap_add?: string[];
  argv?: string[];
  /** The same call asking sbx for approval; fill in `justification`. */
  request?: ExecRequest;
  /** Every retry that lets the call through, narrowest first; the first is this one. */
  alternatives?: Retry[];
}

export interface Permissions {
  standing_mode: SandboxMode;
  mode: SandboxMode;
  via: "standing" | "grant" | "approval";
  preauthorized: Profile;
  session: Profile;
  turn: Profile;
  call: Profile;
  guard_removed: Array<{ what: string; path?: string; reason: string }>;
  /** Directories sbx made before the call (a granted tool cache that was missing). */
  created?: string[];
  /** Tool table rows the call opted into; their profile is in preauthorized. */
  tools?: string[];
}

export interface EnvReport {
  mode: string;
  stripped: string[];
  set: string[];
}

/** What every result carries; `enforcement` and `resources` depend on the platform. */
export interface Report {
  schema_version: string;
  call_id?: string;
  exit_code: number;
  signal: number | null;
  signal_name?: string;
  mode: SandboxMode;
  enforcement: Record<string, unknown>;
  degraded: Downgrade[];
  denials: Denial[];
  denials_dropped?: number;
  timed_out: boolean;
  killed_by?: "timeout" | "memory" | "signal" | "parent-death";
  killed_by_signal?: string;
  duration_ms: number;
  resources: Record<string, unknown>;
  permissions: Permissions;
  env: EnvReport;
  retry?: Retry;
}

/** A command that ran (or could not start: 126, 127). */
export interface ExecResult extends Report {
  stdout: string;
  stderr: string;
  stdout_truncated: boolean;
  stderr_truncated: boolean;
  error?: string;
  error_detail?: ErrorDetail;
}

/** One file-system change: `ok`, or `error.kind` "denied" (see `retry`) or "failed". */
export interface FsResult extends Report {
  op: FsOpName;
  ok: boolean;
  error?: ErrorDetail;
  error_detail?: ErrorDetail;
}

/** A refusal (exit 125): nothing ran. */
export interface Refusal {
  schema_version: string;
  error: string;
  error_detail: ErrorDetail;
}

function union(a: string[] | undefined, b: string[] | undefined): string[] | undefined {
  const out: string[] = [];
  for (const p of [...(a ?? []), ...(b ?? [])]) if (!out.includes(p)) out.push(p);
  return out.length ? out : undefined;
}

/** Both profiles' permissions (paths of either, network if either has it), as sbx unions grants. */
export function unionProfile(a: Profile | undefined, b: Profile | undefined): Profile {
  const read = union(a?.file_system?.read, b?.file_system?.read);
  const write = union(a?.file_system?.write, b?.file_system?.write);
  const out: Profile = {};
  if (read || write) out.file_system = { ...(read && { read }), ...(write && { write }) };
  const net = b?.network?.enabled && !a?.network?.enabled ? b.network : (a?.network ?? b?.network);
  if (net) out.network = net;
  return out;
}

/**
 * withGrant returns a copy of `request` with `grant` added to its turn (or
 * session) grants: how a runtime applies `retry.grant` once its user
 * approved; sbx asks nobody then.
 */
export function withGrant(request: ExecRequest, grant: Profile, scope: "turn" | "session" = "turn"): ExecRequest {
  const grants: Grants = { ...request.grants };
  grants[scope] = unionProfile(grants[scope], grant);
  return { ...request, grants };
}

/** Whether the sandbox blocked something in this result. */
export function denied(result: ExecResult | FsResult): boolean {
  if ("op" in result) return result.error?.kind === "denied";
  return result.denials.length > 0;
}
