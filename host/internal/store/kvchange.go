package store

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// What a Change's Apply returns instead of an error to end the change
// another way than by writing.
var (
	// ErrUnchanged ends the change without a write; Change returns the record
	// as read (and Apply left it) and nil.
	ErrUnchanged = errors.New("store: unchanged")
	// ErrRemove deletes the record, if it is still the one read (else the
	// change is tried again); Change returns an entry without a value.
	ErrRemove = errors.New("store: remove")
)

// Change is one read-modify-write of a record (see Bucket.Change).
type Change[T any] struct {
	// Apply changes the record read (or, with Upsert, a new zero T); its
	// error aborts the change (ErrUnchanged and ErrRemove aside). It runs once
	// per attempt, on a fresh read. Required.
	Apply func(v *T) error
	// Upsert starts from a new zero T when the key holds no record; the
	// result is created. Without it such a key is ErrNotFound.
	Upsert bool
	// ReplaceUndecodable (with Upsert) starts from a new zero T, too, when
	// the record does not decode, and replaces it. Without it such a record
	// is ErrUndecodable.
	ReplaceUndecodable bool
	// Write encodes the record an attempt is about to write, for a caller
	// that caps, accounts or indexes each write; done (optional) is told
	// the write's outcome: nil (stored), an ErrConflict or ErrExists (the
	// attempt lost a race and is retried), or another error. Its error
	// aborts the change. Optional. Default: the bucket's encoding.
	Write func(ctx context.Context, v *T) (data []byte, done func(err error), err error)
	// From is the record as the caller last wrote it (the entry a Change
	// returned): the first attempt applies to it, in place, instead of
	// reading the record again; a conflict (the record changed since) reads
	// it as usual. Optional. Default: nil, the first attempt reads.
	From *Entry[T]
}

// Update applies fn to key's record and stores the result only if nobody
// changed the record meanwhile, re-reading and re-applying fn on a conflict
// (Change with only Apply). It returns the record stored, or, when fn
// fails, the record fn saw with fn's error.
func (b *Bucket[T]) Update(ctx context.Context, key string, fn func(v *T) error) (*T, error) {
	e, err := b.Change(ctx, key, Change[T]{Apply: fn})
	return e.Value, err
}

// Change is the bounded compare-and-swap loop every read-modify-write of a
// record goes through: read, Apply, write at the revision read; on a
// conflict read again, at most BucketConfig.Retries times (then the
// bucket's Contended error). It returns the entry written (its new
// revision), the entry read when Apply returns ErrUnchanged, an entry without
// value after an ErrRemove, and on an error of Apply or Write the entry Apply
// saw with that error.
func (b *Bucket[T]) Change(ctx context.Context, key string, c Change[T]) (Entry[T], error) {
	for attempt := range b.cfg.Retries {
		if attempt > 0 && b.cfg.Backoff {
			// Another host changed it: back off a little (growing, jittered).
			select {
			case <-ctx.Done():
				return Entry[T]{Key: key}, ctx.Err()
			case <-time.After(time.Duration(rand.Int64N(int64(attempt) * int64(time.Millisecond)))):
			}
		}
		var e Entry[T]
		var err error
		if attempt == 0 && c.From != nil && c.From.Value != nil && c.From.Revision != 0 {
			e = *c.From
		} else {
			e, err = b.Get(ctx, key)
		}
		switch {
		case err == nil:
		case c.Upsert && errors.Is(err, ErrNotFound),
			c.Upsert && c.ReplaceUndecodable && errors.Is(err, ErrUndecodable):
			e.Value = new(T)
		default:
			return e, err
		}
		switch err := c.Apply(e.Value); {
		case errors.Is(err, ErrUnchanged):
			return e, nil
		case errors.Is(err, ErrRemove):
			if e.Revision == 0 {
				return Entry[T]{Key: key}, nil
			}
			err = b.Delete(ctx, key, e.Revision)
			if errors.Is(err, ErrConflict) {
				continue
			}
			return Entry[T]{Key: key, Revision: e.Revision}, err
		case err != nil:
			return e, err
		}
		var data []byte
		var done func(error)
		if c.Write != nil {
			data, done, err = c.Write(ctx, e.Value)
		} else {
			data, err = b.Encode(e.Value)
		}
		if err != nil {
			return e, err
		}
		var rev uint64
		if e.Revision == 0 {
			rev, err = b.CreateRaw(ctx, key, data)
		} else {
			rev, err = b.ReplaceRaw(ctx, key, data, e.Revision)
		}
		if done != nil {
			done(err)
		}
		if errors.Is(err, ErrConflict) || errors.Is(err, ErrExists) {
			continue // changed meanwhile: re-read, re-apply
		}
		if err != nil {
			return e, err
		}
		e.Revision, e.Created = rev, time.Now()
		return e, nil
	}
	return Entry[T]{Key: key}, b.contended(key)
}

// KeyEvent is one change a KeyWatch reports: a write of Key at Revision,
// or (Deleted) its delete or purge.
type KeyEvent struct {
	Key      string
	Revision uint64
	Created  time.Time
	Deleted  bool
}

// KeyWatch follows a bucket's keys (values are not read). Stop it when
// done.
type KeyWatch struct {
	w    jetstream.KeyWatcher
	out  chan *KeyEvent
	stop chan struct{}
	once sync.Once
}

// WatchKeys reports every key's latest write, then a nil event (the
// current keys are in), then every write and delete as it happens. The
// channel closes when the watch ends (ctx, Stop, or the connection).
func (b *Bucket[T]) WatchKeys(ctx context.Context) (*KeyWatch, error) {
	w, err := b.kv.WatchAll(ctx, jetstream.MetaOnly())
	if err != nil {
		return nil, Fault(err, "watch "+b.cfg.What+" keys")
	}
	kw := &KeyWatch{w: w, out: make(chan *KeyEvent), stop: make(chan struct{})}
	go kw.pump()
	return kw, nil
}

func (kw *KeyWatch) pump() {
	defer close(kw.out)
	for {
		var ev *KeyEvent
		select {
		case <-kw.stop:
			return
		case e, ok := <-kw.w.Updates():
			if !ok {
				return
			}
			if e != nil {
				ev = &KeyEvent{Key: e.Key(), Revision: e.Revision(), Created: e.Created(),
					Deleted: e.Operation() != jetstream.KeyValuePut}
			}
		}
		select {
		case <-kw.stop:
			return
		case kw.out <- ev:
		}
	}
}

// Updates delivers the watch's events (nil: the current keys are in).
func (kw *KeyWatch) Updates() <-chan *KeyEvent { return kw.out }

// Stop ends the watch; later calls do nothing.
func (kw *KeyWatch) Stop() {
	kw.once.Do(func() {
		close(kw.stop)
		_ = kw.w.Stop()
	})
}
