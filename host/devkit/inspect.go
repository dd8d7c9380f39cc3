package devkit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/plugin"
	"github.com/skillhost/skillhost/host/internal/sandbox"
)

// pageSize is the wasm page size.
const pageSize = 64 << 10

// Inspection describes a plugin module and, when known, its manifest.
type Inspection struct {
	Wasm    string   `json:"wasm"`
	Size    int      `json:"size"`
	SHA256  string   `json:"sha256"`
	Exports []string `json:"exports"`
	Imports []string `json:"imports"` // each once, sorted
	// ImportStatus says, per import, whether the host provides it,
	// refuses every call to it by design, or does not know it (then the
	// module does not load).
	ImportStatus   []ImportView `json:"import_status"`
	MemoryMinPages uint32       `json:"memory_min_pages"`
	MemoryMaxPages *uint32      `json:"memory_max_pages"` // null: the module declares no maximum
	MemoryMinBytes uint64       `json:"memory_min_bytes"`
	MemoryMaxBytes *uint64      `json:"memory_max_bytes"`
	// Shape counts what the module declares; every count is within the
	// sandbox limits (Inspect refuses the module otherwise).
	Shape sandbox.ModuleShape `json:"shape"`
	// Budget is what one instance and one running call count against the
	// host's sandbox.max_live_bytes, at the effective memory limit (the
	// default one for a bare module); nil when the limits are refused.
	Budget *sandbox.Cost `json:"budget"`

	// Manifest is nil when inspecting a bare .wasm without a plugin.yaml
	// naming it.
	Manifest *ManifestSummary `json:"manifest,omitempty"`
}

// ManifestSummary is the part of a manifest inspect shows, with the limits
// the default operator policy would give the plugin.
type ManifestSummary struct {
	Name         string         `json:"name"`
	Version      string         `json:"version"`
	Description  string         `json:"description,omitempty"`
	Skills       []SkillSummary `json:"skills"`
	AllowedHosts []string       `json:"allowed_hosts"`
	AllowedPaths []string       `json:"allowed_paths"`
	ConfigKeys   []string       `json:"config_keys"`
	Requested    LimitsView     `json:"requested_limits"`
	// Effective are the limits under plugin.DefaultPolicy: the requests
	// with the defaults filled.
	Effective LimitsView `json:"effective_limits"`
	// PolicyProblems are why a host with the default policy would refuse
	// the plugin (a limit over the cap, network or path permissions the
	// operator must grant).
	PolicyProblems []string `json:"policy_problems"`
}

// SkillSummary is one skill of a manifest.
type SkillSummary struct {
	ID       string `json:"id"`
	Function string `json:"function"`
	Exported bool   `json:"exported"`
	Examples int    `json:"examples"`
}

// LimitsView renders limits for people and JSON ("" = not set).
type LimitsView struct {
	Timeout     string `json:"timeout"`
	Memory      string `json:"memory"`
	Output      string `json:"output"`
	Concurrency int    `json:"concurrency"`
}

func limitsView(l config.Limits) LimitsView {
	v := LimitsView{Concurrency: l.Concurrency}
	if l.Timeout > 0 {
		v.Timeout = l.Timeout.String()
	}
	if l.Memory > 0 {
		v.Memory = l.Memory.String()
	}
	if l.Output > 0 {
		v.Output = l.Output.String()
	}
	return v
}

// Inspect describes a plugin folder (its manifest and module) or a .wasm
// file (with the manifest of its folder when that manifest names it). It
// only decodes the module; nothing runs.
func Inspect(ctx context.Context, path string) (*Inspection, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("inspect: %w", err)
	}
	var m *plugin.Manifest
	wasmPath := path
	if st.IsDir() {
		if m, err = plugin.LoadManifest(path); err != nil {
			return nil, fmt.Errorf("inspect: %w", oneLine(err))
		}
		wasmPath = filepath.Join(path, m.Wasm)
	} else if mm, err := plugin.LoadManifest(filepath.Dir(path)); err == nil && sameFile(filepath.Join(mm.Dir, mm.Wasm), path) {
		m = mm
	}
	var wasm []byte
	if m != nil && st.IsDir() {
		wasm, err = plugin.ReadInDir(path, m.Wasm, int64(config.DefaultPolicy().MaxModuleBytes))
	} else {
		wasm, err = readCapped(wasmPath, int64(config.DefaultPolicy().MaxModuleBytes))
	}
	if err != nil {
		return nil, fmt.Errorf("inspect: %w", err)
	}
	info, err := sandbox.Inspect(ctx, wasm)
	if err != nil {
		return nil, fmt.Errorf("inspect: %s: %w", wasmPath, err)
	}
	sum := sha256.Sum256(wasm)
	in := &Inspection{
		Wasm: wasmPath, Size: len(wasm), SHA256: hex.EncodeToString(sum[:]),
		Exports: info.Exports, Imports: slices.Compact(slices.Clone(info.Imports)),
		MemoryMinPages: info.MemoryMinPages, MemoryMaxPages: info.MemoryMaxPages,
		MemoryMinBytes: uint64(info.MemoryMinPages) * pageSize,
		Shape:          info.Shape,
	}
	if info.MemoryMaxPages != nil {
		b := uint64(*info.MemoryMaxPages) * pageSize
		in.MemoryMaxBytes = &b
	}
	if in.ImportStatus, err = classifyImports(ctx, in.Imports); err != nil {
		return nil, fmt.Errorf("inspect: %w", err)
	}
	limits := sandbox.Limits{}
	if m != nil {
		in.Manifest = summarize(m, info)
		if eff, err := plugin.Check(config.DefaultPolicy(), m); err == nil {
			limits.MemoryBytes = uint64(eff.Memory)
		}
	}
	if cost, err := sandbox.EstimateCost(info, limits); err == nil {
		in.Budget = &cost
	}
	return in, nil
}

func summarize(m *plugin.Manifest, info sandbox.ModuleInfo) *ManifestSummary {
	eff, err := plugin.Check(config.DefaultPolicy(), m)
	s := &ManifestSummary{
		Name: m.Name, Version: m.Version, Description: m.Description,
		AllowedHosts: append([]string{}, m.Permissions.AllowedHosts...),
		AllowedPaths: []string{}, ConfigKeys: []string{},
		Requested: limitsView(m.Limits), Effective: limitsView(eff),
		PolicyProblems: append([]string{}, splitErrors(err)...),
	}
	for _, g := range m.Permissions.AllowedPaths {
		mode := "ro"
		if g.Writable {
			mode = "rw"
		}
		s.AllowedPaths = append(s.AllowedPaths, fmt.Sprintf("%s -> %s (%s)", g.GuestPath, g.HostPath, mode))
	}
	for k := range m.Permissions.Config {
		s.ConfigKeys = append(s.ConfigKeys, k)
	}
	slices.Sort(s.ConfigKeys)
	for _, sk := range m.Skills {
		s.Skills = append(s.Skills, SkillSummary{ID: sk.ID, Function: sk.Function, Exported: info.HasExport(sk.Function), Examples: len(sk.Examples)})
	}
	return s
}

// sameFile reports whether a and b name the same file.
func sameFile(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// readCapped reads the module file at path, capped like the host caps it.
func readCapped(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return plugin.ReadCapped(f, path, limit)
}

// WriteText renders the inspection for people.
func (in *Inspection) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	p := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, args...)...) }
	p("wasm:", "%s", in.Wasm)
	p("size:", "%s (%d bytes)", FormatBytes(uint64(in.Size)), in.Size)
	p("sha256:", "%s", in.SHA256)
	maxMem := "none declared (the host's cap applies)"
	if in.MemoryMaxPages != nil {
		maxMem = fmt.Sprintf("%d pages (%s)", *in.MemoryMaxPages, FormatBytes(*in.MemoryMaxBytes))
	}
	p("memory:", "min %d pages (%s), max %s", in.MemoryMinPages, FormatBytes(in.MemoryMinBytes), maxMem)
	sh := in.Shape
	p("shape:", "%d functions, %d globals, %d element items, %d data segments; at most %d locals and %s of code in one function",
		sh.Functions, sh.Globals, sh.ElementItems, sh.DataSegments, sh.MaxLocals, FormatBytes(uint64(sh.MaxBodyBytes)))
	if b := in.Budget; b != nil {
		p("budget:", "an instance %s, a running call %s more (counted against sandbox.max_live_bytes)",
			FormatBytes(b.Instance), FormatBytes(b.Call))
	}
	p("exports:", "%s", strings.Join(in.Exports, ", "))
	counts := map[string]int{}
	for _, v := range in.ImportStatus {
		counts[v.Status]++
	}
	p("imports:", "%d: %d provided, %d refused, %d unknown", len(in.ImportStatus),
		counts[ImportProvided], counts[ImportRefused], counts[ImportUnknown])
	lines := importLines(in.ImportStatus)
	for _, status := range []string{ImportProvided, ImportRefused, ImportUnknown} {
		if l, ok := lines[status]; ok {
			p("  "+status+":", "%s", l)
		}
	}
	if m := in.Manifest; m != nil {
		p("plugin:", "%s %s — %s", m.Name, m.Version, m.Description)
		for _, s := range m.Skills {
			state := "exported"
			if !s.Exported {
				state = "NOT EXPORTED"
			}
			p("skill:", "%s → %s (%s, %d examples)", s.ID, s.Function, state, s.Examples)
		}
		p("requested:", "%s", fmtLimits(m.Requested))
		if len(m.PolicyProblems) > 0 {
			p("effective:", "none: the default policy refuses this plugin (see policy:)")
		} else {
			p("effective:", "%s (default policy)", fmtLimits(m.Effective))
		}
		p("hosts:", "%s", orNone(m.AllowedHosts))
		p("paths:", "%s", orNone(m.AllowedPaths))
		p("config:", "%s", orNone(m.ConfigKeys))
		for _, pr := range m.PolicyProblems {
			p("policy:", "%s", pr)
		}
	}
	return tw.Flush()
}

func fmtLimits(l LimitsView) string {
	or := func(s string) string {
		if s == "" {
			return "default"
		}
		return s
	}
	c := "default"
	if l.Concurrency > 0 {
		c = fmt.Sprint(l.Concurrency)
	}
	return fmt.Sprintf("timeout %s, memory %s, output %s, concurrency %s", or(l.Timeout), or(l.Memory), or(l.Output), c)
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// FormatBytes renders a size for people: "812 B", "64 KiB", "3.3 MiB".
func FormatBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %ciB", int64(v), "KMGTPE"[exp])
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTPE"[exp])
}
