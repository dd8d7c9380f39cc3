package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/skillhost/skillhost/sdk"
)

func mustInput(t *testing.T, s string) ProcessIn {
	t.Helper()
	var in ProcessIn
	if err := json.Unmarshal([]byte(s), &in); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return in
}

func TestProcess(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want map[string]float64
	}{
		{`{"data":[1,2,3,4,5],"operation":"sum"}`, map[string]float64{"sum": 15, "count": 5, "average": 3}},
		{`{"data":[1,2,3,4],"operation":"average"}`, map[string]float64{"sum": 10, "count": 4, "average": 2.5}},
		{`{"data":[3,1,2],"operation":"count"}`, map[string]float64{"count": 3}},
		{`{"data":[3,-1,2],"operation":"min"}`, map[string]float64{"count": 3, "min": -1}},
		{`{"data":[3,-1,2.5],"operation":"MAX"}`, map[string]float64{"count": 3, "max": 3}},
		{`{"data":[5,1,3],"operation":"median"}`, map[string]float64{"count": 3, "median": 3}},
		{`{"data":[4,1,3,2],"operation":"median"}`, map[string]float64{"count": 4, "median": 2.5}},
		{`{"data":[2,4,4,4,5,5,7,9],"operation":"stddev"}`, map[string]float64{"count": 8, "stddev": 2}},
		{`{"data":[1,2,3,4],"operation":"all"}`, map[string]float64{
			"sum": 10, "count": 4, "average": 2.5, "min": 1, "max": 4, "median": 2.5, "stddev": 1.118033988749895,
		}},
		{`{"data":[7]}`, map[string]float64{
			"sum": 7, "count": 1, "average": 7, "min": 7, "max": 7, "median": 7, "stddev": 0,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := process(mustInput(t, tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestProcessRefusesBadInput(t *testing.T) {
	t.Parallel()
	many := "[" + strings.TrimSuffix(strings.Repeat("1,", maxItems+1), ",") + "]"
	tests := []struct {
		name, in, wantMsg string
	}{
		{"empty", `{"data":[],"operation":"sum"}`, "data is empty"},
		{"missing", `{"operation":"sum"}`, "data is empty"},
		{"unknown op", `{"data":[1],"operation":"mode"}`, `unknown operation "mode"`},
		{"too many", fmt.Sprintf(`{"data":%s,"operation":"sum"}`, many), "the limit is 100000"},
		{"overflow element", `{"data":[1e999],"operation":"sum"}`, "data[0] = 1e999 is not a finite number"},
		{"overflow sum", `{"data":[1.7e308,1.7e308],"operation":"sum"}`, "overflows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := process(mustInput(t, tt.in))
			var se *sdk.Error
			if !errors.As(err, &se) || se.Code != sdk.CodeInvalidInput || !strings.Contains(se.Message, tt.wantMsg) {
				t.Fatalf("error = %v, want invalid_input containing %q", err, tt.wantMsg)
			}
		})
	}
}

// TestProcessRejectsNaNText: JSON has no NaN literal; a string "NaN" in the
// list must not decode into a number.
func TestProcessRejectsNaNText(t *testing.T) {
	t.Parallel()
	var in ProcessIn
	if err := json.Unmarshal([]byte(`{"data":["NaN"],"operation":"sum"}`), &in); err == nil {
		if _, err := process(in); err == nil {
			t.Fatal(`"NaN" accepted as data`)
		}
	}
}
