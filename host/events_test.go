package host_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// eventStream is an open GET /events as the test reads it.
type eventStream struct {
	frames chan map[string]any // the data of each event
}

// openEvents subscribes with key (none when "") and returns the HTTP status,
// the stream when it is 200, and the error body otherwise.
func openEvents(t *testing.T, ctx context.Context, url, key, query string) (int, *eventStream, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/events"+query, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		var b strings.Builder
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			b.WriteString(sc.Text())
		}
		return resp.StatusCode, nil, b.String()
	}
	sc := bufio.NewScanner(resp.Body)
	if !sc.Scan() || sc.Text() != ": subscribed" {
		t.Fatalf("GET /events: first line %q", sc.Text())
	}
	es := &eventStream{frames: make(chan map[string]any, 16)}
	go func() {
		defer resp.Body.Close()
		defer close(es.frames)
		for sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var env map[string]any
				if json.Unmarshal([]byte(line), &env) == nil {
					es.frames <- env
				}
			}
		}
	}()
	return http.StatusOK, es, ""
}

// nextEvent is the event name of the next agent.notify on the stream.
func (es *eventStream) nextEvent(t *testing.T) string {
	t.Helper()
	select {
	case env, ok := <-es.frames:
		if !ok {
			t.Fatal("the event stream ended")
		}
		data, _ := env["data"].(map[string]any)
		name, _ := data["event"].(string)
		return name
	case <-time.After(60 * time.Second):
		t.Fatal("no event within 60s")
	}
	return ""
}

// TestEventsOwnership: GET /events has /rpc's access rules, and a key sees
// only the events of what it owns.
func TestEventsOwnership(t *testing.T) {
	th, _, k := mustAuthHost(t)
	a, b := k.admin.Secret, k.other.Secret
	created := th.mustAs(t, a, "_cleveragents/session/create", map[string]any{})
	sa, token := created["session_id"].(string), created["session_token"].(string)
	sb := th.mustAs(t, b, "_cleveragents/session/create", map[string]any{})["session_id"].(string)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	for _, tt := range []struct {
		name, key, query string
		status           int
		reason           string
	}{
		{"no key", "", "", http.StatusUnauthorized, "unauthenticated"},
		{"another key's session", b, "?session_id=" + sa, http.StatusNotFound, "session_not_found"},
		{"a token without its session", token, "", http.StatusForbidden, "scope_denied"},
		{"a token for another session", token, "?session_id=" + sb, http.StatusForbidden, "scope_denied"},
		{"bad Last-Event-ID", a, "?last_event_id=x", http.StatusBadRequest, "invalid_params"},
	} {
		status, _, body := openEvents(t, ctx, th.URL, tt.key, tt.query)
		if status != tt.status || !strings.Contains(body, `"reason":"`+tt.reason+`"`) {
			t.Errorf("%s: HTTP %d %s; want %d %s", tt.name, status, body, tt.status, tt.reason)
		}
	}

	_, allA, _ := openEvents(t, ctx, th.URL, a, "")
	_, allB, _ := openEvents(t, ctx, th.URL, b, "")
	_, tokenA, _ := openEvents(t, ctx, th.URL, token, "?session_id="+sa)
	notify := func(key, session, event string) {
		t.Helper()
		th.mustAs(t, key, "_cleveragents/agent/notify", map[string]any{"session_id": session, "event": event})
	}
	notify(a, sa, "for-a")
	notify(b, sb, "for-b")
	notify(a, sa, "for-a-again")
	for _, tt := range []struct {
		name   string
		stream *eventStream
		want   []string
	}{
		{"a's stream", allA, []string{"for-a", "for-a-again"}},
		{"b's stream", allB, []string{"for-b"}},
		{"a's session token", tokenA, []string{"for-a", "for-a-again"}},
	} {
		for _, want := range tt.want {
			if got := tt.stream.nextEvent(t); got != want {
				t.Errorf("%s: event %q, want %q", tt.name, got, want)
			}
		}
	}
}
