package main

import "github.com/sbx-sandbox/sbx/internal/wire"

// execFSRequest is the "fs" object of an `sbx exec` request
// (wire.FSRequest).
type execFSRequest = wire.FSRequest
