package hostfn_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/hostfn"
)

// TestGuestHostilePointers calls the log host function with hand-made
// offsets: every bad one is answered with a structured error reply (never a
// host panic, never a trap) and the instance keeps working.
func TestGuestHostilePointers(t *testing.T) {
	t.Parallel()
	in := mustCompile(t, hostfn.Deps{}, hostfn.Grant{Plugin: "hostile"}).mustInstance(t)
	valid := `{"level":"info","message":"ok"}`
	tests := []struct {
		name string
		raw  map[string]any
		code string // "" = ok reply
	}{
		{"null offset", map[string]any{"offset": 0}, fault.GuestBadPointer},
		{"offset 1", map[string]any{"offset": 1}, fault.GuestBadPointer},
		{"offset past 4 GiB", map[string]any{"offset": uint64(1) << 40}, fault.GuestBadPointer},
		{"offset at the end of the address space", map[string]any{"offset": uint64(0xFFFFFFF8)}, fault.GuestBadPointer},
		{"offset inside a block", map[string]any{"size": 64, "fill": valid, "delta": 8}, fault.GuestBadPointer},
		{"block over the cap", map[string]any{"size": hostfn.MaxLogRequest + 1, "fill": valid}, fault.GuestRequestTooLarge},
		{"not JSON", map[string]any{"size": 16, "fill": "{nope"}, fault.GuestBadRequest},
		{"unknown level", map[string]any{"size": 64, "fill": `{"level":"loud","message":"x"}`}, fault.GuestBadRequest},
		{"valid block", map[string]any{"size": 64, "fill": valid}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, gerr := in.call(&hostfn.Call{}, "raw", tt.raw)
			if gerr != nil {
				t.Fatalf("raw call failed: %+v", gerr)
			}
			var reply struct {
				OK    bool        `json:"ok"`
				None  bool        `json:"none"`
				Error *guestError `json:"error"`
			}
			if err := json.Unmarshal(out, &reply); err != nil {
				t.Fatalf("reply %q: %v", out, err)
			}
			if reply.None {
				t.Fatal("the host returned no reply")
			}
			code := ""
			if reply.Error != nil {
				code = reply.Error.Code
			}
			if reply.OK != (tt.code == "") || code != tt.code {
				t.Errorf("reply = %s, want code %q", out, tt.code)
			}
		})
	}
	if _, gerr := in.call(&hostfn.Call{}, "log_it", map[string]any{"msg": "still alive"}); gerr != nil {
		t.Fatalf("instance unusable after hostile calls: %+v", gerr)
	}
}

// TestGuestSDKErrors checks what the SDK hands the host: structured errors,
// config values, and a panic that surfaces as a trap.
func TestGuestSDKErrors(t *testing.T) {
	t.Parallel()
	g := mustCompile(t, hostfn.Deps{}, hostfn.Grant{Plugin: "sdk"})
	in := g.mustInstance(t)

	_, gerr := in.call(&hostfn.Call{}, "fail", map[string]any{})
	want := &guestError{Code: "invalid_input", Message: "text is empty", Data: map[string]any{"min": float64(1)}}
	if diff := cmp.Diff(want, gerr); diff != "" {
		t.Errorf("structured error (-want +got):\n%s", diff)
	}

	out, gerr := in.call(&hostfn.Call{}, "config", []byte("greeting"))
	if gerr != nil || string(out) != "hi" {
		t.Errorf("config greeting = %q, %+v; want hi", out, gerr)
	}
	_, gerr = in.call(&hostfn.Call{}, "config", []byte("absent"))
	if gerr == nil || gerr.Code != "no_config" {
		t.Errorf("config absent = %+v, want code no_config", gerr)
	}

	_, gerr = in.call(&hostfn.Call{}, "ctx_get", []byte(`{"key": 12}`))
	if gerr == nil || gerr.Code != "invalid_input" || !strings.Contains(gerr.Message, "decode") {
		t.Errorf("ill-typed input = %+v, want invalid_input", gerr)
	}

	boom := g.mustInstance(t)
	rc, _, err := boom.p.CallWithContext(t.Context(), "boom", []byte(`{}`))
	if err == nil || rc == 0 {
		t.Fatalf("panicking skill: rc %d, err %v; want a trap", rc, err)
	}
	if !strings.Contains(err.Error(), "wasm error") && !strings.Contains(err.Error(), "exit") {
		t.Errorf("panic surfaced as %v, want a wasm trap", err)
	}
}
