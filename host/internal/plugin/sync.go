package plugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"
)

// LoadDir loads every plugin in dir: each immediate subfolder holding a
// plugin.yaml. A folder without one is ignored. A broken plugin does not stop
// the others; it is returned in the joined error and listed in Problems. The
// folder is remembered: Reload and Watch rescan it. Calling LoadDir again
// rescans (unchanged plugins are kept, not recompiled).
//
// LoadDir validates and registers without waiting for compiles: a new
// plugin is on the card at once while its module compiles in the
// background (RuntimeConfig.CompileWorkers at a time; a module this host
// compiled before is not compiled again); one that then fails to compile
// becomes a Problem (Loading lists those still compiling).
func (r *Registry) LoadDir(ctx context.Context, dir string) error {
	r.syncMu.Lock()
	defer r.syncMu.Unlock()
	dir = filepath.Clean(dir)
	if !slices.Contains(r.roots, dir) {
		r.roots = append(r.roots, dir)
	}
	return r.sync(ctx)
}

// Load loads the single plugin folder dir (one holding a plugin.yaml) and
// returns the plugin as loaded, once its module compiled (unlike LoadDir,
// it waits for the load check); its error is the one a LoadDir of a folder
// containing dir would report for it. The folder is remembered: Reload and
// Watch of its parent rescan it. Calling Load again reloads it if it
// changed.
func (r *Registry) Load(ctx context.Context, dir string) (*Plugin, error) {
	r.syncMu.Lock()
	defer r.syncMu.Unlock()
	dir = filepath.Clean(dir)
	if !slices.Contains(r.dirs, dir) {
		r.dirs = append(r.dirs, dir)
	}
	err := r.sync(ctx)
	r.mu.RLock()
	e := r.cur.byDir[dir]
	r.mu.RUnlock()
	if e != nil {
		if werr := e.module.Ready(ctx); werr != nil && ctx.Err() != nil {
			return nil, werr
		}
		r.settle(ctx, e)
	}
	if f, ok := r.failed[dir]; ok {
		return nil, f.err
	}
	r.mu.RLock()
	e = r.cur.byDir[dir]
	r.mu.RUnlock()
	if e == nil {
		return nil, errors.Join(fmt.Errorf("plugin %s did not load", dir), err)
	}
	return e.plugin, nil
}

// Reload rescans every folder given to LoadDir, Load or Watch: new plugins load,
// changed ones are recompiled and swapped in only if they load (otherwise the
// old revision keeps serving and a Problem is recorded), removed ones are
// unloaded once their calls in flight return. The error lists every current
// problem.
func (r *Registry) Reload(ctx context.Context) error {
	r.syncMu.Lock()
	defer r.syncMu.Unlock()
	if len(r.roots) == 0 && len(r.dirs) == 0 {
		return errors.New("plugin: Reload before LoadDir, Load or Watch: no plugin folder to scan")
	}
	return r.sync(ctx)
}

// scan lists the plugin folders under the roots and those given to Load,
// sorted.
func (r *Registry) scan() ([]string, []error) {
	dirs := slices.Clone(r.dirs)
	var errs []error
	for _, root := range r.roots {
		ents, err := os.ReadDir(root)
		if err != nil {
			errs = append(errs, fmt.Errorf("plugin folder %s: %w", root, err))
			continue
		}
		for _, de := range ents {
			dir := filepath.Join(root, de.Name())
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				continue
			}
			if _, err := os.Lstat(filepath.Join(dir, ManifestFile)); err != nil {
				r.log.Debug("plugin: folder without plugin.yaml ignored", "dir", dir)
				continue
			}
			dirs = append(dirs, dir)
		}
	}
	sort.Strings(dirs)
	return slices.Compact(dirs), errs
}

// sync brings the registry in line with the folders on disk. syncMu held.
func (r *Registry) sync(ctx context.Context) error {
	r.mu.RLock()
	closed := r.closed
	r.mu.RUnlock()
	if closed {
		return errors.New("plugin: registry is closed")
	}
	r.settleChecked(ctx)
	// Validating many folders (a start) must not compete with their
	// compiles for the cores: these wait until the scan is done.
	defer r.rt.HoldBackground()()
	r.mu.RLock()
	cur := r.cur
	r.mu.RUnlock()
	dirs, errs := r.scan()
	for _, err := range errs {
		r.log.Error("plugin: scanning", "error", err)
	}
	next := make(map[string]*entry, len(dirs))
	var cands []*entry
	problems := map[string]Problem{}
	present := map[string]bool{}
	for _, dir := range dirs {
		present[dir] = true
		fp := fingerprint(dir, r.opts.Settings)
		old := cur.byDir[dir]
		if old != nil {
			next[dir] = old // keeps serving unless a new revision replaces it
			if old.fp == fp {
				delete(r.failed, dir)
				continue
			}
		}
		if f, ok := r.failed[dir]; ok && f.fp == fp && !f.retry {
			problems[dir] = f.problem
			continue
		}
		e, err := r.load(ctx, dir, fp, old != nil)
		took := r.endLoading(dir)
		if err != nil {
			problems[dir] = r.fail(dir, fp, false, err, old != nil, took)
			continue
		}
		e.took = took
		cands = append(cands, e)
	}
	var retired []*entry
	for dir, e := range cur.byDir {
		if !present[dir] {
			retired = append(retired, e)
			r.log.Info("plugin: unloaded", "plugin", e.plugin.Manifest.Name, "dir", dir)
			r.event(LoadEvent{Kind: EventUnloaded, Dir: dir, Plugin: e.plugin.Manifest.Name, Version: e.plugin.Manifest.Version})
		}
	}
	for dir := range r.failed {
		if !present[dir] {
			delete(r.failed, dir)
		}
	}
	rev := cur.snap.Revision + 1 // the revision swap installs; syncMu keeps it
	var installed []*entry
	for _, c := range cands {
		dir := c.plugin.Dir
		m := c.plugin.Manifest
		if err := conflict(c, next); err != nil {
			problems[dir] = r.fail(dir, c.fp, true, err, next[dir] != nil, c.took)
			_ = c.close(ctx)
			continue
		}
		c.plugin.Revision = rev
		if old := next[dir]; old != nil { // its load check passed in load
			retired = append(retired, old)
			c.settled.Store(true)
			r.log.Info("plugin: replaced", "plugin", m.Name, "version", m.Version,
				"old_version", old.plugin.Manifest.Version, "dir", dir, "took", c.took.Round(time.Millisecond))
			r.event(LoadEvent{Kind: EventReplaced, Dir: dir, Plugin: m.Name, Version: m.Version, Duration: c.took})
		} else {
			installed = append(installed, c) // "loaded" once its load check passed (settle)
		}
		next[dir] = c
		delete(r.failed, dir)
	}
	probs := make([]Problem, 0, len(problems))
	for _, p := range problems {
		probs = append(probs, p)
	}
	sort.Slice(probs, func(i, j int) bool { return probs[i].Path < probs[j].Path })
	for _, p := range probs {
		errs = append(errs, errors.New(p.Message))
	}
	r.logCleared(cur.snap.Problems, problems)
	if len(cands) > 0 || len(retired) > 0 || !slices.Equal(probs, cur.snap.Problems) {
		r.swap(ctx, next, probs, retired)
	}
	for _, c := range installed {
		if _, checking := c.module.Checking(); checking {
			r.awaitCheck(context.WithoutCancel(ctx), c)
		} else {
			r.settle(ctx, c) // checked before (or just now)
		}
	}
	return errors.Join(errs...)
}

// fail records a folder that did not load and returns its Problem. A new
// problem is logged and reported once; the same one found again is not.
func (r *Registry) fail(dir, fp string, retry bool, err error, oldServing bool, took time.Duration) Problem {
	p := Problem{Path: dir, Message: err.Error(), Time: time.Now()}
	if prev, ok := r.failed[dir]; ok && prev.problem.Message == p.Message {
		p.Time = prev.problem.Time // the same problem, still there
	} else {
		if oldServing {
			r.log.Error("plugin: new revision refused; the loaded revision keeps serving", "dir", dir, "error", err)
		} else {
			r.log.Error("plugin: not loaded", "dir", dir, "error", err)
		}
		r.event(LoadEvent{Kind: EventFailed, Dir: dir, Plugin: folderPlugin(dir), Duration: took, Err: err})
	}
	r.failed[dir] = failure{fp: fp, retry: retry, err: err, problem: p}
	return p
}

// logCleared logs and reports each problem of before that is no longer a
// problem (its folder loads now, or is gone).
func (r *Registry) logCleared(before []Problem, now map[string]Problem) {
	for _, p := range before {
		if _, still := now[p.Path]; still {
			continue
		}
		r.log.Info("plugin: problem cleared", "dir", p.Path, "was", p.Message, "since", p.Time.Format(time.RFC3339))
		r.event(LoadEvent{Kind: EventCleared, Dir: p.Path, Plugin: folderPlugin(p.Path)})
	}
}

// folderPlugin names a plugin by its folder when its manifest may not
// parse: the folder's name.
func folderPlugin(dir string) string { return filepath.Base(dir) }

// conflict refuses a candidate whose name or skill ids belong to another
// plugin folder (the plugin it would replace does not count).
func conflict(c *entry, next map[string]*entry) error {
	m := c.plugin.Manifest
	var errs []error
	for dir, e := range next {
		if dir == c.plugin.Dir {
			continue
		}
		other := e.plugin.Manifest
		if other.Name == m.Name {
			errs = append(errs, &FieldError{File: m.File, Field: "name",
				Msg: fmt.Sprintf("%q is already used by the plugin in %s; this plugin is refused", m.Name, dir)})
		}
		for i, s := range m.Skills {
			if _, taken := e.plugin.Skill(s.ID); taken {
				errs = append(errs, &FieldError{File: m.File, Field: fmt.Sprintf("skills[%d].id", i),
					Msg: fmt.Sprintf("%q is already provided by plugin %q (%s); plugin %q is refused", s.ID, other.Name, dir, m.Name)})
			}
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errors.Join(errs...)
}

// swap installs a new state and retires the replaced entries; their modules
// close when their last call returns.
func (r *Registry) swap(ctx context.Context, next map[string]*entry, probs []Problem, retired []*entry) {
	r.mu.Lock()
	st := newState(r.cur.snap.Revision+1, next, probs)
	r.cur = st
	r.mu.Unlock()
	for _, e := range retired {
		if err := e.retire(ctx); err != nil {
			r.log.Warn("plugin: closing a retired module", "plugin", e.plugin.Manifest.Name, "error", err)
		}
	}
	r.notify(st.snap)
}
