#!/usr/bin/env bash
# bench/run.sh times the start-up cost of `sbx run` against bare /bin/true,
# bubblewrap and (when installed) landrun, and prints each mean as a ratio of
# bwrap's mean in the same hyperfine run. See bench/README.md.
#
# Environment:
#   RUNS            timed runs per command (default 200)
#   SBX_BIN         use this sbx binary instead of building one
#   SBX_BENCH_USER  user for the unprivileged group when run as root (default sbxtest)
#   OUT_DIR         where the hyperfine exports go (default: a new temp dir, kept)
set -euo pipefail

runs=${RUNS:-200}
bench_user=${SBX_BENCH_USER:-sbxtest}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

for tool in hyperfine bwrap jq; do
	if ! command -v "$tool" >/dev/null; then
		echo "bench: $tool not found (Debian: apt-get install $tool)" >&2
		exit 1
	fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sbx-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# The unprivileged group runs the binary and uses the workspace as another user.
chmod 755 "$tmp"
out=${OUT_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/sbx-bench-out.XXXXXX")}
mkdir -p "$out"

if [[ -n ${SBX_BIN:-} ]]; then
	cp "$SBX_BIN" "$tmp/sbx"
else
	(cd "$repo" && go build -o "$tmp/sbx" ./cmd/sbx)
fi
(cd "$repo" && go build -o "$tmp/interleave" ./bench/interleave)
sbx=$tmp/sbx
chmod 755 "$sbx"
W=$tmp/workspace
mkdir "$W"

landrun=$(command -v landrun || true)
if [[ -z $landrun ]]; then
	echo "bench: landrun not installed; its row is skipped" >&2
fi

bwrap_args="--ro-bind / / --dev /dev --proc /proc --bind $W $W --unshare-net --unshare-pid --die-with-parent /bin/true"

# table FILE REF [BASE] prints, for every command in hyperfine's JSON export
# FILE, its mean, stddev and median, and its mean (and median) as a ratio of
# REF's. With BASE, it adds the ratio of the means above BASE's mean: what the
# sandbox itself costs, without the wrapper (runuser) both pay.
table() {
	jq -r --arg ref "$2" --arg base "${3:-}" '
		def ms: . * 1000 * 1000 | round / 1000;
		def r2: . * 100 | round / 100;
		(.results | map({key: .command, value: .}) | from_entries) as $by
		| ($by[$ref] // error("no command named \($ref)")) as $r
		| (if $base == "" then null else $by[$base].mean end) as $b
		| (["command", "mean ms", "stddev ms", "median ms", "mean x \($ref)", "median x \($ref)"]
		   + (if $b == null then [] else ["(mean-\($base)) x"] end)),
		  (.results[] | [.command, (.mean | ms), (.stddev | ms), (.median | ms),
		                 (.mean / $r.mean | r2), (.median / $r.median | r2)]
		   + (if $b == null then []
		      elif .command == $base then ["-"]
		      else [((.mean - $b) / ($r.mean - $b)) | r2] end))
		| @tsv' "$1" | column -t -s $'\t'
}

# check runs argv once and shows its output when it fails: hyperfine only
# says "terminated by a signal" or "non-zero exit code".
check() {
	local log
	if ! log=$("$@" 2>&1); then
		echo "bench: $* failed:" >&2
		echo "$log" >&2
		exit 1
	fi
}

cd "$W"
check "$sbx" run --mode workspace-write -- /bin/true
check "$sbx" run --mode workspace-write --network -- /bin/true
check "$sbx" run --mode workspace-write --memory 512M --pids 256 --cpus 1 -- /bin/true

echo "== caller ($(id -un)), RUNS=$runs, cwd=$W"
cmds=(
	-n bare /bin/true
	-n sbx-netns "$sbx run --mode workspace-write -- /bin/true"
	-n sbx-network "$sbx run --mode workspace-write --network -- /bin/true"
	-n sbx-limits "$sbx run --mode workspace-write --memory 512M --pids 256 --cpus 1 -- /bin/true"
	-n bwrap "bwrap $bwrap_args"
)
if [[ -n $landrun ]]; then
	cmds+=(-n landrun "$landrun --rox / --rw $W /bin/true")
fi
hyperfine -N --warmup 20 --runs "$runs" \
	--export-markdown "$out/caller.md" --export-json "$out/caller.json" "${cmds[@]}"
echo
table "$out/caller.json" bwrap

# interleaved NAME=COMMAND... reruns a group one run of each in turn, so a
# drift in the machine's speed hits every command alike.
interleaved() {
	echo
	echo "-- the same, interleaved (RUNS=$runs each, one of each in turn)"
	"$tmp/interleave" -n "$runs" "$@"
}
args=()
for ((i = 0; i < ${#cmds[@]}; i += 3)); do
	args+=("${cmds[i+1]}=${cmds[i+2]}")
done
interleaved "${args[@]}" | tee "$out/caller-interleaved.txt"

if [[ $(id -u) -eq 0 ]]; then
	if id -u "$bench_user" >/dev/null 2>&1; then
		chown "$bench_user" "$W"
		ru="runuser -u $bench_user --"
		check runuser -u "$bench_user" -- "$sbx" run --mode workspace-write -- /bin/true
		check runuser -u "$bench_user" -- "$sbx" run --mode workspace-write --network -- /bin/true
		echo
		echo "== unprivileged ($bench_user through runuser), RUNS=$runs"
		ucmds=(
			-n runuser-bare "$ru /bin/true"
			-n runuser-sbx-netns "$ru $sbx run --mode workspace-write -- /bin/true"
			-n runuser-sbx-network "$ru $sbx run --mode workspace-write --network -- /bin/true"
			-n runuser-bwrap "$ru bwrap $bwrap_args"
		)
		if [[ -n $landrun ]]; then
			ucmds+=(-n runuser-landrun "$ru $landrun --rox / --rw $W /bin/true")
		fi
		hyperfine --shell=none --warmup 20 --runs "$runs" \
			--export-markdown "$out/unprivileged.md" --export-json "$out/unprivileged.json" "${ucmds[@]}"
		echo
		table "$out/unprivileged.json" runuser-bwrap runuser-bare
		args=()
		for ((i = 0; i < ${#ucmds[@]}; i += 3)); do
			args+=("${ucmds[i+1]}=${ucmds[i+2]}")
		done
		interleaved -ref runuser-bwrap -base runuser-bare "${args[@]}" | tee "$out/unprivileged-interleaved.txt"
	else
		echo "bench: user $bench_user does not exist; unprivileged group skipped" >&2
	fi
fi

echo
echo "hyperfine exports: $out"
