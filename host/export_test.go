package host

// EngineMethods lists every method registered on h's JSON-RPC engine, for
// tests that must cover each one (a method added later fails them until it
// is given an expectation).
func EngineMethods(h *Host) []string { return h.root.Engine().Methods() }
