package sandbox_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const module = "github.com/sbx-sandbox/sbx"

// goTool is the go command run in the module's root, for the tests that
// ask it about packages. They need the module's source, where go test
// runs them; a test binary run elsewhere (test.sh's unprivileged pass,
// from a temporary directory) has none and skips them, saying so: the
// pass as the user who runs go test runs them, and the examples run the
// test binary itself as an embedder's stage in both.
func goTool(t *testing.T, args ...string) string {
	t.Helper()
	if b, err := os.ReadFile("../go.mod"); err != nil || !strings.HasPrefix(string(b), "module "+module+"\n") {
		t.Skip("the module's source is not beside this test binary (run out of tree): go list and go build need it")
	}
	bin, err := exec.LookPath("go")
	if err != nil {
		bin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return string(out)
}

// TestNoThreadLock: importing sandbox locks no thread. No package of sbx
// that sandbox imports has an init function that calls
// runtime.LockOSThread (one did, and an embedder's main goroutine was
// pinned to the main thread for the life of the program); sandbox's own
// init locks only under isStage(os.Args), in the re-executed stage.
func TestNoThreadLock(t *testing.T) {
	out := goTool(t, "list", "-deps", "-f", `{{.ImportPath}}|{{.Dir}}|{{join .GoFiles "|"}}`, "./sandbox")
	fset := token.NewFileSet()
	checked := 0
	for line := range strings.Lines(out) {
		parts := strings.Split(strings.TrimSpace(line), "|")
		if !strings.HasPrefix(parts[0], module+"/") {
			continue
		}
		for _, name := range parts[2:] {
			f, err := parser.ParseFile(fset, filepath.Join(parts[1], name), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || fn.Recv != nil || fn.Name.Name != "init" {
					continue
				}
				// A lock is allowed only in sandbox's init, under
				// "if isStage(os.Args)": in the stage, never in the importer.
				var gated *ast.IfStmt
				ast.Inspect(fn, func(n ast.Node) bool {
					if is, ok := n.(*ast.IfStmt); ok && parts[0] == module+"/sandbox" && isStageCall(is.Cond) {
						gated = is
					}
					if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "LockOSThread" &&
						(gated == nil || sel.Pos() < gated.Body.Pos() || sel.Pos() > gated.Body.End()) {
						t.Errorf("%s/%s: an init function locks the importer's thread", parts[0], name)
					}
					return true
				})
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d files of sbx checked: go list gave\n%s", checked, out)
	}
}

// isStageCall reports whether e is the call isStage(os.Args).
func isStageCall(e ast.Expr) bool {
	c, ok := e.(*ast.CallExpr)
	if !ok || len(c.Args) != 1 {
		return false
	}
	fn, ok := c.Fun.(*ast.Ident)
	arg, ok2 := c.Args[0].(*ast.SelectorExpr)
	return ok && ok2 && fn.Name == "isStage" && arg.Sel.Name == "Args"
}

// TestEmbedImports: examples/embed, the embedder's program, imports
// sandbox and the standard library only, and nothing of sbx outside
// sandbox and internal/ is built into it: what an embedder needs is named
// by sandbox.
func TestEmbedImports(t *testing.T) {
	for imp := range strings.Lines(goTool(t, "list", "-f", `{{join .Imports "\n"}}`, "./examples/embed")) {
		imp = strings.TrimSpace(imp)
		first, _, _ := strings.Cut(imp, "/")
		if imp != module+"/sandbox" && strings.Contains(first, ".") {
			t.Errorf("examples/embed imports %s: an embedder needs sandbox alone", imp)
		}
	}
	for dep := range strings.Lines(goTool(t, "list", "-deps", "./examples/embed")) {
		dep = strings.TrimSpace(dep)
		if strings.HasPrefix(dep, module+"/") && dep != module+"/sandbox" && dep != module+"/examples/embed" &&
			!strings.HasPrefix(dep, module+"/internal/") {
			t.Errorf("examples/embed depends on %s, outside sandbox and internal/", dep)
		}
	}
}

// TestEmbedRuns: a program that calls sandbox.Main first, as examples/embed
// does, runs its calls sandboxed (re-executed as its own stage when
// unprivileged): the workspace is written, a write outside is denied and
// reported, and a bad request is refused with the contract's JSON.
func TestEmbedRuns(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "embed")
	goTool(t, "build", "-o", bin, "./examples/embed")
	ws := t.TempDir()
	outside, err := os.MkdirTemp("/var/tmp", "sandbox-embed-out-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(outside)
	run := func(req string) (int, string, string) {
		cmd := exec.Command(bin)
		cmd.Stdin = strings.NewReader(req)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, stdout.String(), stderr.String()
	}
	code, stdout, stderr := run(fmt.Sprintf(`{"command": ["sh", "-c", "echo in > in.txt && (echo out > %s/f) 2>/dev/null || exit 3"],
		"cwd": %q, "sandbox_mode": "workspace-write"}`, outside, ws))
	var res struct {
		ExitCode int `json:"exit_code"`
		Denials  []struct {
			Operation string `json:"operation"`
			Path      string `json:"path"`
		} `json:"denials"`
		Retry *struct{} `json:"retry"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("exit %d, result %q: %v (stderr %s)", code, stdout, err, stderr)
	}
	if code != 3 || res.ExitCode != 3 || len(res.Denials) == 0 || res.Denials[0].Path != outside+"/f" || res.Retry == nil {
		t.Errorf("the write outside: exit %d, result %s, stderr %s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "embed: the sandbox denied create "+outside+"/f") {
		t.Errorf("the denial in words: %q", stderr)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "in.txt")); string(b) != "in\n" {
		t.Errorf("the workspace write: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(outside, "f")); !os.IsNotExist(err) {
		t.Errorf("the write outside was made: %v", err)
	}

	code, stdout, _ = run(`{"command": ["true"], "sandbox_mode": "workspace-write"}`)
	var ref struct {
		SchemaVersion string `json:"schema_version"`
		Error         string `json:"error"`
		Detail        struct {
			Kind, Field string
		} `json:"error_detail"`
	}
	if err := json.Unmarshal([]byte(stdout), &ref); err != nil || code != 125 || ref.SchemaVersion != "1" ||
		ref.Detail.Kind != "invalid_request" || ref.Detail.Field != "cwd" || ref.Error != "cwd: required" {
		t.Errorf("the refusal: exit %d, %s (%v)", code, stdout, err)
	}
}
