import sys, tempfile
import sbx

ws, elsewhere = tempfile.mkdtemp(), tempfile.mkdtemp(prefix="out-", dir="/var/tmp")  # the workspace, a place outside it
with sbx.Server(args=["--ephemeral"], timeout=60) as srv:               # or sbx.connect("/run/user/1000/sbx/sock")
    s = srv.open_session(ws, preset="auto")      # writes in the workspace; anything more needs a grant
    turn = srv.begin_turn(s)
    call = {"shell": {"kind": "sh", "script": f"echo hi > {elsewhere}/note"}, "cwd": ws}
    r = srv.exec(s, turn, "c1", call)
    for d in r.denials:
        print(f"denied: {d.operation} {d.path} ({d.reason})")
    if r.denied and r.retry and r.retry.grant:   # the smallest grant that lets the call through
        grant = r.retry.grant.to_dict()
        print("the user allows:", grant)         # ask your user here
        srv.apply_grant(s, grant, grant, scope="turn")
        r = srv.exec(s, turn, "c2", call)        # the same call, again
    print("exit", r.exit_code, "note:", open(f"{elsewhere}/note").read().strip())
    sys.exit(r.exit_code)
