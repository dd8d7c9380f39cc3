package sdk

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type upIn struct {
	Text string `json:"text"`
}

type upOut struct {
	Text string `json:"text"`
}

func upper(_ *Context, in upIn) (upOut, error) {
	if in.Text == "" {
		return upOut{}, InvalidInput("text is empty").WithData(map[string]int{"min": 1})
	}
	return upOut{Text: strings.ToUpper(in.Text)}, nil
}

func TestHandle(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		input   string
		fn      func(*Context, upIn) (upOut, error)
		wantRC  int32
		wantOut string
		wantErr string
	}{
		{"ok, unknown fields ignored", `{"text":"hi","extra":1}`, upper, 0, `{"text":"HI"}`, ""},
		{"structured error with data", `{"text":""}`, upper, 1, "", `{"code":"invalid_input","message":"text is empty","data":{"min":1}}`},
		{"empty input is the zero value", ``, upper, 1, "", `{"code":"invalid_input","message":"text is empty","data":{"min":1}}`},
		{"ill-typed input", `{"text":5}`, upper, 1, "", `{"code":"invalid_input","message":"input does not decode: json: cannot unmarshal number into Go struct field upIn.text of type string"}`},
		{"plain error", `{}`, func(*Context, upIn) (upOut, error) { return upOut{}, errors.New("disk on fire") }, 1, "",
			`{"code":"internal","message":"disk on fire"}`},
		{"wrapped *Error keeps its code", `{}`, func(*Context, upIn) (upOut, error) {
			return upOut{}, errors.Join(errors.New("ctx"), Errorf("quota", "over by %d", 3))
		}, 1, "", `{"code":"quota","message":"over by 3"}`},
		{"typed nil *Error is success", `{"text":"a"}`, func(*Context, upIn) (upOut, error) {
			var e *Error
			return upOut{Text: "ok"}, e
		}, 0, `{"text":"ok"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := &recorder{in: []byte(tt.input)}
			rc := handle(r, tt.fn)
			got := []any{rc, string(r.out), string(r.errJSON)}
			want := []any{tt.wantRC, tt.wantOut, tt.wantErr}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("handle (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHandleOutputThatDoesNotEncode(t *testing.T) {
	t.Parallel()
	r := &recorder{in: []byte(`{}`)}
	rc := handle(r, func(*Context, struct{}) (float64, error) { return math.NaN(), nil })
	if rc != 1 || !strings.Contains(string(r.errJSON), `"code":"encode_output"`) {
		t.Errorf("rc %d, error %s; want encode_output", rc, r.errJSON)
	}
}

func TestHandlePanicIsNotRecovered(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("the panic was swallowed; it must reach the host as a trap")
		}
	}()
	handle(&recorder{}, func(*Context, struct{}) (struct{}, error) { panic("boom") })
}

func TestHandleRaw(t *testing.T) {
	t.Parallel()
	r := &recorder{in: []byte("abc"), cfg: map[string]string{"suffix": "!"}}
	rc := handleRaw(r, func(ctx *Context, in []byte) ([]byte, error) {
		s, _ := ctx.Config("suffix")
		return append(in, s...), nil
	})
	if rc != 0 || string(r.out) != "abc!" {
		t.Errorf("rc %d, out %q", rc, r.out)
	}
}

func TestEncodeErrorCaps(t *testing.T) {
	t.Parallel()
	huge := &Error{Code: "big", Message: strings.Repeat("m", maxErrorBytes), Data: strings.Repeat("d", maxErrorBytes)}
	if n := len(encodeError(huge)); n > maxErrorBytes {
		t.Errorf("encoded error is %d bytes, cap %d", n, maxErrorBytes)
	}
	bad := &Error{Code: "c", Message: "m", Data: make(chan int)}
	if got := string(encodeError(bad)); got != `{"code":"c","message":"m"}` {
		t.Errorf("unencodable data: got %s", got)
	}
}
