package sandbox

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/fsop"
	"github.com/sbx-sandbox/sbx/internal/profiles"
	"github.com/sbx-sandbox/sbx/internal/wire"
)

// fill sets v, and what it points to or holds, to a value that is not
// zero wherever it can: a field the conversions drop then shows.
func fill(v reflect.Value, depth int) {
	if depth > 4 || !v.CanSet() {
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.String:
		v.SetString("x")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, depth+1)
		fill(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i), depth+1)
		}
	}
}

// leaves calls f with each settable field of t's value, by its path,
// descending into embedded structs (a CallReport's fields are the
// result's).
func leaves(t reflect.Type, path string, f func(path string, index []int)) {
	var walk func(t reflect.Type, path string, index []int)
	walk = func(t reflect.Type, path string, index []int) {
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			idx := append(append([]int(nil), index...), i)
			if sf.Anonymous && sf.Type.Kind() == reflect.Struct {
				walk(sf.Type, path+sf.Name+".", idx)
				continue
			}
			f(path+sf.Name, idx)
		}
	}
	walk(t, path, nil)
}

// TestConversion: every field of each wire type comes back from the round
// trip through sandbox's own type, alone; a wire field sandbox has no
// field for fails here until the conversion carries it.
func TestConversion(t *testing.T) {
	cases := []struct {
		name string
		typ  reflect.Type
		trip func(v any) any
	}{
		{"Request", reflect.TypeFor[wire.Request](), func(v any) any { return *requestFromWire(new(v.(wire.Request))).wire() }},
		{"Result", reflect.TypeFor[wire.Result](), func(v any) any { return *resultFromWire(new(v.(wire.Result))).wire() }},
		{"FSResult", reflect.TypeFor[wire.FSResult](), func(v any) any { return *fsResultFromWire(new(v.(wire.FSResult))).wire() }},
		{"OutputEvent", reflect.TypeFor[wire.OutputEvent](), func(v any) any { return eventFromWire(v.(wire.OutputEvent)).wire() }},
	}
	for _, c := range cases {
		n := 0
		leaves(c.typ, c.name+".", func(path string, index []int) {
			n++
			v := reflect.New(c.typ).Elem()
			fill(v.FieldByIndex(index), 0)
			if v.IsZero() {
				return // nothing to carry (schema_version's Version)
			}
			if got := c.trip(v.Interface()); !reflect.DeepEqual(got, v.Interface()) {
				t.Errorf("%s does not survive the conversion:\n got  %+v\n want %+v", path, got, v.Interface())
			}
		})
		if n < 5 {
			t.Errorf("%s: only %d fields walked", c.name, n)
		}
	}
	// The fs change, and the object of an error, in their own place.
	for _, path := range []string{"FS", "PTY"} {
		var w wire.Request
		fill(reflect.ValueOf(&w).Elem().FieldByName(path), 0)
		if got := requestFromWire(&w).wire(); !reflect.DeepEqual(*got, w) {
			t.Errorf("Request.%s does not survive the conversion", path)
		}
	}
}

// TestNameable: every type an embedder reads from a request, a result, a
// refusal or a question is exported by sandbox or is one sandbox names
// with an alias: none is reachable only through an internal package.
func TestNameable(t *testing.T) {
	aliases := aliasedTypes(t)
	seen := map[reflect.Type]bool{}
	var visit func(t reflect.Type, from string)
	var missing []string
	visit = func(typ reflect.Type, from string) {
		if seen[typ] {
			return
		}
		seen[typ] = true
		if typ.Name() != "" && strings.Contains(typ.PkgPath(), "/internal/") && !aliases[typ.PkgPath()+"."+typ.Name()] {
			missing = append(missing, typ.PkgPath()+"."+typ.Name()+" (from "+from+")")
		}
		switch typ.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array:
			visit(typ.Elem(), from)
		case reflect.Map:
			visit(typ.Key(), from)
			visit(typ.Elem(), from)
		case reflect.Struct:
			for i := range typ.NumField() {
				if sf := typ.Field(i); sf.IsExported() {
					visit(sf.Type, from+"."+sf.Name)
				}
			}
		}
	}
	for _, v := range []any{Request{}, Response{}, Result{}, FSResult{}, Refusal{}, Question{}, Check{}, OutputEvent{}, Explanation{}} {
		visit(reflect.TypeOf(v), reflect.TypeOf(v).Name())
	}
	for _, m := range missing {
		t.Errorf("%s: reachable from sandbox's types but not named by sandbox (add an alias in types.go)", m)
	}
}

// aliasedTypes are the internal types sandbox's sources alias, as
// "import/path.Name".
func aliasedTypes(t *testing.T) map[string]bool {
	t.Helper()
	if _, err := os.Stat("types.go"); err != nil {
		// A test binary run out of tree (test.sh's unprivileged pass):
		// the sources are where go test runs it, in the other pass.
		t.Skip("sandbox's sources are not beside this test binary (run out of tree)")
	}
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		imports := map[string]string{}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			imports[filepath.Base(p)] = p
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok || !ts.Assign.IsValid() {
				return true
			}
			if sel, ok := ts.Type.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && ts.Name.IsExported() {
					out[imports[x.Name]+"."+sel.Sel.Name] = true
				}
			}
			return true
		})
	}
	return out
}

// TestVocabularies: sandbox's constants name every value of each closed
// vocabulary it re-exports, in the order sbx lists them; a value added
// to one fails here until sandbox names it too.
func TestVocabularies(t *testing.T) {
	check := func(name string, got, want any) {
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: sandbox names %v, sbx has %v", name, got, want)
		}
	}
	check("modes", []Mode{ReadOnly, WorkspaceWrite, DangerFullAccess}, profiles.Modes())
	check("approval policies", []ApprovalPolicy{ApprovalNever, ApprovalOnRequest, ApprovalOnFailure, ApprovalUntrusted}, profiles.ApprovalPolicies())
	check("fs operations", []FSOp{FSWrite, FSAppend, FSMkdir, FSRemove, FSMove, FSCopy, FSChmod, FSApplyPatch}, fsop.Kinds)
	check("error kinds", []string{KindInvalidRequest, KindDeniedByPolicy, KindUnsupported, KindExecFailed, KindInternal, KindFSDenied, KindFSFailed}, wire.ErrorKinds)
	for _, p := range []SandboxPermissions{UseDefault, WithAdditionalPermissions, RequireEscalated, RequireEscalated + 1} {
		_, err := profiles.ParseSandboxPermissions(p.String())
		if known := p <= RequireEscalated; (err == nil) != known {
			t.Errorf("sandbox_permissions %d (%q): parses %v, named by sandbox %v", int(p), p, err == nil, known)
		}
	}
}
