// Package integration runs the built sbx binary under the real kernel and
// asserts, for every sandbox mode, the exact errno or exit status the kernel
// gives allowed and forbidden work (tests in layers, point 3 of STYLE.md).
//
// The tests start a small static program, integration/probe, inside the
// sandbox; it attempts one action and prints one JSON line:
//
//	{"op":"write","ok":false,"errno":"EACCES","detail":"open /root/x"}
//
// Run them as root and as an unprivileged user:
//
//	go test ./integration/ -v -count=1
//	go test -c -o /tmp/it/integration.test ./integration
//	go build -o /tmp/it/sbx ./cmd/sbx
//	CGO_ENABLED=0 go build -o /tmp/it/probe ./integration/probe
//	chmod 755 /tmp/it /tmp/it/*
//	cd /tmp/it && runuser -u sbxtest -- env SBX_BIN=/tmp/it/sbx \
//	    SBX_PROBE=/tmp/it/probe HOME=/home/sbxtest ./integration.test -test.v
//
// Without SBX_BIN and SBX_PROBE, TestMain builds both from the module (so
// the working directory must be this package's); with them, the test binary
// runs from any directory.
//
// With SBX_IT_VIA=serve the same tests run their sandbox cases through the
// server instead: TestMain starts one `sbx serve --listen SOCKET
// --ephemeral` for the whole test binary, as the user running the tests,
// and run() (so probe()) sends each call as an exec request in a session
// of its own (the mode of --mode, approval policy never), streamed, and
// writes the result less the output where `sbx run --report` writes its
// report. viaserve_test.go translates run()'s flags into the request; a
// flag with no exec field (--no-denial-reports, --approver, --grants,
// --strict-review, --preset) and a CLI flag error skip with "SKIP: via
// serve: REASON". A retry hint is checked and applied as its exec request
// (sbx run's is an argv), the escalation the caller's own. The TestServe
// tests start servers of their own either way (test.sh and the kernel
// matrix leave them out of the serve passes). Tests that start sbx
// themselves (other subcommands, sbx's own environment, stdin, a terminal,
// inherited fds, signals to sbx) run as they do without it. The pass prints how many
// calls and tests went through the server:
//
//	SBX_IT_VIA=serve go test ./integration/ -count=1
//
// Every expectation follows from what this kernel and user offer (caps in
// caps_test.go: the Landlock ABI, whether sbx gets its namespaces, whether
// the seccomp supervisor runs): where a feature exists the test asserts it is
// enforced, with the exact errno; where it does not, the test asserts the
// report's degraded entry and TestRequire that --require FEATURE exits 125.
// integration/vm runs the suite on other kernels and without user
// namespaces (see its README.md).
//
// Guarantees: a test skips only through Require, which prints why and fails
// instead when the kernel is new enough to have the feature, or through
// needTool for a program the environment declares absent
// (SBX_IT_ABSENT_TOOLS). Every file a test creates lives in a t.TempDir() of
// the running user or is removed by a cleanup; nothing assumes root.
package integration
