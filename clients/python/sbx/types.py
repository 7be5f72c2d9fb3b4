"""Typed dataclasses for sbx's JSON contract (docs/json.md, docs/schema/).

Requests are built by the caller and serialised with ``to_dict()``: a field
left at ``None`` is omitted, as the contract asks (sbx takes an absent field
for its default; the schema does not allow ``null``). Results are parsed by
``from_dict()``: fields sbx adds later (the contract adds fields without a
new ``schema_version``) are kept in ``raw`` and never refused.

tests/test_schema.py checks that every dataclass here names exactly the
properties of its schema object, so the two cannot drift.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional

SCHEMA_VERSION = "1"

# The vocabulary of DESIGN.md, as the wire spells it.
SANDBOX_MODES = ("read-only", "workspace-write", "danger-full-access")
APPROVAL_POLICIES = ("never", "on-request", "on-failure", "untrusted")
SANDBOX_PERMISSIONS = ("use_default", "with_additional_permissions", "require_escalated")
FS_OPS = ("write", "append", "mkdir", "remove", "move", "copy", "chmod", "apply-patch")


def _compact(obj: Any) -> Any:
    """Turns dataclasses into dicts, dropping None fields at every depth."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {}
        for f in dataclasses.fields(obj):
            if f.name == "raw":
                continue
            v = getattr(obj, f.name)
            if v is not None:
                out[f.name] = _compact(v)
        return out
    if isinstance(obj, dict):
        return {k: _compact(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_compact(v) for v in obj]
    return obj


class _Request:
    def to_dict(self) -> Dict[str, Any]:
        """The object sbx reads: None fields omitted."""
        return _compact(self)


# --- permission profile -----------------------------------------------------


@dataclass
class NetworkPermission(_Request):
    enabled: bool
    allowed_domains: Optional[List[str]] = None
    denied_domains: Optional[List[str]] = None
    allow_private_addresses: Optional[bool] = None


@dataclass
class FileSystemPermissions(_Request):
    read: Optional[List[str]] = None
    write: Optional[List[str]] = None
    # Deny patterns (globs such as "**/.env"): they only narrow.
    deny_read: Optional[List[str]] = None
    deny_write: Optional[List[str]] = None


@dataclass
class Profile(_Request):
    """A permission profile: ``{"network": {...}, "file_system": {...}}``."""

    network: Optional[NetworkPermission] = None
    file_system: Optional[FileSystemPermissions] = None

    @classmethod
    def from_dict(cls, d: Optional[Mapping[str, Any]], *, strict: bool = False) -> "Profile":
        """Parses a profile. ``strict``: unknown fields raise ValueError (a
        request's profile); otherwise they are skipped (a result's, which a
        newer sbx may extend)."""
        d = d or {}
        net_fields = [f.name for f in dataclasses.fields(NetworkPermission)]
        net = d.get("network")
        fs = d.get("file_system")
        if strict:
            _refuse_unknown("profile", d, ("network", "file_system"))
            if net is not None:
                _refuse_unknown("network", net, net_fields)
            if fs is not None:
                _refuse_unknown("file_system", fs, ("read", "write"))
        return cls(
            network=NetworkPermission(**{k: v for k, v in net.items() if k in net_fields}) if net is not None else None,
            file_system=FileSystemPermissions(read=_opt_list(fs.get("read")), write=_opt_list(fs.get("write")))
            if fs is not None
            else None,
        )

    def is_empty(self) -> bool:
        fs = self.file_system
        return (self.network is None or not self.network.enabled) and (
            fs is None or (not fs.read and not fs.write)
        )

    def union(self, other: Optional["Profile"]) -> "Profile":
        """Both profiles' permissions: paths of either, network if either has it.

        This is how sbx combines grants (DESIGN.md rule 5), so adding a
        retry's grant to a turn grant keeps what the turn had.
        """
        if other is None:
            return dataclasses.replace(self)

        def paths(a: Optional[FileSystemPermissions], b: Optional[FileSystemPermissions], attr: str) -> Optional[List[str]]:
            merged: List[str] = []
            for fs in (a, b):
                for p in (getattr(fs, attr) or []) if fs else []:
                    if p not in merged:
                        merged.append(p)
            return merged or None

        read = paths(self.file_system, other.file_system, "read")
        write = paths(self.file_system, other.file_system, "write")
        fs = FileSystemPermissions(read=read, write=write) if read or write else None
        net = self.network
        if other.network is not None and (net is None or (other.network.enabled and not net.enabled)):
            net = other.network
        return Profile(network=net, file_system=fs)


# --- request ----------------------------------------------------------------


@dataclass
class Shell(_Request):
    kind: str  # bash, sh, zsh, pwsh, powershell, cmd
    script: Optional[str] = None
    login: Optional[bool] = None
    path: Optional[str] = None


@dataclass
class EnvPolicy(_Request):
    mode: Optional[str] = None  # inherit, clean, allow-list
    allow: Optional[List[str]] = None


@dataclass
class FsOp(_Request):
    """One file-system change (docs/json.md "Fs"); each op takes its own fields."""

    op: str
    path: Optional[str] = None
    dest: Optional[str] = None
    mode: Optional[str] = None
    parents: Optional[bool] = None
    recursive: Optional[bool] = None
    content: Optional[str] = None
    patch: Optional[str] = None


@dataclass
class Limits(_Request):
    memory_bytes: Optional[int] = None
    pids: Optional[int] = None
    cpus: Optional[float] = None


@dataclass
class Pty(_Request):
    rows: Optional[int] = None
    cols: Optional[int] = None


@dataclass
class Grants(_Request):
    session: Optional[Profile] = None
    turn: Optional[Profile] = None
    turn_strict: Optional[bool] = None


@dataclass
class ExecRequest(_Request):
    """The request ``sbx exec`` reads (docs/json.md "sbx exec request").

    ``cwd`` and exactly one of ``command``, ``shell`` and ``fs`` are needed;
    sbx checks the rest and refuses bad input with InvalidRequestError.
    """

    cwd: str
    command: Optional[List[str]] = None
    shell: Optional[Shell] = None
    fs: Optional[FsOp] = None
    sandbox_mode: Optional[str] = None
    writable_roots: Optional[List[str]] = None
    exclude_tmp: Optional[bool] = None
    exclude_tmpdir: Optional[bool] = None
    read_only: Optional[List[str]] = None
    protect: Optional[List[str]] = None
    no_default_protect: Optional[bool] = None
    network_access: Optional[bool] = None
    additional_permissions: Optional[Profile] = None
    # HOST:PORT:ADDR pins for sbx's proxy, as `sbx run --resolve`.
    resolve: Optional[List[str]] = None
    # Tool table rows to opt into (`sbx run --tool`): their caches writable, registries reachable.
    tools: Optional[List[str]] = None
    env_policy: Optional[EnvPolicy] = None
    env: Optional[Dict[str, str]] = None
    timeout_ms: Optional[int] = None
    kill_grace_ms: Optional[int] = None
    limits: Optional[Limits] = None
    max_output_bytes: Optional[int] = None
    pty: Optional[Pty] = None
    stdin: Optional[str] = None
    stream: Optional[bool] = None
    require: Optional[List[str]] = None
    cap_add: Optional[List[str]] = None
    # The retry even when the call succeeded (its denials are tolerated).
    retry_on_success: Optional[bool] = None
    call_id: Optional[str] = None
    environment_id: Optional[str] = None
    grants: Optional[Grants] = None
    sandbox_permissions: Optional[str] = None
    preauthorized: Optional[bool] = None
    justification: Optional[str] = None
    escalate_to: Optional[str] = None
    approval_policy: Optional[str] = None
    approver: Optional[List[str]] = None
    guard: Optional[str] = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ExecRequest":
        """Parses a request, e.g. a result's ``retry.request``.

        Unknown fields raise ValueError naming them, as sbx itself would
        refuse them.
        """
        names = [f.name for f in dataclasses.fields(cls)]
        _refuse_unknown("request", d, names)
        kw: Dict[str, Any] = dict(d)
        nested = {"shell": Shell, "fs": FsOp, "env_policy": EnvPolicy, "limits": Limits, "pty": Pty}
        for k, t in nested.items():
            if kw.get(k) is not None:
                _refuse_unknown(k, kw[k], [f.name for f in dataclasses.fields(t)])
                kw[k] = t(**kw[k])
        if kw.get("additional_permissions") is not None:
            kw["additional_permissions"] = Profile.from_dict(kw["additional_permissions"], strict=True)
        g = kw.get("grants")
        if g is not None:
            _refuse_unknown("grants", g, ("session", "turn", "turn_strict"))
            kw["grants"] = Grants(
                session=Profile.from_dict(g["session"], strict=True) if g.get("session") is not None else None,
                turn=Profile.from_dict(g["turn"], strict=True) if g.get("turn") is not None else None,
                turn_strict=g.get("turn_strict"),
            )
        return cls(**kw)

    def with_grant(self, grant: Profile, scope: str = "turn") -> "ExecRequest":
        """A copy of this request with ``grant`` added to ``grants.turn``
        (``scope="session"``: ``grants.session``).

        This is how a runtime applies ``retry.grant`` after its own user
        approved it: nobody is asked again, under any approval policy.
        """
        if scope not in ("turn", "session"):
            raise ValueError(f"scope: want turn or session (got {scope!r})")
        grants = dataclasses.replace(self.grants) if self.grants else Grants()
        current = getattr(grants, scope) or Profile()
        setattr(grants, scope, current.union(grant))
        return dataclasses.replace(self, grants=grants)


# --- result -----------------------------------------------------------------


@dataclass
class ErrorDetail:
    """The error object (docs/json.md "Error object"): tell errors apart by ``kind``."""

    kind: str
    message: str
    field: Optional[str] = None
    outcome: Optional[str] = None
    feature: Optional[str] = None
    errno: Optional[str] = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ErrorDetail":
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


@dataclass
class Downgrade:
    feature: str
    reason: str


@dataclass
class Denial:
    """One operation the sandbox blocked, with the evidence's source."""

    operation: str
    pid: int
    source: str
    confidence: str
    count: int
    path: Optional[str] = None
    address: Optional[Dict[str, Any]] = None
    # A proxy denial (network by domain): the host and port asked for.
    domain: Optional[str] = None
    port: Optional[int] = None
    syscall: Optional[str] = None
    reason: Optional[str] = None
    # True when the call succeeded with this refused (exit 0; fs: ok): it
    # did not fail the call, and the result has no retry unless the
    # request set retry_on_success.
    tolerated: Optional[bool] = None


@dataclass
class Retry:
    """The exact-retry hint (docs/json.md "Retry").

    ``grant``: add it to the same request's grants once the user approved
    (ExecRequest.with_grant). ``request``: the same call asking sbx for
    approval, with ``justification`` to fill in, for ``approval_policy``
    ``on-request`` and an ``approver`` (ExecRequest.from_dict parses it).
    """

    sandbox_permissions: Optional[str] = None
    additional_permissions: Optional[Profile] = None
    escalate_to: Optional[str] = None
    justification: Optional[str] = None
    reason: Optional[str] = None
    unresolved: Optional[List[Dict[str, Any]]] = None
    grant: Optional[Profile] = None
    cap_add: Optional[List[str]] = None
    argv: Optional[List[str]] = None
    request: Optional[Dict[str, Any]] = None
    # Every retry that lets the call through, narrowest first; the first is
    # this one (a write into .git: that .git writable, then the escalation).
    alternatives: Optional[List[Dict[str, Any]]] = None


@dataclass
class Permissions:
    standing_mode: str
    mode: str
    via: str
    preauthorized: Profile
    session: Profile
    turn: Profile
    call: Profile
    guard_removed: List[Dict[str, Any]]
    # Directories sbx made before the call (a granted tool cache that was missing).
    created: Optional[List[str]] = None
    # Tool table rows the call opted into; their profile is in preauthorized.
    tools: Optional[List[str]] = None


@dataclass
class EnvReport:
    mode: str
    stripped: List[str]
    set: List[str]


@dataclass
class Report:
    """What every result carries (docs/json.md "Report").

    ``enforcement`` and ``resources`` stay dicts: their fields depend on the
    platform (docs/json.md "Enforcement"). ``raw`` is the whole object sbx
    printed, fields this client does not know included.
    """

    schema_version: str
    exit_code: int
    signal: Optional[int]
    mode: str
    enforcement: Dict[str, Any]
    degraded: List[Downgrade]
    denials: List[Denial]
    timed_out: bool
    duration_ms: int
    resources: Dict[str, Any]
    permissions: Permissions
    env: EnvReport
    call_id: Optional[str] = None
    signal_name: Optional[str] = None
    denials_dropped: Optional[int] = None
    killed_by: Optional[str] = None
    killed_by_signal: Optional[str] = None
    retry: Optional[Retry] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @staticmethod
    def _report_fields(d: Mapping[str, Any]) -> Dict[str, Any]:
        p = d["permissions"]
        r = d.get("retry")
        retry = None
        if r is not None:
            retry = Retry(
                sandbox_permissions=r.get("sandbox_permissions"),
                additional_permissions=Profile.from_dict(r["additional_permissions"])
                if r.get("additional_permissions") is not None
                else None,
                escalate_to=r.get("escalate_to"),
                justification=r.get("justification"),
                reason=r.get("reason"),
                unresolved=r.get("unresolved"),
                grant=Profile.from_dict(r["grant"]) if r.get("grant") is not None else None,
                cap_add=r.get("cap_add"),
                argv=r.get("argv"),
                request=r.get("request"),
                alternatives=r.get("alternatives"),
            )
        denial_fields = {f.name for f in dataclasses.fields(Denial)}
        return dict(
            schema_version=d["schema_version"],
            exit_code=d["exit_code"],
            signal=d.get("signal"),
            mode=d["mode"],
            enforcement=d["enforcement"],
            degraded=[Downgrade(feature=x["feature"], reason=x["reason"]) for x in d["degraded"]],
            denials=[Denial(**{k: v for k, v in x.items() if k in denial_fields}) for x in d["denials"]],
            timed_out=d["timed_out"],
            duration_ms=d["duration_ms"],
            resources=d["resources"],
            permissions=Permissions(
                standing_mode=p["standing_mode"],
                mode=p["mode"],
                via=p["via"],
                preauthorized=Profile.from_dict(p["preauthorized"]),
                session=Profile.from_dict(p["session"]),
                turn=Profile.from_dict(p["turn"]),
                call=Profile.from_dict(p["call"]),
                guard_removed=p["guard_removed"],
                created=p.get("created"),
                tools=p.get("tools"),
            ),
            env=EnvReport(mode=d["env"]["mode"], stripped=d["env"]["stripped"], set=d["env"]["set"]),
            call_id=d.get("call_id"),
            signal_name=d.get("signal_name"),
            denials_dropped=d.get("denials_dropped"),
            killed_by=d.get("killed_by"),
            killed_by_signal=d.get("killed_by_signal"),
            retry=retry,
            raw=dict(d),
        )


@dataclass
class ExecResult(Report):
    """The result of a command that ran (or could not start: exit 126, 127)."""

    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    error: Optional[str] = None
    error_detail: Optional[ErrorDetail] = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ExecResult":
        return cls(
            stdout=d["stdout"],
            stderr=d["stderr"],
            stdout_truncated=d["stdout_truncated"],
            stderr_truncated=d["stderr_truncated"],
            error=d.get("error"),
            error_detail=ErrorDetail.from_dict(d["error_detail"]) if d.get("error_detail") else None,
            **cls._report_fields(d),
        )

    @property
    def denied(self) -> bool:
        """The sandbox blocked something (``denials`` has the evidence)."""
        return bool(self.denials)


@dataclass
class FsResult(Report):
    """The outcome of one file-system change; ``ok`` False with ``error.kind``
    ``denied`` (the sandbox refused: see ``retry``) or ``failed``."""

    op: str = ""
    ok: bool = False
    error: Optional[ErrorDetail] = None
    error_detail: Optional[ErrorDetail] = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "FsResult":
        return cls(
            op=d["op"],
            ok=d["ok"],
            error=ErrorDetail.from_dict(d["error"]) if d.get("error") else None,
            error_detail=ErrorDetail.from_dict(d["error_detail"]) if d.get("error_detail") else None,
            **cls._report_fields(d),
        )

    @property
    def denied(self) -> bool:
        return self.error is not None and self.error.kind == "denied"


def _opt_list(v: Any) -> Optional[List[str]]:
    return list(v) if v is not None else None


def _refuse_unknown(where: str, d: Any, known: Any) -> None:
    if not isinstance(d, Mapping):
        raise ValueError(f"{where}: want an object (got {type(d).__name__})")
    unknown = sorted(set(d) - set(known))
    if unknown:
        raise ValueError(f"{where}.{unknown[0]}: unknown field")
