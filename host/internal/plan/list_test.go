package plan

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

func TestPlanInput(t *testing.T) {
	t.Parallel()
	e := mustEnv(t, "", Config{})
	sess := mustSession(t, e)
	mustCreate(t, e, sess, "in", definition(step("greet", "echo", `{"hello":"${plan.input.user.name}","n":"${plan.input.n}","all":"${plan.input}"}`)))
	ctx := localCtx()
	_, err := e.m.Execute(ctx, sess, "in", ExecuteOptions{})
	testutil.MustFault(t, err, fault.InvalidParams, fault.ReasonInvalidReference)
	_, err = e.m.Execute(ctx, sess, "in", ExecuteOptions{Input: json.RawMessage(`{"user":{}}`)})
	testutil.MustFault(t, err, fault.InvalidParams, fault.ReasonInvalidReference)
	mustExecute(t, e, sess, "in", ExecuteOptions{Input: json.RawMessage(`{"user":{"name":"ada"},"n":7}`)})
	st := waitFor(t, e, sess, "in", "completion", finished)
	want := `{"all":{"n":7,"user":{"name":"ada"}},"hello":"ada","n":7}`
	if st.Status != StatusCompleted || string(st.Result) != want {
		t.Errorf("status %s result %s, want %s", st.Status, st.Result, want)
	}
}

func TestPlanList(t *testing.T) {
	t.Parallel()
	e := mustEnv(t, "", Config{})
	ctx := localCtx()
	sess, other := mustSession(t, e), mustSession(t, e)
	for _, id := range []string{"p3", "p1", "p2"} {
		mustCreate(t, e, sess, id, definition(step("s", "echo", `{}`)))
	}
	mustCreate(t, e, other, "theirs", definition(step("s", "echo", `{}`)))
	mustExecute(t, e, sess, "p2", ExecuteOptions{})
	waitFor(t, e, sess, "p2", "completion", finished)

	ids := func(r *ListResult) []string {
		out := []string{}
		for _, p := range r.Plans {
			out = append(out, p.PlanID+":"+p.Status)
		}
		return out
	}
	page, err := e.m.List(ctx, ListRequest{SessionID: sess, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"p1:created", "p2:completed"}, ids(page)); diff != "" || page.NextCursor == nil {
		t.Fatalf("first page (-want +got):\n%s\ncursor %v", diff, page.NextCursor)
	}
	page, err = e.m.List(ctx, ListRequest{SessionID: sess, Limit: 2, Cursor: *page.NextCursor})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"p3:created"}, ids(page)); diff != "" || page.NextCursor != nil {
		t.Errorf("second page (-want +got):\n%s\ncursor %v", diff, page.NextCursor)
	}
	page, err = e.m.List(ctx, ListRequest{SessionID: sess, Status: StatusCompleted})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"p2:completed"}, ids(page)); diff != "" || page.Plans[0].CompletedSteps != 1 {
		t.Errorf("completed plans (-want +got):\n%s", diff)
	}
	empty := mustSession(t, e)
	if page, err = e.m.List(ctx, ListRequest{SessionID: empty}); err != nil || len(page.Plans) != 0 {
		t.Errorf("a session without plans: %+v, %v", page, err)
	}
	_, err = e.m.List(ctx, ListRequest{SessionID: sess, Limit: MaxListLimit + 1})
	testutil.MustFault(t, err, fault.InvalidParams, fault.ReasonInvalidParams)
	_, err = e.m.List(ctx, ListRequest{SessionID: sess, Status: "running"})
	testutil.MustFault(t, err, fault.InvalidParams, fault.ReasonInvalidParams)
	_, err = e.m.List(ctx, ListRequest{SessionID: "sess_nope"})
	testutil.MustFault(t, err, fault.SessionNotFound, fault.ReasonSessionNotFound)
}

// TestPlanListCountsRecordBytes: plan/list counts each record's stored size
// before decoding it, and ends the page early (with a cursor) once the
// records it read reach its byte cap; a page holds at least one plan, and
// paging on returns every plan once.
func TestPlanListCountsRecordBytes(t *testing.T) {
	t.Parallel()
	e := mustEnv(t, "", Config{})
	sess := mustSession(t, e)
	pad := `{"pad":"` + strings.Repeat("x", 8<<10) + `"}`
	for _, id := range []string{"a", "b", "c"} {
		mustCreate(t, e, sess, id, definition(step("s", "echo", pad)))
	}
	e.m.listBytes = 12 << 10 // one record and a half
	var pages [][]string
	cursor := ""
	for range 5 {
		page, err := e.m.List(localCtx(), ListRequest{SessionID: sess, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, p := range page.Plans {
			ids = append(ids, p.PlanID)
		}
		pages = append(pages, ids)
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	if diff := cmp.Diff([][]string{{"a"}, {"b"}, {"c"}}, pages); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}
}
