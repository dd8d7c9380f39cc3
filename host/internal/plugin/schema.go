package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"gopkg.in/yaml.v3"
)

// printer renders schema errors in English.
var printer = message.NewPrinter(language.English)

// maxSchemaBytes caps one schema (as JSON).
const maxSchemaBytes = 256 << 10

// schemaURL is the (never fetched) location schemas are compiled under.
const schemaURL = "mem:///schema.json"

// compileSchema turns a schema written in YAML into JSON and compiles it.
// An absent or null schema means "no schema" and yields (nil, nil, nil).
// Remote and file $refs are refused: a manifest cannot make the host read a
// file or the network.
func compileSchema(n *yaml.Node) (json.RawMessage, *jsonschema.Schema, error) {
	if n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
		return nil, nil, nil
	}
	v, err := yamlToJSON(n)
	if err != nil {
		return nil, nil, fmt.Errorf("not representable as JSON: %w", err)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, nil, fmt.Errorf("not representable as JSON: %w", err)
	}
	if len(raw) > maxSchemaBytes {
		return nil, nil, fmt.Errorf("schema is %d bytes, over the %d cap", len(raw), maxSchemaBytes)
	}
	doc, err := decodeJSON(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("not representable as JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{}) // no file:, http: or other external documents
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, nil, fmt.Errorf("invalid JSON Schema: %w", err)
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return nil, nil, fmt.Errorf("invalid JSON Schema: %s", oneLine(err.Error()))
	}
	return raw, sch, nil
}

// yamlToJSON converts a YAML node to JSON values. Unlike yaml.v3's own
// decoding it keeps timestamps as the strings they are written as, and it
// refuses aliases (whose expansion a hostile manifest could multiply).
func yamlToJSON(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return nil, errors.New("empty document")
		}
		return yamlToJSON(n.Content[0])
	case yaml.AliasNode:
		return nil, fmt.Errorf("line %d: YAML aliases are not supported", n.Line)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := yamlToJSON(c)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
				return nil, fmt.Errorf("line %d: mapping keys must be plain strings", k.Line)
			}
			v, err := yamlToJSON(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			out[k.Value] = v
		}
		return out, nil
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!str", "!!timestamp", "!!binary":
			return n.Value, nil
		}
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		return v, nil
	}
	return nil, fmt.Errorf("line %d: unsupported YAML node", n.Line)
}

// schemaMessage renders a validation error as one line, without the
// internal schema URL.
func schemaMessage(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return oneLine(err.Error())
	}
	leaf := deepest(ve)
	return fmt.Sprintf("at %s: %s", quotePointer(leaf.InstanceLocation), oneLine(leaf.ErrorKind.LocalizedString(printer)))
}

// schemaPointer is the JSON pointer of the first failing value.
func schemaPointer(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return ""
	}
	return jsonPointer(deepest(ve).InstanceLocation)
}

// deepest follows the first cause down to the most specific failure.
func deepest(ve *jsonschema.ValidationError) *jsonschema.ValidationError {
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	return ve
}

func jsonPointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

func quotePointer(tokens []string) string {
	p := jsonPointer(tokens)
	if p == "" {
		return "(root)"
	}
	return p
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, schemaURL, "schema")
	return strings.Join(strings.Fields(s), " ")
}
