package main

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/skillhost/skillhost/sdk"
)

func TestEcho(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{`{"message": "hello"}`, `{"message":"hello"}`},
		{`[1, 2, {"a": null}]`, `[1,2,{"a":null}]`},
		{`"just a string"`, `"just a string"`},
		{`12345678901234567890`, `12345678901234567890`},
		{``, `{}`},
		{"  \n", `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := echo([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestEchoRefusesNonJSON(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`{`, `{} {}`, `hello`} {
		_, err := echo([]byte(in))
		var se *sdk.Error
		if !errors.As(err, &se) || se.Code != sdk.CodeInvalidInput {
			t.Errorf("echo(%q) error = %v, want invalid_input", in, err)
		}
	}
}
