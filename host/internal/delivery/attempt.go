package delivery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/skillhost/skillhost/host/internal/hostfn"
)

// maxReplyRead is how much of a receiver's answer is read (and dropped) so
// the connection can be reused.
const maxReplyRead = 64 << 10

// DefaultMaxBackoff caps the wait between two attempts.
const DefaultMaxBackoff = 30 * time.Second

// Retry is a delivery's attempts and backoff: after the n-th failed attempt
// the next waits Initial × 2^(n-1), with ±50% jitter, at most Max. Push
// notifications and webhooks use it with their own numbers.
type Retry struct {
	// Attempts bounds the POSTs (at least 1).
	Attempts int
	// Initial is the wait after the first failure. Default: 1s.
	Initial time.Duration
	// Max caps every wait. Default: 30s.
	Max time.Duration
}

// Wait is the pause after the n-th failed attempt (n ≥ 1).
func (r Retry) Wait(n int) time.Duration {
	initial, ceiling := orDefault(r.Initial, time.Second), orDefault(r.Max, DefaultMaxBackoff)
	w := initial
	for i := 1; i < n && w < ceiling; i++ {
		w *= 2
	}
	w = time.Duration(float64(w) * (0.5 + rand.Float64())) // ±50%: receivers that failed together do not retry together
	return min(w, ceiling)
}

// statusError is a receiver's non-2xx answer.
type statusError struct{ code int }

func (e *statusError) Error() string { return fmt.Sprintf("the receiver answered HTTP %d", e.code) }

// post makes one attempt of r within its Timeout.
func post(ctx context.Context, client *http.Client, r *Request) error {
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		return err
	}
	for k, v := range r.Header {
		req.Header[k] = v
	}
	if req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.Before != nil {
		r.Before(req.Header)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxReplyRead))
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &statusError{resp.StatusCode}
	}
	return nil
}

// retryable reports whether another attempt may succeed: network errors,
// timeouts and HTTP 408, 429 and 5xx. A refused address, a redirect (never
// followed) and any other 4xx would fail the same way again.
func retryable(err error) bool {
	var st *statusError
	switch {
	case errors.As(err, &st):
		return st.code == http.StatusRequestTimeout || st.code == http.StatusTooManyRequests || st.code >= 500
	case hostfn.IsAddressRefused(err):
		return false
	}
	return true
}

// Describe is a failed attempt's text for clients (a webhook's last_error)
// and logs: the receiver's status, a timeout, the rule that refused the
// address, or what went wrong with the connection, naming only the URL's
// host, never an address it resolved to or a system error's text.
func Describe(err error) string {
	var st *statusError
	switch {
	case errors.As(err, &st):
		return st.Error()
	case hostfn.IsAddressRefused(err):
		return "refused: " + hostfn.FailureText(err)
	case errors.Is(err, context.DeadlineExceeded):
		return "the receiver did not answer in time"
	}
	return hostfn.FailureText(err)
}

// orDefault is v, or def when v is not positive.
func orDefault(v, def time.Duration) time.Duration {
	if v <= 0 {
		return def
	}
	return v
}
