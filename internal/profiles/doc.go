// Package profiles is the request and permission data model of sbx: sandbox
// modes and their ladder, permission profiles (strict JSON, normalised), and
// the grant store and presets built on them.
//
//	p, err := profiles.DecodeProfile([]byte(`{"file_system":{"write":["build"]}}`))
//	p, err = p.Normalize("/work/repo") // write: [/work/repo/build]
//
// Guarantees: decoding rejects unknown fields, case variants of fields and
// duplicate keys at any depth, and names them (strictjson.Decode); a normalised
// profile holds only absolute, cleaned, de-duplicated paths, with paths covered
// by another of the same access folded in. The package is pure Go and builds
// on every OS.
package profiles
