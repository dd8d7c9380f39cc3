// Command echo is the skillhost "echo" plugin: its one skill, echo, returns
// its JSON input unchanged. It is the smallest useful plugin and the host's
// smoke test.
package main
