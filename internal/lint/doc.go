// Package lint holds checks over the module's source as a whole, run by
// go test like any other: rules of STYLE.md that no single package's tests
// can see. TestFileSize: no non-test Go file over MaxLines lines. TestFlow:
// every package sits in one layer of the pipeline (flow) and imports only
// the layers below it. It has no code of its own and nothing imports it.
package lint
