#!/usr/bin/env bash
# test.sh — the project's test command (see README). As root it runs the whole
# suite twice: once as root, once as an unprivileged user (created if
# missing), because sbx takes different launch paths for each.
set -euo pipefail
cd "$(dirname "$0")"

echo "== vet and cross-builds"
go vet ./...
# vet type-checks the test files too, so the other platforms' tests must
# build even though they cannot run here.
for target in darwin/amd64 darwin/arm64 windows/amd64 windows/arm64 linux/arm64; do
  GOOS=${target%/*} GOARCH=${target#*/} go build ./...
  GOOS=${target%/*} GOARCH=${target#*/} go vet ./...
  echo "build and vet $target ok"
done

# Both passes run whatever the first one says, and the verdict comes at the
# end, so a failure in one does not hide the other half.
echo "== tests as $(id -un)"
first=0
go test -count=1 ./... || first=$?
# The Python client's tests run the real binary (built by the tests
# themselves here; from $dir in the unprivileged pass); under a second.
if command -v python3 >/dev/null; then
  (cd clients/python && PYTHONDONTWRITEBYTECODE=1 python3 -m unittest) || first=$?
else
  echo "no python3: skipping the Python client's tests"
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "not root: skipping the unprivileged-user pass (it needs runuser)"
  [ $first -eq 0 ] && echo "tests as $(id -un): PASS" || echo "tests as $(id -un): FAILED (exit $first)"
  exit $first
fi

user=${SBX_TEST_USER:-sbxtest}
id "$user" >/dev/null 2>&1 || useradd -m -s /bin/bash "$user"
dir=$(mktemp -d /tmp/sbx-unpriv.XXXXXX)
trap 'rm -rf "$dir"' EXIT
chmod 0755 "$dir"
go build -o "$dir/sbx" ./cmd/sbx
go build -o "$dir/sbx-mcp" ./cmd/sbx-mcp # sbx mcp runs the program beside it
CGO_ENABLED=0 go build -o "$dir/probe" ./integration/probe
go test -c -o "$dir/integration.test" ./integration
# Package sandbox's examples re-execute their test binary as the stage.
go test -c -o "$dir/sandbox.test" ./sandbox
# The Python client with the schemas its drift test reads, laid out as in
# the checkout (clients/python/tests finds docs/schema three levels up).
mkdir -p "$dir/clients" "$dir/docs"
cp -r clients/python "$dir/clients/python"
cp -r docs/schema "$dir/docs/schema"
# The ACP client of the integration tests (testdata/acp from the test's
# directory), with the SDK when .ci/run installed it, and the workflow
# corpus's npm registry (verdaccio) likewise.
mkdir -p "$dir/testdata"
cp -r integration/testdata/acp "$dir/testdata/acp"
cp -r integration/testdata/verdaccio "$dir/testdata/verdaccio"
cp -r integration/testdata/mcp "$dir/testdata/mcp"
chmod -R a+rx "$dir"
home=$(getent passwd "$user" | cut -d: -f6)
echo "== integration tests as $user (uid $(id -u "$user"))"
rc=0
(cd "$dir" && runuser -u "$user" -- env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$home" \
  SBX_BIN="$dir/sbx" SBX_PROBE="$dir/probe" ./integration.test -test.count=1 -test.v) >"$dir/unpriv.log" 2>&1 || rc=$?
grep -E '^(--- |PASS|FAIL)|^ +--- (FAIL|SKIP)' "$dir/unpriv.log" || true
if [ $rc -ne 0 ]; then
  echo "unprivileged integration tests FAILED (exit $rc)"
  grep -B2 -A25 -- '--- FAIL' "$dir/unpriv.log" | head -150 || tail -60 "$dir/unpriv.log"
fi
# The same integration binary again with every sandbox case of run() sent
# through one `sbx serve --listen` (SBX_IT_VIA=serve, integration/doc.go),
# as root and as $user: under a minute each. The TestServe tests start
# servers of their own whatever SBX_IT_VIA says: they ran in the passes above.
serve_pass() { # serve_pass NAME LOG COMMAND...: the serve pass of one user
  local name=$1 log=$2; shift 2
  echo "== integration tests through sbx serve as $name"
  local prc=0
  (cd "$dir" && "$@" env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$(getent passwd "$name" | cut -d: -f6)" \
    SBX_IT_VIA=serve SBX_BIN="$dir/sbx" SBX_PROBE="$dir/probe" ./integration.test -test.count=1 -test.v -test.skip '^TestServe') >"$log" 2>&1 || prc=$?
  grep -E '^(--- FAIL|PASS|FAIL|integration: via serve)|^ +--- FAIL' "$log" || true
  echo "skipped via serve: $(grep -c 'SKIP: via serve' "$log" || true)"
  if [ $prc -ne 0 ]; then
    echo "integration tests through sbx serve as $name FAILED (exit $prc)"
    grep -B2 -A25 -- '--- FAIL' "$log" | head -150 || tail -60 "$log"
  fi
  return $prc
}
serve_pass "$(id -un)" "$dir/serve-root.log" || first=$?
serve_pass "$user" "$dir/serve-unpriv.log" runuser -u "$user" -- || rc=$?
echo "== package sandbox (the Go API) as $user"
(cd "$dir" && runuser -u "$user" -- env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$home" \
  ./sandbox.test -test.count=1) || rc=$?
if command -v python3 >/dev/null; then
  echo "== Python client tests as $user"
  (cd "$dir/clients/python" && runuser -u "$user" -- env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$home" \
    SBX="$dir/sbx" PYTHONDONTWRITEBYTECODE=1 python3 -m unittest) || rc=$?
fi
echo "== summary"
[ $first -eq 0 ] && echo "tests as $(id -un): PASS" || echo "tests as $(id -un): FAILED (exit $first)"
[ $rc -eq 0 ] && echo "integration, sandbox and Python client tests as $user: PASS" || echo "integration, sandbox and Python client tests as $user: FAILED (exit $rc)"
[ $first -eq 0 ] && [ $rc -eq 0 ]
