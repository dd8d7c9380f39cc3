package jsonrpc

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSpecExamples replays the examples of section 7 of the JSON-RPC 2.0
// specification (testdata/spec/*.golden: request, "---", expected response).
func TestSpecExamples(t *testing.T) {
	t.Parallel()
	for _, g := range mustReadGoldens(t) {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			reply := specEngine(t, nil).Handle(t.Context(), g.request)
			if reply.Streaming() {
				t.Fatal("unexpected stream")
			}
			if len(g.response) == 0 {
				if reply.Body != nil {
					t.Fatalf("want no response, got %s", reply.Body)
				}
				return
			}
			if reply.Body == nil {
				t.Fatal("want a response, got none")
			}
			want := mustNormalize(t, g.response)
			got := mustNormalize(t, reply.Body)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("response mismatch (-want +got):\n%s\ngot: %s", diff, reply.Body)
			}
		})
	}
}
