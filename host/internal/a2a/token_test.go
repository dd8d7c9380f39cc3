package a2a_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
)

// oneToken is a TokenStore holding one live session of key k.
type oneToken struct{ session, digest string }

func (o oneToken) SessionToken(_ context.Context, id string) (auth.TokenRecord, error) {
	if id != o.session {
		return auth.TokenRecord{}, fault.New(fault.SessionNotFound, fault.ReasonSessionNotFound, "no session")
	}
	return auth.TokenRecord{Owner: "key:k", SHA256: o.digest, Active: true}, nil
}

// keyAndToken returns key k (scope "*") and a session token of it.
func keyAndToken(t *testing.T) (key, token auth.Principal) {
	t.Helper()
	const secret = "sk_test_key"
	sum := sha256.Sum256([]byte(secret))
	keys, err := auth.NewKeySet([]auth.KeySpec{{ID: "k", SHA256: hex.EncodeToString(sum[:]), Scopes: []string{"*"}}}, auth.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	tok, digest := auth.NewToken("s1")
	authn := auth.NewAuthenticator(keys, oneToken{session: "s1", digest: digest})
	if key, err = authn.Authenticate(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	if token, err = authn.Authenticate(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	return key, token
}

// TestServiceRefusesSessionTokens: the A2A service decides from the
// principal itself, not only behind the host's method middleware: a
// session token of the key that owns a task can neither read, list,
// cancel, follow nor create tasks (they belong to the key, not to a
// session), while the key can.
func TestServiceRefusesSessionTokens(t *testing.T) {
	t.Parallel()
	h := startHost(t, "testdata/plugins")
	key, token := keyAndToken(t)
	kctx := auth.With(context.Background(), key)
	task, err := h.svc.SendMessage(kctx, skillMsg("echo", a2av1.NewDataPart(map[string]any{"secret": 1})))
	if err != nil {
		t.Fatal(err)
	}
	tctx := auth.With(context.Background(), token)
	calls := map[string]func(ctx context.Context) error{
		"GetTask": func(ctx context.Context) error {
			_, err := h.svc.GetTask(ctx, &a2av1.GetTaskRequest{ID: task.ID})
			return err
		},
		"ListTasks": func(ctx context.Context) error {
			_, err := h.svc.ListTasks(ctx, &a2av1.ListTasksRequest{})
			return err
		},
		"SubscribeToTask": func(ctx context.Context) error {
			ts, err := h.svc.SubscribeToTask(ctx, &a2av1.SubscribeToTaskRequest{ID: task.ID})
			if ts != nil {
				_ = ts.Close()
			}
			return err
		},
		"SendMessage": func(ctx context.Context) error {
			_, err := h.svc.SendMessage(ctx, skillMsg("echo", a2av1.NewDataPart(map[string]any{})))
			return err
		},
		"SendStreamingMessage": func(ctx context.Context) error {
			ts, err := h.svc.SendStreamingMessage(ctx, skillMsg("echo", a2av1.NewDataPart(map[string]any{})))
			if ts != nil {
				_ = ts.Close()
			}
			return err
		},
		"CancelTask": func(ctx context.Context) error {
			_, err := h.svc.CancelTask(ctx, &a2av1.CancelTaskRequest{ID: task.ID})
			return err
		},
	}
	for name, call := range calls {
		err := call(tctx)
		if fe := fault.From(err); err == nil || fe.Kind != fault.Forbidden || fe.Reason != fault.ReasonScopeDenied {
			t.Errorf("%s with a session token: %v, want 403 scope_denied", name, err)
		}
		if err := call(kctx); err != nil && fault.From(err).Kind == fault.Forbidden { // the key is not refused (a completed task may not be canceled or followed)
			t.Errorf("%s with the key: %v", name, err)
		}
	}
}
