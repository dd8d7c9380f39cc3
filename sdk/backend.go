package sdk

// Transport carries a Context's requests to the host: the plugin's
// permissions.config and the host functions of "extism:host/user". Inside a
// plugin (GOOS=wasip1) it is the Extism host; in unit tests it is a fake
// (package sdktest provides one).
type Transport interface {
	// Config returns the value of key from permissions.config.
	Config(key string) (string, bool)
	// Call invokes host function fn with a JSON request and returns the raw
	// reply envelope (nil if the host returned none).
	Call(fn string, request []byte) []byte
}

// NewContext returns a Context over t: what a handler gets in a plugin,
// over the Extism host. Use it to unit-test a handler on the host with a
// fake Transport (sdktest.New does this for you).
func NewContext(t Transport) *Context {
	return &Context{t: t}
}

// backend is the thin layer between the SDK and the Extism host. The wasip1
// build installs the real one (pdk.go); other builds have none, so the pure
// logic can be unit tested with a recording backend.
type backend interface {
	Transport
	input() []byte
	output(b []byte)
	setError(b []byte)
}

// current is the backend used by Handle and HandleRaw; set by pdk.go on wasip1.
var current backend
