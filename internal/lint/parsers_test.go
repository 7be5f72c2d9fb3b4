package lint

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"testing"
)

// parsers are the functions that turn a pattern's or a pin's text into a
// typed value (netrule's and the profiles package's wrappers of them).
// profiles.Patterns, the one reader of a profile's stored text, is not
// one: its callers take typed values from it.
var parsers = map[string]bool{
	"ParsePattern": true, "ParsePatterns": true, "ParseResolve": true, "ParseResolves": true,
	"ParseDomainPatterns": true,
}

// edgeCallers are the only functions (file: [Receiver.]Func) that may call
// a parser: the edges where text enters sbx, and the few readers of
// stored, already validated text, each with its reason. A new caller is
// either a new edge (add it here, saying why) or code that should take
// the typed values the edge made (issue 32).
var edgeCallers = map[string]string{
	// netrule itself: a Policy's JSON read back.
	"internal/netrule/pattern.go: Pattern.UnmarshalText": "a Policy's JSON read back",
	"internal/netrule/resolve.go: Resolve.UnmarshalText": "a Policy's JSON read back",
	// The profile: validation is the edge of every profile (requests,
	// grants, approver answers, profile files).
	"internal/profiles/domain.go: ParseDomainPatterns": "the wrapper naming the field",
	"internal/profiles/domain.go: Patterns":            "IMPORTANT: the one reader of a profile's stored text (its wire type keeps strings)",
	"internal/profiles/profile.go: validateNetwork":    "the edge of a profile's network",
	// The guard: its file is an edge; a Guard built around ParseGuard
	// loses the network rather than a deny entry.
	"internal/escalate/guard.go: ParseGuard":          "the edge of the guard file",
	"internal/escalate/guard.go: Applied.denyDomains": "fails closed naming deny_domains[i] (a guard built around ParseGuard)",
	// The policy refuses, naming the field, a profile built around
	// validation, rather than drop a denied entry.
	"internal/policy/network.go: buildNetwork": "refuses a profile built around validation (FieldError)",
	// The front ends' own fields.
	"cmd/sbx/run.go: runFlags.domains":       "the CLI's --allow-domain, --deny-domain, --resolve",
	"internal/wire/request.go: Request.Call": "the JSON request's resolve",
}

// TestPatternsParsedAtTheEdge: no non-test Go file of the module calls a
// pattern or pin parser outside edgeCallers, and each of them still does
// (a stale entry would hide the next caller of that name).
func TestPatternsParsedAtTheEdge(t *testing.T) {
	var got []string
	for _, f := range moduleGoFiles(t) {
		calls, err := parserCalls(f.rel, f.src)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, calls...)
	}
	for _, c := range got {
		if _, ok := edgeCallers[c]; !ok {
			t.Errorf("%s parses a domain pattern or pin: past the edge, take the typed values (netrule.Pattern) the edge made, or add it to edgeCallers saying why it is an edge", c)
		}
	}
	for c := range edgeCallers {
		if !slices.Contains(got, c) {
			t.Errorf("edgeCallers lists %s, which calls no parser any more: remove it", c)
		}
	}
}

// TestParserCallsFound: the scan finds qualified and bare calls, names
// methods by their receiver, and ignores a parser's declaration.
func TestParserCallsFound(t *testing.T) {
	const src = `package x
func ParsePattern(s string) {}
func edge() { netrule.ParsePattern("a") }
func (r *T) method() { _, _ = profiles.ParseDomainPatterns(nil, "f") }
func (r T) bare() { f := func() { ParseResolves(nil) }; f() }
func other() { strconv.Itoa(1); x.Parse("y") }
`
	got, err := parserCalls("a/b.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a/b.go: edge", "a/b.go: T.method", "a/b.go: T.bare"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// parserCalls returns "file: [Recv.]Func" for each call of a parser in
// src, by name (go/parser, no type information: every OS's files are read
// from one).
func parserCalls(name string, src []byte) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", name, err)
	}
	var out []string
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		fn := fd.Name.Name
		if fd.Recv != nil && len(fd.Recv.List) == 1 {
			fn = recvName(fd.Recv.List[0].Type) + "." + fn
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			var callee string
			switch fun := call.Fun.(type) {
			case *ast.Ident:
				callee = fun.Name
			case *ast.SelectorExpr:
				if x, ok := fun.X.(*ast.Ident); ok && (x.Name == "netrule" || x.Name == "profiles") {
					callee = fun.Sel.Name
				}
			}
			if parsers[callee] {
				out = append(out, name+": "+fn)
			}
			return true
		})
	}
	return slices.Compact(out), nil
}

func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvName(t.X)
	case *ast.Ident:
		return t.Name
	case *ast.IndexExpr:
		return recvName(t.X)
	}
	return "?"
}
