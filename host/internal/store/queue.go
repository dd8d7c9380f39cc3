package store

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrNoJob is Queue.Next's error when no job arrived in time.
var ErrNoJob = errors.New("store: no job waiting")

// QueueConfig configures OpenQueue: a work-queue stream (a job is stored
// until one consumer acknowledges it) and the durable consumer every host
// shares.
type QueueConfig struct {
	// Stream is the stream's name. Required.
	Stream string
	// Description says what the jobs are. Optional.
	Description string
	// Subjects is the subject pattern of the jobs ("a.b.*"), the stream's
	// subjects and the consumer's filter. Required.
	Subjects string
	// Consumer is the durable consumer's name. Required.
	Consumer string
	// ConsumerDescription says who runs the jobs. Optional.
	ConsumerDescription string
	// AckWait redelivers a job not acknowledged (nor marked in progress)
	// for this long. Required.
	AckWait time.Duration
	// MaxDeliver bounds the deliveries of one job (-1: unbounded). Optional.
	// Default: 0, the server's (unbounded).
	MaxDeliver int
	// MaxJobBytes caps one job. Optional. Default: 4 KiB.
	MaxJobBytes int32
	// MaxBytes caps the waiting jobs; a full queue refuses new ones
	// (storage_full). Optional. Default: 64 MiB.
	MaxBytes int64
	// Dedupe is the window in which a job published again under the same
	// id is dropped. Optional. Default: 0, the server's (2 minutes).
	Dedupe time.Duration
	// Replicas is the stream's and the consumer's replication factor.
	// Optional. Default: 0, the store's Replicas.
	Replicas int
}

// Queue is a work queue of jobs shared by every host. It is safe for
// concurrent use.
type Queue struct {
	s    *Store
	name string
	cons jetstream.Consumer
}

// OpenQueue creates or updates the queue's stream and consumer.
func (s *Store) OpenQueue(ctx context.Context, cfg QueueConfig) (*Queue, error) {
	if cfg.Replicas == 0 {
		cfg.Replicas = s.replicas
	}
	if cfg.MaxJobBytes == 0 {
		cfg.MaxJobBytes = 4 << 10
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = 64 << 20
	}
	stream, err := s.Stream(ctx, jetstream.StreamConfig{
		Name:        cfg.Stream,
		Description: cfg.Description,
		Subjects:    []string{cfg.Subjects},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
		Duplicates:  cfg.Dedupe,
		MaxMsgSize:  cfg.MaxJobBytes,
		MaxBytes:    cfg.MaxBytes,
		Discard:     jetstream.DiscardNew,
		AllowDirect: cfg.Replicas == 1,
	})
	if err != nil {
		return nil, err
	}
	var cons jetstream.Consumer
	err = s.Retry(ctx, "consumer "+cfg.Consumer, func(ctx context.Context) (err error) {
		cons, err = stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
			Durable:       cfg.Consumer,
			Description:   cfg.ConsumerDescription,
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       cfg.AckWait,
			MaxDeliver:    cfg.MaxDeliver,
			FilterSubject: cfg.Subjects,
			MaxAckPending: 10_000,
			Replicas:      cfg.Replicas,
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return &Queue{s: s, name: cfg.Stream, cons: cons}, nil
}

// Publish enqueues a job on subject (within the queue's pattern). id names
// it for the dedupe window: publishing a job again under its id (after a
// crash between a checkpoint and its job's ack) is a no-op.
func (q *Queue) Publish(ctx context.Context, subject string, data []byte, id string) error {
	var opts []jetstream.PublishOpt
	if id != "" {
		opts = append(opts, jetstream.WithMsgID(id))
	}
	if _, err := q.s.js.Publish(ctx, subject, data, opts...); err != nil {
		return Fault(err, "enqueue on "+q.name)
	}
	return nil
}

// Next waits until ctx ends for one job: ErrNoJob when none came (ctx's
// deadline, or the server's), ctx's error when ctx was canceled.
func (q *Queue) Next(ctx context.Context) (*Job, error) {
	msg, err := q.cons.Next(jetstream.FetchContext(ctx))
	if err != nil {
		if errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, jetstream.ErrNoMessages) {
			return nil, ErrNoJob
		}
		return nil, Fault(err, "fetch from "+q.name)
	}
	return &Job{msg: msg}, nil
}

// Job is one delivery of a queued job. Every delivery must end in Ack,
// Nak, NakAfter or Term (or be redelivered after AckWait).
type Job struct{ msg jetstream.Msg }

// JobMeta is what the queue knows of a delivery.
type JobMeta struct {
	Seq       uint64    // the job's stream sequence (the same on every delivery)
	Delivered int       // deliveries so far, this one included
	Published time.Time // when the job was enqueued
}

// Subject is the job's subject.
func (j *Job) Subject() string { return j.msg.Subject() }

// Data is the job's body.
func (j *Job) Data() []byte { return j.msg.Data() }

// Meta reads the delivery's metadata; an error means the message is not a
// queue delivery (Term it).
func (j *Job) Meta() (JobMeta, error) {
	m, err := j.msg.Metadata()
	if err != nil {
		return JobMeta{}, err
	}
	return JobMeta{Seq: m.Sequence.Stream, Delivered: int(m.NumDelivered), Published: m.Timestamp}, nil
}

// Ack removes the job, once the queue confirms it.
func (j *Job) Ack(ctx context.Context) error { return j.msg.DoubleAck(ctx) }

// Nak hands the job back for redelivery now.
func (j *Job) Nak() error { return j.msg.Nak() }

// NakAfter hands the job back for redelivery after d.
func (j *Job) NakAfter(d time.Duration) error { return j.msg.NakWithDelay(d) }

// InProgress resets the job's AckWait: it is still being worked on.
func (j *Job) InProgress() error { return j.msg.InProgress() }

// Term removes the job without running it (it is malformed).
func (j *Job) Term() error { return j.msg.Term() }
