// Package localreg runs the package registries of the workflow tests and
// benchmark on this machine, with no network beyond loopback: a real npm
// registry server (verdaccio, installed from the npm registry by
// integration/testdata/verdaccio/package-lock.json, with no uplink) holding
// tiny packages published into it here, and a PEP 503 "simple" index of
// pure-Python wheels written here (PyPI is not reachable from CI).
//
//	npm, err := localreg.StartNpm(localreg.VerdaccioBin(dir), tmp)
//	defer npm.Stop()
//	// npm install --registry npm.URL sbx-wf-greet
//	idx, err := localreg.ServePipIndex(tmp2)
//	defer idx.Close()
//	// pip install --index-url idx.URL sbxwf-greet
//
// Guarantees: every file it writes is below the directory it is given
// (made by the caller, so owned by the user running it); servers listen on
// 127.0.0.1 only; the npm registry has no uplink, so a name it was not
// given is a 404, never a fetch from the internet. It is test and benchmark
// support, not part of sbx.
package localreg
