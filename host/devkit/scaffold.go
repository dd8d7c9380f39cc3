package devkit

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/template"
)

// Languages New scaffolds: Go with the skillhost SDK (the default),
// AssemblyScript with Extism's @extism/as-pdk (built with npm), and a
// hand-written WebAssembly text module (built with wabt's wat2wasm).
const (
	LangGo             = "go"
	LangAssemblyScript = "assemblyscript"
	LangWAT            = "wat"
)

// Langs lists the languages New accepts, default first.
var Langs = []string{LangGo, LangAssemblyScript, LangWAT}

// maxScaffoldName keeps "<name>_hello" within the 64-character skill id cap.
const maxScaffoldName = 58

var reName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// ErrInvalidName is wrapped by New's error for a bad plugin name or
// language (a usage error).
var ErrInvalidName = errors.New("invalid plugin name")

// NewOptions configure New.
type NewOptions struct {
	// Name is the plugin name: [a-z0-9][a-z0-9-]*, at most 58 characters.
	Name string
	// Lang is one of Langs. Optional. Default: LangGo.
	Lang string
	// Dir is the folder to create. Optional. Default: Name, under WorkDir.
	Dir string
	// SDK is the Go SDK's source tree (sdk.Source, which the skillhost
	// binary embeds). A Go scaffold gets a copy in its sdk/ folder and its
	// go.mod replaces the SDK module with ./sdk, so the folder builds
	// anywhere with Go and the module proxy. Not used when SDKPath is set
	// or the plugin is created inside a skillhost checkout.
	SDK fs.FS
	// SDKPath is an SDK folder to use instead of a copy (one holding the
	// go.mod of module github.com/skillhost/skillhost/sdk). Optional.
	// Default: the sdk/ folder of the skillhost checkout the plugin is
	// created in, if any, else a copy of SDK. go.mod refers to it by a
	// relative path when the plugin lies in the same tree.
	SDKPath string
	// Version is the skillhost version noted in the scaffold. Optional.
	Version string
	// WorkDir resolves a relative Dir. Optional. Default: the current
	// directory.
	WorkDir string
}

// Scaffold describes the created plugin.
type Scaffold struct {
	Dir   string   // absolute path of the new plugin folder
	Lang  string   // one of Langs
	Skill string   // id of its one skill
	SDK   string   // Go: how go.mod finds the SDK ("./sdk (copied)", a path); "" otherwise
	Files []string // created files, relative to Dir ("sdk/" for the copied SDK)
	Next  []string // commands that build and test it, relative to the current directory
}

// tmplData fills the templates.
type tmplData struct {
	Name, Skill, Version string
	// Go
	SDKModule, SDKReplace, SDKNote, GoVersion, PDKVersion string
	// WAT
	WAT watData
}

// scaffoldFile is one file New writes (rendered with [[ ]] delimiters).
type scaffoldFile struct{ name, text string }

// New scaffolds a plugin folder in opts.Lang that builds and passes
// `plugin test` as is: plugin.yaml with one skill <name>_hello (schemas and
// examples with expectations), the skill's source and a .gitignore; for Go
// also its unit test (with sdktest) and go.mod/go.sum. It refuses an
// invalid name or language and an existing non-empty folder.
func New(opts NewOptions) (*Scaffold, error) {
	if opts.Lang == "" {
		opts.Lang = LangGo
	}
	if !slices.Contains(Langs, opts.Lang) {
		return nil, fmt.Errorf("%w: unknown language %q (want %s)", ErrInvalidName, opts.Lang, strings.Join(Langs, ", "))
	}
	if err := checkName(opts.Name, opts.Lang); err != nil {
		return nil, err
	}
	dir, err := targetDir(opts)
	if err != nil {
		return nil, err
	}
	if err := checkEmptyDir(dir); err != nil {
		return nil, err
	}
	sc := &Scaffold{Dir: dir, Lang: opts.Lang}
	data := tmplData{Name: opts.Name, Skill: strings.ReplaceAll(opts.Name, "-", "_") + "_hello", Version: opts.Version}
	if data.Version == "" {
		data.Version = "dev"
	}
	sc.Skill = data.Skill
	var files []scaffoldFile
	var extra func() error // writes what is not a template (the SDK copy)
	switch opts.Lang {
	case LangGo:
		files, extra, err = goScaffold(opts, dir, &data, sc)
	case LangAssemblyScript:
		files = asFiles
	case LangWAT:
		data.WAT = newWATData(opts.Name)
		files = watFiles
	}
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("new: %w", err)
	}
	for _, f := range files {
		name, err := render(f.name, f.name, data)
		if err != nil {
			return nil, err
		}
		text, err := render(name, f.text, data)
		if err != nil {
			return nil, err
		}
		if err := writeFile(filepath.Join(dir, filepath.FromSlash(name)), []byte(text)); err != nil {
			return nil, err
		}
		sc.Files = append(sc.Files, name)
	}
	if extra != nil {
		if err := extra(); err != nil {
			return nil, err
		}
	}
	sc.Next = nextSteps(opts, dir)
	return sc, nil
}

// render executes a template written with [[ ]] delimiters.
func render(name, text string, data tmplData) (string, error) {
	var b bytes.Buffer
	if err := template.Must(template.New(name).Delims("[[", "]]").Parse(text)).Execute(&b, data); err != nil {
		return "", fmt.Errorf("new: render %s: %w", name, err)
	}
	return b.String(), nil
}

// targetDir resolves the folder to create.
func targetDir(opts NewOptions) (string, error) {
	wd := opts.WorkDir
	if wd == "" {
		var err error
		if wd, err = os.Getwd(); err != nil {
			return "", fmt.Errorf("new: %w", err)
		}
	}
	dir := opts.Dir
	if dir == "" {
		dir = opts.Name
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(wd, dir)
	}
	return filepath.Clean(dir), nil
}

// nextSteps are the commands that build and test the new plugin.
func nextSteps(opts NewOptions, dir string) []string {
	rel := dir
	wd := opts.WorkDir
	if wd == "" {
		wd, _ = os.Getwd()
	}
	if r, err := filepath.Rel(wd, dir); err == nil && filepath.IsLocal(r) {
		rel = r
	}
	steps := []string{"skillhost plugin build " + rel, "skillhost plugin test " + rel}
	if opts.Lang == LangGo {
		steps = append([]string{"(cd " + rel + " && go test ./...)"}, steps...)
	}
	return steps
}

func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("new: %w", err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("new: %w", err)
	}
	return nil
}

// checkName validates a plugin name for scaffolding in lang.
func checkName(name, lang string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: the name is empty", ErrInvalidName)
	case len(name) > maxScaffoldName:
		return fmt.Errorf("%w %q: at most %d characters", ErrInvalidName, name, maxScaffoldName)
	case !reName.MatchString(name):
		return fmt.Errorf("%w %q: use lower-case letters, digits and '-', starting with a letter or digit", ErrInvalidName, name)
	case lang == LangAssemblyScript && name[0] >= '0' && name[0] <= '9':
		return fmt.Errorf("%w %q: the skill's AssemblyScript export <name>_hello must not start with a digit", ErrInvalidName, name)
	}
	return nil
}

// checkEmptyDir refuses a path that exists and is a file or a non-empty
// folder.
func checkEmptyDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("new: %w", err)
	case !st.IsDir():
		return fmt.Errorf("new: %s exists and is not a folder", dir)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("new: %w", err)
	}
	if len(ents) > 0 {
		return fmt.Errorf("new: %s is not empty (%d entries); choose another --dir", dir, len(ents))
	}
	return nil
}
