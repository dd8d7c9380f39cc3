package jsonrpc

import (
	"context"
	"testing"
)

// RequestID is the one rule of a call's request id: the envelope's, else
// the transport's.
func TestRequestID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, envelope, transport, want string
	}{
		{"envelope wins", "env-1", "tr-1", "env-1"},
		{"transport's without one", "", "tr-1", "tr-1"},
		{"none", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := WithTransport(context.Background(), TransportInfo{RequestID: tt.transport})
			if got := RequestID(ctx, &Request{Meta: Envelope{RequestID: tt.envelope}}); got != tt.want {
				t.Errorf("RequestID = %q, want %q", got, tt.want)
			}
			if got := meta(Envelope{RequestID: tt.envelope}, tt.transport).RequestID; tt.want != "" && got != tt.want {
				t.Errorf("error data's request id %q, want %q", got, tt.want)
			}
		})
	}
}
