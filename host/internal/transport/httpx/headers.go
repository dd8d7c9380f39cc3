package httpx

import "github.com/valyala/fasthttp"

// headerCopy is a request's headers copied into one buffer (Fiber reuses
// its own once the handler returns): name, 0, value, 0, … in the order
// received. Copying them into an http.Header cost a map, a canonical name
// and two strings per header on every call, for the two or three that are
// ever read.
type headerCopy []byte

func copyHeaders(h *fasthttp.RequestHeader) headerCopy {
	var n int
	h.VisitAll(func(k, v []byte) { n += len(k) + len(v) + 2 })
	buf := make([]byte, 0, n)
	h.VisitAll(func(k, v []byte) {
		buf = append(append(append(append(buf, k...), 0), v...), 0)
	})
	return buf
}

// get is http.Header's Get: the first value of the header named name
// (case-insensitively), "" when there is none.
func (h headerCopy) get(name string) string {
	for rest := []byte(h); len(rest) > 0; {
		k, v := field(&rest), field(&rest)
		if asciiEqualFold(k, name) {
			return string(v)
		}
	}
	return ""
}

// field takes the next 0-terminated field off *rest.
func field(rest *[]byte) []byte {
	b := *rest
	for i, c := range b {
		if c == 0 {
			*rest = b[i+1:]
			return b[:i]
		}
	}
	*rest = nil
	return b
}

// asciiEqualFold compares a header name as http.Header does: ASCII letters
// in either case.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
