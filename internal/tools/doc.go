// Package tools is reviewed data about the everyday toolchains an agent
// runs (git, go, npm/pnpm/yarn, pip/uv/venv, cargo, make/cc, node, python,
// java/maven/gradle): the directories each writes, the environment
// variables that relocate them, the registry domains each uses and what must
// never be granted because its contents run later outside the sandbox.
//
// It is data, not policy code: escalate's retry reads it to ask for a
// tool's stable cache or state root instead of the hash-named, dated or
// temporary entry a call happened to touch, and to refuse offering a
// directory on PATH or a shell startup file.
//
//	roots := tools.Resolve(env)            // every table directory, resolved
//	r, ok := roots.Root("/home/u/.cache/go-build/5e/5e12-d")
//	// r.Path == "/home/u/.cache/go-build", r.Tool == "go"
//	n, ok := roots.Never("/home/u/.cargo/bin/x") // "~/.cargo/bin", true
//
// Guarantees: every entry names a source (the tool's documentation); a
// location is resolved from the call's environment first (the first
// variable set, absolute, wins), then from the default under HOME; a root is
// never HOME itself nor one of its ancestors (Resolve drops such a root: an
// environment that relocates a cache to HOME does not make HOME grantable).
package tools
