package host_test

import (
	"context"
	"crypto/tls"
	"errors"
	"iter"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"
	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/skillhost/skillhost/host/config"
)

// TestGRPCAuth: with API keys, gRPC calls authenticate exactly as HTTP
// requests do (x-api-key or authorization: Bearer in the metadata; scopes;
// task ownership), and a key at its share of task streams is refused while
// another key streams.
func TestGRPCAuth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", bindingsManifest)
	keyA, keyB, reader := newKey(t, "a", "*"), newKey(t, "b", "*"), newKey(t, "reader", "method:GetTask")
	th, logs := mustHostWith(t, dir, func(c *config.Config) {
		withGRPC(c)
		c.Auth.Keys = []config.AuthKey{keyA.Entry, keyB.Entry, reader.Entry}
		c.A2A.MaxStreamsPerKey = 1
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	card, iface := grpcInterface(ctx, t, httpClient, th.URL)
	dial := func(md map[string]string) []grpc.DialOption {
		return []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithPerRPCCredentials(keyCreds(md))}
	}
	a := mustGRPCClient(ctx, t, card, dial(map[string]string{"x-api-key": keyA.Secret})...)
	b := mustGRPCClient(ctx, t, card, dial(map[string]string{"authorization": "Bearer " + keyB.Secret})...)

	// Refusals: no key, a wrong key, two different keys, a scope.
	for _, tt := range []struct {
		name string
		md   map[string]string
		want codes.Code
	}{
		{"no key", nil, codes.Unauthenticated},
		{"wrong key", map[string]string{"x-api-key": "sk_wrong"}, codes.Unauthenticated},
		{"two keys", map[string]string{"x-api-key": keyA.Secret, "authorization": "Bearer " + keyB.Secret}, codes.Unauthenticated},
		{"out of scope", map[string]string{"x-api-key": reader.Secret}, codes.PermissionDenied},
	} {
		raw := mustRawGRPC(t, iface.URL, grpc.WithPerRPCCredentials(keyCreds(tt.md)))
		_, err := raw.SendMessage(ctx, pbMessage(t, "echo", map[string]any{}))
		if code, _ := errorInfo(err); code != tt.want {
			t.Errorf("%s: SendMessage %v, want %v", tt.name, err, tt.want)
		}
	}
	if len(logs.lines("audit: request refused", `"transport":"grpc"`)) == 0 {
		t.Error("refused gRPC calls left no audit line")
	}
	if strings.Contains(logs.String(), keyA.Secret) || strings.Contains(logs.String(), "sk_wrong") {
		t.Error("a credential was logged")
	}

	// Key A holds its one task stream on a running task...
	spinReq := message("spin", map[string]any{})
	spinReq.Config = &a2av1.SendMessageConfig{ReturnImmediately: true}
	res, err := a.SendMessage(ctx, spinReq)
	if err != nil {
		t.Fatalf("SendMessage(spin) as A: %v", err)
	}
	spin := res.(*a2av1.Task)
	next, stop := iter.Pull2(a.SubscribeToTask(ctx, &a2av1.SubscribeToTaskRequest{ID: spin.ID}))
	defer stop()
	if _, err, ok := next(); !ok || err != nil {
		t.Fatalf("A's first stream: %v", err)
	}
	// ...so its second is refused (its share, a2a.max_streams_per_key)...
	rawA := mustRawGRPC(t, iface.URL, grpc.WithPerRPCCredentials(keyCreds{"x-api-key": keyA.Secret}))
	s, err := rawA.SendStreamingMessage(ctx, pbMessage(t, "echo", map[string]any{}))
	if err == nil {
		_, err = s.Recv()
	}
	if code, info := errorInfo(err); code != codes.ResourceExhausted || skillhostReason(info) != "key_quota" {
		t.Errorf("A's second stream: %v (%v), want RESOURCE_EXHAUSTED key_quota", err, info)
	}
	// ...while B streams to the end, and cannot see A's task.
	var last a2av1.TaskState
	for ev, err := range b.SendStreamingMessage(ctx, message("echo", map[string]any{"who": "b"})) {
		if err != nil {
			t.Fatalf("B's stream while A is at its share: %v", err)
		}
		if su, ok := ev.(*a2av1.TaskStatusUpdateEvent); ok {
			last = su.Status.State
		}
	}
	if last != a2av1.TaskStateCompleted {
		t.Errorf("B's stream ended in %v, want completed", last)
	}
	if _, err := b.GetTask(ctx, &a2av1.GetTaskRequest{ID: spin.ID}); !errors.Is(err, a2av1.ErrTaskNotFound) {
		t.Errorf("B reads A's task: %v, want ErrTaskNotFound", err)
	}
	if _, err := b.CancelTask(ctx, &a2av1.CancelTaskRequest{ID: spin.ID}); !errors.Is(err, a2av1.ErrTaskNotFound) {
		t.Errorf("B cancels A's task: %v, want ErrTaskNotFound", err)
	}
	// With keys there is an extended card, for authenticated callers only.
	if ext, err := a.GetExtendedAgentCard(ctx, &a2av1.GetExtendedAgentCardRequest{}); err != nil || len(ext.Skills) == 0 {
		t.Errorf("GetExtendedAgentCard as A = %+v, %v", ext, err)
	}
	if _, err := a.CancelTask(ctx, &a2av1.CancelTaskRequest{ID: spin.ID}); err != nil {
		t.Errorf("A cancels its task: %v", err)
	}
}

// TestGRPCLimits: a message over rpc.max_body is refused before it is
// decoded, and a client address at its share of connections
// (grpc.max_conns_per_addr) is refused a new one while another address
// connects; the host goes on serving.
func TestGRPCLimits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", bindingsManifest)
	th, _ := mustHostWith(t, dir, func(c *config.Config) {
		withGRPC(c)
		c.RPC.MaxBody = 64 * config.KiB
		c.GRPC.MaxConnsPerAddr = 1
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, iface := grpcInterface(ctx, t, httpClient, th.URL)
	from := func(ip string) grpc.DialOption {
		return grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
			return d.DialContext(ctx, "tcp", addr)
		})
	}
	first := mustRawGRPC(t, iface.URL, from("127.0.0.1"))
	if _, err := first.SendMessage(ctx, pbMessage(t, "echo", map[string]any{"text": strings.Repeat("x", 60<<10)})); err != nil {
		t.Fatalf("a message under rpc.max_body: %v", err)
	}
	_, err := first.SendMessage(ctx, pbMessage(t, "echo", map[string]any{"text": strings.Repeat("x", 80<<10)}))
	if code, _ := errorInfo(err); code != codes.ResourceExhausted {
		t.Errorf("a message over rpc.max_body: %v, want RESOURCE_EXHAUSTED", err)
	}
	// The first connection holds 127.0.0.1's one share: a second from the
	// same address is closed, one from 127.0.0.2 is served.
	second := mustRawGRPC(t, iface.URL, from("127.0.0.1"), grpc.WithConnectParams(grpc.ConnectParams{MinConnectTimeout: time.Second}))
	if _, err := second.GetTask(ctx, &a2apb.GetTaskRequest{Id: "x"}, grpc.WaitForReady(false)); err == nil || errorCode(err) == codes.NotFound {
		t.Errorf("a second connection from the same address was served: %v", err)
	}
	other := mustRawGRPC(t, iface.URL, from("127.0.0.2"))
	if _, err := other.GetTask(ctx, &a2apb.GetTaskRequest{Id: "x"}); errorCode(err) != codes.NotFound {
		t.Errorf("another address: %v, want NotFound (served)", err)
	}
	if _, err := first.GetTask(ctx, &a2apb.GetTaskRequest{Id: "x"}); errorCode(err) != codes.NotFound {
		t.Errorf("the first connection after the refusals: %v, want NotFound (served)", err)
	}
}

func errorCode(err error) codes.Code {
	code, _ := errorInfo(err)
	return code
}

// TestGRPCTLS: with http.tls, gRPC is served over TLS with the same
// certificate; a plaintext client is not served.
func TestGRPCTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", bindingsManifest)
	certFile, keyFile, pool := mustCert(t)
	th, _ := mustHostWith(t, dir, func(c *config.Config) {
		withGRPC(c)
		c.HTTP.TLS = config.TLS{CertFile: certFile, KeyFile: keyFile}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tlsHTTP := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	defer tlsHTTP.CloseIdleConnections()
	card, iface := grpcInterface(ctx, t, tlsHTTP, th.URL)
	creds := credentials.NewTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	cl := mustGRPCClient(ctx, t, card, grpc.WithTransportCredentials(creds))
	res, err := cl.SendMessage(ctx, message("echo", map[string]any{"over": "tls"}))
	if task, ok := res.(*a2av1.Task); err != nil || !ok || task.Status.State != a2av1.TaskStateCompleted {
		t.Fatalf("SendMessage over TLS = %+v, %v", res, err)
	}
	plain := mustRawGRPC(t, iface.URL)
	if _, err := plain.GetTask(ctx, &a2apb.GetTaskRequest{Id: "x"}); errorCode(err) != codes.Unavailable {
		t.Errorf("a plaintext client: %v, want UNAVAILABLE", err)
	}
}
