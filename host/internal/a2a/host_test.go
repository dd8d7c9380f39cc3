package a2a_test

import (
	"cmp"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/a2a"
	"github.com/skillhost/skillhost/host/internal/a2a/agentcard"
	"github.com/skillhost/skillhost/host/internal/assemble"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/identity"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
	"github.com/skillhost/skillhost/host/internal/provenance"
	"github.com/skillhost/skillhost/host/internal/store"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// testHost is a real host: embedded NATS store, wazero sandbox, plugin
// registry, jsonrpc engine, served by a minimal net/http adapter (test-only;
// the product serves through the Fiber transport).
type testHost struct {
	URL   string
	svc   *a2a.Service
	tasks *a2a.TaskStore
	store *store.Store
	eng   *jsonrpc.Engine
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func startHost(t *testing.T, pluginDir string) *testHost {
	t.Helper()
	return startHostOn(t, pluginDir, store.Config{DataDir: t.TempDir()}, t.TempDir())
}

// startHostOn is startHost with the state store of cfg (a NATS cluster's
// URL, for hosts sharing it) and the compilation cache cacheDir (hosts
// sharing it compile each plugin once).
func startHostOn(t *testing.T, pluginDir string, cfg store.Config, cacheDir string) *testHost {
	t.Helper()
	return startSigningHostOn(t, pluginDir, cfg, cacheDir, nil)
}

// startSigningHostOn is startHostOn with signer signing the cards and task
// provenance (nil: nothing is signed).
func startSigningHostOn(t *testing.T, pluginDir string, cfg store.Config, cacheDir string, signer *identity.Signer) *testHost {
	t.Helper()
	return startHostWith(t, pluginDir, cfg, cacheDir, signer, nil)
}

// startHostWith is startSigningHostOn with configure adjusting the
// service's configuration (on the host's store) before it starts.
func startHostWith(t *testing.T, pluginDir string, cfg store.Config, cacheDir string, signer *identity.Signer,
	configure func(*store.Store, *a2a.ServiceConfig)) *testHost {
	t.Helper()
	ctx := context.Background()
	hc := config.Defaults()
	hc.NATS, hc.Data = cfg.URL, cmp.Or(cfg.DataDir, t.TempDir())
	parts, err := assemble.Build(ctx, assemble.Spec{Config: hc, Purpose: assemble.Test, CacheDir: cacheDir, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	st, reg := parts.Store, parts.Registry
	if err := reg.LoadDir(ctx, pluginDir); err != nil {
		t.Fatal(err)
	}
	// Plugins compile in the background; on a loaded machine a first
	// call could outwait its deadline (plugin_loading) behind them.
	testutil.MustCompiled(t, reg)
	tasks, err := a2a.OpenTaskStore(ctx, st, a2a.TaskStoreConfig{Provenance: provenance.NewSigner(signer, agentcard.DefaultAgentName)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	base := "http://" + srv.Listener.Addr().String()
	cards := agentcard.NewService(agentcard.Config{BaseURL: base, Version: "9.9.9"}, reg.Snapshot, agentcard.Options{Logger: quietLogger(), Signer: signer})
	reg.OnChange(cards.Update)
	sc := a2a.ServiceConfig{A2A: config.Defaults().A2A, Executor: reg, Snapshot: reg.Snapshot, Tasks: tasks, Cards: cards, Logger: quietLogger()}
	if configure != nil {
		configure(st, &sc)
	}
	svc, err := a2a.NewService(sc)
	if err != nil {
		t.Fatal(err)
	}
	eng := jsonrpc.NewEngine(jsonrpc.Limits{MaxBodyBytes: 1 << 20, MaxBatch: 64, BatchConcurrency: 8, MaxBatchResponseBytes: 8 << 20}, jsonrpc.WithLogger(quietLogger()))
	a2a.Register(eng, svc)
	srv.Config.Handler = newTestMux(eng, cards)
	srv.Start()
	lctx, stopLeases := context.WithCancel(ctx)
	leasesDone := make(chan struct{})
	go func() { defer close(leasesDone); svc.RunLeases(lctx) }()
	t.Cleanup(func() {
		stopLeases()
		<-leasesDone
		srv.CloseClientConnections()
		srv.Close()
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		_ = svc.Close(cctx)
		_ = parts.Close(cctx)
	})
	return &testHost{URL: base, svc: svc, tasks: tasks, store: st, eng: eng}
}

func newTestMux(eng *jsonrpc.Engine, cards *agentcard.Service) http.Handler {
	mux := http.NewServeMux()
	serveCard := func(w http.ResponseWriter, body []byte, etag string, err error) {
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("ETag", etag)
		w.Header().Set("Cache-Control", agentcard.CacheControl)
		_, _ = w.Write(body)
	}
	mux.HandleFunc("GET "+agentcard.WellKnownPath, func(w http.ResponseWriter, r *http.Request) {
		body, etag, err := cards.Card(r.Context())
		serveCard(w, body, etag, err)
	})
	mux.HandleFunc("GET /agents/{name}/.well-known/agent-card.json", func(w http.ResponseWriter, r *http.Request) {
		body, etag, err := cards.AgentCard(r.Context(), r.PathValue("name"))
		serveCard(w, body, etag, err)
	})
	mux.HandleFunc("POST "+agentcard.RPCPath, func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
		if err != nil {
			return
		}
		ctx := jsonrpc.WithTransport(r.Context(), jsonrpc.TransportInfo{Name: "http", Header: r.Header.Get, RemoteAddr: r.RemoteAddr})
		ctx = auth.With(ctx, auth.Local("test")) // as the product's loopback-only mode does
		reply := eng.Handle(ctx, body)
		if !reply.Streaming() {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(reply.Body)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		flusher := w.(http.Flusher)
		_ = reply.Pump(ctx, func(msg []byte) error {
			if _, err := w.Write([]byte("data: " + strings.TrimSpace(string(msg)) + "\n\n")); err != nil {
				return err
			}
			flusher.Flush()
			return nil
		})
	})
	return mux
}

// a2aSection is the default a2a.* section with edit applied.
func a2aSection(edit func(*config.A2A)) config.A2A {
	c := config.Defaults().A2A
	edit(&c)
	return c
}
