package sdk

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHandleInterrupt(t *testing.T) {
	t.Parallel()
	refused := func(string, []byte) []byte {
		return []byte(`{"ok":false,"error":{"code":"not_a_task","message":"this call is not an A2A task turn"}}`)
	}
	tests := []struct {
		name      string
		fn        func(*Context, upIn) (upOut, error)
		reply     func(string, []byte) []byte
		wantRC    int32
		wantCalls []hostCall
		wantOut   string
		wantErr   string
	}{
		{"ask input: the host is told, no output", func(*Context, upIn) (upOut, error) {
			return upOut{Text: "ignored"}, AskInput("What is your name?")
		}, nil, 0, []hostCall{{"task_interrupt", `{"state":"input-required","text":"What is your name?"}`}}, "", ""},
		{"need auth with data", func(*Context, upIn) (upOut, error) {
			return upOut{}, fmt.Errorf("wrapped: %w", NeedAuth("Sign in to billing").WithData(map[string]string{"url": "https://b.example/login"}))
		}, nil, 0, []hostCall{{"task_interrupt", `{"state":"auth-required","text":"Sign in to billing","data":{"url":"https://b.example/login"}}`}}, "", ""},
		{"outside a task the host refuses: the call fails with its code", func(*Context, upIn) (upOut, error) {
			return upOut{}, AskInput("name?")
		}, refused, 1, []hostCall{{"task_interrupt", `{"state":"input-required","text":"name?"}`}}, "",
			`{"code":"not_a_task","message":"this call is not an A2A task turn"}`},
		{"undecodable data fails the call", func(*Context, upIn) (upOut, error) {
			return upOut{}, AskInput("x").WithData(func() {})
		}, nil, 1, nil, "", `{"code":"invalid_input","message":"interrupt data does not encode: json: unsupported type: func()"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := &recorder{in: []byte(`{}`), reply: tt.reply}
			rc := handle(r, tt.fn)
			got := []any{rc, r.calls, string(r.out), string(r.errJSON)}
			want := []any{tt.wantRC, tt.wantCalls, tt.wantOut, tt.wantErr}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("handle (-want +got):\n%s", diff)
			}
		})
	}
}

func TestContextTask(t *testing.T) {
	t.Parallel()
	r := &recorder{reply: okReply(t, map[string]any{"task_id": "t1", "turn": 2, "truncated": false, "messages": []map[string]any{
		{"role": "user", "data": map[string]any{"fields": []string{"name"}}},
		{"role": "agent", "text": "name?"},
		{"role": "user", "text": "Ada"},
	}})}
	task, err := NewContext(r).Task()
	if err != nil {
		t.Fatal(err)
	}
	want := &Task{ID: "t1", Turn: 2, Messages: []Message{
		{Role: "user", Data: json.RawMessage(`{"fields":["name"]}`)},
		{Role: "agent", Text: "name?"},
		{Role: "user", Text: "Ada"},
	}}
	if diff := cmp.Diff(want, task); diff != "" {
		t.Errorf("Task (-want +got):\n%s", diff)
	}
	var first struct{ Fields []string }
	if err := task.Messages[0].Decode(&first); err != nil || len(first.Fields) != 1 {
		t.Errorf("Decode = %v, %+v", err, first)
	}
	if err := task.Messages[2].Decode(&first); err == nil {
		t.Error("Decode of a message without data: no error")
	}
}
