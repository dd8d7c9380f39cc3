package plugin

import (
	"context"
	"slices"
	"sort"
	"time"
)

// awaitCheck applies the outcome of e's load check once it ends (e was
// just installed while its module compiles in the background).
func (r *Registry) awaitCheck(ctx context.Context, e *entry) {
	r.checks.Add(1)
	r.pending.Add(1)
	go func() {
		defer r.checks.Done()
		<-e.module.Checked() // Close closes the module, which ends it
		r.syncMu.Lock()
		defer r.syncMu.Unlock()
		r.settle(ctx, e)
		if r.pending.Add(-1) == 0 && !r.isClosed() {
			r.log.Info("plugin: every plugin compiled", "plugins", len(r.Snapshot().Plugins))
		}
	}()
}

func (r *Registry) isClosed() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.closed
}

// settleChecked applies the outcome of every load check that has ended
// (syncMu held), so that a rescan sees the plugins as they are.
func (r *Registry) settleChecked(ctx context.Context) {
	r.mu.RLock()
	st := r.cur
	r.mu.RUnlock()
	var done []*entry
	for _, e := range st.byDir {
		if _, checking := e.module.Checking(); !checking && !e.settled.Load() {
			done = append(done, e)
		}
	}
	sort.Slice(done, func(i, j int) bool { return done[i].plugin.Dir < done[j].plugin.Dir })
	for _, e := range done {
		r.settle(ctx, e)
	}
}

// settle applies the outcome of e's ended load check (syncMu held), once:
// a module that compiled is reported loaded; one that did not is unloaded,
// its folder recorded as a problem (not retried until it changes), so its
// skills leave the card and calls to them are unknown_skill.
func (r *Registry) settle(ctx context.Context, e *entry) {
	if e.settled.Swap(true) {
		return
	}
	r.mu.RLock()
	st, closed := r.cur, r.closed
	r.mu.RUnlock()
	dir, m := e.plugin.Dir, e.plugin.Manifest
	if closed || st.byDir[dir] != e {
		return // replaced, removed or closed meanwhile
	}
	took := e.took + e.module.CheckTook()
	err := e.module.Ready(context.WithoutCancel(ctx))
	if err == nil {
		// still_compiling counts the first compiles left after this one, so
		// a first start's log reads as a countdown.
		r.log.Info("plugin: loaded", "plugin", m.Name, "version", m.Version, "dir", dir, "took", took.Round(time.Millisecond),
			"still_compiling", max(r.pending.Load()-1, 0))
		r.event(LoadEvent{Kind: EventLoaded, Dir: dir, Plugin: m.Name, Version: m.Version, Duration: took})
		return
	}
	next := make(map[string]*entry, len(st.byDir))
	for d, x := range st.byDir {
		if d != dir {
			next[d] = x
		}
	}
	probs := slices.Clone(st.snap.Problems)
	probs = append(probs, r.fail(dir, e.fp, false, moduleError(m, err), false, took))
	sort.Slice(probs, func(i, j int) bool { return probs[i].Path < probs[j].Path })
	r.swap(ctx, next, probs, []*entry{e})
}

// WaitCompiled waits until no plugin is on its first compile (their
// outcomes are then applied by the time it returns), or ctx ends. A host
// serving one local client (stdio) uses it before it reads its input.
func (r *Registry) WaitCompiled(ctx context.Context) error {
	r.mu.RLock()
	st := r.cur
	r.mu.RUnlock()
	for _, e := range st.byDir {
		if err := e.module.Ready(ctx); err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
	}
	r.syncMu.Lock()
	defer r.syncMu.Unlock()
	r.settleChecked(ctx)
	return nil
}
