// Command embed is a program that embeds sbx through package sandbox: it
// runs the request on its stdin under the sandbox, as `sbx exec` would,
// and prints the result, then the denials in words. It imports sandbox
// and the standard library only (sandbox's TestEmbedImports).
//
//	echo '{"command": ["sh", "-c", "touch /etc/x"], "cwd": "'$PWD'", "sandbox_mode": "workspace-write"}' |
//	  go run ./examples/embed
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/sbx-sandbox/sbx/sandbox"
)

func main() {
	// First: when sbx re-executes this program as its stage (an
	// unprivileged call) or as its file-system helper, Main runs that and
	// exits.
	sandbox.Main()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	data, err := io.ReadAll(io.LimitReader(os.Stdin, 16<<20))
	if err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(125)
	}
	req, err := sandbox.Decode(data)
	if err != nil {
		refuse(err)
	}
	res, err := sandbox.Run(ctx, req, sandbox.Options{})
	if err != nil {
		refuse(err)
	}
	out := json.NewEncoder(os.Stdout)
	out.SetIndent("", "  ")
	if res.FS != nil {
		out.Encode(res.FS)
	} else {
		out.Encode(res.Result)
		for _, d := range res.Result.Denials {
			fmt.Fprintf(os.Stderr, "embed: the sandbox denied %s %s%s\n", d.Operation, d.Path, d.Domain)
		}
	}
	os.Exit(res.ExitCode())
}

// refuse prints the refusal as sbx exec does (one JSON object) and exits
// 125: nothing ran. Every error of sandbox is a *sandbox.Refusal.
func refuse(err error) {
	var ref *sandbox.Refusal
	if errors.As(err, &ref) {
		json.NewEncoder(os.Stdout).Encode(ref)
	} else {
		fmt.Fprintln(os.Stderr, "embed:", err)
	}
	os.Exit(125)
}
