// Package strictjson is sbx's strict JSON decoder: exact keys, no duplicate
// key at any depth, required fields, and exact strings (DESIGN.md invariants
// 4 and 9), with errors that name the field (FieldError).
//
//	var req struct {
//		Mode string   `json:"sandbox_mode"`
//		Cwd  string   `json:"cwd" kind:"path" strict:"required"`
//		Argv []string `json:"command"`
//	}
//	err := strictjson.Decode(data, &req)
//	// {"SANDBOX_MODE":"x"}: SANDBOX_MODE: unknown field (did you mean sandbox_mode?)
//
// Guarantees: Decode refuses a key that is not exactly a field of its
// struct (encoding/json would fold its case), a key given twice in one
// object, struct or map (encoding/json keeps the last), at every depth,
// before the typed decode sees the input; a string that is not valid UTF-8,
// a NUL outside a `kind:"data"` field and an empty path element; trailing
// data. DecodeLenient skips unknown keys, but not case variants or
// duplicates. Check applies the same rules to JSON a writer just encoded.
// The package knows no sbx type (the permission model in profiles, the
// wire types, the journal's records all decode through it) and is pure Go.
package strictjson
