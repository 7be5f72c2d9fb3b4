package tools

// Kind says what a table directory holds.
type Kind int

const (
	// Cache is content the tool can rebuild: deleting it costs time only.
	Cache Kind = iota
	// State is data the tool keeps between runs (lock files, telemetry
	// counters, a module cache that is also a download record).
	State
)

func (k Kind) String() string {
	if k == State {
		return "state"
	}
	return "cache"
}

// Location is one way to find a directory: the variable Var, when set to an
// absolute path, joined with Sub. A variable holding a list (GOPATH) counts
// by its first entry.
type Location struct {
	Var string
	Sub string
}

// Dir is a directory a tool writes. Its place is the first Location whose
// variable is set, else Default ("~/" is HOME).
type Dir struct {
	Kind      Kind
	Locations []Location
	Default   string
	// Why says what the tool keeps there.
	Why string
}

// Tool is one row of the table.
type Tool struct {
	Name string
	// Dirs are the cache and state roots the tool writes; a retry grants
	// one of these, whole, for any denial inside it.
	Dirs []Dir
	// Domains are the registry hosts the tool downloads from by default.
	Domains []string
	// Never are the directories and files of the tool that must never be
	// granted: their contents run later outside the sandbox (a bin
	// directory on PATH, hooks). Same form as Dir.
	Never []Dir
	// Source is the documentation the row was checked against.
	Source string
}

// xdgCache, xdgConfig and xdgData are the XDG base directories with sub.
func xdgCache(sub string) Location  { return Location{Var: "XDG_CACHE_HOME", Sub: sub} }
func xdgConfig(sub string) Location { return Location{Var: "XDG_CONFIG_HOME", Sub: sub} }
func xdgData(sub string) Location   { return Location{Var: "XDG_DATA_HOME", Sub: sub} }

// Table is the reviewed list. Keep one row per tool, each with its source;
// TestTable walks it.
var Table = []Tool{
	{Name: "go", Source: "https://pkg.go.dev/cmd/go#hdr-Environment_variables; https://go.dev/doc/telemetry",
		Dirs: []Dir{
			{Kind: Cache, Locations: []Location{{Var: "GOCACHE"}, xdgCache("go-build")}, Default: "~/.cache/go-build", Why: "build cache (hash-named entries)"},
			{Kind: Cache, Locations: []Location{{Var: "GOMODCACHE"}, {Var: "GOPATH", Sub: "pkg/mod"}}, Default: "~/go/pkg/mod", Why: "module download cache"},
			// Telemetry has no switch in the environment (GOTELEMETRY is
			// only read by `go telemetry`): its root is the grant, never
			// ~/.config/go as a whole, which holds go/env.
			{Kind: State, Locations: []Location{xdgConfig("go/telemetry")}, Default: "~/.config/go/telemetry", Why: "telemetry counters (dated files)"},
		},
		Domains: []string{"proxy.golang.org", "sum.golang.org", "storage.googleapis.com"},
		Never: []Dir{
			{Locations: []Location{{Var: "GOBIN"}, {Var: "GOPATH", Sub: "bin"}}, Default: "~/go/bin", Why: "go install puts programs there, on PATH"},
			{Locations: []Location{xdgConfig("go/env")}, Default: "~/.config/go/env", Why: "go env -w: settings every later go command applies (GOFLAGS=-toolexec)"},
		}},
	{Name: "npm", Source: "https://docs.npmjs.com/cli/v10/using-npm/config#cache; https://docs.npmjs.com/cli/v10/configuring-npm/folders",
		Dirs: []Dir{
			{Kind: Cache, Locations: []Location{{Var: "npm_config_cache"}, {Var: "NPM_CONFIG_CACHE"}}, Default: "~/.npm", Why: "_cacache (content-v2, index-v5, tmp) and _logs"},
		},
		Domains: []string{"registry.npmjs.org"},
		Never: []Dir{
			{Locations: []Location{{Var: "npm_config_prefix", Sub: "bin"}, {Var: "NPM_CONFIG_PREFIX", Sub: "bin"}}, Default: "~/.npm-global/bin", Why: "npm install -g puts programs there, on PATH"},
			{Default: "~/.npmrc", Why: "user configuration: scripts and registries every later npm applies"},
		}},
	{Name: "pnpm", Source: "https://pnpm.io/npmrc#store-dir; https://pnpm.io/npmrc#cache-dir",
		Dirs: []Dir{
			{Kind: Cache, Locations: []Location{{Var: "PNPM_HOME", Sub: "store"}, xdgData("pnpm/store")}, Default: "~/.local/share/pnpm/store", Why: "content-addressed store"},
			{Kind: Cache, Locations: []Location{xdgCache("pnpm")}, Default: "~/.cache/pnpm", Why: "metadata cache"},
		},
		Domains: []string{"registry.npmjs.org"},
		Never:   []Dir{{Locations: []Location{{Var: "PNPM_HOME"}}, Default: "~/.local/share/pnpm", Why: "pnpm add -g puts programs there, on PATH"}}},
	{Name: "yarn", Source: "https://classic.yarnpkg.com/en/docs/cli/cache; https://yarnpkg.com/configuration/yarnrc#globalFolder",
		Dirs: []Dir{
			{Kind: Cache, Locations: []Location{{Var: "YARN_CACHE_FOLDER"}, xdgCache("yarn")}, Default: "~/.cache/yarn", Why: "yarn 1 package cache"},
			{Kind: Cache, Locations: []Location{{Var: "YARN_GLOBAL_FOLDER", Sub: "cache"}}, Default: "~/.yarn/berry/cache", Why: "yarn 2+ global cache"},
		},
		Domains: []string{"registry.yarnpkg.com", "registry.npmjs.org"},
		Never:   []Dir{{Default: "~/.yarn/bin", Why: "yarn global puts programs there, on PATH"}}},
	{Name: "pip", Source: "https://pip.pypa.io/en/stable/topics/caching/",
		Dirs: []Dir{
			{Kind: Cache, Locations: []Location{{Var: "PIP_CACHE_DIR"}, xdgCache("pip")}, Default: "~/.cache/pip", Why: "http and wheel cache"},
		},
		Domains: []string{"pypi.org", "files.pythonhosted.org"},
		Never: []Dir{
			{Default: "~/.local/bin", Why: "pip install --user puts programs there, on PATH"},
			{Locations: []Location{{Var: "PIP_CONFIG_FILE"}, xdgConfig("pip")}, Default: "~/.config/pip", Why: "configuration: index URLs every later pip applies"},
		}},
	{Name: "uv", Source: "https://docs.astral.sh/uv/concepts/cache/#cache-directory; https://docs.astral.sh/uv/reference/environment/",
		Dirs: []Dir{
			{Kind: Cache, Locations: []Location{{Var: "UV_CACHE_DIR"}, xdgCache("uv")}, Default: "~/.cache/uv", Why: "package cache"},
			{Kind: State, Locations: []Location{{Var: "UV_PYTHON_INSTALL_DIR"}, xdgData("uv/python")}, Default: "~/.local/share/uv/python", Why: "managed Python installations"},
		},
		Domains: []string{"pypi.org", "files.pythonhosted.org", "github.com"},
		Never:   []Dir{{Locations: []Location{{Var: "UV_TOOL_BIN_DIR"}}, Default: "~/.local/bin", Why: "uv tool install puts programs there, on PATH"}}},
	{Name: "python", Source: "https://docs.python.org/3/using/cmdline.html#envvar-PYTHONPYCACHEPREFIX; https://docs.python.org/3/library/venv.html",
		// A venv and __pycache__ live in the workspace; the user site is
		// where pip --user writes.
		Dirs: []Dir{
			{Kind: Cache, Locations: []Location{{Var: "PYTHONPYCACHEPREFIX"}}, Default: "", Why: "bytecode cache, when relocated"},
		},
		Never: []Dir{{Locations: []Location{{Var: "PYTHONUSERBASE", Sub: "bin"}}, Default: "~/.local/bin", Why: "user scripts, on PATH"},
			{Locations: []Location{{Var: "PYTHONUSERBASE", Sub: "lib"}}, Default: "~/.local/lib", Why: "user site-packages: imported (and .pth files run) by every later python"}}},
	{Name: "cargo", Source: "https://doc.rust-lang.org/cargo/guide/cargo-home.html",
		Dirs: []Dir{
			{Kind: Cache, Locations: []Location{{Var: "CARGO_HOME", Sub: "registry"}}, Default: "~/.cargo/registry", Why: "registry index and crate sources"},
			{Kind: Cache, Locations: []Location{{Var: "CARGO_HOME", Sub: "git"}}, Default: "~/.cargo/git", Why: "git dependencies"},
		},
		Domains: []string{"index.crates.io", "crates.io", "static.crates.io"},
		Never: []Dir{
			{Locations: []Location{{Var: "CARGO_INSTALL_ROOT", Sub: "bin"}, {Var: "CARGO_HOME", Sub: "bin"}}, Default: "~/.cargo/bin", Why: "cargo install puts programs there, on PATH"},
			{Locations: []Location{{Var: "CARGO_HOME", Sub: "config.toml"}}, Default: "~/.cargo/config.toml", Why: "configuration: build.rustc-wrapper runs in every later build"},
		}},
	{Name: "rustup", Source: "https://rust-lang.github.io/rustup/environment-variables.html",
		Dirs:    []Dir{{Kind: State, Locations: []Location{{Var: "RUSTUP_HOME", Sub: "tmp"}}, Default: "~/.rustup/tmp", Why: "downloads in progress"}},
		Domains: []string{"static.rust-lang.org"},
		Never:   []Dir{{Locations: []Location{{Var: "RUSTUP_HOME", Sub: "toolchains"}}, Default: "~/.rustup/toolchains", Why: "the compilers every later cargo runs"}}},
	{Name: "make", Source: "https://www.gnu.org/software/make/manual/make.html; https://gcc.gnu.org/onlinedocs/gcc/Environment-Variables.html",
		// make and cc write in the workspace and in TMPDIR (a root already);
		// ccache keeps a cache.
		Dirs: []Dir{{Kind: Cache, Locations: []Location{{Var: "CCACHE_DIR"}, xdgCache("ccache")}, Default: "~/.cache/ccache", Why: "ccache compiler cache"}}},
	{Name: "node", Source: "https://nodejs.org/api/repl.html#environment-variable-options; https://nodejs.org/api/module.html#module-compile-cache",
		Dirs: []Dir{
			{Kind: Cache, Locations: []Location{{Var: "NODE_COMPILE_CACHE"}}, Default: "", Why: "compile cache, when relocated"},
			{Kind: Cache, Locations: []Location{{Var: "COREPACK_HOME"}, xdgCache("node/corepack")}, Default: "~/.cache/node/corepack", Why: "corepack's package managers"},
		}},
	{Name: "maven", Source: "https://maven.apache.org/settings.html#Simple_Values",
		Dirs:    []Dir{{Kind: Cache, Default: "~/.m2/repository", Why: "local repository"}},
		Domains: []string{"repo.maven.apache.org", "repo1.maven.org"},
		Never:   []Dir{{Default: "~/.m2/settings.xml", Why: "configuration: mirrors and plugins every later build uses"}}},
	{Name: "gradle", Source: "https://docs.gradle.org/current/userguide/directory_layout.html#dir:gradle_user_home",
		Dirs: []Dir{
			{Kind: Cache, Locations: []Location{{Var: "GRADLE_USER_HOME", Sub: "caches"}}, Default: "~/.gradle/caches", Why: "dependency and build caches"},
			{Kind: Cache, Locations: []Location{{Var: "GRADLE_USER_HOME", Sub: "wrapper"}}, Default: "~/.gradle/wrapper", Why: "downloaded Gradle distributions"},
			{Kind: State, Locations: []Location{{Var: "GRADLE_USER_HOME", Sub: "daemon"}}, Default: "~/.gradle/daemon", Why: "daemon registry and logs"},
			{Kind: State, Locations: []Location{{Var: "GRADLE_USER_HOME", Sub: "native"}}, Default: "~/.gradle/native", Why: "native libraries Gradle extracts"},
		},
		Domains: []string{"plugins.gradle.org", "services.gradle.org", "repo.maven.apache.org"},
		Never: []Dir{{Locations: []Location{{Var: "GRADLE_USER_HOME", Sub: "init.d"}}, Default: "~/.gradle/init.d", Why: "init scripts every later build runs"},
			{Locations: []Location{{Var: "GRADLE_USER_HOME", Sub: "gradle.properties"}}, Default: "~/.gradle/gradle.properties", Why: "JVM arguments every later build applies"}}},
	{Name: "java", Source: "https://docs.oracle.com/en/java/javase/21/docs/specs/man/java.html",
		Dirs: []Dir{{Kind: State, Default: "~/.java/.userPrefs", Why: "java.util.prefs user preferences"}}},
	{Name: "git", Source: "https://git-scm.com/docs/githooks; https://git-scm.com/docs/git-config#FILES",
		// git writes inside the repository's .git (a carve-out: see
		// escalate's narrow git retry), never a cache of its own.
		Never: []Dir{
			{Locations: []Location{{Var: "GIT_CONFIG_GLOBAL"}}, Default: "~/.gitconfig", Why: "core.hooksPath, aliases and filters run by every later git"},
			{Locations: []Location{xdgConfig("git")}, Default: "~/.config/git", Why: "the same, in its XDG place"},
		}},
	{Name: "shell", Source: "https://www.gnu.org/software/bash/manual/html_node/Bash-Startup-Files.html; https://zsh.sourceforge.io/Intro/intro_3.html",
		// Not a toolchain: the files every later shell runs.
		Never: []Dir{
			{Default: "~/.bashrc"}, {Default: "~/.bash_profile"}, {Default: "~/.bash_login"}, {Default: "~/.bash_logout"},
			{Default: "~/.profile"}, {Default: "~/.zshrc"}, {Default: "~/.zshenv"}, {Default: "~/.zprofile"}, {Default: "~/.zlogin"},
			{Locations: []Location{xdgConfig("fish")}, Default: "~/.config/fish"},
			{Locations: []Location{xdgConfig("autostart")}, Default: "~/.config/autostart"},
			{Locations: []Location{xdgConfig("systemd/user")}, Default: "~/.config/systemd/user"},
			{Default: "~/.ssh"},
		}},
}
