// Package wire is the JSON of the host-function ABI (docs/HOST_FUNCTIONS.md)
// shared by the SDK and its test fake, package sdktest: the function names
// in the "extism:host/user" namespace, their requests and results, and the
// reply envelope.
package wire
