// Command sbx-mcp is the program behind `sbx mcp` (docs/mcp.md): the MCP
// server, on the official Go SDK, whose every MCP session is one sbx
// session of an `sbx serve` child on its stdio. It is a program of its
// own because the SDK links net/http, and sbx stays static (no cgo, no
// dynamic loader before each call); sbx mcp checks the flags and starts
// it with them in $SBX_MCP_CONFIG.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sbx-sandbox/sbx/internal/mcp"
	"github.com/sbx-sandbox/sbx/internal/mcp/conf"
	"github.com/sbx-sandbox/sbx/internal/serve"
)

func main() {
	os.Exit(run())
}

func run() int {
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "sbx mcp: "+format+"\n", a...) }
	var cfg conf.Config
	if err := json.Unmarshal([]byte(os.Getenv(conf.Env)), &cfg); err != nil || cfg.Sbx == "" {
		logf("run as sbx mcp (no valid $%s)", conf.Env)
		return 125
	}
	m, err := mcp.New(mcp.Options{Connect: connect(cfg), Preset: cfg.Preset, SandboxMode: cfg.SandboxMode,
		ApprovalPolicy: cfg.ApprovalPolicy, Cwd: cfg.Cwd, Roots: cfg.Roots, ExcludeTmp: cfg.ExcludeTmp,
		NoElicit: cfg.NoElicit, Version: cfg.Version})
	if err != nil {
		logf("%v", err)
		return 125
	}
	// No signal is caught (only cmd/sbx catches signals: TestLibraryCatchesNoSignals):
	// a signal ends sbx-mcp, and each sbx serve child, its stdin closed,
	// then kills its running calls and writes their records itself.
	ctx := context.Background()
	if cfg.ListenTCP != "" {
		if err := serveTCP(m, cfg.ListenTCP, cfg.TokenFile, logf); err != nil {
			logf("--listen: %v", err)
			return 1
		}
		return 0
	}
	if cfg.Listen != "" {
		if err := serveHTTP(m, cfg.Listen, logf); err != nil {
			logf("--listen: %v", err)
			return 1
		}
		return 0
	}
	if err := m.SDK().Run(ctx, &sdk.StdioTransport{}); err != nil && !errors.Is(err, io.EOF) {
		logf("%v", err)
	}
	// Each session's sbx serve child ends (its calls killed, its records
	// written) before sbx mcp exits.
	m.Wait()
	return 0
}

// connect starts an sbx serve child per MCP session, on its stdio.
func connect(cfg conf.Config) func(ctx context.Context, h serve.LocalHandler) (*serve.Local, error) {
	return func(ctx context.Context, h serve.LocalHandler) (*serve.Local, error) {
		cmd := exec.Command(cfg.Sbx, cfg.ServeArgs...)
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		return serve.Dial(ctx, out, &child{in, cmd}, h), nil
	}
}

// child closes the serve child's stdin and waits for it to exit: its
// running calls killed and its records written.
type child struct {
	io.WriteCloser
	cmd *exec.Cmd
}

func (c *child) Close() error {
	c.WriteCloser.Close()
	return c.cmd.Wait()
}
