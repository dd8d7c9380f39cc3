package host_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host"
	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/a2a/agentcard"
)

// `skillhost card` (host.Card) prints the card a host with the same
// configuration serves: under TLS (https URLs), with API keys (security
// schemes, the extended card), push, and a signing identity — the same
// document apart from its signatures.
func TestCardCommandMatchesServedCard(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", toolsManifest)
	certFile, keyFile, pool := mustCert(t)
	id := mustKeygen(t, t.TempDir(), "host.key", "ed25519")
	key := newKey(t, "reader", "*")
	var cfg config.Config
	th, _ := mustHostWith(t, dir, func(c *config.Config) {
		c.HTTP.TLS = config.TLS{CertFile: certFile, KeyFile: keyFile}
		c.Auth.Keys = []config.AuthKey{key.Entry}
		c.Identity.KeyFile = []string{id.Private}
		cfg = *c
	})
	cfg.Listen = th.h.Addr().String() // the address it bound
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for _, agent := range []string{"", "tools"} {
		path := agentcard.WellKnownPath
		if agent != "" {
			path = agentcard.AgentCardPath(agent)
		}
		resp, err := hc.Get(th.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		served, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
		}
		printed, problems, err := host.Card(context.Background(), cfg, host.CardOptions{Version: "9.9.9-test", Agent: agent})
		if err != nil || len(problems) != 0 {
			t.Fatalf("host.Card(%q): %v %v", agent, problems, err)
		}
		if diff := cmp.Diff(unsigned(t, served), unsigned(t, printed)); diff != "" {
			t.Errorf("card %q: skillhost card differs from what the host serves (-served +printed):\n%s", agent, diff)
		}
	}
}

// unsigned is a card without its signatures (each render signs anew).
func unsigned(t *testing.T, card []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(card, &m); err != nil {
		t.Fatalf("card %s: %v", card, err)
	}
	if _, ok := m["signatures"]; !ok {
		t.Errorf("card is not signed: %s", card)
	}
	delete(m, "signatures")
	return m
}

// The extended card exists only when API keys protect it (A2A v1.0 §13.3):
// it then lists the skills the caller's scopes allow, and asks for a key.
func TestExtendedCardNeedsKeys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", toolsManifest)
	echoer := newKey(t, "echoer", "skill:echo")
	th, _ := mustHostWith(t, dir, func(c *config.Config) { c.Auth.Keys = []config.AuthKey{echoer.Entry} })
	_, body := th.get(t, agentcard.WellKnownPath)
	var served struct {
		Capabilities struct {
			ExtendedAgentCard bool `json:"extendedAgentCard"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(body, &served); err != nil || !served.Capabilities.ExtendedAgentCard {
		t.Errorf("a host with keys does not advertise its extended card:\n%s", body)
	}
	card := th.mustAs(t, echoer.Secret, "GetExtendedAgentCard", map[string]any{})
	var ids []string
	for _, s := range card["skills"].([]any) {
		ids = append(ids, s.(map[string]any)["id"].(string))
	}
	if diff := cmp.Diff([]string{"echo"}, ids); diff != "" {
		t.Errorf("extended card of a key with skill:echo (-want +got):\n%s", diff)
	}
	wantRefused(t, th.as(t, "", "GetExtendedAgentCard", map[string]any{}), 401, -32105, "unauthenticated")

	open := mustHost(t, dir) // no keys: nothing extended to protect
	if _, body := open.get(t, agentcard.WellKnownPath); strings.Contains(string(body), "extendedAgentCard") || strings.Contains(string(body), "supportsAuthenticatedExtendedCard") {
		t.Errorf("a host without keys advertises an extended card:\n%s", body)
	}
	r := open.as(t, "", "GetExtendedAgentCard", map[string]any{})
	wantRefused(t, r, 200, -32007, "extended_card_not_configured")
}

// The card's cleveragents extension lists exactly the _cleveragents/*
// methods the host serves.
func TestCardListsEveryDialectMethod(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", toolsManifest)
	th := mustHost(t, dir)
	var served []string
	for _, m := range host.EngineMethods(th.h) {
		if strings.HasPrefix(m, "_cleveragents/") {
			served = append(served, m)
		}
	}
	_, body := th.get(t, agentcard.WellKnownPath)
	var card struct {
		Capabilities struct {
			Extensions []struct {
				URI    string `json:"uri"`
				Params struct {
					Methods []string `json:"methods"`
				} `json:"params"`
			} `json:"extensions"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(body, &card); err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, e := range card.Capabilities.Extensions {
		if e.URI == agentcard.ExtCleverAgents {
			listed = e.Params.Methods
		}
	}
	slices.Sort(served)
	slices.Sort(listed)
	if diff := cmp.Diff(served, listed); diff != "" {
		t.Errorf("the card's %s methods differ from those served (-served +card):\n%s", agentcard.ExtCleverAgents, diff)
	}
}
