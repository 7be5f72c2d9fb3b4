package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/profiles"
)

func init() {
	register("normalize-grant", command{
		summary: "normalise a request_permissions response (JSON on stdin, JSON on stdout)",
		run:     normalizeGrantCmd,
	})
}

const normalizeGrantUsage = `Usage: sbx normalize-grant [--grant-key permissions] < response.json

Normalises a request_permissions response for runtimes not written in Go.
Reads {"cwd", "requested", "granted", "scope", "strict_auto_review"} on stdin
and prints {"permissions", "scope", "strict_auto_review", "ignored",
"given_paths"} on stdout: the grant intersected with the request (a granted
entry wider than the request, or a write where only a read was asked, gives
nothing), relative paths resolved against cwd, symlinks resolved with the
caller's spelling kept in given_paths, and strict_auto_review with session
scope turned into an empty turn grant. An empty request is refused. Unknown
fields are errors, except inside granted, the client's answer: there they are
skipped and listed in "ignored" (case variants and duplicate keys are still
errors). Exit status 125 on bad input.

--grant-key permissions reads the granted profile under "permissions", the
key of Codex's RequestPermissionsResponse ({permissions, scope,
strict_auto_review}), instead of "granted": one spelling per call, the other
is an unknown field.
`

// maxNormalizeInput bounds stdin: a request is a few kilobytes.
const maxNormalizeInput = 1 << 20

func normalizeGrantCmd(args []string, stdio Stdio) int {
	fs := flag.NewFlagSet("normalize-grant", flag.ContinueOnError)
	fs.SetOutput(stdio.Err)
	fs.Usage = func() { fmt.Fprint(stdio.Err, normalizeGrantUsage) }
	keyName := fs.String("grant-key", "granted", "the `KEY` the response carries the grant under: granted, or permissions (Codex's)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return ExitRefused
	}
	if fs.NArg() > 0 {
		return normalizeGrantRefuse(stdio, fmt.Errorf("unexpected argument %q (the request is read from stdin)", fs.Arg(0)))
	}
	key, err := profiles.ParseGrantKey(*keyName)
	if err != nil {
		return normalizeGrantRefuse(stdio, fmt.Errorf("--grant-key: %w", err))
	}
	data, err := io.ReadAll(io.LimitReader(stdio.In, maxNormalizeInput+1))
	if err != nil {
		return normalizeGrantRefuse(stdio, fmt.Errorf("read stdin: %w", err))
	}
	if len(data) > maxNormalizeInput {
		return normalizeGrantRefuse(stdio, fmt.Errorf("stdin: longer than %d bytes", maxNormalizeInput))
	}
	req, err := profiles.DecodeNormalizeRequestAs(data, key)
	if err != nil {
		return normalizeGrantRefuse(stdio, err)
	}
	res, err := profiles.NormalizeResponse(req)
	if err != nil {
		return normalizeGrantRefuse(stdio, err)
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return normalizeGrantRefuse(stdio, fmt.Errorf("encode result: %w", err))
	}
	stdio.Out.Write(append(b, '\n'))
	return 0
}

// normalizeGrantRefuse prints the one-line error a calling runtime can log:
// "sbx normalize-grant: <field>: <problem>".
func normalizeGrantRefuse(stdio Stdio, err error) int {
	fmt.Fprintf(stdio.Err, "sbx normalize-grant: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
	return ExitRefused
}
