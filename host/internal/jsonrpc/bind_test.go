package jsonrpc

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
)

type execParams struct {
	SkillID string         `json:"skill_id"`
	Timeout int            `json:"timeout"`
	Input   map[string]any `json:"skill_params"`
	Nested  struct {
		Depth int `json:"depth"`
	} `json:"nested"`
}

type withSession struct {
	SessionID string `json:"session_id"`
	Text      string `json:"text"`
}

type step struct {
	ID string `json:"id"`
}

type listParams struct {
	Steps []step           `json:"steps"`
	ByID  map[string]*step `json:"by_id"`
	Raw   json.RawMessage  `json:"raw"`
	Any   any              `json:"any"`
}

// Inner is embedded by embedding.
type Inner struct {
	ID    int `json:"id"`
	Depth int `json:"depth"`
}

type embedding struct {
	Inner
	ID string `json:"id"`
}

func TestBind(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		params    string
		target    func() any
		want      any
		wantField string // "" = success
		wantMsg   string
	}{
		{"ok", `{"skill_id":"up","timeout":5}`, func() any { return &execParams{} }, &execParams{SkillID: "up", Timeout: 5}, "", ""},
		{"envelope members allowed", `{"skill_id":"up","request_id":"r","timestamp":"t","version":"1.0","session_id":"s"}`,
			func() any { return &execParams{} }, &execParams{SkillID: "up"}, "", ""},
		{"envelope member kept when known", `{"session_id":"s1","text":"hi","version":"1"}`,
			func() any { return &withSession{} }, &withSession{SessionID: "s1", Text: "hi"}, "", ""},
		{"absent params leave target", ``, func() any { return &execParams{SkillID: "keep"} }, &execParams{SkillID: "keep"}, "", ""},
		{"unknown field", `{"skill_id":"up","timeot":5}`, func() any { return &execParams{} }, nil, "timeot", `unknown field "timeot"`},
		{"unknown nested field", `{"nested":{"depht":1}}`, func() any { return &execParams{} }, nil, "depht", `unknown field "depht"`},
		{"wrong type", `{"skill_id":"up","timeout":"5s"}`, func() any { return &execParams{} }, nil, "timeout", `field "timeout" must be an integer, got string`},
		{"wrong nested type", `{"nested":{"depth":1.5}}`, func() any { return &execParams{} }, nil, "nested.depth", `field "nested.depth" must be an integer`},
		{"array for object", `[1,2]`, func() any { return &execParams{} }, nil, "", "params must be an object, got array"},
		{"object for array", `{"a":1}`, func() any { return &[]int{} }, nil, "", "params must be an array, got object"},
		{"unknown field in a list element", `{"steps":[{"id":"a"},{"id":"b","tyep":"x"}]}`, func() any { return &listParams{} }, nil, "tyep", `unknown field "tyep"`},
		{"unknown field in a map value", `{"by_id":{"a":{"id":"a","extra":1}}}`, func() any { return &listParams{} }, nil, "extra", `unknown field "extra"`},
		{"raw and any members take anything", `{"raw":{"x":1},"any":{"y":[{"z":2}]}}`, func() any { return &listParams{} },
			&listParams{Raw: json.RawMessage(`{"x":1}`), Any: map[string]any{"y": []any{map[string]any{"z": 2.0}}}}, "", ""},
		{"promoted field of an embedded struct", `{"id":"a","depth":2}`, func() any { return &embedding{} }, &embedding{Inner: Inner{Depth: 2}, ID: "a"}, "", ""},
		{"outer field shadows the embedded one", `{"id":"a"}`, func() any { return &embedding{} }, &embedding{ID: "a"}, "", ""},
		{"case-folded nested member", `{"steps":[{"ID":"a"}]}`, func() any { return &listParams{} }, nil, "ID", `did you mean "id"`},
		{"envelope members only at the top", `{"steps":[{"id":"a","session_id":"s"}]}`, func() any { return &listParams{} }, nil, "session_id", `unknown field "session_id"`},
		{"custom decoder error", `{"at":"yesterday"}`, func() any {
			return &struct {
				At time.Time `json:"at"`
			}{}
		}, nil, "", "params: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := &Request{Params: json.RawMessage(tt.params)}
			got := tt.target()
			err := req.Bind(got)
			if tt.wantMsg == "" {
				if err != nil {
					t.Fatalf("Bind: %v", err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("Bind (-want +got):\n%s", diff)
				}
				return
			}
			var fe *fault.Error
			if !errors.As(err, &fe) || fe.Kind != fault.InvalidParams || fe.Reason != fault.ReasonInvalidParams {
				t.Fatalf("Bind error = %v, want InvalidParams", err)
			}
			if !strings.Contains(fe.Message(), tt.wantMsg) {
				t.Errorf("message %q does not contain %q", fe.Message(), tt.wantMsg)
			}
			if tt.wantField != "" && fe.Data["field"] != tt.wantField {
				t.Errorf("data.field = %v, want %q", fe.Data["field"], tt.wantField)
			}
		})
	}
}

func TestBindNonPointerIsInternal(t *testing.T) {
	t.Parallel()
	err := (&Request{Params: json.RawMessage(`{}`)}).Bind(execParams{})
	if err == nil || fault.KindOf(err) != fault.Internal {
		t.Errorf("Bind(non-pointer) = %v, want an internal error", err)
	}
}

// TestBindNamesAreCaseSensitive: a member that matches a field only when
// case is ignored is refused, so one request can never carry two session ids
// (the envelope reader matches names exactly, encoding/json folds them).
func TestBindNamesAreCaseSensitive(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		params    string
		wantField string // "" = accepted
	}{
		{"exact names", `{"session_id":"a","text":"x"}`, ""},
		{"upper-case twin of the envelope session", `{"session_id":"attacker","SESSION_ID":"victim"}`, "SESSION_ID"},
		{"upper-case field alone", `{"TEXT":"x"}`, "TEXT"},
		{"unicode fold (long s)", `{"ſession_id":"victim"}`, "ſession_id"},
		{"envelope member still allowed", `{"request_id":"r1","text":"x"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var p withSession
			err := (&Request{Params: json.RawMessage(tt.params)}).Bind(&p)
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("Bind(%s) = %v, want success", tt.params, err)
				}
				return
			}
			var fe *fault.Error
			if !errors.As(err, &fe) || fe.Kind != fault.InvalidParams || fe.Data["field"] != tt.wantField {
				t.Fatalf("Bind(%s) = %v, want InvalidParams naming %q", tt.params, err, tt.wantField)
			}
		})
	}
}
