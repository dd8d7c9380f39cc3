package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrLogClosed is LogReader.Next's error once the reader is closed (by
// Close, or the connection closing).
var ErrLogClosed = errors.New("store: log reader closed")

// LogConfig configures OpenLog: a JetStream stream with limits retention
// that discards its oldest entries when full.
type LogConfig struct {
	// Name is the stream's name. Required.
	Name string
	// Description says what the log holds. Optional.
	Description string
	// Subjects are the subject patterns the log stores. Required.
	Subjects []string
	// MaxAge drops entries older than this. Optional. Default: 0, none.
	MaxAge time.Duration
	// MaxBytes caps the log; the oldest entries make room. Optional.
	// Default: 0, unlimited.
	MaxBytes int64
	// MaxEntryBytes caps one entry. Optional. Default: 0, the store's
	// MaxRecordBytes.
	MaxEntryBytes int32
	// MaxPerSubject keeps the newest entries of each subject. Optional.
	// Default: 0, unlimited.
	MaxPerSubject int64
	// Dedupe is the window in which an Append with an ID seen before is
	// dropped. Optional. Default: 0, the server's (2 minutes).
	Dedupe time.Duration
	// Replicas is the log's replication factor. Optional. Default: 0, the
	// store's Replicas.
	Replicas int
}

// Log is an append-only log of entries on subjects, read in order by any
// host from any point it still retains. It is safe for concurrent use.
type Log struct {
	s      *Store
	name   string
	stream jetstream.Stream
}

// OpenLog creates or updates the stream of cfg (through Stream: replicas
// raised, retried while JetStream is slow to answer).
func (s *Store) OpenLog(ctx context.Context, cfg LogConfig) (*Log, error) {
	if cfg.MaxEntryBytes == 0 {
		cfg.MaxEntryBytes = int32(s.MaxRecordBytes())
	}
	st, err := s.Stream(ctx, jetstream.StreamConfig{
		Name:              cfg.Name,
		Description:       cfg.Description,
		Subjects:          cfg.Subjects,
		Retention:         jetstream.LimitsPolicy,
		Storage:           jetstream.FileStorage,
		Replicas:          cfg.Replicas,
		MaxAge:            cfg.MaxAge,
		MaxBytes:          cfg.MaxBytes,
		MaxMsgSize:        cfg.MaxEntryBytes,
		MaxMsgsPerSubject: cfg.MaxPerSubject,
		Discard:           jetstream.DiscardOld,
		Duplicates:        cfg.Dedupe,
	})
	if err != nil {
		return nil, err
	}
	return &Log{s: s, name: cfg.Name, stream: st}, nil
}

// LogEntry is one entry of a Log.
type LogEntry struct {
	// Seq is the entry's sequence in the log (set by the log).
	Seq uint64
	// Subject is the subject the entry was appended on. Required.
	Subject string
	// ID is a dedupe id for Append: an entry with an ID appended within
	// the log's Dedupe window is dropped. Optional; not returned by reads.
	ID string
	// Header holds small named flags stored with the entry. Optional.
	Header map[string]string
	// Data is the entry's body.
	Data []byte
}

func (e LogEntry) msg() *nats.Msg {
	m := nats.NewMsg(e.Subject)
	m.Data = e.Data
	for k, v := range e.Header {
		m.Header.Set(k, v)
	}
	if e.ID != "" {
		m.Header.Set(jetstream.MsgIDHeader, e.ID)
	}
	return m
}

// Append stores e once the log acknowledges it and returns its sequence;
// duplicate reports an ID seen within the dedupe window (not stored again).
func (l *Log) Append(ctx context.Context, e LogEntry) (seq uint64, duplicate bool, err error) {
	ack, err := l.s.js.PublishMsg(ctx, e.msg())
	if err != nil {
		return 0, false, Fault(err, "append to "+l.name)
	}
	return ack.Sequence, ack.Duplicate, nil
}

// AppendNoWait sends e without waiting for the log (in order with the
// connection's other publishes): an entry whose loss costs little.
func (l *Log) AppendNoWait(e LogEntry) error {
	if err := l.s.nc.PublishMsg(e.msg()); err != nil {
		return Fault(err, "append to "+l.name)
	}
	return nil
}

// LastSeq is the sequence of the latest entry on subject (0: none).
func (l *Log) LastSeq(ctx context.Context, subject string) (uint64, error) {
	m, err := l.stream.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, Fault(err, "read "+l.name)
	}
	return m.Sequence, nil
}

// ReadOptions select what a LogReader reads.
type ReadOptions struct {
	// Subjects are the subject patterns read. Required.
	Subjects []string
	// After starts after this sequence. Optional. Default: 0, see New.
	After uint64
	// New (with After 0) starts with the next entry appended; otherwise
	// the reader starts with the oldest entry retained.
	New bool
	// Idle lets the server drop a reader not read for this long (it then
	// resumes where it was on the next read). Optional. Default: the
	// server's.
	Idle time.Duration
	// BufferBytes caps what the reader fetches ahead of Next. Optional.
	// Default: the client's.
	BufferBytes int
}

// LogReader reads a Log in order (an ordered consumer: a gap or a lost
// server makes it resume at the next sequence it has not returned). It is
// not safe for concurrent use; Close it when done.
type LogReader struct {
	l    *Log
	it   jetstream.MessagesContext
	once sync.Once
}

// Read opens a reader of the entries o selects.
func (l *Log) Read(ctx context.Context, o ReadOptions) (*LogReader, error) {
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: o.Subjects, InactiveThreshold: o.Idle}
	switch {
	case o.After > 0:
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, o.After+1
	case o.New:
		cfg.DeliverPolicy = jetstream.DeliverNewPolicy
	}
	cons, err := l.stream.OrderedConsumer(ctx, cfg)
	if err != nil {
		return nil, Fault(err, "read "+l.name)
	}
	var opts []jetstream.PullMessagesOpt
	if o.BufferBytes > 0 {
		opts = append(opts, jetstream.PullMaxBytes(o.BufferBytes))
	}
	it, err := cons.Messages(opts...)
	if err != nil {
		return nil, Fault(err, "read "+l.name)
	}
	return &LogReader{l: l, it: it}, nil
}

// Next waits for the next entry (ID unset). It returns ctx's error when ctx
// ends first (the reader stays usable) and ErrLogClosed once closed.
func (r *LogReader) Next(ctx context.Context) (LogEntry, error) {
	for {
		m, err := r.it.Next(jetstream.NextContext(ctx))
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return LogEntry{}, ctx.Err()
			case errors.Is(err, jetstream.ErrMsgIteratorClosed):
				return LogEntry{}, fmt.Errorf("%w: %w", ErrLogClosed, err)
			}
			return LogEntry{}, Fault(err, "read "+r.l.name)
		}
		meta, err := m.Metadata()
		if err != nil {
			continue // not a stream message
		}
		e := LogEntry{Seq: meta.Sequence.Stream, Subject: m.Subject(), Data: m.Data()}
		if h := m.Headers(); len(h) > 0 {
			e.Header = make(map[string]string, len(h))
			for k := range h {
				e.Header[k] = h.Get(k)
			}
		}
		return e, nil
	}
}

// Close stops reading; later calls do nothing.
func (r *LogReader) Close() error {
	r.once.Do(r.it.Stop)
	return nil
}

// Signal sends a payload-free message on subject to whoever listens now
// (core NATS: nothing is stored, nobody listening is not an error).
func (s *Store) Signal(subject string) error {
	if err := s.nc.Publish(subject, nil); err != nil {
		return Fault(err, "signal "+subject)
	}
	return nil
}

// Listen calls fn with the subject of every Signal matching subject (a
// NATS pattern) until the returned stop is called. fn runs on the
// connection's goroutine: it must not block.
func (s *Store) Listen(subject string, fn func(subject string)) (stop func(), err error) {
	sub, err := s.nc.Subscribe(subject, func(m *nats.Msg) { fn(m.Subject) })
	if err != nil {
		return nil, Fault(err, "listen on "+subject)
	}
	return func() { _ = sub.Unsubscribe() }, nil
}
