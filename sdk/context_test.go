package sdk

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestContextGetSet(t *testing.T) {
	t.Parallel()
	ctx, r := mustContext(t, okReply(t, map[string]any{"found": true, "value": map[string]int{"n": 7}}))
	var v struct{ N int }
	found, err := ctx.Get("k", &v)
	if err != nil || !found || v.N != 7 {
		t.Fatalf("Get = %v, %v, %+v", found, err, v)
	}
	if err := ctx.Set("k", []int{1}, 1500*time.Microsecond); err != nil {
		t.Fatalf("Set: %v", err)
	}
	want := []hostCall{
		{"context_get", `{"key":"k"}`},
		{"context_set", `{"key":"k","value":[1],"ttl_ms":2}`}, // 1.5 ms rounds up
	}
	if diff := cmp.Diff(want, r.calls); diff != "" {
		t.Errorf("host calls (-want +got):\n%s", diff)
	}
	if err := ctx.Set("k", 1, -time.Second); err == nil {
		t.Error("negative ttl accepted")
	}
}

func TestContextGetNotFound(t *testing.T) {
	t.Parallel()
	ctx, _ := mustContext(t, okReply(t, map[string]any{"found": false}))
	v := "untouched"
	found, err := ctx.Get("k", &v)
	if found || err != nil || v != "untouched" {
		t.Errorf("Get = %v, %v, %q", found, err, v)
	}
}

func TestHostErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		reply string
		code  string
	}{
		{"host error", `{"ok":false,"error":{"code":"no_session","message":"no session"}}`, "no_session"},
		{"no reply", ``, CodeHostCall},
		{"garbage reply", `{{`, CodeHostCall},
		{"failure without error", `{"ok":false}`, CodeHostCall},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, _ := mustContext(t, func(string, []byte) []byte {
				if tt.reply == "" {
					return nil
				}
				return []byte(tt.reply)
			})
			_, err := ctx.Get("k", new(any))
			var e *Error
			if !errors.As(err, &e) || e.Code != tt.code {
				t.Errorf("Get error = %v, want code %s", err, tt.code)
			}
		})
	}
}

func TestFetch(t *testing.T) {
	t.Parallel()
	ctx, r := mustContext(t, okReply(t, map[string]any{"status": 201, "headers": map[string]string{"A": "b"}, "body": "aGk="}))
	resp, err := ctx.Fetch(Request{URL: "https://api.example.com/x", Body: []byte("yo")})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&Response{Status: 201, Headers: map[string]string{"A": "b"}, Body: []byte("hi")}, resp); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	if got := r.calls[0].Req; got != `{"method":"GET","url":"https://api.example.com/x","body":"eW8="}` {
		t.Errorf("request = %s", got)
	}
}

func TestProgressAndLog(t *testing.T) {
	t.Parallel()
	ctx, r := mustContext(t, nil)
	if err := ctx.ProgressData(50, "half", map[string]int{"step": 2}); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Progress(math.NaN(), "x"); err == nil {
		t.Error("NaN percent accepted")
	}
	ctx.Logf(LevelWarn, "n=%d", 3)
	ctx.Log(LevelError, strings.Repeat("é", 3000)) // 6000 bytes: cut on a rune boundary
	want := []hostCall{
		{"progress", `{"percent":50,"message":"half","data":{"step":2}}`},
		{"log", `{"level":"warn","message":"n=3"}`},
		{"log", `{"level":"error","message":"` + strings.Repeat("é", 2048) + `"}`},
	}
	if diff := cmp.Diff(want, r.calls); diff != "" {
		t.Errorf("host calls (-want +got):\n%s", diff)
	}
}
