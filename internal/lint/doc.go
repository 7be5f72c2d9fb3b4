// Package lint holds checks over the module's source as a whole, run by
// go test like any other: rules that no single package's tests can see,
// over the one walk of the module's files they share (moduleGoFiles).
// TestFileSize: no non-test Go file over MaxLines lines. TestFlow: every
// package sits in one layer of the pipeline (flow) and imports only the
// layers below it. TestNoBareFeatureLiteral: no report.Feature spelt as a
// string outside report's feature.go. TestPatternsParsedAtTheEdge: only
// the edges parse domain patterns and pins. TestGofmt: every file is as
// gofmt writes it. It has no code of its own and
// nothing imports it.
package lint
