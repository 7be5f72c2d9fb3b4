#!/bin/sh
# fuzz.sh runs every Go fuzz target of the repository for FUZZTIME each
# (default 10s), one after the other, and stops at the first failure; the
# failing input is then in that package's testdata/fuzz/. `./fuzz.sh -l`
# lists the targets. FUZZ=regexp runs only the targets whose name matches.
#
#   FUZZTIME=1m ./fuzz.sh
#   FUZZ=Exec ./fuzz.sh
set -eu
cd "$(dirname "$0")"
fuzztime=${FUZZTIME:-10s}
only=${FUZZ:-.}

# targets prints "package target" for every func FuzzX(f *testing.F).
targets() {
	grep -rlE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' . | sort | while read -r file; do
		pkg=./$(dirname "${file#./}")
		sed -nE 's/^func (Fuzz[A-Za-z0-9_]*)\(f \*testing\.F\).*/\1/p' "$file" | while read -r name; do
			echo "$pkg $name"
		done
	done
}

if [ "${1:-}" = "-l" ]; then
	targets
	exit 0
fi

n=0
targets | grep -E " .*$only" | {
	while read -r pkg name; do
		echo "== $pkg $name ($fuzztime)"
		# -parallel 1: the machine is shared; one worker is enough for a
		# bounded CI run.
		go test "$pkg" -run '^$' -fuzz "^$name\$" -fuzztime "$fuzztime" -parallel 1
		n=$((n + 1))
	done
	if [ "$n" -eq 0 ]; then
		echo "fuzz.sh: no fuzz target matches FUZZ=$only" >&2
		exit 1
	fi
	echo "fuzz.sh: $n targets passed"
}
