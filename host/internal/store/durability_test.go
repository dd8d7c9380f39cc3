package store_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/internal/store"
)

// helperEnv selects the child-process mode of TestHelperProcess; its value
// is the data directory.
const helperEnv = "SKILLHOST_STORE_HELPER_DIR"

// TestHelperProcess is not a test: run as a child by TestDurableAfterKill,
// it writes sessions and context values to an embedded store as fast as it
// can and prints "ACK session <id>" / "ACK context <id> <key> <value>" after
// each acknowledged write, until it is killed.
func TestHelperProcess(t *testing.T) {
	dir := os.Getenv(helperEnv)
	if dir == "" {
		t.Skip("helper process for TestDurableAfterKill")
	}
	ctx := t.Context()
	st, err := store.Open(ctx, store.Config{DataDir: dir})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	stop := time.After(60 * time.Second) // never outlive a stuck parent
	for i := 0; ; i++ {
		select {
		case <-stop:
			os.Exit(3)
		default:
		}
		id := fmt.Sprintf("dur-%d", i)
		if _, err := st.CreateSession(ctx, store.Session{ID: id, AgentID: "durability"}); err != nil {
			fmt.Println("ERR", err)
			os.Exit(2)
		}
		fmt.Println("ACK session", id)
		value := fmt.Sprintf(`{"i":%d}`, i)
		if _, err := st.SetContext(ctx, id, "k", json.RawMessage(value), 0); err != nil {
			fmt.Println("ERR", err)
			os.Exit(2)
		}
		fmt.Println("ACK context", id, "k", value)
	}
}

func TestDurableAfterKill(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}

	// Read acknowledgements until enough, then kill -9 mid-stream.
	const want = 60
	sessions := map[string]bool{}
	values := map[string]string{}
	scanner := bufio.NewScanner(out)
	for acks := 0; acks < want && scanner.Scan(); {
		f := strings.Fields(scanner.Text())
		switch {
		case len(f) == 3 && f[0] == "ACK" && f[1] == "session":
			sessions[f[2]] = true
			acks++
		case len(f) == 5 && f[0] == "ACK" && f[1] == "context":
			values[f[2]+"/"+f[3]] = f[4]
			acks++
		case len(f) > 0 && f[0] == "ERR":
			t.Fatalf("child: %q", scanner.Text())
		}
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no shutdown, no flush
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if len(sessions) == 0 {
		t.Fatalf("child acknowledged nothing (scan error %v)", scanner.Err())
	}

	st := mustOpen(t, store.Config{DataDir: dir})
	ctx := testCtx(t)
	for id := range sessions {
		sess, err := st.ActiveSession(ctx, id)
		if err != nil || sess.AgentID != "durability" {
			t.Errorf("acknowledged session %s after kill -9: %+v, %v", id, sess, err)
		}
	}
	for ik, want := range values {
		id, key, _ := strings.Cut(ik, "/")
		got, err := st.GetContext(ctx, id, key)
		if err != nil || string(got.Value) != want {
			t.Errorf("acknowledged context %s after kill -9 = %s, %v; want %s", ik, got.Value, err, want)
		}
	}
	t.Logf("%d sessions and %d values acknowledged before kill -9, all recovered", len(sessions), len(values))
}
