package devkit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/assemble"
	"github.com/skillhost/skillhost/host/internal/plugin"
	"github.com/skillhost/skillhost/host/internal/sandbox"
)

// ValidateOptions configure Validate.
type ValidateOptions struct {
	// CacheDir is wazero's compilation cache. Optional. Default: in memory.
	CacheDir string
}

// Report is the outcome of Validate.
type Report struct {
	Dir      string   `json:"dir"`
	Plugin   string   `json:"plugin,omitempty"`
	Problems []string `json:"problems"` // each makes the plugin unusable or wrong
	Warnings []string `json:"warnings"` // it works, but something is missing (a skill without examples)
	Notes    []string `json:"notes"`    // what a default host would additionally require
}

// OK reports whether no problem was found.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

func (r *Report) problem(format string, args ...any) {
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}

// Validate checks a plugin folder without running it: the manifest (strict
// decode, schemas compile, examples valid against input_schema), its limits
// against the default policy caps, the module (present, pinned hash,
// exports for every skill, imports the host provides, declared memory within
// the plugin's memory limit) and finally a real compile and instantiation in
// the sandbox. Every problem found is listed; the error is only for
// failures to run the checks at all.
func Validate(ctx context.Context, dir string, opts ValidateOptions) (*Report, error) {
	r := &Report{Dir: dir, Problems: []string{}, Warnings: []string{}, Notes: []string{}}
	m, err := plugin.LoadManifest(dir)
	if err != nil {
		r.Problems = append(r.Problems, splitErrors(err)...)
		return r, nil
	}
	r.Plugin = m.Name
	eff, err := plugin.Check(devPolicy(m), m)
	r.Problems = append(r.Problems, splitErrors(err)...)
	if len(m.Permissions.AllowedHosts) > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("needs network access: the operator's policy.allowed_host_patterns must cover %v", m.Permissions.AllowedHosts))
	}
	if len(m.Permissions.AllowedPaths) > 0 {
		r.Notes = append(r.Notes, "needs file access: the operator's policy.allowed_path_prefixes must cover its allowed_paths")
	}
	for i, s := range m.Skills {
		if len(s.Examples) == 0 {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s: skills[%d].examples: %s has no example; `plugin test` runs the examples", m.File, i, s.ID))
		}
	}

	wasmPath := filepath.Join(dir, m.Wasm)
	wasm, err := plugin.ReadInDir(dir, m.Wasm, int64(config.DefaultPolicy().MaxModuleBytes))
	if errors.Is(err, fs.ErrNotExist) {
		r.problem("%s: wasm: %s not found (run: skillhost plugin build %s)", m.File, wasmPath, dir)
		return r, nil
	}
	if err != nil {
		r.problem("%s: wasm: %v", m.File, err)
		return r, nil
	}
	sum := sha256.Sum256(wasm)
	if digest := hex.EncodeToString(sum[:]); m.SHA256 != "" && m.SHA256 != digest {
		r.problem("%s: sha256: %s has SHA-256 %s, the manifest pins %s", m.File, m.Wasm, digest, m.SHA256)
	}
	info, err := sandbox.Inspect(ctx, wasm)
	if err != nil {
		r.problem("%s: %v", wasmPath, err)
		return r, nil
	}
	for i, s := range m.Skills {
		if !info.HasExport(s.Function) {
			r.problem("%s: skills[%d].function: %q is not exported by %s", m.File, i, s.Function, m.Wasm)
		}
	}
	importProblems, err := checkImports(ctx, info)
	if err != nil {
		return nil, err
	}
	for _, e := range importProblems {
		r.problem("%s: %v", wasmPath, e)
	}
	if min := uint64(info.MemoryMinPages) * pageSize; eff.Memory > 0 && min > uint64(eff.Memory) {
		r.problem("%s: the module declares at least %s of memory, over its limits.memory %s", wasmPath, FormatBytes(min), eff.Memory)
	}
	if info.MemoryMaxPages != nil && uint64(*info.MemoryMaxPages)*pageSize > uint64(eff.Memory) {
		r.Notes = append(r.Notes, fmt.Sprintf("the module declares up to %s of memory; the host caps it at limits.memory %s",
			FormatBytes(uint64(*info.MemoryMaxPages)*pageSize), eff.Memory))
	}
	if !r.OK() {
		return r, nil
	}
	if err := compileCheck(ctx, dir, m, opts.CacheDir); err != nil {
		r.problem("%s: the sandbox refused it: %v", wasmPath, err)
	}
	return r, nil
}

// compileCheck loads the folder as `serve` would (assembled the same way,
// under devPolicy): compiled and instantiated with the host functions a real
// host gives it. The error is the sandbox's, without the manifest prefix.
func compileCheck(ctx context.Context, dir string, m *plugin.Manifest, cacheDir string) (err error) {
	cfg := config.Defaults()
	cfg.Policy = devPolicy(m)
	parts, err := assemble.Build(ctx, assemble.Spec{Config: cfg, Purpose: assemble.Validate, CacheDir: cacheDir})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, parts.Close(ctx)) }()
	_, err = parts.Registry.Load(ctx, dir)
	var fe *plugin.FieldError
	if errors.As(err, &fe) {
		return errors.New(strings.TrimPrefix(fe.Msg, m.Wasm+": "))
	}
	return err
}
