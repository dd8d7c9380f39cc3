// Package examples holds runnable examples of skillhost, one main package per
// folder (client, a2a-client, misbehaving, stdio) and a sample configuration
// (config/skillhost.yaml). examples_test.go builds each example and runs it
// against a real host. This package itself has no API.
package examples
