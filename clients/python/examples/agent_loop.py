#!/usr/bin/env python3
"""An agent loop around sbx: run a tool call, get a denial, ask the user,
apply the exact retry, succeed.

The "model" and the "user" are scripted so the example runs unattended:

    SBX=/path/to/sbx python3 examples/agent_loop.py

It exits 0 when the call succeeded after the retry, 1 otherwise.
"""

import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import sbx  # noqa: E402


def scripted_user(question: str) -> bool:
    """Stands in for the person at the agent's UI: says yes, and says so."""
    print(f"  user asked: {question}")
    print("  user: yes, for this turn")
    return True


def describe(grant: sbx.Profile) -> str:
    parts = []
    if grant.file_system and grant.file_system.write:
        parts.append("write to " + ", ".join(grant.file_system.write))
    if grant.file_system and grant.file_system.read:
        parts.append("read " + ", ".join(grant.file_system.read))
    if grant.network and grant.network.enabled:
        parts.append("use the network")
    return " and ".join(parts) or "nothing more"


def tool_call(request: sbx.ExecRequest, max_attempts: int = 3) -> sbx.ExecResult:
    """Runs one tool call, asking the user whenever the sandbox denies it and
    sbx says which grant would let it through."""
    for attempt in range(1, max_attempts + 1):
        result = sbx.exec(request)
        print(f"attempt {attempt}: exit {result.exit_code}, {len(result.denials)} denial(s)")
        if not result.denied:
            return result
        for d in result.denials:
            print(f"  denied: {d.operation} {d.path or d.address} ({d.reason})")
        retry = result.retry
        if retry is None or retry.grant is None:
            print("  no grant would help:", retry.unresolved if retry else "no retry hint")
            return result
        if not scripted_user(f"allow the command to {describe(retry.grant)}?"):
            return result
        # The user approved outside sbx: add the grant to this turn's grants
        # and send the same call again; sbx asks nobody.
        request = request.with_grant(retry.grant, scope="turn")
    return result


def main() -> int:
    workspace = tempfile.mkdtemp(prefix="agent-ws-")
    print(f"workspace {workspace}, sandbox mode read-only")
    # The model's tool call: write a file in a read-only sandbox.
    request = sbx.ExecRequest(
        command=["sh", "-c", "echo 'build ok' > status.txt && cat status.txt"],
        cwd=workspace,
        sandbox_mode="read-only",
        call_id="call-1",
        environment_id="session-1",
    )
    try:
        result = tool_call(request)
    except sbx.SbxError as e:
        print(f"sbx refused the call ({type(e).__name__}): {e}")
        return 1
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    print(f"final: exit {result.exit_code}, stdout {result.stdout!r}, via {result.permissions.via}")
    return 0 if result.exit_code == 0 and result.stdout == "build ok\n" else 1


if __name__ == "__main__":
    sys.exit(main())
