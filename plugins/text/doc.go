// Command text is the skillhost "text" plugin: uppercase, lowercase,
// title_case, word_count, slugify, truncate and reverse.
//
// The skills are pure functions in logic.go (tested on the host with plain
// `go test`); main.go holds the Wasm exports and only builds for wasip1.
package main
