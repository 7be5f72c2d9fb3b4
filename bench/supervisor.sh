#!/usr/bin/env bash
# bench/supervisor.sh — the cost of the denial supervisor (issue 4): 5000
# creates, 5000 rewrites and a read-heavy walk, each bare, under sbx without
# supervision (--no-denial-reports) and under sbx with it, in one hyperfine
# run per workload. Reports ratios to bare. Needs hyperfine, python3, jq.
# Goal: <= 1.3x bare for the write-heavy workloads, <= 1.05x for the walk.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=${RUNS:-20}
tmp=$(mktemp -d /tmp/sbx-supbench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
sbx=${SBX_BIN:-$tmp/sbx}
[ -n "${SBX_BIN:-}" ] || (cd "$root" && go build -o "$sbx" ./cmd/sbx)
ws=$tmp/ws
mkdir -p "$ws"
create="import os; [open('c/f%d' % i, 'w').close() for i in range(5000)]"
rewrite="[open('r/f%d' % i, 'w').write('x') for i in range(5000)]"
walk="import os
n=0
for d, _, fs in os.walk('/usr/lib/python3'):
    for f in fs:
        try:
            with open(os.path.join(d, f), 'rb') as h: n += len(h.read(4096))
        except OSError: pass"
python3 -c "import os; os.makedirs('$ws/r', exist_ok=True); [open('$ws/r/f%d' % i, 'w').close() for i in range(5000)]"
run() { # name prepare script
  local name=$1 prep=$2 script=$3
  hyperfine -N --warmup 2 --runs "$runs" --prepare "$prep" --export-json "$tmp/$name.json" \
    -n bare "python3 -c \"$script\"" \
    -n sbx-unsupervised "$sbx run --mode workspace-write --cwd $ws --no-denial-reports -- python3 -c \"$script\"" \
    -n sbx-supervised "$sbx run --mode workspace-write --cwd $ws -- python3 -c \"$script\"" >/dev/null
  jq -r --arg w "$name" '(.results[] | select(.command == "bare") | .mean) as $b
    | .results[] | "| \($w) | \(.command) | \(.mean*1000 | round) | \(.stddev*1000 | round) | \(.mean/$b*100 | round / 100) |"' "$tmp/$name.json"
}
cd "$ws"
echo "| workload | command | mean ms | stddev ms | x bare |"
echo "|---|---|---:|---:|---:|"
run create "sh -c 'rm -rf $ws/c && mkdir $ws/c'" "$create"
run rewrite "true" "$rewrite"
run walk "true" "$walk"
