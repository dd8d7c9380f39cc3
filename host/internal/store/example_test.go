package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/store"
)

func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "skillhost-store")
	defer os.RemoveAll(dir)

	st, err := store.Open(ctx, store.Config{DataDir: dir}) // embedded NATS under dir/nats
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()

	sess, _ := st.CreateSession(ctx, store.Session{ID: "sess_demo", AgentID: "planner"})
	_, _ = st.SetContext(ctx, sess.ID, "user", json.RawMessage(`{"name": "Ada"}`), time.Hour)
	entry, _ := st.GetContext(ctx, sess.ID, "user")
	fmt.Println(sess.Status, string(entry.Value))

	_, _ = st.CloseSession(ctx, sess.ID)
	_, err = st.GetContext(ctx, sess.ID, "user")
	var fe *fault.Error
	if errors.As(err, &fe) {
		fmt.Println(fe.Kind.Code(), fe.Reason)
	}
	// Output:
	// active {"name":"Ada"}
	// -32100 session_closed
}
