package archtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const module = "github.com/skillhost/skillhost"

// pkg is one package of the module as go list reports it.
type pkg struct {
	ImportPath string
	Imports    []string
}

// mustGraph lists the module's packages (tests excluded) with their
// imports, paths relative to the module ("host/internal/jsonrpc").
func mustGraph(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = "../../.."
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	graph := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		graph[rel(p.ImportPath)] = append([]string{}, p.Imports...)
	}
	if len(graph) < 20 {
		t.Fatalf("go list found %d packages; is the module root right?", len(graph))
	}
	return graph
}

func rel(importPath string) string {
	return strings.TrimPrefix(strings.TrimPrefix(importPath, module), "/")
}

// own keeps the imports inside the module, relative, sorted.
func own(imports []string) []string {
	var out []string
	for _, imp := range imports {
		if imp == module || strings.HasPrefix(imp, module+"/") {
			out = append(out, rel(imp))
		}
	}
	slices.Sort(out)
	return out
}

// rule forbids imports matching to (a path.Match pattern, or a prefix
// ending in "/") from packages matching from, except those listed in allow.
type rule struct {
	why      string
	from, to []string
	allow    []string // allowed targets even when to matches
	except   []string // packages matching from that the rule does not cover
}

func matches(patterns []string, p string) bool {
	for _, pat := range patterns {
		if strings.HasSuffix(pat, "/") && strings.HasPrefix(p, pat) {
			return true
		}
		if ok, _ := path.Match(pat, p); ok {
			return true
		}
	}
	return false
}

var rules = []rule{
	{why: "host/fault is a leaf: every package imports it, it imports nothing of ours",
		from: []string{"host/fault"}, to: []string{module + "/"}},
	{why: "the protocol core (engine, methods, sandbox, plugins, store) knows nothing of Fiber: HTTP lives in the transport",
		from: []string{"host/internal/*", "host/internal/a2a/"}, to: []string{"github.com/gofiber/", "github.com/valyala/"},
		// The benchmark harness measures a bare Fiber server as a baseline
		// and drives load with fasthttp's client; it serves no one.
		except: []string{"host/internal/bench"}},
	{why: "the host never imports guest code: sdk/ and plugins/ share only the wire contract",
		from: []string{"host", "host/", "examples", "examples/"}, to: []string{module + "/sdk", module + "/sdk/", module + "/internal/plugins/"}},
	{why: "the CLI imports the SDK's root package only for sdk.Source, the SDK's own source it writes into a new plugin",
		from: []string{"cmd/"}, to: []string{module + "/sdk/", module + "/internal/plugins/"}},
	{why: "internal packages never import the public facade or the public tool packages built on them",
		from: []string{"host/internal/*", "host/internal/*/*"},
		to:   []string{module + "/host", module + "/host/devkit", module + "/host/client"}},
	{why: "the JSON-RPC engine is transport-agnostic and knows no method: it imports only fault",
		from: []string{"host/internal/jsonrpc"}, to: []string{module + "/"}, allow: []string{module + "/host/fault"}},
	{why: "the sandbox knows nothing of plugins, manifests, the store or the protocol",
		from: []string{"host/internal/sandbox"}, to: []string{module + "/"}, allow: []string{module + "/host/fault"}},
	{why: "transports are adapters: they decode, dispatch to the engine and encode; they import no method package",
		from: []string{"host/internal/transport/*"},
		to: []string{module + "/host/internal/rpc", module + "/host/internal/a2a", module + "/host/internal/a2a/", module + "/host/internal/plan",
			module + "/host/internal/plugin", module + "/host/internal/sandbox", module + "/host/internal/store",
			module + "/host/internal/hostfn", module + "/host/internal/assemble"}},
	{why: "a2a's parts do one job each: cards, push and the v0.3 shapes know no task service and no binding",
		from: []string{"host/internal/a2a/agentcard", "host/internal/a2a/push", "host/internal/a2a/v03"},
		to: []string{module + "/host/internal/a2a", module + "/host/internal/a2a/rest", module + "/host/internal/a2a/grpcbind",
			module + "/host/internal/jsonrpc", module + "/host/internal/assemble"}},
	{why: "the v0.3 shapes are a2a-go's conversions, and only they: v03 imports fault and nothing else of ours",
		from: []string{"host/internal/a2a/v03"}, to: []string{module + "/"}, allow: []string{module + "/host/fault"}},
	{why: "the HTTP+JSON binding is a switch from routes to the engine's v1.0 methods: it knows no A2A package",
		from: []string{"host/internal/a2a/rest"}, to: []string{module + "/host/internal/a2a", module + "/host/internal/a2a/"}},
	{why: "the served protocol speaks v0.3 only through a2a/v03 (remote, a client of peers, uses a2a-go's v0.3 client transport)",
		from:   []string{"host", "host/", "cmd/", "examples", "examples/"},
		to:     []string{"github.com/a2aproject/a2a-go/a2a", "github.com/a2aproject/a2a-go/v2/a2acompat/"},
		except: []string{"host/internal/a2a/v03", "host/internal/remote"}},
	{why: "the client is a client: it shares the error taxonomy with the host, nothing else",
		from: []string{"host/client"}, to: []string{module + "/"}, allow: []string{module + "/host/fault"}},
	{why: "config is the public leaf of configuration values; of our packages it imports only syntax leaves",
		from: []string{"host/config"}, to: []string{module + "/"},
		allow: []string{module + "/host/internal/hostpattern", module + "/host/internal/auth"}},
	{why: "cmd and examples are wiring only: they import public packages (Go refuses internal ones anyway)",
		from: []string{"cmd/*", "examples", "examples/*"}, to: []string{module + "/host/internal/"}},
	{why: "store owns JetStream: every other package uses its typed buckets, logs, queues and object stores " +
		"(errors classified once, replicas and retries applied); natstest starts the test clusters",
		from:   []string{"host", "host/", "cmd/", "examples", "examples/"},
		to:     []string{natsModules},
		except: []string{"host/internal/store", "host/internal/natstest", "host", "host/internal/assemble"}},
	{why: "store owns JetStream; the embedding surface (host.WithNATS) takes the caller's *nats.Conn and the root " +
		"hands it to the store: host and assemble name the connection type, never JetStream or the server",
		from: []string{"host", "host/internal/assemble"}, to: []string{natsModules},
		allow: []string{natsModules + "nats.go"}},
}

// natsModules is the prefix of nats.go, its jetstream package and
// nats-server.
const natsModules = "github.com/nats-io/"

// TestImportRules checks every package of the module against the rules.
func TestImportRules(t *testing.T) {
	t.Parallel()
	graph := mustGraph(t)
	for _, r := range rules {
		for p, imports := range graph {
			if !matches(r.from, p) || matches(r.except, p) {
				continue
			}
			for _, imp := range imports {
				if matches(r.to, imp) && !slices.Contains(r.allow, imp) {
					t.Errorf("%s imports %s: %s", p, imp, r.why)
				}
			}
		}
	}
}

// TestOnlyStoreImportsNATS keeps the JetStream rule from passing vacuously:
// the packages it exempts really import what it forbids everyone else.
func TestOnlyStoreImportsNATS(t *testing.T) {
	t.Parallel()
	graph := mustGraph(t)
	for _, want := range []struct{ pkg, imp string }{
		{"host/internal/store", natsModules + "nats.go/jetstream"},
		{"host/internal/store", natsModules + "nats-server/v2/server"},
		{"host/internal/natstest", natsModules + "nats-server/v2/server"},
	} {
		if !slices.Contains(graph[want.pkg], want.imp) {
			t.Errorf("%s does not import %s: is the rule's prefix %q still right?", want.pkg, want.imp, natsModules)
		}
	}
}

// TestArchitectureDocShowsTheRealGraph compares the graph block of
// docs/ARCHITECTURE.md with go list's: a new or removed arrow must be drawn
// (and justified there) to pass.
func TestArchitectureDocShowsTheRealGraph(t *testing.T) {
	t.Parallel()
	graph := mustGraph(t)
	want := map[string][]string{}
	for p, imports := range graph {
		if strings.HasPrefix(p, "host") || strings.HasPrefix(p, "cmd") {
			want[p] = append([]string{}, own(imports)...)
		}
	}
	got := mustDocGraph(t)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("docs/ARCHITECTURE.md's package graph differs from go list (-real +doc):\n%s", diff)
	}
}

// mustDocGraph reads the ```graph block of docs/ARCHITECTURE.md: one line
// per package, "pkg → dep dep …" ("pkg →" for none).
func mustDocGraph(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open("../../../docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := map[string][]string{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "```graph":
			in = true
			continue
		case in && line == "```":
			return got
		case !in || line == "":
			continue
		}
		from, to, ok := strings.Cut(line, "→")
		if !ok {
			t.Fatalf("graph line %q has no →", line)
		}
		deps := strings.Fields(to)
		slices.Sort(deps)
		if deps == nil {
			deps = []string{}
		}
		got[strings.TrimSpace(from)] = deps
	}
	t.Fatal("docs/ARCHITECTURE.md has no complete ```graph block")
	return nil
}
