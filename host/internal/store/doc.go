// Package store is skillhost's state: sessions, per-session context values
// with TTL, and key-value buckets for the packages that persist tasks and
// plans — all in NATS JetStream.
//
// Two modes, one code path. With Config.URL empty, Open starts a NATS server
// inside the process (no network listener, JetStream on disk under
// Config.DataDir/nats, every write fsynced before it is acknowledged) and
// connects to it in-process. With Config.URL set, Open connects to an
// ordinary NATS cluster. Everything after the connection is written against
// the nats.go jetstream API and behaves the same in both modes.
//
//	st, err := store.Open(ctx, store.Config{DataDir: "/var/lib/skillhost"})
//	if err != nil {
//		return err
//	}
//	defer st.Close()
//	sess, err := st.CreateSession(ctx, store.Session{AgentID: "planner"})
//	_, err = st.SetContext(ctx, sess.ID, "user", json.RawMessage(`{"name":"Ada"}`), time.Hour)
//
// Each session's context is capped (Config.MaxKeysPerSession,
// Config.MaxSessionBytes) so one session cannot fill the shared bucket; the
// usage is kept in a per-session ledger next to the values and updated with
// revision-checked writes (see quota.go). Closed-session records are small
// (no initial context) and expire after Config.ClosedSessionRetention.
//
// Every Open is one boot of a host with an id of its own (Boot); a boot
// answers on BootSubject(id) while its connection is up, so any host can ask
// whether the boot that started a job still lives (Alive, Dead). Runs is the
// crash accounting a job keeps in its own record with it: a start whose boot
// died before it ended is a crash, and a job with too many is quarantined
// rather than run again (boot.go; plan steps use it, tasks and deliveries
// can).
//
// A Usage (OpenUsage) counts, per owner, the records another package keeps
// in a bucket (tasks, plans) and admits new work only within the owner's
// quota (key_quota) and while the bucket keeps a reserve free
// (storage_full); see usage.go. Fault classifies NATS errors for every
// package: a full bucket is storage_full wherever it is met.
//
// The other packages reach JetStream only through the typed API here (an
// architecture test checks that no other package imports nats.go): Bucket[T]
// for key-value records (Get, Create, Update and Change: the one
// compare-and-swap loop), Log for append-only event streams, Queue for work
// queues of jobs, Objects for the object store, Signal and Listen for core
// NATS messages. Each maps its errors once: ErrNotFound, ErrExists,
// ErrConflict and ErrUndecodable for what callers decide on, a *fault.Error
// (Fault) for the rest.
//
// Every caller-visible failure is a *fault.Error carrying the session id in
// its data. A *Store is safe for concurrent use.
package store
