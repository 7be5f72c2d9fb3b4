#!/usr/bin/env bash
# bench/cost.sh prints the per-call cost tables of issue 31 in one
# interleaved run (bench/cost/main.go): wall time and system-wide CPU per
# call of bare /bin/true, bwrap, `sbx run` and `sbx serve` exec, as root and
# through runuser as SBX_BENCH_USER, and 8 concurrent clients of one server
# against bwrap 8-wide. See bench/README.md ("bench/cost.sh").
#
# Environment:
#   ROUNDS          rounds (default 100); each runs BLOCK calls of every command
#   BLOCK           calls of one command in a row (default 10)
#   WIDE_CALLS      calls of the throughput phase per launcher (default 800)
#   SBX_BIN         use this sbx binary instead of building one
#   SBX_BASE        a second sbx binary (main's, say): its rows, "(base)", run
#                   interleaved with SBX_BIN's in the same rounds
#   SBX_BENCH_USER  user of the unprivileged group when run as root (default sbxtest; "" skips)
#   ONLY            run only the rows matching this regexp (bare and bwrap
#                   always; "wide" is the throughput phase): a quick A/B
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
for tool in bwrap runuser; do
	if ! command -v "$tool" >/dev/null; then
		echo "bench: $tool not found (Debian: apt-get install bubblewrap util-linux)" >&2
		exit 1
	fi
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sbx-cost.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp" # the unprivileged group runs the binary
if [[ -n ${SBX_BIN:-} ]]; then
	cp "$SBX_BIN" "$tmp/sbx"
else
	# Built aside, then copied: a file the Go linker has just written
	# (through mmap) execs ~0.45 ms slower here than a copy of the same
	# bytes, for as long as the page cache keeps the linker's pages (after
	# drop_caches the two are equal). An installed binary is a copy.
	(cd "$repo" && go build -o "$tmp/sbx.built" ./cmd/sbx)
	cp "$tmp/sbx.built" "$tmp/sbx"
	rm "$tmp/sbx.built"
fi
(cd "$repo" && go build -o "$tmp/cost" ./bench/cost)
chmod 755 "$tmp/sbx"
base=()
if [[ -n ${SBX_BASE:-} ]]; then
	cp "$SBX_BASE" "$tmp/sbx-base"
	chmod 755 "$tmp/sbx-base"
	base=(-base "$tmp/sbx-base")
fi
echo "sbx: $(cd "$repo" && git describe --always --dirty 2>/dev/null || echo '?'), $("$tmp/sbx" --version 2>/dev/null | head -1)"
"$tmp/cost" -sbx "$tmp/sbx" -rounds "${ROUNDS:-100}" -block "${BLOCK:-10}" \
	-wide-calls "${WIDE_CALLS:-800}" -user "${SBX_BENCH_USER-sbxtest}" -only "${ONLY:-}" "${base[@]}"
