package lint

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const (
	modulePath = "github.com/sbx-sandbox/sbx"
	reportPath = modulePath + "/internal/report"
	// featureDecl is the one file that spells features: every other file
	// names them by their constants (issue 32).
	featureDecl = "internal/report/feature.go"
)

// TestNoBareFeatureLiteral: outside feature.go, no non-test Go file of the
// module (any OS, any build tag) makes a Feature from a string literal or a
// string constant: no Feature("x") conversion, no Feature field, element,
// key, variable, argument, return value, comparison or switch case given
// "x". A misspelt name would otherwise be a --require or a doctor line that
// no code matches. It reads the source (go/parser), not type information,
// so that every platform's files are checked from one.
func TestNoBareFeatureLiteral(t *testing.T) {
	var files []*srcFile
	for _, gf := range moduleGoFiles(t) {
		f, err := parseSrc(gf.rel, gf.src)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	for _, e := range featureLiterals(files) {
		t.Error(e)
	}
}

// TestFeatureLiteralsFound: the scan finds each way of making a Feature
// from a string, and leaves constants and non-Feature strings alone.
func TestFeatureLiteralsFound(t *testing.T) {
	const decl = `package report
type Feature string
type Check struct{ Feature Feature; Detail string }
type Downgrade struct{ Feature Feature; Reason string }
const FeatureNetNS Feature = "netns"
`
	const head = `package x
import "github.com/sbx-sandbox/sbx/internal/report"
const name = "netns"
type own struct{ Feature string }
func take(s string, f report.Feature, more ...report.Feature) {}
func (o own) degrade(f report.Feature, reason string) {}
`
	for _, tt := range []struct {
		name, body string
		want       int
	}{
		{"constants", `var _ = report.Check{Feature: report.FeatureNetNS, Detail: "netns"}; var _ = own{Feature: "netns"}
func f(c report.Check) bool { take("netns", report.FeatureNetNS); return c.Feature == report.FeatureNetNS }`, 0},
		{"conversion", `var _ = report.Feature("netns")`, 1},
		{"conversion of a constant", `var _ = report.Feature(name)`, 1},
		{"field", `var _ = report.Check{Feature: "netns"}`, 1},
		{"field of a constant", `var _ = report.Check{Feature: name}`, 1},
		{"pointer", `var _ = &report.Downgrade{Feature: "netns", Reason: "r"}`, 1},
		{"elided", `var _ = []report.Check{{Feature: "netns"}, {Feature: report.FeatureNetNS}}`, 1},
		{"slice", `var _ = []report.Feature{report.FeatureNetNS, "pidns"}`, 1},
		{"map key", `var _ = map[report.Feature]int{"netns": 1}`, 1},
		{"variable", `var v report.Feature = "netns"`, 1},
		{"assignment", `func f(c *report.Check) { c.Feature = "netns" }`, 1},
		{"comparison", `func f(d report.Downgrade) bool { return "netns" != d.Feature }`, 1},
		{"switch", `func f(d report.Downgrade) { switch d.Feature { case report.FeatureNetNS, "pidns": } }`, 1},
		{"argument", `func f() { take("x", "netns", report.FeatureNetNS, "pidns") }`, 2},
		{"method argument", `func f(o own) { o.degrade("netns", "why") }`, 1},
		{"return", `func f() (int, report.Feature) { return 0, "netns" }`, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := parseSrc(featureDecl, []byte(decl))
			if err != nil {
				t.Fatal(err)
			}
			x, err := parseSrc("internal/x/x.go", []byte(head+tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if got := featureLiterals([]*srcFile{d, x}); len(got) != tt.want {
				t.Errorf("found %d, want %d: %q", len(got), tt.want, got)
			}
		})
	}
}

// srcFile is one parsed file, with the import path of its package and the
// names its imports go by.
type srcFile struct {
	rel, pkg string
	fset     *token.FileSet
	f        *ast.File
	imports  map[string]string // local name -> import path
}

func parseSrc(rel string, src []byte) (*srcFile, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	sf := &srcFile{rel: rel, pkg: modulePath + "/" + path.Dir(rel), fset: fset, f: f, imports: map[string]string{}}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		name := p[strings.LastIndex(p, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		sf.imports[name] = p
	}
	return sf, nil
}

// featureScan holds what the whole module declares: string constants,
// struct fields of type Feature and functions with Feature parameters.
type featureScan struct {
	consts map[string]bool     // "pkg.Name" of constants with a string literal value
	fields map[string][]string // "pkg.Type" -> its Feature fields
	params map[string][][]int  // function or method name -> each one's Feature parameter indexes (-1-i: variadic from i)
	out    []string            // what was found
	file   *srcFile            // the file being walked
	funcs  []funcSpan          // the file's functions, for return statements
}

// funcSpan is a function's type and the extent of its body.
type funcSpan struct {
	ft         *ast.FuncType
	start, end token.Pos
}

// featureLiterals scans files and says where a Feature is made from a
// string, outside featureDecl.
func featureLiterals(files []*srcFile) []string {
	s := &featureScan{consts: map[string]bool{}, fields: map[string][]string{}, params: map[string][][]int{}}
	for _, sf := range files {
		s.file = sf
		s.declare()
	}
	for _, sf := range files {
		if sf.rel == featureDecl {
			continue
		}
		s.file = sf
		s.walk()
	}
	return s.out
}

// isFeature reports whether the type expression e is report.Feature.
func (s *featureScan) isFeature(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return s.file.pkg == reportPath && e.Name == "Feature"
	case *ast.SelectorExpr:
		x, ok := e.X.(*ast.Ident)
		return ok && s.file.imports[x.Name] == reportPath && e.Sel.Name == "Feature"
	case *ast.ParenExpr:
		return s.isFeature(e.X)
	}
	return false
}

// typeName is "pkg.Name" of a named type expression, or "".
func (s *featureScan) typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return s.file.pkg + "." + e.Name
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok && s.file.imports[x.Name] != "" {
			return s.file.imports[x.Name] + "." + e.Sel.Name
		}
	case *ast.StarExpr:
		return s.typeName(e.X)
	}
	return ""
}

// isString reports whether e is a string literal or string constant (or
// a concatenation of them).
func (s *featureScan) isString(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.BasicLit:
		return e.Kind == token.STRING
	case *ast.Ident:
		return s.consts[s.file.pkg+"."+e.Name]
	case *ast.SelectorExpr:
		x, ok := e.X.(*ast.Ident)
		return ok && s.consts[s.file.imports[x.Name]+"."+e.Sel.Name]
	case *ast.ParenExpr:
		return s.isString(e.X)
	case *ast.BinaryExpr:
		return e.Op == token.ADD && s.isString(e.X) && s.isString(e.Y)
	}
	return false
}

// declare records the file's string constants, Feature fields and Feature
// parameters.
func (s *featureScan) declare() {
	for _, d := range s.file.f.Decls {
		switch d := d.(type) {
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch sp := spec.(type) {
				case *ast.ValueSpec:
					// Constants typed Feature are the declared names;
					// untyped and string ones are what would slip in.
					if t, ok := sp.Type.(*ast.Ident); d.Tok != token.CONST || sp.Type != nil && (!ok || t.Name != "string") {
						continue
					}
					for i, n := range sp.Names {
						if i < len(sp.Values) && s.isString(sp.Values[i]) {
							s.consts[s.file.pkg+"."+n.Name] = true
						}
					}
				case *ast.TypeSpec:
					if st, ok := sp.Type.(*ast.StructType); ok {
						s.fields[s.file.pkg+"."+sp.Name.Name] = s.featureFields(st)
					}
				}
			}
		case *ast.FuncDecl:
			s.params[d.Name.Name] = append(s.params[d.Name.Name], s.featureParams(d.Type))
		}
	}
}

func (s *featureScan) featureFields(st *ast.StructType) []string {
	var out []string
	for _, f := range st.Fields.List {
		if s.isFeature(f.Type) {
			for _, n := range f.Names {
				out = append(out, n.Name)
			}
		}
	}
	return out
}

func (s *featureScan) featureParams(ft *ast.FuncType) []int {
	var out []int
	i := 0
	for _, f := range ft.Params.List {
		n := max(len(f.Names), 1)
		for range n {
			if s.isFeature(f.Type) {
				out = append(out, i)
			} else if el, ok := f.Type.(*ast.Ellipsis); ok && s.isFeature(el.Elt) {
				out = append(out, -1-i)
			}
			i++
		}
	}
	return out
}

func (s *featureScan) found(n ast.Node, what string) {
	s.out = append(s.out, fmt.Sprintf("%s: a Feature made from a string (%s): use a report.Feature constant (declared in %s)", s.file.fset.Position(n.Pos()), what, featureDecl))
}

// walk looks at every expression of the file that makes a Feature.
func (s *featureScan) walk() {
	s.funcs = nil
	ast.Inspect(s.file.f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			if n.Body != nil {
				s.funcs = append(s.funcs, funcSpan{n.Type, n.Body.Pos(), n.Body.End()})
			}
		case *ast.FuncLit:
			s.funcs = append(s.funcs, funcSpan{n.Type, n.Body.Pos(), n.Body.End()})
		}
		return true
	})
	ast.Inspect(s.file.f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			s.call(n)
		case *ast.CompositeLit:
			s.composite(n, n.Type)
			return true
		case *ast.ValueSpec:
			if n.Type != nil && s.isFeature(n.Type) && slices.ContainsFunc(n.Values, s.isString) {
				s.found(n, "declaration")
			}
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				if i < len(n.Rhs) && s.isFeatureField(l) && s.isString(n.Rhs[i]) {
					s.found(n, "assignment")
				}
			}
		case *ast.BinaryExpr:
			if (n.Op == token.EQL || n.Op == token.NEQ) &&
				(s.isFeatureField(n.X) && s.isString(n.Y) || s.isFeatureField(n.Y) && s.isString(n.X)) {
				s.found(n, "comparison")
			}
		case *ast.SwitchStmt:
			if n.Tag != nil && s.isFeatureField(n.Tag) {
				for _, c := range n.Body.List {
					if slices.ContainsFunc(c.(*ast.CaseClause).List, s.isString) {
						s.found(c, "switch case")
					}
				}
			}
		case *ast.ReturnStmt:
			s.ret(n)
		}
		return true
	})
}

// isFeatureField reports whether e is x.F with F the name of a Feature
// field of some struct of the module.
func (s *featureScan) isFeatureField(e ast.Expr) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	for _, names := range s.fields {
		if slices.Contains(names, sel.Sel.Name) {
			return true
		}
	}
	return false
}

func (s *featureScan) call(c *ast.CallExpr) {
	if s.isFeature(c.Fun) {
		if len(c.Args) == 1 && s.isString(c.Args[0]) {
			s.found(c, "conversion")
		}
		return
	}
	var name string
	switch f := c.Fun.(type) {
	case *ast.Ident:
		name = f.Name
	case *ast.SelectorExpr:
		name = f.Sel.Name
	default:
		return
	}
	for _, idx := range s.params[name] {
		for i, a := range c.Args {
			if !s.isString(a) {
				continue
			}
			for _, p := range idx {
				if p == i || p < 0 && i >= -1-p {
					s.found(a, "argument of "+name)
				}
			}
		}
	}
}

// composite checks a composite literal of type typ (given, or elided and
// taken from the enclosing literal).
func (s *featureScan) composite(lit *ast.CompositeLit, typ ast.Expr) {
	if lit.Type != nil {
		typ = lit.Type
	}
	if st, ok := typ.(*ast.StarExpr); ok {
		typ = st.X
	}
	var elem, key ast.Expr
	switch t := typ.(type) {
	case *ast.ArrayType:
		elem = t.Elt
	case *ast.MapType:
		elem, key = t.Value, t.Key
	case *ast.StructType:
		s.fieldValues(lit, s.featureFields(t))
		return
	default:
		if name := s.typeName(typ); name != "" {
			s.fieldValues(lit, s.fields[name])
		}
		return
	}
	for _, e := range lit.Elts {
		v := e
		if kv, ok := e.(*ast.KeyValueExpr); ok {
			v = kv.Value
			if key != nil && s.isFeature(key) && s.isString(kv.Key) {
				s.found(kv, "map key")
			}
		}
		if s.isFeature(elem) && s.isString(v) {
			s.found(v, "element")
		}
		if inner, ok := v.(*ast.CompositeLit); ok && inner.Type == nil {
			s.composite(inner, elem)
		}
		if u, ok := v.(*ast.UnaryExpr); ok {
			if inner, ok := u.X.(*ast.CompositeLit); ok && inner.Type == nil {
				s.composite(inner, elem)
			}
		}
	}
}

func (s *featureScan) fieldValues(lit *ast.CompositeLit, fields []string) {
	for _, e := range lit.Elts {
		if kv, ok := e.(*ast.KeyValueExpr); ok {
			if k, ok := kv.Key.(*ast.Ident); ok && slices.Contains(fields, k.Name) && s.isString(kv.Value) {
				s.found(kv, "field "+k.Name)
			}
		}
	}
}

// ret checks a return statement against the Feature results of the
// innermost function around it.
func (s *featureScan) ret(r *ast.ReturnStmt) {
	var in *funcSpan
	for i, f := range s.funcs {
		if f.start <= r.Pos() && r.End() <= f.end && (in == nil || f.start > in.start) {
			in = &s.funcs[i]
		}
	}
	if in == nil || in.ft.Results == nil {
		return
	}
	i := 0
	for _, f := range in.ft.Results.List {
		for range max(len(f.Names), 1) {
			if s.isFeature(f.Type) && i < len(r.Results) && s.isString(r.Results[i]) {
				s.found(r, "return value")
			}
			i++
		}
	}
}
