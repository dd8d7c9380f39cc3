package store_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/internal/store"
)

// A log keeps entries in order with their headers, drops an ID appended
// twice, and is read from the oldest entry, after a sequence, or from the
// next new entry.
func TestLogAppendAndRead(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{})
	ctx := testCtx(t)
	lg, err := st.OpenLog(ctx, store.LogConfig{Name: "T_LOG", Subjects: []string{"t.log.*"}, Dedupe: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if seq, err := lg.LastSeq(ctx, "t.log.a"); err != nil || seq != 0 {
		t.Fatalf("LastSeq of an empty subject: %d, %v", seq, err)
	}
	s1, dup, err := lg.Append(ctx, store.LogEntry{Subject: "t.log.a", ID: "one", Data: []byte("1"), Header: map[string]string{"X-Flag": "1"}})
	if err != nil || dup {
		t.Fatalf("Append: %v, duplicate %v", err, dup)
	}
	if _, dup, err := lg.Append(ctx, store.LogEntry{Subject: "t.log.a", ID: "one", Data: []byte("again")}); err != nil || !dup {
		t.Errorf("Append of a seen ID: %v, duplicate %v", err, dup)
	}
	if err := lg.AppendNoWait(store.LogEntry{Subject: "t.log.b", Data: []byte("2")}); err != nil {
		t.Fatal(err)
	}
	s3, _, err := lg.Append(ctx, store.LogEntry{Subject: "t.log.a", Data: []byte("3")})
	if err != nil {
		t.Fatal(err)
	}
	if seq, err := lg.LastSeq(ctx, "t.log.a"); err != nil || seq != s3 {
		t.Errorf("LastSeq = %d, %v; want %d", seq, err, s3)
	}

	read := func(o store.ReadOptions, n int) []string {
		t.Helper()
		r, err := lg.Read(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var got []string
		for range n {
			e, err := r.Next(ctx)
			if err != nil {
				t.Fatalf("Next: %v", err)
			}
			got = append(got, e.Subject+"="+string(e.Data)+"/"+e.Header["X-Flag"])
		}
		return got
	}
	all := read(store.ReadOptions{Subjects: []string{"t.log.*"}}, 3)
	if diff := cmp.Diff([]string{"t.log.a=1/1", "t.log.b=2/", "t.log.a=3/"}, all); diff != "" {
		t.Errorf("read from the start (-want +got):\n%s", diff)
	}
	after := read(store.ReadOptions{Subjects: []string{"t.log.a"}, After: s1}, 1)
	if diff := cmp.Diff([]string{"t.log.a=3/"}, after); diff != "" {
		t.Errorf("read after %d (-want +got):\n%s", s1, diff)
	}

	// New: only what is appended once the reader is open.
	r, err := lg.Read(ctx, store.ReadOptions{Subjects: []string{"t.log.*"}, New: true})
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = r.Next(short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next with nothing new: %v, want the context's deadline", err)
	}
	if _, _, err := lg.Append(ctx, store.LogEntry{Subject: "t.log.b", Data: []byte("4")}); err != nil {
		t.Fatal(err)
	}
	e, err := r.Next(ctx) // still usable after a Next that ran out of time
	if err != nil || !bytes.Equal(e.Data, []byte("4")) {
		t.Fatalf("Next after the append: %q, %v", e.Data, err)
	}
	_ = r.Close()
	if _, err := r.Next(ctx); !errors.Is(err, store.ErrLogClosed) {
		t.Errorf("Next after Close: %v, want ErrLogClosed", err)
	}
}

// Jobs wait until one consumer takes them; a handed-back job comes again
// with its delivery counted; an ID published twice is one job; an acked
// job is gone.
func TestQueueJobs(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{})
	ctx := testCtx(t)
	q, err := st.OpenQueue(ctx, store.QueueConfig{Stream: "T_QUEUE", Subjects: "t.queue.*", Consumer: "t_queue", AckWait: time.Minute, Dedupe: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	next := func(wait time.Duration) (*store.Job, error) {
		ctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		return q.Next(ctx)
	}
	if _, err := next(200 * time.Millisecond); !errors.Is(err, store.ErrNoJob) {
		t.Fatalf("Next of an empty queue: %v, want ErrNoJob", err)
	}
	for range 2 {
		if err := q.Publish(ctx, "t.queue.x", []byte("job"), "x:1"); err != nil {
			t.Fatal(err)
		}
	}
	j, err := next(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	m1, err := j.Meta()
	if err != nil || m1.Delivered != 1 || string(j.Data()) != "job" || j.Subject() != "t.queue.x" {
		t.Fatalf("first delivery: %+v %q %q, %v", m1, j.Data(), j.Subject(), err)
	}
	if err := j.Nak(); err != nil {
		t.Fatal(err)
	}
	j, err = next(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	m2, _ := j.Meta()
	if m2.Seq != m1.Seq || m2.Delivered != 2 {
		t.Errorf("redelivery: %+v, want seq %d delivered 2", m2, m1.Seq)
	}
	if err := j.InProgress(); err != nil {
		t.Fatal(err)
	}
	if err := j.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if j, err := next(300 * time.Millisecond); !errors.Is(err, store.ErrNoJob) {
		t.Errorf("after the ack: %v, %v; want ErrNoJob (the duplicate was dropped)", j, err)
	}
}

// The object store: put, list, read, describe, delete, and a watch that
// replays, marks the end of the replay and follows.
func TestObjects(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{})
	ctx := testCtx(t)
	o, err := st.OpenObjects(ctx, store.ObjectsConfig{Name: "t_objects"})
	if err != nil {
		t.Fatal(err)
	}
	if infos, err := o.List(ctx); err != nil || len(infos) != 0 {
		t.Fatalf("List of an empty store: %v, %v", infos, err)
	}
	if _, err := o.Info(ctx, "a"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Info of a missing object: %v, want ErrNotFound", err)
	}
	if err := o.Put(ctx, "a", "first", bytes.NewReader([]byte("hello"))); err != nil {
		t.Fatal(err)
	}
	r, err := o.Get(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(r)
	_ = r.Close()
	if err != nil || string(data) != "hello" {
		t.Fatalf("Get: %q, %v", data, err)
	}
	w, err := o.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	next := func() *store.ObjectInfo {
		t.Helper()
		select {
		case i, ok := <-w.Updates():
			if !ok {
				t.Fatal("watch ended")
			}
			return i
		case <-ctx.Done():
			t.Fatal("no watch event")
		}
		return nil
	}
	if i := next(); i == nil || i.Name != "a" || i.Size != 5 || i.Digest == "" {
		t.Fatalf("replayed %+v, want a", i)
	}
	if i := next(); i != nil {
		t.Fatalf("%+v, want the end-of-replay marker", i)
	}
	if err := o.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if i := next(); i == nil || i.Name != "a" || !i.Deleted {
		t.Fatalf("%+v, want a's deletion", i)
	}
	if _, err := o.Info(ctx, "a"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Info after Delete: %v, want ErrNotFound", err)
	}
}

// A signal reaches the listeners of its pattern until they stop.
func TestSignalListen(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{})
	got := make(chan string, 4)
	stop, err := st.Listen("t.sig.*", func(subject string) { got <- subject })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if err := st.Signal("t.sig.one"); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s != "t.sig.one" {
			t.Errorf("signal on %q, want t.sig.one", s)
		}
	case <-testCtx(t).Done():
		t.Fatal("no signal")
	}
}
