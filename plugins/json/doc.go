// Command json is the skillhost "json" plugin: json_query (dot/bracket path
// lookup), json_validate (JSON Schema validation, drafts 4 to 2020-12, no
// remote references) and json_merge (RFC 7386 JSON Merge Patch).
//
// The logic is in logic.go and path.go (tested with plain
// `go test`); main.go holds the Wasm exports and only builds for wasip1.
package main
