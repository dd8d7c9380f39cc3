package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/skillhost/skillhost/host/config"
	"gopkg.in/yaml.v3"
)

// ManifestFile is the name of the manifest inside a plugin folder.
const ManifestFile = "plugin.yaml"

// MaxManifestBytes caps the size of plugin.yaml; larger files are refused
// before they are parsed.
const MaxManifestBytes = 1 << 20

// Manifest is a validated plugin.yaml. It is immutable once returned: treat
// every field, slice and map as read-only.
type Manifest struct {
	Name        string // agent id, unique in the host: [a-z0-9][a-z0-9-]*, at most 64 characters
	Version     string // semantic version, e.g. 1.2.0
	Description string
	Author      string        // optional
	License     string        // optional, e.g. an SPDX id
	Homepage    string        // optional URL
	Wasm        string        // module path, relative to Dir and inside it
	SHA256      string        // lowercase hex pin of the module bytes; "" when not pinned
	Limits      config.Limits // requested limits; zero fields are filled from the policy defaults
	Permissions Permissions
	Skills      []*Skill
	// Events names the export that receives agent notifications
	// (_cleveragents/agent/notify); nil when the plugin takes none.
	Events *Events

	Dir  string // the plugin folder, as given to LoadManifest
	File string // the manifest path, used in error messages
}

// Permissions are what the plugin may reach outside its sandbox. Everything
// is denied unless listed.
type Permissions struct {
	AllowedHosts []string          // exact host names or "*.suffix" patterns
	AllowedPaths []PathGrant       // sorted by GuestPath
	Config       map[string]string // handed to the plugin as Extism config
	// Agents are the agents the plugin may call through agent_call: agent
	// ids (local plugin names or remote ids) with "*" wildcards.
	Agents []string
}

// Events is the manifest's `events:` section.
type Events struct {
	Function string // the wasm export called with each notification
}

// PathGrant mounts a host directory into the guest.
type PathGrant struct {
	GuestPath string // absolute, clean guest path
	HostPath  string // absolute, clean host path (relative paths are resolved against the plugin folder)
	Writable  bool   // ":rw" was requested
}

// Skill is one callable skill of a plugin.
type Skill struct {
	ID           string
	Name         string // defaults to ID
	Description  string
	Tags         []string
	Function     string          // wasm export; defaults to ID
	Examples     []Example       // inputs (valid against InputSchema) and what they must produce
	InputModes   []string        // optional media types (A2A); empty = host default
	OutputModes  []string        // optional media types (A2A); empty = host default
	InputSchema  json.RawMessage // JSON Schema as JSON; nil when absent (no validation)
	OutputSchema json.RawMessage // JSON Schema as JSON; nil when absent (no validation)
	// Idempotent says a call may run again with the same input and no harm
	// (no side effect beyond its output): an A2A task whose host is lost
	// runs again on a live host instead of failing with host_lost.
	Idempotent bool

	input, output *jsonschema.Schema
}

// FieldError is a manifest problem: the file, the field (a path such as
// "skills[1].id") and what is wrong. Its text is
// "<file>: <field>: <message>".
type FieldError struct {
	File  string
	Field string
	Msg   string
}

// Error implements error.
func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.File + ": " + e.Msg
	}
	return e.File + ": " + e.Field + ": " + e.Msg
}

// rawManifest mirrors plugin.yaml; strict decoding refuses unknown fields.
type rawManifest struct {
	Name        string         `yaml:"name"`
	Version     string         `yaml:"version"`
	Description string         `yaml:"description"`
	Author      string         `yaml:"author"`
	License     string         `yaml:"license"`
	Homepage    string         `yaml:"homepage"`
	Wasm        string         `yaml:"wasm"`
	SHA256      string         `yaml:"sha256"`
	Limits      rawLimits      `yaml:"limits"`
	Permissions rawPermissions `yaml:"permissions"`
	Skills      []rawSkill     `yaml:"skills"`
	Events      *rawEvents     `yaml:"events"`
}

type rawEvents struct {
	Function string `yaml:"function"`
}

type rawLimits struct {
	Timeout      string `yaml:"timeout"`
	Memory       string `yaml:"memory"`
	Output       string `yaml:"output"`
	Concurrency  *int   `yaml:"concurrency"`
	MinInstances *int   `yaml:"min_instances"`
}

type rawPermissions struct {
	AllowedHosts []string          `yaml:"allowed_hosts"`
	AllowedPaths map[string]string `yaml:"allowed_paths"`
	Config       map[string]string `yaml:"config"`
	Agents       []string          `yaml:"agents"`
}

type rawSkill struct {
	ID           string      `yaml:"id"`
	Name         string      `yaml:"name"`
	Description  string      `yaml:"description"`
	Tags         []string    `yaml:"tags"`
	Function     string      `yaml:"function"`
	Examples     []yaml.Node `yaml:"examples"`
	InputModes   []string    `yaml:"input_modes"`
	OutputModes  []string    `yaml:"output_modes"`
	InputSchema  yaml.Node   `yaml:"input_schema"`
	OutputSchema yaml.Node   `yaml:"output_schema"`
	Idempotent   yaml.Node   `yaml:"idempotent"`
}

// LoadManifest reads and validates dir/plugin.yaml. The file is opened inside
// dir (a symlink pointing out of the folder is refused) and capped at
// MaxManifestBytes. Every error names the file and, where it applies, the
// field.
func LoadManifest(dir string) (*Manifest, error) {
	file := filepath.Join(dir, ManifestFile)
	data, err := ReadInDir(dir, ManifestFile, MaxManifestBytes)
	if err != nil {
		return nil, &FieldError{File: file, Msg: err.Error()}
	}
	return DecodeManifest(file, data)
}

// DecodeManifest decodes and validates manifest bytes. file names the
// manifest in errors; its directory is the plugin folder (relative host
// paths in permissions.allowed_paths are resolved against it). It touches
// no file.
func DecodeManifest(file string, data []byte) (*Manifest, error) {
	if len(data) > MaxManifestBytes {
		return nil, &FieldError{File: file, Msg: fmt.Sprintf("manifest is %d bytes, over the %s cap", len(data), config.ByteSize(MaxManifestBytes))}
	}
	var raw rawManifest
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &FieldError{File: file, Msg: "empty manifest"}
		}
		return nil, &FieldError{File: file, Msg: yamlMessage(err)}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, &FieldError{File: file, Msg: "more than one YAML document"}
	}
	v := &validator{file: file}
	m := v.manifest(&raw)
	if err := v.err(); err != nil {
		return nil, err
	}
	m.Dir, m.File = filepath.Dir(file), file
	return m, nil
}

var yamlUnknownField = regexp.MustCompile(`field (\S+) not found in type \S+`)

// yamlMessage rewrites yaml.v3's messages without Go type names.
func yamlMessage(err error) string {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		var b bytes.Buffer
		for i, e := range te.Errors {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(yamlUnknownField.ReplaceAllString(e, "unknown field $1"))
		}
		return b.String()
	}
	return err.Error()
}

// ReadInDir reads dir/name the way the host does: inside dir (a symlink
// leading out of dir is refused), only a regular file (a FIFO, socket or
// device is an error wrapping ErrNotRegular, and is never opened in a way
// that blocks: openRegular), refusing files larger than limit before
// reading them.
func ReadInDir(dir, name string, limit int64) ([]byte, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := openRegular(root, name, false)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadCapped(f, name, limit)
}

// ReadCapped reads the regular file f, named name in errors, refusing it
// when it is larger than limit bytes (checked before and while reading).
func ReadCapped(f *os.File, name string, limit int64) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s is %s, over the %s cap", name, config.ByteSize(st.Size()), config.ByteSize(limit))
	}
	// Sized from the stat (a module is read at every load of its code), and
	// still capped while reading: the file may grow meanwhile.
	buf := bytes.NewBuffer(make([]byte, 0, st.Size()+bytes.MinRead))
	if _, err := buf.ReadFrom(io.LimitReader(f, limit+1)); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s grew over the %s cap while being read", name, config.ByteSize(limit))
	}
	return data, nil
}
