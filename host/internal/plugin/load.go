package plugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/sandbox"
)

// load validates one plugin folder into an entry: manifest, policy,
// module bytes (pinned digest, signature), exports, mounts, and the
// sandbox's checks, without compiling. The module's load check (compile,
// instantiate once) runs in the background; a replacement (replacing: an
// older revision serves meanwhile) waits for it, so that only a revision
// that runs replaces one that does. It does not touch the registry's
// state; meanwhile the folder is listed in Loading.
func (r *Registry) load(ctx context.Context, dir, fp string, replacing bool) (*entry, error) {
	file := filepath.Join(dir, ManifestFile)
	raw, err := ReadInDir(dir, ManifestFile, MaxManifestBytes)
	if err != nil {
		return nil, &FieldError{File: file, Msg: err.Error()}
	}
	m, err := DecodeManifest(file, raw)
	if err != nil {
		return nil, err
	}
	eff, err := r.policy.check(m)
	if err != nil {
		return nil, err
	}
	r.startLoading(dir, m, replacing)
	maxBytes := int64(r.policy.MaxModuleBytes)
	wasm, err := ReadInDir(dir, m.Wasm, maxBytes)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &FieldError{File: m.File, Field: "wasm", Msg: fmt.Sprintf("%s not found (build it: skillhost plugin build %s)", filepath.Join(dir, m.Wasm), dir)}
		}
		return nil, &FieldError{File: m.File, Field: "wasm", Msg: err.Error()}
	}
	sum := sha256.Sum256(wasm)
	digest := hex.EncodeToString(sum[:])
	if m.SHA256 != "" && m.SHA256 != digest {
		return nil, &FieldError{File: m.File, Field: "sha256", Msg: fmt.Sprintf("%s has SHA-256 %s, the manifest pins %s", m.Wasm, digest, m.SHA256)}
	}
	signing, err := checkSignature(dir, NewStatement(m, raw, digest), r.opts.Trust)
	if err != nil {
		return nil, err
	}
	info, err := sandbox.Inspect(ctx, wasm)
	if err != nil {
		return nil, &FieldError{File: m.File, Field: "wasm", Msg: fmt.Sprintf("%s: %v", m.Wasm, err)}
	}
	if err := checkExports(m, info); err != nil {
		return nil, err
	}
	conf := m.Permissions.Config
	if r.opts.Config != nil {
		if conf, err = r.opts.Config(m); err != nil {
			return nil, err
		}
	}
	mounts, closers, err := r.mounts(m)
	if err != nil {
		return nil, &FieldError{File: m.File, Field: "permissions.allowed_paths", Msg: err.Error()}
	}
	spec := sandbox.ModuleSpec{
		Name:   m.Name,
		Wasm:   wasm,
		Limits: r.sandboxLimits(eff),
		Config: conf,
		Mounts: mounts,
		// The module is read again (and checked against digest) when its
		// released code is compiled again: a host serving many plugins
		// keeps none of their bytes in memory.
		Source: func() ([]byte, error) { return ReadInDir(dir, m.Wasm, maxBytes) },
		SHA256: sum,
	}
	if r.opts.HostFunctions != nil {
		spec.HostFunctions = r.opts.HostFunctions(m, r)
	}
	mod, err := r.rt.Register(ctx, spec)
	if err == nil && replacing {
		if err = mod.Ready(ctx); err != nil {
			err = errors.Join(err, mod.Close(context.WithoutCancel(ctx)))
		}
	}
	if err != nil {
		closeAll(closers)
		return nil, moduleError(m, err)
	}
	e := &entry{module: mod, fp: fp, closers: closers, plugin: &Plugin{
		Manifest: m, Dir: dir, Limits: spec.Limits, WasmSHA256: digest,
		LoadedAt: time.Now(), Info: mod.Info(), Signing: signing,
	}}
	return e, nil
}

// moduleError is a sandbox refusal of m's module, naming the file and field.
func moduleError(m *Manifest, err error) error {
	return &FieldError{File: m.File, Field: "wasm", Msg: fmt.Sprintf("%s: %v", m.Wasm, err)}
}

// sandboxLimits turns effective plugin limits into sandbox limits.
func (r *Registry) sandboxLimits(l config.Limits) sandbox.Limits {
	return sandbox.Limits{
		Timeout:      l.Timeout,
		MemoryBytes:  uint64(l.Memory),
		OutputBytes:  int64(l.Output),
		Concurrency:  l.Concurrency,
		MinInstances: l.MinInstances,
		IdleTimeout:  r.policy.IdleTimeout,
		QueueWait:    r.policy.QueueWait,
	}
}

// mounts builds the plugin's read-only mounts: each host path opened as an
// os.Root, which refuses symlinks leading out of it, and read through
// regularFS (regular files and directories only: a FIFO cannot block the
// guest's open); ":rw" grants are refused because sandbox mounts are
// read-only. The roots are closed with the plugin.
func (r *Registry) mounts(m *Manifest) ([]sandbox.Mount, []io.Closer, error) {
	if len(m.Permissions.AllowedPaths) == 0 {
		return nil, nil, nil
	}
	var (
		out     []sandbox.Mount
		closers []io.Closer
	)
	for _, g := range m.Permissions.AllowedPaths {
		if g.Writable {
			closeAll(closers)
			return nil, nil, fmt.Errorf("%s: read-write mounts are not supported by this host", g.GuestPath)
		}
		root, err := r.policy.openMount(g.HostPath)
		if err != nil {
			closeAll(closers)
			return nil, nil, err
		}
		closers = append(closers, root)
		out = append(out, sandbox.Mount{GuestPath: g.GuestPath, FS: regularFS{root}})
	}
	return out, closers, nil
}

func closeAll(cs []io.Closer) {
	for _, c := range cs {
		_ = c.Close()
	}
}

// checkExports refuses a skill (or events) function the module does not export.
func checkExports(m *Manifest, info sandbox.ModuleInfo) error {
	var errs []error
	for i, s := range m.Skills {
		if !info.HasExport(s.Function) {
			errs = append(errs, &FieldError{File: m.File, Field: fmt.Sprintf("skills[%d].function", i),
				Msg: fmt.Sprintf("%q is not exported by %s", s.Function, m.Wasm)})
		}
	}
	if m.Events != nil && !info.HasExport(m.Events.Function) {
		errs = append(errs, &FieldError{File: m.File, Field: "events.function",
			Msg: fmt.Sprintf("%q is not exported by %s", m.Events.Function, m.Wasm)})
	}
	return errors.Join(errs...)
}

// fingerprint identifies the content of a plugin folder cheaply: the
// manifest and signature bytes, the size, time and mode of the module it
// names, and the digest of its operator settings (settings, nil: none).
// Unchanged folders are not recompiled on a rescan.
func fingerprint(dir string, settings func(name string) string) string {
	data, err := ReadInDir(dir, ManifestFile, MaxManifestBytes)
	if err != nil {
		return "unreadable:" + err.Error()
	}
	h := sha256.New()
	h.Write(data)
	if sig, err := ReadInDir(dir, SignatureFile, MaxSignatureBytes); err == nil {
		sum := sha256.Sum256(sig)
		fmt.Fprintf(h, "|sig:%x", sum)
	}
	var peek struct {
		Name string `yaml:"name"`
		Wasm string `yaml:"wasm"`
	}
	parsed := yaml.Unmarshal(data, &peek) == nil
	if parsed && settings != nil && peek.Name != "" {
		fmt.Fprintf(h, "|settings:%s", settings(peek.Name))
	}
	if parsed && peek.Wasm != "" && filepath.IsLocal(peek.Wasm) {
		if st, err := os.Stat(filepath.Join(dir, peek.Wasm)); err == nil {
			fmt.Fprintf(h, "|%d|%d|%v", st.Size(), st.ModTime().UnixNano(), st.Mode())
		} else {
			h.Write([]byte("|missing"))
		}
	}
	return strconv.Quote(hex.EncodeToString(h.Sum(nil)))
}
