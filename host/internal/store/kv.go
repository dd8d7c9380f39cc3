package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillhost/skillhost/host/fault"
)

// The errors a Bucket returns for what a caller decides on; errors.Is
// matches them (the NATS error stays in the chain). Every other failure is
// a *fault.Error from Fault: storage_full, store_unavailable, internal.
var (
	// ErrNotFound: no record under the key (never written, deleted,
	// purged or expired).
	ErrNotFound = errors.New("store: no record under this key")
	// ErrExists: Create found a record under the key.
	ErrExists = errors.New("store: a record exists under this key")
	// ErrConflict: a write or delete at a revision found the record
	// changed since (it did not land).
	ErrConflict = errors.New("store: the record changed since it was read")
	// ErrUndecodable: the stored record is not a JSON T (Get returns the
	// entry's revision with it, so a caller may replace or delete it).
	ErrUndecodable = errors.New("store: undecodable record")
)

// defaultRetries bounds the attempts of one Bucket.Change.
const defaultRetries = 32

// BucketConfig configures OpenBucket. Every bucket keeps one revision per
// key (History 1) and is an ordinary NATS key-value bucket to other clients.
type BucketConfig struct {
	// Name is the bucket's name, part of the on-disk and on-cluster layout.
	// Required.
	Name string
	// Description says what the bucket holds. Optional.
	Description string
	// TTL removes a record this long after its last write. Optional.
	// Default: 0, records never expire.
	TTL time.Duration
	// MaxValueBytes caps one record; it is capped at the store's
	// MaxRecordBytes. Optional. Default: 0, MaxRecordBytes.
	MaxValueBytes int32
	// MaxBytes caps the bucket (applied to an existing bucket at open; a
	// full bucket refuses writes: storage_full). Optional. Default: 0,
	// unlimited.
	MaxBytes int64
	// Memory keeps the bucket in memory, not on disk (lost when its
	// servers restart). Optional. Default: false, on disk.
	Memory bool
	// Replicas is the bucket's replication factor. Optional. Default: 0,
	// the store's Replicas.
	Replicas int
	// What names a record in error messages ("a2a task": "update a2a
	// task: state storage is full"). Optional. Default: "record".
	What string
	// Retries bounds the attempts of one Change or Update. Optional.
	// Default: 32.
	Retries int
	// Backoff waits a little (growing, jittered) before each retry of a
	// Change: for records many hosts change at once. Optional. Default:
	// false, retry at once.
	Backoff bool
	// Contended is the error of a Change that lost Retries races for key.
	// Optional. Default: Internal (internal), "… changed concurrently too
	// often; retry".
	Contended func(key string) error
}

// Bucket is a key-value bucket of JSON records of type T. Every method maps
// its errors once: ErrNotFound, ErrExists, ErrConflict, ErrUndecodable, or
// a *fault.Error (Fault). It is safe for concurrent use.
type Bucket[T any] struct {
	kv      jetstream.KeyValue
	nc      *nats.Conn
	subject string // "$KV.<name>."
	cfg     BucketConfig
	encode  func(any) ([]byte, error)
}

// Entry is one record of a Bucket.
type Entry[T any] struct {
	Key      string
	Value    *T
	Revision uint64    // the stream sequence of the write; 0: none
	Created  time.Time // when that write landed
}

// Raw is one record of a Bucket as it is stored, for callers that count or
// cap records before they decode them.
type Raw struct {
	Key      string
	Data     []byte
	Revision uint64
	Created  time.Time
}

// OpenBucket binds the bucket cfg.Name (creating it when missing, raising
// its replicas and applying MaxBytes as KeyValue does) as a Bucket of T.
func OpenBucket[T any](ctx context.Context, s *Store, cfg BucketConfig) (*Bucket[T], error) {
	storage := jetstream.FileStorage
	if cfg.Memory {
		storage = jetstream.MemoryStorage
	}
	kv, err := s.KeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: cfg.Name, Description: cfg.Description, History: 1, TTL: cfg.TTL,
		MaxValueSize: cfg.MaxValueBytes, MaxBytes: cfg.MaxBytes, Storage: storage, Replicas: cfg.Replicas,
	})
	if err != nil {
		return nil, err
	}
	return newBucket[T](s, kv, cfg, json.Marshal), nil
}

func newBucket[T any](s *Store, kv jetstream.KeyValue, cfg BucketConfig, encode func(any) ([]byte, error)) *Bucket[T] {
	if cfg.What == "" {
		cfg.What = "record"
	}
	if cfg.Retries <= 0 {
		cfg.Retries = defaultRetries
	}
	return &Bucket[T]{kv: kv, nc: s.nc, subject: "$KV." + kv.Bucket() + ".", cfg: cfg, encode: encode}
}

// fail maps err of the operation op: a missing key, or (write at a
// revision) a conflict, or (create) an existing key to the sentinels,
// anything else through Fault.
func (b *Bucket[T]) fail(err error, op string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	case op == "create" && Conflict(err):
		return fmt.Errorf("%w: %w", ErrExists, err)
	case Conflict(err):
		return fmt.Errorf("%w: %w", ErrConflict, err)
	}
	return Fault(err, op+" "+b.cfg.What)
}

// Encode is the stored form of v (what Create and Put write).
func (b *Bucket[T]) Encode(v *T) ([]byte, error) {
	data, err := b.encode(v)
	if err != nil {
		return nil, fault.Wrap(fault.Internal, fault.ReasonInternal, err, "encode "+b.cfg.What+": "+err.Error())
	}
	return data, nil
}

// Decode decodes a stored record; ErrUndecodable when it is not a JSON T.
func (b *Bucket[T]) Decode(data []byte) (*T, error) {
	v := new(T)
	if err := json.Unmarshal(data, v); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrUndecodable, b.cfg.What, err)
	}
	return v, nil
}

// Get reads and decodes key's record. An undecodable record is
// ErrUndecodable, with the entry's Revision set.
func (b *Bucket[T]) Get(ctx context.Context, key string) (Entry[T], error) {
	raw, err := b.GetRaw(ctx, key)
	if err != nil {
		return Entry[T]{Key: key}, err
	}
	v, err := b.Decode(raw.Data)
	return Entry[T]{Key: key, Value: v, Revision: raw.Revision, Created: raw.Created}, err
}

// GetRaw reads key's record undecoded.
func (b *Bucket[T]) GetRaw(ctx context.Context, key string) (Raw, error) {
	e, err := b.kv.Get(ctx, key)
	if err != nil {
		return Raw{Key: key}, b.fail(err, "get")
	}
	return Raw{Key: key, Data: e.Value(), Revision: e.Revision(), Created: e.Created()}, nil
}

// Create stores v under key if the key holds no record (ErrExists
// otherwise) and returns its revision.
func (b *Bucket[T]) Create(ctx context.Context, key string, v *T) (uint64, error) {
	data, err := b.Encode(v)
	if err != nil {
		return 0, err
	}
	return b.CreateRaw(ctx, key, data)
}

// CreateRaw is Create of an encoded record (see Encode).
func (b *Bucket[T]) CreateRaw(ctx context.Context, key string, data []byte) (uint64, error) {
	rev, err := b.kv.Create(ctx, key, data)
	return rev, b.fail(err, "create")
}

// Put stores v under key, whatever it held, and returns its revision.
func (b *Bucket[T]) Put(ctx context.Context, key string, v *T) (uint64, error) {
	data, err := b.Encode(v)
	if err != nil {
		return 0, err
	}
	return b.PutRaw(ctx, key, data)
}

// PutRaw is Put of an encoded record (nil: an empty one, as index keys).
func (b *Bucket[T]) PutRaw(ctx context.Context, key string, data []byte) (uint64, error) {
	rev, err := b.kv.Put(ctx, key, data)
	return rev, b.fail(err, "put")
}

// Replace stores v under key if its record is still at revision rev
// (ErrConflict otherwise): one optimistic write, for a caller that may
// lose it (Change retries).
func (b *Bucket[T]) Replace(ctx context.Context, key string, v *T, rev uint64) (uint64, error) {
	data, err := b.Encode(v)
	if err != nil {
		return 0, err
	}
	return b.ReplaceRaw(ctx, key, data, rev)
}

// ReplaceRaw is Replace of an encoded record.
func (b *Bucket[T]) ReplaceRaw(ctx context.Context, key string, data []byte, rev uint64) (uint64, error) {
	next, err := b.kv.Update(ctx, key, data, rev)
	return next, b.fail(err, "update")
}

// Delete deletes key's record (leaving a delete marker watchers see) if it
// is still at revision rev (ErrConflict otherwise); rev 0 deletes whatever
// it holds.
func (b *Bucket[T]) Delete(ctx context.Context, key string, rev uint64) error {
	var opts []jetstream.KVDeleteOpt
	if rev != 0 {
		opts = append(opts, jetstream.LastRevision(rev))
	}
	return b.fail(b.kv.Delete(ctx, key, opts...), "delete")
}

// Purge removes key's record and its history; a key without one is not an
// error.
func (b *Bucket[T]) Purge(ctx context.Context, key string) error {
	err := b.fail(b.kv.Purge(ctx, key), "purge")
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// PutNoWait publishes v under key without waiting for the store's
// acknowledgement (in order with the connection's other publishes): a
// record whose loss costs nothing but visibility. A full bucket drops it
// silently.
func (b *Bucket[T]) PutNoWait(key string, v *T) error {
	data, err := b.Encode(v)
	if err != nil {
		return err
	}
	if err := b.nc.Publish(b.subject+key, data); err != nil {
		return Fault(err, "put "+b.cfg.What)
	}
	return nil
}

// PurgeNoWait purges key's record without waiting (a KV purge, ADR-8: the
// operation header and a subject rollup); a lost purge leaves the record
// to the bucket's TTL.
func (b *Bucket[T]) PurgeNoWait(key string) error {
	msg := nats.NewMsg(b.subject + key)
	msg.Header.Set("KV-Operation", "PURGE")
	msg.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	if err := b.nc.PublishMsg(msg); err != nil {
		return Fault(err, "purge "+b.cfg.What)
	}
	return nil
}

// Keys lists the bucket's keys matching filter (a NATS subject pattern of
// the key: "a.*", "a.>"; "" for every key), reading no values. Ending the
// loop early stops the listing; a failure, or ctx ending, is yielded last.
func (b *Bucket[T]) Keys(ctx context.Context, filter string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		var lister jetstream.KeyLister
		var err error
		if filter == "" {
			lister, err = b.kv.ListKeys(ctx)
		} else {
			lister, err = b.kv.ListKeysFiltered(ctx, filter)
		}
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return
		}
		if err != nil {
			yield("", Fault(err, "list "+b.cfg.What+" keys"))
			return
		}
		defer func() { _ = lister.Stop() }()
		for key := range lister.Keys() {
			if !yield(key, nil) {
				return
			}
		}
		if err := ctx.Err(); err != nil {
			yield("", err)
		}
	}
}

// contended is the error of a Change that lost every race for key.
func (b *Bucket[T]) contended(key string) error {
	if b.cfg.Contended != nil {
		return b.cfg.Contended(key)
	}
	return fault.Newf(fault.Internal, fault.ReasonInternal, "%s changed concurrently too often; retry", b.cfg.What)
}
