// Command data is the skillhost "data" plugin: process_data computes
// statistics (sum, count, average, min, max, median, stddev, or all of them)
// over a list of numbers.
//
// The logic is in logic.go (tested with plain `go test`); main.go holds the
// Wasm export and only builds for wasip1.
package main
