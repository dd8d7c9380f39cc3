package stdio

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// maxHeaderBytes bounds a length line ("<digits>\n"); longer lines are
// malformed and discarded without being buffered.
const maxHeaderBytes = 32

// Frame errors returned by ReadFrame (wrapped with detail; match with
// errors.Is).
var (
	// ErrMalformedHeader: the length line is not a non-negative decimal
	// integer. The line has been consumed; the next call reads the next line.
	ErrMalformedHeader = errors.New("stdio: malformed frame header")
	// ErrFrameTooLarge: the announced length exceeds the maximum. The body
	// has been read and discarded, so the stream stays aligned.
	ErrFrameTooLarge = errors.New("stdio: frame too large")
	// ErrTruncated: the input ended inside a frame. It wraps
	// io.ErrUnexpectedEOF.
	ErrTruncated = fmt.Errorf("stdio: truncated frame: %w", io.ErrUnexpectedEOF)
)

// ReadFrame reads one frame "<byte-length>\n<json>" and returns its body.
// Empty lines before the length line are skipped, so a "\n" or "\r\n" after
// a body is tolerated; the length line itself may end in "\r\n". It returns
// io.EOF when the input ends cleanly between frames, ErrMalformedHeader,
// ErrFrameTooLarge (body longer than max bytes) or ErrTruncated. Memory use
// is bounded by max whatever the input.
func ReadFrame(br *bufio.Reader, max int) ([]byte, error) {
	for {
		line, err := readHeaderLine(br)
		if err != nil {
			return nil, err
		}
		if len(line) == 0 {
			continue
		}
		n, err := parseLength(line)
		if err != nil {
			return nil, err
		}
		if n > int64(max) {
			if _, err := io.CopyN(io.Discard, br, n); err != nil {
				return nil, ErrTruncated
			}
			return nil, fmt.Errorf("%w: %d bytes announced, the limit is %d", ErrFrameTooLarge, n, max)
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(br, body); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, ErrTruncated
			}
			return nil, fmt.Errorf("stdio: read frame body: %w", err)
		}
		return body, nil
	}
}

// readHeaderLine returns the next line without its "\n" or "\r\n" and
// surrounding spaces; "" for an empty line.
func readHeaderLine(br *bufio.Reader) (string, error) {
	line, err := br.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		for errors.Is(err, bufio.ErrBufferFull) { // discard the rest of an overlong line
			_, err = br.ReadSlice('\n')
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("stdio: read frame header: %w", err)
		}
		return "", fmt.Errorf("%w: header line longer than %d bytes", ErrMalformedHeader, maxHeaderBytes)
	case errors.Is(err, io.EOF):
		if len(bytes.TrimSpace(line)) == 0 {
			return "", io.EOF
		}
		return "", ErrTruncated
	case err != nil:
		return "", fmt.Errorf("stdio: read frame header: %w", err)
	}
	line = bytes.TrimSpace(line) // drops "\n", "\r" and stray spaces
	if len(line) > maxHeaderBytes {
		return "", fmt.Errorf("%w: header line longer than %d bytes", ErrMalformedHeader, maxHeaderBytes)
	}
	return string(line), nil
}

func parseLength(line string) (int64, error) {
	for i := 0; i < len(line); i++ {
		if line[i] < '0' || line[i] > '9' {
			return 0, fmt.Errorf("%w: %q is not a byte length", ErrMalformedHeader, line)
		}
	}
	n, err := strconv.ParseInt(line, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not a byte length", ErrMalformedHeader, line)
	}
	return n, nil
}

// WriteFrame writes body as one frame, "<len>\n<body>\n", in a single Write.
func WriteFrame(w io.Writer, body []byte) error {
	buf := make([]byte, 0, len(body)+24)
	buf = strconv.AppendInt(buf, int64(len(body)), 10)
	buf = append(buf, '\n')
	buf = append(buf, body...)
	buf = append(buf, '\n')
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("stdio: write frame: %w", err)
	}
	return nil
}
