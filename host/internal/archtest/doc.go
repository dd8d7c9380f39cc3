// Package archtest holds only tests: they read the module's real import
// graph (go list) and fail when it breaks a dependency rule or no longer
// matches the graph drawn in docs/ARCHITECTURE.md, so the drawing cannot
// drift from the code.
package archtest
