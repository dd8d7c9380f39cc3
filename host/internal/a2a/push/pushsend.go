package push

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host/internal/delivery"
)

// Stats counts what the push side did with task updates.
type Stats struct {
	// Skipped are updates of tasks known to have no push configs: nothing
	// was read, encoded or queued.
	Skipped uint64
	// Lookups are updates whose task's configs were read (it had some, or
	// the index was not current).
	Lookups uint64
}

// Stats returns the counts since Open.
func (p *Service) Stats() Stats {
	return Stats{Skipped: p.stats.skipped.Load(), Lookups: p.stats.lookups.Load()}
}

// Notify queues the task's updates (nil ones skipped) for each of its push
// configs, in order per config. A task the index knows to have no configs
// costs nothing: no read, no encoding, nothing queued. It never blocks on
// the network; the delivery service drops the owner's oldest waiting update
// when the owner (or the host) has too many waiting.
func (p *Service) Notify(ctx context.Context, owner string, task a2av1.TaskID, events ...a2av1.Event) {
	if !p.index.has(pushKey(owner, task)) {
		p.stats.skipped.Add(1)
		return
	}
	p.stats.lookups.Add(1)
	if p.opts.Delivery == nil {
		return
	}
	rec, _, err := p.read(ctx, owner, task)
	if err != nil {
		p.log.Warn("a2a: push: reading configs", "task_id", task, "err", err)
		return
	}
	for _, ev := range events {
		if ev == nil || len(rec.Configs) == 0 {
			continue
		}
		body, err := json.Marshal(a2av1.StreamResponse{Event: ev})
		if err != nil {
			p.log.Error("a2a: push: encoding an update", "task_id", task, "err", err)
			continue
		}
		for _, c := range rec.Configs {
			p.submit(owner, task, c, body)
		}
	}
}

func (p *Service) submit(owner string, task a2av1.TaskID, c *a2av1.PushConfig, body []byte) {
	h := http.Header{"Content-Type": {"application/json"}, "User-Agent": {"skillhost-push"}}
	if c.Token != "" {
		h.Set(TokenHeader, c.Token)
	}
	if a := c.Auth; a != nil && a.Credentials != "" {
		switch strings.ToLower(a.Scheme) {
		case "bearer":
			h.Set("Authorization", "Bearer "+a.Credentials)
		case "basic":
			h.Set("Authorization", "Basic "+a.Credentials)
		}
	}
	id, url := c.ID, c.URL
	err := p.opts.Delivery.Submit(&delivery.Request{
		Kind: DeliveryKind, Key: owner, Lane: string(task) + "\x00" + id, URL: url, Body: body, Header: h,
		Timeout: p.opts.Timeout, Retry: delivery.Retry{Attempts: p.opts.MaxAttempts, Initial: p.opts.Backoff},
		Done: func(r delivery.Result) {
			if r.Outcome == delivery.Failed {
				p.log.Warn("a2a: push notification not delivered", "task_id", task, "config_id", id, "url", url, "attempts", r.Attempts, "err", r.Text)
			}
		},
	})
	if err != nil {
		p.log.Warn("a2a: push notification not queued", "task_id", task, "config_id", id, "err", err)
	}
}

// prime fills the index with the bucket's keys, so it is current from the
// start; Run's watch keeps it so.
func (p *Service) prime(ctx context.Context) error {
	now := time.Now()
	for key, err := range p.kv.Keys(ctx, "") {
		if err != nil {
			return fmt.Errorf("a2a: push: listing configs: %w", err)
		}
		p.index.put(key, 0, now)
	}
	p.index.synced()
	return nil
}

// Run keeps the index of tasks with push configs current (a watch of the
// bucket's keys, so a config set on another host of a cluster is seen here
// within the watch's delay) until ctx ends. While the watch is broken,
// every update reads its task's configs. Embedders must run it.
func (p *Service) Run(ctx context.Context) {
	for {
		err := p.watch(ctx)
		p.index.unsync()
		if ctx.Err() != nil {
			return
		}
		p.log.Warn("a2a: push: watching the config bucket failed; updates read their task's configs until it is back", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// watch follows the bucket's keys into the index until ctx ends or the
// watch fails.
func (p *Service) watch(ctx context.Context) error {
	w, err := p.kv.WatchKeys(ctx)
	if err != nil {
		return err
	}
	defer w.Stop()
	// Records expire with the bucket's TTL without a delete marker: the
	// index forgets keys not written for as long.
	sweep := time.NewTicker(min(p.opts.Retention/4, time.Hour))
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-sweep.C:
			p.index.sweep(time.Now().Add(-p.opts.Retention))
		case e, ok := <-w.Updates():
			switch {
			case !ok:
				return errors.New("the watch ended")
			case e == nil: // the initial values are in
				p.index.synced()
			case !e.Deleted:
				p.index.put(e.Key, e.Revision, e.Created)
			default:
				p.index.del(e.Key, e.Revision)
			}
		}
	}
}

// pushIndex is the set of push record keys (tasks with configs) on this
// host, from the bucket's watch and this host's own writes. While it is not
// current, has answers true (read the record: never miss an update).
type pushIndex struct {
	mu      sync.Mutex
	current bool
	keys    map[string]indexed
}

type indexed struct {
	rev uint64
	at  time.Time
}

func (x *pushIndex) init() { x.keys = map[string]indexed{} }

func (x *pushIndex) has(key string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	_, ok := x.keys[key]
	return ok || !x.current
}

// put records a write of key at revision rev (an older one is ignored).
func (x *pushIndex) put(key string, rev uint64, at time.Time) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if old, ok := x.keys[key]; !ok || old.rev <= rev {
		x.keys[key] = indexed{rev: rev, at: at}
	}
}

// del records a delete of key at revision rev, unless a newer write is known.
func (x *pushIndex) del(key string, rev uint64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if old, ok := x.keys[key]; ok && old.rev < rev {
		delete(x.keys, key)
	}
}

func (x *pushIndex) synced() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.current = true
}

// unsync forgets everything: the next watch replays the bucket.
func (x *pushIndex) unsync() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.current = false
	x.keys = map[string]indexed{}
}

// sweep forgets keys last written before cutoff (expired by the bucket).
func (x *pushIndex) sweep(cutoff time.Time) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for k, v := range x.keys {
		if v.at.Before(cutoff) {
			delete(x.keys, k)
		}
	}
}
