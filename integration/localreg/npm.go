package localreg

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The npm packages StartNpm publishes: NpmPackage depends on NpmBase, so
// `npm install NpmPackage` fetches two packuments and two tarballs.
const (
	NpmPackage = "sbx-wf-greet"
	NpmBase    = "sbx-wf-base"
	// NpmLocal is the package of PackNpm's tarball (no dependencies).
	NpmLocal = "sbx-wf-local"
)

// ErrNoVerdaccio is StartNpm's error when verdaccio is not installed
// where it was looked for.
var ErrNoVerdaccio = errors.New("verdaccio is not installed (run: cd integration/testdata/verdaccio && npm ci --no-audit --no-fund)")

// VerdaccioBin returns verdaccio's entry script in dir, the directory of
// integration/testdata/verdaccio/package.json (after npm ci there).
func VerdaccioBin(dir string) string {
	return filepath.Join(dir, "node_modules", "verdaccio", "bin", "verdaccio")
}

// Npm is a running verdaccio.
type Npm struct {
	// URL is the registry's URL, with a trailing slash, as npm's
	// --registry takes it: http://127.0.0.1:PORT/.
	URL  string
	cmd  *exec.Cmd
	done chan error
	log  string
}

// verdaccioConfig has no uplinks: a package verdaccio was not given is
// not found, never proxied. Publishing needs a user (npm refuses to
// publish without credentials); StartNpm adds one.
const verdaccioConfig = `storage: %q
auth:
  htpasswd:
    file: %q
uplinks: {}
packages:
  '**':
    access: $all
    publish: $authenticated
    unpublish: $authenticated
log: { type: stdout, format: pretty, level: warn }
`

// StartNpm starts verdaccio (bin, see VerdaccioBin) with node, its
// configuration, storage and log in dir, on a free port of 127.0.0.1, and
// publishes NpmBase and NpmPackage into it with npm. A missing bin is
// ErrNoVerdaccio. Stop it with Stop.
func StartNpm(bin, dir string) (*Npm, error) {
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoVerdaccio, err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	conf := fmt.Sprintf(verdaccioConfig, filepath.Join(dir, "storage"), filepath.Join(dir, "htpasswd"))
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	// The port is free when chosen and taken by verdaccio a moment later:
	// another process can take it between, so a start that fails is tried
	// again on another port.
	var n *Npm
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if n, err = startVerdaccio(bin, cfg, dir); err == nil {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	if err := n.publishAll(dir); err != nil {
		n.Stop()
		return nil, err
	}
	return n, nil
}

func startVerdaccio(bin, cfg, dir string) (*Npm, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	logPath := filepath.Join(dir, "verdaccio-"+strconv.Itoa(port)+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command("node", bin, "--config", cfg, "--listen", addr)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start verdaccio: %w", err)
	}
	n := &Npm{URL: "http://" + addr + "/", cmd: cmd, done: make(chan error, 1), log: logPath}
	go func() { n.done <- cmd.Wait() }()
	// Start-up takes under a second on an idle machine; a loaded CI
	// machine gets a minute.
	deadline := time.Now().Add(60 * time.Second)
	client := &http.Client{Timeout: 2 * time.Second}
	for time.Now().Before(deadline) {
		select {
		case werr := <-n.done:
			n.done <- werr
			return nil, fmt.Errorf("verdaccio on %s exited before it answered: %v: %s", addr, werr, n.Log())
		case <-time.After(100 * time.Millisecond):
		}
		resp, err := client.Get(n.URL + "-/ping")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return n, nil
			}
		}
	}
	n.Stop()
	return nil, fmt.Errorf("verdaccio on %s did not answer /-/ping within a minute: %s", addr, n.Log())
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Log returns what verdaccio printed so far (its warnings and errors).
func (n *Npm) Log() string {
	b, _ := os.ReadFile(n.log)
	return strings.TrimSpace(string(b))
}

// Stop ends verdaccio (SIGTERM, then SIGKILL after 5 s) and waits for it.
func (n *Npm) Stop() {
	select {
	case err := <-n.done:
		n.done <- err
		return
	default:
	}
	_ = n.cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-n.done:
		n.done <- err
	case <-time.After(5 * time.Second):
		_ = n.cmd.Process.Kill()
		n.done <- <-n.done
	}
}

// publishAll adds a user (verdaccio's htpasswd plugin creates it on the
// first login, as `npm adduser` would) and publishes the two packages
// with its token, from an npmrc of dir's own (not the caller's ~/.npmrc).
func (n *Npm) publishAll(dir string) error {
	token, err := n.addUser()
	if err != nil {
		return err
	}
	host := strings.TrimPrefix(n.URL, "http:")
	npmrc := filepath.Join(dir, "publish.npmrc")
	if err := os.WriteFile(npmrc, []byte(host+":_authToken="+token+"\n"), 0o600); err != nil {
		return err
	}
	for _, p := range []npmPkg{
		{NpmBase, nil, `module.exports = "base";`},
		{NpmPackage, map[string]string{NpmBase: "^1.0.0"}, `module.exports = () => "hello from " + require("` + NpmBase + `");`},
	} {
		src := filepath.Join(dir, "src", p.name)
		if err := p.write(src); err != nil {
			return err
		}
		if _, err := npmCmd(src, dir, npmrc, "publish", "--registry", n.URL); err != nil {
			return fmt.Errorf("publish %s to %s: %w", p.name, n.URL, err)
		}
	}
	return nil
}

func (n *Npm) addUser() (string, error) {
	body := `{"name":"sbx","password":"sbx-local-registry"}`
	req, err := http.NewRequest(http.MethodPut, n.URL+"-/user/org.couchdb.user:sbx", strings.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("add a user to %s: %w", n.URL, err)
	}
	defer resp.Body.Close()
	var r struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Token == "" {
		return "", fmt.Errorf("add a user to %s: %s: no token (%v)", n.URL, resp.Status, err)
	}
	return r.Token, nil
}

// npmPkg is a tiny package: package.json and index.js.
type npmPkg struct {
	name string
	deps map[string]string
	js   string
}

func (p npmPkg) write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	manifest, err := json.MarshalIndent(map[string]any{
		"name": p.name, "version": "1.0.0", "main": "index.js", "license": "MIT",
		"description": "a package of sbx's workflow tests", "dependencies": p.deps,
	}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), manifest, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "index.js"), []byte(p.js+"\n"), 0o644)
}

// npmCmd runs npm in dir with its cache below work and npmrc as its user
// configuration, and returns its standard output.
func npmCmd(dir, work, npmrc string, args ...string) ([]byte, error) {
	cmd := exec.Command("npm", append(args, "--no-audit", "--no-fund")...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"npm_config_cache="+filepath.Join(work, "npm-cache"),
		"npm_config_userconfig="+npmrc,
		"npm_config_update_notifier=false")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("npm %s: %w: %s%s", strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return out, nil
}

// PackNpm makes the tarball of NpmLocal (no dependencies) with `npm pack`
// in dir and returns its path, for `npm install ./FILE.tgz`.
func PackNpm(dir string) (string, error) {
	src := filepath.Join(dir, "src", NpmLocal)
	p := npmPkg{NpmLocal, nil, `module.exports = "local";`}
	if err := p.write(src); err != nil {
		return "", err
	}
	npmrc := filepath.Join(dir, "pack.npmrc")
	if err := os.WriteFile(npmrc, nil, 0o644); err != nil {
		return "", err
	}
	out, err := npmCmd(src, dir, npmrc, "pack", "--json", "--pack-destination", dir)
	if err != nil {
		return "", err
	}
	var packed []struct {
		Filename string `json:"filename"`
	}
	if err := json.Unmarshal(out, &packed); err != nil || len(packed) != 1 {
		return "", fmt.Errorf("npm pack --json: unexpected output %q: %v", out, err)
	}
	return filepath.Join(dir, packed[0].Filename), nil
}
