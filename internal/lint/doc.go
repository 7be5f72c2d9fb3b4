// Package lint holds checks over the module's source as a whole, run by
// go test like any other: rules of STYLE.md that no single package's tests
// can see (TestFileSize: no non-test Go file over MaxLines lines). It has
// no code of its own and nothing imports it.
package lint
