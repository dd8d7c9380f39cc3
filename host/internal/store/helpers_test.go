package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/store"
)

// testCtx is a context bounded well inside the package's time budget.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// storeLimits is the default store.* section with edit applied.
func storeLimits(edit func(*config.Store)) config.Store {
	c := config.Defaults().Store
	edit(&c)
	return c
}

// mustOpen opens an embedded store on a fresh directory, closed at cleanup.
func mustOpen(t *testing.T, cfg store.Config) *store.Store {
	t.Helper()
	if cfg.DataDir == "" && cfg.URL == "" {
		cfg.DataDir = t.TempDir()
	}
	st, err := store.Open(testCtx(t), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return st
}

// mustSession creates an active session.
func mustSession(t *testing.T, st *store.Store, id string) store.Session {
	t.Helper()
	sess, err := st.CreateSession(testCtx(t), store.Session{ID: id, AgentID: "agent"})
	if err != nil {
		t.Fatalf("CreateSession(%q): %v", id, err)
	}
	return sess
}

// faultOf is the kind, reason and session_id of err ("" fields when nil).
type faultInfo struct {
	Kind      fault.Kind
	Reason    string
	SessionID any
}

func faultOf(t *testing.T, err error) faultInfo {
	t.Helper()
	if err == nil {
		return faultInfo{}
	}
	var fe *fault.Error
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T) is not a *fault.Error", err, err)
	}
	return faultInfo{Kind: fe.Kind, Reason: fe.Reason, SessionID: fe.Data["session_id"]}
}

// jetStreamCfg binds an existing bucket through Store.KeyValue with the
// configuration Open gave it.
func jetStreamCfg(bucket string) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{Bucket: bucket}
}

// mustKeys lists the keys of a bucket, without the per-session usage
// ledgers ("<session>.=") of the context bucket.
func mustKeys(t *testing.T, kv jetstream.KeyValue) []string {
	t.Helper()
	lister, err := kv.ListKeys(testCtx(t))
	if err != nil {
		t.Fatalf("ListKeys: %v", err)
	}
	var keys []string
	for k := range lister.Keys() {
		if !strings.HasSuffix(k, ".=") {
			keys = append(keys, k)
		}
	}
	return keys
}
