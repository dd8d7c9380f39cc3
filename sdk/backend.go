package sdk

// backend is the thin layer between the SDK and the Extism host. The wasip1
// build installs the real one (pdk.go); other builds have none, so the pure
// logic can be unit tested with a recording backend.
type backend interface {
	input() []byte
	output(b []byte)
	setError(b []byte)
	config(key string) (string, bool)
	// call invokes host function fn with a JSON request and returns the raw
	// reply envelope (nil if the host returned none).
	call(fn string, req []byte) []byte
}

// current is the backend used by Handle and HandleRaw; set by pdk.go on wasip1.
var current backend
