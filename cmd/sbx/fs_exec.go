package main

import "github.com/sbx-sandbox/sbx/execjson"

// execFSRequest is the "fs" object of an `sbx exec` request
// (execjson.FSRequest).
type execFSRequest = execjson.FSRequest
