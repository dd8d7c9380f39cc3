// Package stdio serves a jsonrpc.Engine over a byte stream (the process's
// stdin and stdout in local mode), framed as spec 001's "Stdio Transport".
//
// # Framing
//
// Every message, in both directions, is a frame:
//
//	<byte-length>\n<json>
//
// where <byte-length> is the decimal number of bytes of <json>. Serve writes
// exactly "<len>\n<json>\n": the trailing newline keeps the stream readable
// in a terminal and is not counted in the length. When reading, empty lines
// before a length line are skipped, so a body may be followed by "\n",
// "\r\n" or nothing; the length line may end in "\r\n" and may carry
// surrounding spaces.
//
// # Errors and resynchronisation
//
//   - A length line that is not a non-negative decimal integer (or is longer
//     than 32 bytes) is answered with one -32700 frame (reason parse_error,
//     id null); the reader then skips lines silently until one parses as a
//     length, so a burst of junk gets a single error and the stream stays
//     usable.
//   - A length over the maximum (WithMaxFrameBytes, default 1 MiB) is
//     answered with -32600 (reason body_too_large); the announced body is
//     read and discarded, never buffered, so the next frame is read normally.
//   - Input ending inside a frame is answered with -32700 and Serve returns
//     nil. Input ending between frames returns nil.
//
// # Concurrency
//
// Frames are handled concurrently, at most WithConcurrency (default 4) at a
// time, so a slow call does not block others; responses are written as they
// complete (match them by id) by a single writer goroutine, so frames never
// interleave. A streaming result (jsonrpc.Reply.Pump) is written as one
// frame per event, each a JSON-RPC response carrying the request's id, until
// the stream ends; a stream error ends it with one error frame.
//
//	err := stdio.Serve(ctx, os.Stdin, os.Stdout, engine, stdio.Limits{MaxFrameBytes: …, Concurrency: …, DrainTimeout: …}, stdio.WithLogger(logger))
//
// On ctx cancellation Serve stops reading, waits for in-flight calls and
// writes their responses, then returns nil.
package stdio
