// Package push stores A2A push notification configs and queues every
// update of a task with configs for delivery.
//
// A task's push configs live in one record of the KV bucket Bucket, keyed
// by the owner's hash and the task id, so only the task's owner reads or
// changes them and the host running the task finds them with one read. Every status change and artifact of a task
// with configs is POSTed to each config's URL as the StreamResponse JSON the
// streams carry, with the config's token (A2A-Notification-Token) and
// authentication (Authorization), by the host's delivery service
// (delivery.Service: per-key and per-destination shares, retries with
// exponential backoff, http_fetch's dial guard: loopback, private and
// metadata addresses are refused unless net.allow_private lists them).
package push

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/delivery"
	"github.com/skillhost/skillhost/host/internal/hostfn"
	"github.com/skillhost/skillhost/host/internal/store"
)

// Names and caps of push configs.
const (
	Bucket         = "skillhost_a2a_push"
	TokenHeader    = "A2A-Notification-Token"
	MaxURLBytes    = 2048
	MaxTokenBytes  = 1024
	MaxCredentials = 4096
	// DeliveryKind is the delivery.Request Kind of push notifications
	// (the kind label of the delivery metrics).
	DeliveryKind = "push"
)

// Options configure Open.
type Options struct {
	// Push is the a2a.push.* section: max_per_task (push configs of one
	// task), max_per_key (of one owner), timeout (one POST), max_attempts
	// (POSTs of one update). Optional: the zero section is
	// config.Defaults().A2A.Push.
	config.Push
	// Delivery sends the notifications. Required: without it configs are
	// stored and nothing is sent.
	Delivery  *delivery.Service
	Net       hostfn.NetPolicy // the dial guard of http_fetch (net.allow_private), checked on literal URLs
	Backoff   time.Duration    // wait after the first failed POST, doubling up to 30s; default 500ms
	Retention time.Duration    // configs expire with their task; default a2a.DefaultTaskRetention (7 days)
	Logger    *slog.Logger
}

// Service stores push configs and queues task updates for delivery. It is
// safe for concurrent use; Run keeps its index of tasks with configs.
type Service struct {
	kv    *store.Bucket[pushRecord]
	opts  Options
	log   *slog.Logger
	index pushIndex
	stats struct{ skipped, lookups atomic.Uint64 }
}

// pushRecord is a task's push configs.
type pushRecord struct {
	Owner   string              `json:"owner"`
	Configs []*a2av1.PushConfig `json:"configs"`
}

// Open creates or binds the push bucket on st.
func Open(ctx context.Context, st *store.Store, opts Options) (*Service, error) {
	if opts.Push == (config.Push{}) {
		opts.Push = config.Defaults().A2A.Push
	}
	opts.Backoff = cmpOr(opts.Backoff, 500*time.Millisecond)
	opts.Retention = cmpOr(opts.Retention, defaultRetention)
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	kv, err := store.OpenBucket[pushRecord](ctx, st, store.BucketConfig{
		Name: Bucket, Description: "skillhost A2A push notification configs", TTL: opts.Retention,
		MaxValueBytes: 1 << 20, What: "push configs", Retries: maxUpdateRetries,
		Contended: func(string) error {
			return fault.New(fault.Internal, fault.ReasonInternal, "push configs are changing too fast; retry")
		},
	})
	if err != nil {
		return nil, fmt.Errorf("a2a: push bucket: %w", err)
	}
	p := &Service{kv: kv, opts: opts, log: opts.Logger}
	p.index.init()
	if err := p.prime(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

func cmpOr[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// The task store's values these follow (a2a.DefaultTaskRetention,
// a2a.MaxTaskIDLen and its id pattern, its CAS retries); a2a's tests
// compare them.
const (
	defaultRetention = 7 * 24 * time.Hour
	maxIDLen         = 128
	maxUpdateRetries = 32
	ownerHashHex     = 32 // hex digits of an owner's hash in a record key
)

var validID = regexp.MustCompile(`^[A-Za-z0-9_=-]+$`)

// ownerHash is the hashed owner that prefixes its record keys (the task
// index's hash of the same token).
func ownerHash(owner string) string {
	sum := sha256.Sum256([]byte("owner:" + owner))
	return hex.EncodeToString(sum[:])[:ownerHashHex]
}

func pushKey(owner string, task a2av1.TaskID) string {
	return ownerHash(owner) + "." + string(task)
}

// Check validates a config a client sent, and fills its id.
func (p *Service) Check(c *a2av1.PushConfig) error {
	bad := func(field, msg string) error {
		return fault.Newf(fault.InvalidParams, fault.ReasonInvalidParams, "push config %s %s", field, msg).With("field", field)
	}
	if c.ID == "" {
		c.ID = string(a2av1.NewTaskID())
	}
	if len(c.ID) > maxIDLen || !validID.MatchString(c.ID) {
		return bad("id", "must be 1..128 of A-Z a-z 0-9 _ = -")
	}
	if len(c.URL) > MaxURLBytes {
		return bad("url", fmt.Sprintf("must be at most %d bytes", MaxURLBytes))
	}
	u, err := url.Parse(c.URL)
	switch {
	case err != nil:
		return bad("url", "is not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return bad("url", "must be an http or https URL")
	case u.Hostname() == "":
		return bad("url", "has no host")
	case u.User != nil:
		return bad("url", "must not carry user info (use token or authentication)")
	}
	if addr, err := netip.ParseAddr(u.Hostname()); err == nil {
		if err := hostfn.CheckAddr(addr, p.opts.Net.AllowPrivate); err != nil {
			return bad("url", "is refused: "+err.Error())
		}
	}
	if len(c.Token) > MaxTokenBytes {
		return bad("token", fmt.Sprintf("must be at most %d bytes", MaxTokenBytes))
	}
	if a := c.Auth; a != nil {
		if len(a.Credentials) > MaxCredentials {
			return bad("authentication.credentials", fmt.Sprintf("must be at most %d bytes", MaxCredentials))
		}
		if s := strings.ToLower(a.Scheme); s != "bearer" && s != "basic" {
			return bad("authentication.scheme", "must be Bearer or Basic")
		}
	}
	return nil
}

// read returns the task's configs (an empty record when it has none) and
// the record's revision (0: none stored).
func (p *Service) read(ctx context.Context, owner string, task a2av1.TaskID) (*pushRecord, uint64, error) {
	e, err := p.kv.Get(ctx, pushKey(owner, task))
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrUndecodable):
		return &pushRecord{Owner: owner}, e.Revision, nil
	case err != nil:
		return nil, 0, err
	case e.Value.Owner != owner:
		return &pushRecord{Owner: owner}, e.Revision, nil
	}
	return e.Value, e.Revision, nil
}

// change applies f to the task's configs with a revision-checked write
// (the record is deleted once it holds none).
func (p *Service) change(ctx context.Context, owner string, task a2av1.TaskID, f func(*pushRecord) error) error {
	key := pushKey(owner, task)
	e, err := p.kv.Change(ctx, key, store.Change[pushRecord]{Upsert: true, ReplaceUndecodable: true, Apply: func(rec *pushRecord) error {
		if rec.Owner != owner { // none stored, or not decodable as the owner's
			*rec = pushRecord{Owner: owner}
		}
		if err := f(rec); err != nil {
			return err
		}
		if len(rec.Configs) == 0 {
			return store.ErrRemove
		}
		return nil
	}})
	if err != nil {
		return err
	}
	if e.Value != nil {
		p.index.put(key, e.Revision, time.Now()) // this host's next update sees it, before the watch does
	}
	return nil
}

// ownerCount counts the push configs of owner across its tasks (at most
// MaxPerKey task records are read).
func (p *Service) ownerCount(ctx context.Context, owner string) (int, error) {
	n := 0
	for key, err := range p.kv.Keys(ctx, ownerHash(owner)+".*") {
		if err != nil {
			return 0, err
		}
		if n >= p.opts.MaxPerKey {
			break
		}
		if e, err := p.kv.Get(ctx, key); err == nil {
			n += len(e.Value.Configs)
		}
	}
	return n, nil
}

// Set stores c for the task (replacing a config of the same id), within
// the per-task and per-owner caps; the caller has checked that owner owns
// the task.
func (p *Service) Set(ctx context.Context, owner string, c *a2av1.PushConfig) (*a2av1.PushConfig, error) {
	if err := p.Check(c); err != nil {
		return nil, err
	}
	total, err := p.ownerCount(ctx, owner)
	if err != nil {
		return nil, err
	}
	stored := *c
	stored.Tenant = ""
	err = p.change(ctx, owner, c.TaskID, func(r *pushRecord) error {
		for i, old := range r.Configs {
			if old.ID == c.ID {
				r.Configs[i] = &stored
				return nil
			}
		}
		if len(r.Configs) >= p.opts.MaxPerTask {
			return fault.Newf(fault.ResourceExhausted, fault.ReasonPushLimit, "the task has %d push configs, the most allowed (a2a.push.max_per_task)", len(r.Configs))
		}
		if total >= p.opts.MaxPerKey {
			return fault.Newf(fault.ResourceExhausted, fault.ReasonPushLimit, "%d push configs are stored for this key, the most allowed (a2a.push.max_per_key)", total)
		}
		r.Configs = append(r.Configs, &stored)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &stored, nil
}

// List returns the push configs owner stored for task (empty, not nil,
// when it has none).
func (p *Service) List(ctx context.Context, owner string, task a2av1.TaskID) ([]*a2av1.PushConfig, error) {
	rec, _, err := p.read(ctx, owner, task)
	if err != nil {
		return nil, err
	}
	if rec.Configs == nil {
		rec.Configs = []*a2av1.PushConfig{}
	}
	return rec.Configs, nil
}

// Delete deletes owner's push config id of task (deleting a missing one
// succeeds).
func (p *Service) Delete(ctx context.Context, owner string, task a2av1.TaskID, id string) error {
	return p.change(ctx, owner, task, func(r *pushRecord) error {
		for i, c := range r.Configs {
			if c.ID == id {
				r.Configs = append(r.Configs[:i], r.Configs[i+1:]...)
				break
			}
		}
		return nil
	})
}
