package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/skillhost/skillhost/host/fault"
)

// Admit commits a charge of bound bytes (the most the record can grow to
// while the work runs) for new work of owner: a new record (prev zero), or
// an existing record that starts new work (prev its charge: a plan executed
// again). A capped owner is refused with ResourceExhausted (key_quota) when
// it would hold more than MaxCount records or MaxBytes bytes (prev not
// counted); every owner is refused with ResourceExhausted (storage_full)
// while the bucket has no room for the work above Reserve. The caller stores
// Charge() with the record and calls Finish (or Drop) after the write.
func (u *Usage) Admit(ctx context.Context, owner string, capped bool, prev Charge, bound int64) (*Pending, error) {
	return u.AdmitFor(ctx, owner, capped, prev, bound, 0)
}

// AdmitFor is Admit for work whose record is written later, within keep
// (a task stored only when it ends): its charge expires keep after now
// unless that write moves it, so a host that dies meanwhile leaves an
// over-count for keep, not for the bucket's retention. keep 0 is Admit.
func (u *Usage) AdmitFor(ctx context.Context, owner string, capped bool, prev Charge, bound int64, keep time.Duration) (*Pending, error) {
	p := &Pending{u: u, owner: owner, prev: prev, next: prev}
	growth := max(0, bound-prev.Bytes)
	if !capped {
		if err := u.room(ctx, growth); err != nil {
			return nil, err
		}
		return p, nil
	}
	p.next, p.mode = Charge{Bytes: bound, Until: u.untilAfter(u.cfg.Now(), keep)}, added
	roomed := false
	err := u.update(ctx, owner, func(l *usageLedger, now int64) error {
		t := l.total(now)
		held := t.Bytes
		if g, ok := l.Groups[prev.Until]; ok && !prev.IsZero() {
			held -= min(prev.Bytes, g.Bytes)
		}
		if err := u.overQuota(t.Records, held, prev.IsZero(), bound); err != nil {
			return err
		}
		if !roomed {
			if err := u.room(ctx, growth); err != nil {
				return err
			}
			roomed = true
		}
		l.move(prev, p.next)
		return nil
	})
	if err != nil {
		if roomed {
			u.unroom(growth)
		}
		return nil, Fault(err, "admit new "+u.cfg.Name)
	}
	return p, nil
}

// overQuota is the key_quota refusal of new work of bound bytes for an
// owner holding records and held bytes (newRecord: the work adds a record).
func (u *Usage) overQuota(records, held int64, newRecord bool, bound int64) *fault.Error {
	c := u.cfg
	if newRecord && c.MaxCount > 0 && records+1 > int64(c.MaxCount) {
		return fault.Newf(fault.ResourceExhausted, fault.ReasonKeyQuota,
			"this key holds %d stored %s, its quota (%s = %d); they are removed %s after their last change",
			records, c.Name, c.CountLimit, c.MaxCount, u.retentionText()).
			With("limit", c.CountLimit).With("limit_value", c.MaxCount)
	}
	if c.MaxBytes > 0 && held+bound > c.MaxBytes {
		return fault.Newf(fault.ResourceExhausted, fault.ReasonKeyQuota,
			"this key's stored %s hold %s and new work may grow to %s, over its quota (%s = %s); they are removed %s after their last change",
			c.Name, sizeText(held), sizeText(bound), c.BytesLimit, sizeText(c.MaxBytes), u.retentionText()).
			With("limit", c.BytesLimit).With("limit_value", c.MaxBytes)
	}
	return nil
}

// room admits need more bytes into the bucket unless that would leave less
// than Reserve free (storage_full). Far from that limit it reuses a recent
// read of the bucket's size plus what this host admitted since; within one
// reserve of it, and before it refuses, it reads the size again.
func (u *Usage) room(ctx context.Context, need int64) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	fresh := false
	if time.Since(u.at) > roomMaxAge || !u.fits(need+u.cfg.Reserve) {
		if err := u.refresh(ctx); err != nil {
			return err
		}
		fresh = true
	}
	if !u.fits(need) && !fresh {
		if err := u.refresh(ctx); err != nil {
			return err
		}
	}
	if !u.fits(need) {
		free := max(0, u.limit-u.used-u.added)
		return fault.Newf(fault.ResourceExhausted, fault.ReasonStorageFull,
			"the %s bucket is full for new work: %s of its %s are free, and %s are kept for running work (%s); retry once stored %s expire",
			u.cfg.Name, sizeText(free), sizeText(u.limit), sizeText(u.cfg.Reserve), u.cfg.ReserveLimit, u.cfg.Name).
			With("limit", u.cfg.ReserveLimit).With("limit_value", u.cfg.Reserve)
	}
	u.added += need
	return nil
}

// unroom returns bytes room admitted for work that was not stored.
func (u *Usage) unroom(n int64) {
	u.mu.Lock()
	u.added = max(0, u.added-n)
	u.mu.Unlock()
}

// fits reports whether need more bytes leave Reserve free (u.mu held).
func (u *Usage) fits(need int64) bool {
	return u.limit <= 0 || u.used+u.added+need <= u.limit-u.cfg.Reserve
}

// refresh reads the bucket's size and limits (u.mu held).
func (u *Usage) refresh(ctx context.Context) error {
	info, err := u.stream.Info(ctx)
	if err != nil {
		return Fault(err, "read the "+u.cfg.Name+" bucket's size")
	}
	u.at, u.used, u.added = time.Now(), int64(info.State.Bytes), 0
	u.limit = info.Config.MaxBytes
	u.retention.Store(int64(info.Config.MaxAge))
	return nil
}

func (u *Usage) retentionText() string {
	ret := time.Duration(u.retention.Load())
	if ret <= 0 {
		return "never"
	}
	switch {
	case ret%time.Hour == 0:
		return fmt.Sprintf("%dh", ret/time.Hour)
	case ret%time.Minute == 0:
		return strings.TrimSuffix(ret.String(), "0s")
	}
	return ret.String()
}

// sizeText is n bytes for a message: "512 B", "3.5 KiB", "12.0 MiB".
func sizeText(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}
