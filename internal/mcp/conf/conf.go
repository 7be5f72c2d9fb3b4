// Package conf is what sbx mcp hands the sbx-mcp program: the flags it
// checked, as one JSON value in the environment. It imports nothing of
// the MCP SDK, so that sbx itself stays static (cmd/sbx TestNoCgo: the
// SDK links net/http, and with it net and cgo).
package conf

// Env is the environment variable that carries the Config.
const Env = "SBX_MCP_CONFIG"

// Config is sbx mcp's flags, checked.
type Config struct {
	// Sbx is the sbx binary whose `sbx serve` each MCP session's sbx
	// session is served by; ServeArgs are that command's arguments
	// (serve, the answerers, the state directory, the answer timeout).
	Sbx       string   `json:"sbx"`
	ServeArgs []string `json:"serve_args"`
	// Preset, else SandboxMode and ApprovalPolicy, are each sbx session's
	// knobs at session/open.
	Preset         string `json:"preset,omitempty"`
	SandboxMode    string `json:"sandbox_mode,omitempty"`
	ApprovalPolicy string `json:"approval_policy,omitempty"`
	// Cwd is the sessions' cwd; Roots the directories they may work in
	// (absolute, resolved; empty: Cwd).
	Cwd        string   `json:"cwd"`
	Roots      []string `json:"roots,omitempty"`
	ExcludeTmp bool     `json:"exclude_tmp,omitempty"`
	NoElicit   bool     `json:"no_elicit,omitempty"`
	// Listen is the unix socket of the streamable HTTP transport ("":
	// stdio).
	Listen string `json:"listen,omitempty"`
	// ListenTCP is the loopback address of the streamable HTTP transport
	// (127.0.0.1:PORT or [::1]:PORT), whose bearer token goes to TokenFile
	// (0600, in a directory masked in every call).
	ListenTCP string `json:"listen_tcp,omitempty"`
	TokenFile string `json:"token_file,omitempty"`
	Version   string `json:"version"`
}
