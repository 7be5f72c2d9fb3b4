//go:build linux

package landlock

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestEveryXSysRight: every LANDLOCK_ACCESS_FS_*, LANDLOCK_ACCESS_NET_* and
// LANDLOCK_SCOPE_* constant of the golang.org/x/sys this module builds
// with is a right of the table, with the kernel's value, and every right
// of the table is one of them. A right x/sys adds (a new ABI) fails here
// until the table has its row; read from x/sys's source, not from a list
// written here, so no one has to remember to extend the list.
func TestEveryXSysRight(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		// go test was started by a go command: the toolchain's own.
		goCmd = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out, err := exec.Command(goCmd, "list", "-m", "-json", "golang.org/x/sys").Output()
	if err != nil {
		t.Fatalf("go list -m golang.org/x/sys: %v", err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go list -m golang.org/x/sys: no Dir in %s (%v)", out, err)
	}
	file := filepath.Join(mod.Dir, "unix", "zerrors_linux.go")
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	xsys := map[string]uint64{}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range vs.Names {
			if !strings.HasPrefix(name.Name, "LANDLOCK_ACCESS_FS_") && !strings.HasPrefix(name.Name, "LANDLOCK_ACCESS_NET_") &&
				!strings.HasPrefix(name.Name, "LANDLOCK_SCOPE_") {
				continue
			}
			lit, ok := vs.Values[i].(*ast.BasicLit)
			if !ok {
				t.Errorf("%s: %s is not a literal", file, name.Name)
				continue
			}
			v, err := strconv.ParseUint(lit.Value, 0, 64)
			if err != nil {
				t.Errorf("%s: %s = %s: %v", file, name.Name, lit.Value, err)
			}
			xsys[name.Name] = v
		}
		return true
	})
	if len(xsys) == 0 {
		t.Fatalf("%s: no Landlock rights found", file)
	}
	table := map[string]uint64{}
	for _, r := range Rights() {
		table[r.Const()] = r.Bit
	}
	for name, v := range xsys {
		got, ok := table[name]
		switch {
		case !ok:
			t.Errorf("%s (%#x, golang.org/x/sys) is not in the table: add it to the ABI row that introduces it", name, v)
		case got != v:
			t.Errorf("%s: table %#x, golang.org/x/sys %#x", name, got, v)
		}
	}
	for name := range table {
		if _, ok := xsys[name]; !ok {
			t.Errorf("%s: in the table, not in golang.org/x/sys's %s", name, file)
		}
	}
}

// TestMasks: the masks enforce/linux derives are those it wrote out by
// hand before the table (issue 32), spelt with x/sys's constants.
func TestMasks(t *testing.T) {
	for _, tt := range []struct {
		name      string
		got, want uint64
	}{
		{"read", Granted(ReadRoot, Always), unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR},
		{"write", Granted(WriteRoot, Always), unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR |
			unix.LANDLOCK_ACCESS_FS_REMOVE_FILE | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
			unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK |
			unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_SYM |
			unix.LANDLOCK_ACCESS_FS_REFER | unix.LANDLOCK_ACCESS_FS_TRUNCATE},
		{"device", Granted(Device, Always), unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
			unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV},
		{"file only", FileRights(), unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
			unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV},
		{"network-off write", Granted(WriteRoot, NetworkOff), unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX},
		{"handled fs abi 1", Mask(FS, 1, Always), unix.LANDLOCK_ACCESS_FS_MAKE_SYM<<1 - 1},
		{"handled fs abi 2", Mask(FS, 2, Always), unix.LANDLOCK_ACCESS_FS_MAKE_SYM<<1 - 1 | unix.LANDLOCK_ACCESS_FS_REFER},
		{"handled fs abi 4", Mask(FS, 4, Always), unix.LANDLOCK_ACCESS_FS_MAKE_SYM<<1 - 1 | unix.LANDLOCK_ACCESS_FS_REFER | unix.LANDLOCK_ACCESS_FS_TRUNCATE},
		{"handled fs abi 11", Mask(FS, 11, Always), unix.LANDLOCK_ACCESS_FS_MAKE_SYM<<1 - 1 | unix.LANDLOCK_ACCESS_FS_REFER | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV},
		{"network-off fs abi 8", Mask(FS, 8, NetworkOff), 0},
		{"network-off fs abi 9", Mask(FS, 9, NetworkOff), unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX},
		{"net abi 4", Mask(Net, 4, NoNetNS), unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP},
		{"net abi 11", Mask(Net, 11, NoNetNS), unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP},
		{"scope abi 6", Mask(Scope, 6, Always), unix.LANDLOCK_SCOPE_SIGNAL},
		{"network-off scope abi 6", Mask(Scope, 6, NetworkOff), unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET},
	} {
		if tt.got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, Names(FS, tt.got), Names(FS, tt.want))
		}
	}
}
