package main

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/sbx-sandbox/sbx/integration/localreg"
)

// workflow is one everyday command of a coding agent, in a directory of
// its own, with the grants it needs under workspace-write.
type workflow struct {
	name  string
	tool  string // the program that must be on PATH
	setup func(dir string) error
	reset func(dir string) error // before each run, untimed, bare
	argv  []string
	// What it needs beyond workspace-write: sbx's tool profiles (--tool),
	// extra writable directories (relative ones are the workflow's dir's),
	// and loopback hosts reached through sbx's domain proxy (a local
	// registry).
	tools []string
	write []string
	// registry is the URL of a local registry in argv: sandboxed, argv
	// names it registryName at the same port instead, reached through
	// sbx's domain proxy (--allow-domain, --resolve to 127.0.0.1), as a
	// runtime reaches a registry with --tool; sandboxExtra are arguments
	// that needs (pip trusts plain http from loopback only).
	registry     string
	sandboxExtra []string
	dir          string
	ms           map[string][]float64
	// notified is how many system calls of one sbx run the seccomp
	// supervisor was handed (SBX_TRACE's counts), -1 when not known.
	notified int
}

func (w *workflow) abs(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(w.dir, p)
}

// runFlags are the grants as sbx run flags: the caller's own, as a
// runtime that knows the tool passes them.
func (w *workflow) runFlags() []string {
	var f []string
	for _, t := range w.tools {
		f = append(f, "--tool", t)
	}
	for _, p := range w.write {
		f = append(f, "--allow-write", w.abs(p))
	}
	if w.registry != "" {
		f = append(f, "--allow-domain", w.proxied(), "--resolve", w.proxied()+":127.0.0.1", "--allow-private-addresses")
	}
	return f
}

// registryName is the local registries' name under sbx: the sandbox's
// 127.0.0.1 is its own loopback, and NO_PROXY sends 127.0.0.1 past the
// proxy, so a registry on the host's loopback is reached by a name
// pinned with --resolve.
const registryName = "registry.sbx.test"

// proxied is the registry's --allow-domain: registryName:PORT.
func (w *workflow) proxied() string {
	u, err := url.Parse(w.registry)
	if err != nil {
		return registryName
	}
	return registryName + ":" + u.Port()
}

// sandboxArgv is argv with the registry's URL by its name.
func (w *workflow) sandboxArgv() []string {
	if w.registry == "" {
		return w.argv
	}
	named := strings.Replace(w.registry, hostPort(w.registry), w.proxied(), 1)
	var a []string
	for _, s := range w.argv {
		a = append(a, strings.ReplaceAll(s, w.registry, named))
	}
	return append(a, w.sandboxExtra...)
}

// execParams are the same grants as exec request fields:
// additional_permissions preauthorized (the caller's own, as sbx run's
// flags under use_default), and tools.
func (w *workflow) execParams() map[string]any {
	p := map[string]any{}
	if len(w.tools) > 0 {
		p["tools"] = w.tools
	}
	add := map[string]any{}
	if len(w.write) > 0 {
		var abs []string
		for _, d := range w.write {
			abs = append(abs, w.abs(d))
		}
		add["file_system"] = map[string]any{"write": abs}
	}
	if w.registry != "" {
		add["network"] = map[string]any{"enabled": true, "allowed_domains": []string{w.proxied()}, "allow_private_addresses": true}
		p["resolve"] = []string{w.proxied() + ":127.0.0.1"}
	}
	if len(add) > 0 {
		p["additional_permissions"], p["preauthorized"] = add, true
	}
	return p
}

func (w *workflow) grantsText() string {
	if f := w.runFlags(); len(f) > 0 {
		return strings.Join(f, " ")
	}
	return "none"
}

// registries are the local npm registry and pip index.
type registries struct {
	npm *localreg.Npm // nil when verdaccio is not installed
	pip *localreg.PipIndex
}

func startRegistries(root, verdaccio string) (*registries, error) {
	r := &registries{}
	dir, err := filepath.Abs(verdaccio)
	if err != nil {
		return nil, err
	}
	npmDir := filepath.Join(root, "npm-registry")
	if err := os.Mkdir(npmDir, 0o755); err != nil {
		return nil, err
	}
	if r.npm, err = localreg.StartNpm(localreg.VerdaccioBin(dir), npmDir); err != nil {
		fmt.Printf("npm-install: left out: %v\n", err)
		r.npm = nil
	}
	pipDir := filepath.Join(root, "pip-index")
	if err := os.Mkdir(pipDir, 0o755); err != nil {
		return nil, err
	}
	if r.pip, err = localreg.ServePipIndex(pipDir); err != nil {
		r.stop()
		return nil, err
	}
	return r, nil
}

func (r *registries) stop() {
	if r.npm != nil {
		r.npm.Stop()
	}
	if r.pip != nil {
		r.pip.Close()
	}
}

// hostPort is u's host:port, the --allow-domain of a local registry.
func hostPort(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	return p.Host
}

func writeFiles(dir string, files map[string]string) error {
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func files(f map[string]string) func(string) error {
	return func(dir string) error { return writeFiles(dir, f) }
}

func sh(dir, script string) error {
	c := exec.Command("sh", "-c", script)
	c.Dir = dir
	if out, err := c.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w: %s", script, err, out)
	}
	return nil
}

func workflows(r *registries) []*workflow {
	all := []*workflow{
		{name: "go-build", tool: "go", tools: []string{"go"},
			// A module that is not a git repository, a go line below
			// any local toolchain; the build cache is warm after the
			// warm-up, so each run compiles nothing and links.
			setup: files(map[string]string{
				"go.mod":     "module example.com/wf\n\ngo 1.21\n",
				"main.go":    "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/wf/greet\"\n)\n\nfunc main() { fmt.Println(greet.Hello(\"sbx\")) }\n",
				"greet/g.go": "package greet\n\nimport \"strings\"\n\n// Hello greets name.\nfunc Hello(name string) string { return \"hello \" + strings.ToUpper(name) }\n",
			}),
			reset: func(dir string) error { return os.RemoveAll(filepath.Join(dir, "wf")) },
			argv:  []string{"go", "build", "-o", "wf", "."}},
		{name: "git-commit", tool: "git", write: []string{".git"},
			setup: func(dir string) error {
				return sh(dir, "git init -q && git config user.email bench@example.com && git config user.name bench && "+
					"echo start > f.txt && git add f.txt && git commit -q -m start")
			},
			reset: func(dir string) error {
				return os.WriteFile(filepath.Join(dir, "f.txt"), []byte(time.Now().String()+"\n"), 0o644)
			},
			argv: []string{"sh", "-c", "git status --short >/dev/null && git add -A && git commit -q -m change"}},
		{name: "make-gcc", tool: "gcc",
			setup: files(map[string]string{
				"Makefile": "CC = gcc\nCFLAGS = -O2 -Wall\n\nprog: main.o a.o b.o\n\t$(CC) -o $@ $^\n\n%.o: %.c ab.h\n\t$(CC) $(CFLAGS) -c $<\n\nclean:\n\trm -f prog *.o\n",
				"ab.h":     "int a(int);\nint b(int);\n",
				"a.c":      "#include \"ab.h\"\nint a(int x) { return x * 2; }\n",
				"b.c":      "#include \"ab.h\"\nint b(int x) { return a(x) + 1; }\n",
				"main.c":   "#include <stdio.h>\n#include \"ab.h\"\nint main(void) { printf(\"%d\\n\", b(20)); return 0; }\n",
			}),
			reset: func(dir string) error { return sh(dir, "make -s clean") },
			argv:  []string{"make", "-s"}},
		{name: "python", tool: "python3",
			setup: files(map[string]string{"script.py": "import json, hashlib\n" +
				"d = {str(i): hashlib.sha256(str(i).encode()).hexdigest() for i in range(20000)}\n" +
				"print(len(json.dumps(d)))\n"}),
			argv: []string{"python3", "script.py"}},
		{name: "node", tool: "node",
			argv: []string{"node", "-e", "let s = 0; for (let i = 0; i < 1e6; i++) s += i % 7; console.log(s)"}},
		{name: "cargo-build", tool: "cargo", tools: []string{"cargo"},
			setup: files(map[string]string{
				"Cargo.toml":  "[package]\nname = \"wf\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
				"src/main.rs": "fn main() {\n    let v: u64 = (1..=100).sum();\n    println!(\"{v}\");\n}\n",
			}),
			// A touched source: cargo rebuilds the crate (not the
			// standard library), as after an edit.
			reset: func(dir string) error {
				now := time.Now()
				return os.Chtimes(filepath.Join(dir, "src", "main.rs"), now, now)
			},
			argv: []string{"cargo", "build", "-q"}},
	}
	if r.npm != nil {
		all = append(all, &workflow{name: "npm-install", tool: "npm", tools: []string{"npm"}, registry: r.npm.URL,
			setup: files(map[string]string{"package.json": `{"name":"wf","version":"1.0.0","private":true,"dependencies":{"` +
				localreg.NpmPackage + `":"^1.0.0"}}` + "\n"}),
			reset: func(dir string) error { return sh(dir, "rm -rf node_modules package-lock.json") },
			argv:  []string{"npm", "install", "--registry", r.npm.URL, "--no-audit", "--no-fund", "--no-update-notifier"}})
	}
	all = append(all, &workflow{name: "pip-install", tool: "python3", tools: []string{"pip"}, registry: r.pip.URL,
		sandboxExtra: []string{"--trusted-host", registryName},
		setup:        func(dir string) error { return sh(dir, "python3 -m venv venv") },
		reset: func(dir string) error {
			return sh(dir, "venv/bin/pip uninstall -q -y --disable-pip-version-check "+localreg.PipPackage+" "+localreg.PipBase)
		},
		argv: []string{"venv/bin/pip", "install", "-q", "--disable-pip-version-check", "--index-url", r.pip.URL, localreg.PipPackage}})
	return all
}
