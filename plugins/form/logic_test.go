package main

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/sdk"
)

func user(text string) sdk.Message  { return sdk.Message{Role: "user", Text: text} }
func agent(text string) sdk.Message { return sdk.Message{Role: "agent", Text: text} }

func first(fields ...string) sdk.Message {
	b, _ := json.Marshal(map[string]any{"fields": fields})
	return sdk.Message{Role: "user", Data: b}
}

func TestFill(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		history []sdk.Message
		out     string // the completed form
		asks    string // or the question
		field   string // it names
		code    string // or the error code
	}{
		{"first turn asks the first field", []sdk.Message{first("name", "email")}, "", "Please enter name (1 of 2).", "name", ""},
		{"second turn asks the second", []sdk.Message{first("name", "email"), agent("?"), user("Ada")}, "", "Please enter email (2 of 2).", "email", ""},
		{"last answer completes, in field order", []sdk.Message{first("name", "email"), agent("?"), user(" Ada "), agent("?"), user("ada@example.com")},
			`{"name":"Ada","email":"ada@example.com"}`, "", "", ""},
		{"an empty answer is asked again", []sdk.Message{first("name"), agent("?"), user("  ")}, "",
			"An empty answer does not fill it. Please enter name (1 of 1).", "name", ""},
		{"no fields", []sdk.Message{first()}, "", "", "", sdk.CodeInvalidInput},
		{"a field twice", []sdk.Message{first("a", "a")}, "", "", "", sdk.CodeInvalidInput},
		{"first message is text", []sdk.Message{user("hi")}, "", "", "", sdk.CodeInvalidInput},
		{"no history", nil, "", "", "", sdk.CodeInvalidInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := fill(tt.history)
			var ask *sdk.Interrupt
			var e *sdk.Error
			got := map[string]string{"out": string(out)}
			switch {
			case errors.As(err, &ask):
				q := ask.Data.(question)
				got["asks"], got["field"] = ask.Text, q.Field
			case errors.As(err, &e):
				got["code"] = e.Code
			case err != nil:
				t.Fatal(err)
			}
			want := map[string]string{"out": tt.out}
			if tt.asks != "" {
				want["asks"], want["field"] = tt.asks, tt.field
			}
			if tt.code != "" {
				want["code"] = tt.code
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("fill (-want +got):\n%s", diff)
			}
		})
	}
}
