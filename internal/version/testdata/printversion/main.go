// Command printversion prints version.Get() as JSON, for the test that
// builds it with -ldflags -X the way a release build does.
package main

import (
	"encoding/json"
	"os"

	"github.com/sbx-sandbox/sbx/internal/version"
)

func main() { json.NewEncoder(os.Stdout).Encode(version.Get()) }
