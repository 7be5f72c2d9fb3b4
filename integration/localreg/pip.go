package localreg

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"html"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// The Python distributions of the index: PipPackage requires PipBase, so
// `pip install PipPackage` resolves a dependency through the index too.
const (
	PipPackage = "sbxwf-greet"
	PipBase    = "sbxwf-base"
)

// wheel is a pure-Python distribution of one module.
type wheel struct {
	name     string // the project name, PEP 503-normalized
	requires []string
	code     string
}

func (w wheel) module() string { return strings.ReplaceAll(w.name, "-", "_") }

// filename is the wheel's name (PEP 427): the project name with
// underscores, version 1.0.0, any Python 3, any platform.
func (w wheel) filename() string { return w.module() + "-1.0.0-py3-none-any.whl" }

// build writes the wheel's zip: the module, and the .dist-info pip reads
// (METADATA, WHEEL, and RECORD with each file's sha256 and size, as the
// wheel spec requires). Written here rather than by `pip wheel`, which
// needs setuptools from the network for a build.
func (w wheel) build() ([]byte, error) {
	info := w.module() + "-1.0.0.dist-info/"
	meta := "Metadata-Version: 2.1\nName: " + w.name + "\nVersion: 1.0.0\nSummary: a distribution of sbx's workflow tests\n"
	for _, r := range w.requires {
		meta += "Requires-Dist: " + r + "\n"
	}
	files := []struct{ name, body string }{
		{w.module() + ".py", w.code + "\n"},
		{info + "METADATA", meta},
		{info + "WHEEL", "Wheel-Version: 1.0\nGenerator: sbx-localreg\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	var record strings.Builder
	for _, f := range files {
		fw, err := z.Create(f.name)
		if err != nil {
			return nil, err
		}
		if _, err := fw.Write([]byte(f.body)); err != nil {
			return nil, err
		}
		sum := sha256.Sum256([]byte(f.body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(f.body))
	}
	record.WriteString(info + "RECORD,,\n")
	fw, err := z.Create(info + "RECORD")
	if err != nil {
		return nil, err
	}
	if _, err := fw.Write([]byte(record.String())); err != nil {
		return nil, err
	}
	if err := z.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WritePipIndex writes the wheels of PipBase and PipPackage under
// dir/packages and a PEP 503 simple index of them under dir/simple: an
// index page of the projects and one page a project, whose links carry
// the wheel's sha256 (pip checks it).
func WritePipIndex(dir string) error {
	wheels := []wheel{
		{PipBase, nil, `NAME = "base"`},
		{PipPackage, []string{PipBase + ">=1.0"}, "import sbxwf_base\n\ndef greet():\n    return \"hello from \" + sbxwf_base.NAME"},
	}
	if err := os.MkdirAll(filepath.Join(dir, "packages"), 0o755); err != nil {
		return err
	}
	root := "<!DOCTYPE html>\n<html><body>\n"
	for _, w := range wheels {
		b, err := w.build()
		if err != nil {
			return fmt.Errorf("build wheel %s: %w", w.filename(), err)
		}
		if err := os.WriteFile(filepath.Join(dir, "packages", w.filename()), b, 0o644); err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		page := fmt.Sprintf("<!DOCTYPE html>\n<html><body>\n<a href=\"../../packages/%s#sha256=%s\">%s</a>\n</body></html>\n",
			html.EscapeString(w.filename()), hex.EncodeToString(sum[:]), html.EscapeString(w.filename()))
		if err := os.MkdirAll(filepath.Join(dir, "simple", w.name), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "simple", w.name, "index.html"), []byte(page), 0o644); err != nil {
			return err
		}
		root += fmt.Sprintf("<a href=\"%s/\">%s</a>\n", w.name, w.name)
	}
	return os.WriteFile(filepath.Join(dir, "simple", "index.html"), []byte(root+"</body></html>\n"), 0o644)
}

// PipIndex is a running index server.
type PipIndex struct {
	// URL is the simple index, as pip's --index-url takes it:
	// http://127.0.0.1:PORT/simple/.
	URL string
	srv *http.Server
}

// ServePipIndex writes the index into dir (WritePipIndex) and serves dir
// over HTTP on a free port of 127.0.0.1 from this process (a file server:
// PEP 503 asks for nothing else). Stop it with Close.
func ServePipIndex(dir string) (*PipIndex, error) {
	if err := WritePipIndex(dir); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the pip index: %w", err)
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(dir))}
	go srv.Serve(l)
	return &PipIndex{URL: "http://" + l.Addr().String() + "/simple/", srv: srv}, nil
}

// Close stops the server.
func (p *PipIndex) Close() error { return p.srv.Close() }
