package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/skillhost/skillhost/sdk"
)

func TestTransforms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		fn   func(TextIn) (TextOut, error)
		in   string
		want string
	}{
		{"upper", upper, "hello, Wörld", "HELLO, WÖRLD"},
		{"lower", lower, "HeLLo ÅÄÖ", "hello åäö"},
		{"title", title, "the quick BROWN fox's tail", "The Quick Brown Fox's Tail"},
		{"title punctuation", title, "hello-world foo_bar", "Hello-World Foo_Bar"},
		{"slug", slugify, "  Hello, Wörld! Crème brûlée  ", "hello-world-creme-brulee"},
		{"slug symbols only", slugify, "!!! ???", ""},
		{"slug non-latin dropped", slugify, "日本 abc 2024", "abc-2024"},
		{"reverse ascii", reverse, "abc", "cba"},
		{"reverse runes", reverse, "añb€", "€bña"},
		{"reverse combining", reverse, "e\u0301x", "xe\u0301"},
		{"reverse empty", reverse, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.fn(TextIn{Text: tt.in})
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if diff := cmp.Diff(tt.want, got.Text); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestWordCount(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want CountOut
	}{
		{"", CountOut{}},
		{"one", CountOut{Words: 1, Chars: 3, Lines: 1}},
		{"hello  world\nsecond line\n", CountOut{Words: 4, Chars: 25, Lines: 2}},
		{"größe über", CountOut{Words: 2, Chars: 10, Lines: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := count(TextIn{Text: tt.in})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func TestTruncate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   TruncateIn
		want TruncateOut
	}{
		{"fits", TruncateIn{Text: "hello", N: 5}, TruncateOut{Text: "hello"}},
		{"cut default ellipsis", TruncateIn{Text: "hello world", N: 6}, TruncateOut{Text: "hello…", Truncated: true}},
		{"cut custom ellipsis", TruncateIn{Text: "hello world", N: 8, Ellipsis: ptr("...")}, TruncateOut{Text: "hello...", Truncated: true}},
		{"no ellipsis", TruncateIn{Text: "hello world", N: 5, Ellipsis: ptr("")}, TruncateOut{Text: "hello", Truncated: true}},
		{"rune safe", TruncateIn{Text: "日本語のテキスト", N: 4}, TruncateOut{Text: "日本語…", Truncated: true}},
		{"ellipsis longer than n", TruncateIn{Text: "abcdef", N: 2, Ellipsis: ptr("...")}, TruncateOut{Text: "..", Truncated: true}},
		{"zero", TruncateIn{Text: "abc", N: 0}, TruncateOut{Text: "", Truncated: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := truncate(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestHostileInputRefused checks every cap the skills enforce themselves.
func TestHostileInputRefused(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("a", maxTextBytes+1)
	tests := []struct {
		name string
		call func() error
	}{
		{"huge text", func() error { _, err := upper(TextIn{Text: huge}); return err }},
		{"invalid utf8", func() error { _, err := reverse(TextIn{Text: "a\xffb"}); return err }},
		{"negative n", func() error { _, err := truncate(TruncateIn{Text: "abc", N: -1}); return err }},
		{"huge n", func() error { _, err := truncate(TruncateIn{Text: "abc", N: 1 << 40}); return err }},
		{"huge ellipsis", func() error { _, err := truncate(TruncateIn{Text: "abc", N: 1, Ellipsis: &huge}); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var se *sdk.Error
			if err := tt.call(); !errors.As(err, &se) || se.Code != sdk.CodeInvalidInput {
				t.Fatalf("error = %v, want an invalid_input *sdk.Error", err)
			}
		})
	}
}
