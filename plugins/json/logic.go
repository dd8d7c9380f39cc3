package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/skillhost/skillhost/sdk"
)

// QueryIn is the input of json_query.
type QueryIn struct {
	Document json.RawMessage `json:"document"`
	Path     string          `json:"path"`
}

// QueryOut is the output of json_query: Found is false (and Value null) when
// the path does not exist in the document.
type QueryOut struct {
	Found bool `json:"found"`
	Value any  `json:"value"`
}

// ValidateIn is the input of json_validate.
type ValidateIn struct {
	Document json.RawMessage `json:"document"`
	Schema   json.RawMessage `json:"schema"`
}

// Violation is one reason a document fails its schema.
type Violation struct {
	Path    string `json:"path"`    // JSON pointer into the document
	Keyword string `json:"keyword"` // JSON pointer into the schema
	Message string `json:"message"`
}

// ValidateOut is the output of json_validate.
type ValidateOut struct {
	Valid  bool        `json:"valid"`
	Errors []Violation `json:"errors"`
}

// MergeIn is the input of json_merge.
type MergeIn struct {
	Target json.RawMessage `json:"target"`
	Patch  json.RawMessage `json:"patch"`
}

// MergeOut is the output of json_merge.
type MergeOut struct {
	Result any `json:"result"`
}

// maxViolations caps the violations reported by json_validate.
const maxViolations = 100

// decode parses a JSON value keeping numbers exact. A missing value
// (absent field) is an invalid_input error naming the field.
func decode(field string, raw json.RawMessage) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, sdk.InvalidInput("%s is missing", field).WithData(map[string]any{"field": field})
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, sdk.InvalidInput("%s is not valid JSON: %v", field, err).WithData(map[string]any{"field": field})
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return nil, sdk.InvalidInput("%s has trailing data", field).WithData(map[string]any{"field": field})
	}
	return v, nil
}

func query(in QueryIn) (QueryOut, error) {
	doc, err := decode("document", in.Document)
	if err != nil {
		return QueryOut{}, err
	}
	segs, err := parsePath(in.Path)
	if err != nil {
		return QueryOut{}, err
	}
	v, ok := lookup(doc, segs)
	return QueryOut{Found: ok, Value: v}, nil
}

// refusingLoader refuses every external reference: a schema may only refer
// to itself, so validation never touches the network or the file system.
type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external reference %q refused: only references inside the schema are allowed", url)
}

// schemaURL is the base URL the given schema is compiled under.
const schemaURL = "urn:skillhost:json_validate:schema"

func validate(in ValidateIn) (ValidateOut, error) {
	schemaDoc, err := decode("schema", in.Schema)
	if err != nil {
		return ValidateOut{}, err
	}
	doc, err := decode("document", in.Document)
	if err != nil {
		return ValidateOut{}, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(refusingLoader{})
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(schemaURL, schemaDoc); err != nil {
		return ValidateOut{}, sdk.InvalidInput("schema: %v", err).WithData(map[string]any{"field": "schema"})
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return ValidateOut{}, sdk.InvalidInput("schema does not compile: %v", err).WithData(map[string]any{"field": "schema"})
	}
	err = sch.Validate(doc)
	if err == nil {
		return ValidateOut{Valid: true, Errors: []Violation{}}, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return ValidateOut{}, fmt.Errorf("validate: %w", err)
	}
	out := ValidateOut{Errors: []Violation{}}
	collect(ve, &out.Errors)
	return out, nil
}

// collect appends the specific failures of a validation error (the basic
// output format's leaf units), up to maxViolations.
func collect(ve *jsonschema.ValidationError, into *[]Violation) {
	for _, u := range ve.BasicOutput().Errors {
		if len(*into) >= maxViolations {
			return
		}
		if u.Error == nil || len(u.Errors) > 0 {
			continue
		}
		*into = append(*into, Violation{Path: u.InstanceLocation, Keyword: u.KeywordLocation, Message: u.Error.String()})
	}
}

func merge(in MergeIn) (MergeOut, error) {
	target, err := decode("target", in.Target)
	if err != nil {
		return MergeOut{}, err
	}
	patch, err := decode("patch", in.Patch)
	if err != nil {
		return MergeOut{}, err
	}
	return MergeOut{Result: mergePatch(target, patch)}, nil
}

// mergePatch applies an RFC 7386 JSON Merge Patch: an object patch merges
// member by member (null deletes), anything else replaces the target.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	out := make(map[string]any, len(t)+len(p))
	for k, v := range t {
		out[k] = v
	}
	for k, v := range p {
		if v == nil {
			delete(out, k)
			continue
		}
		out[k] = mergePatch(out[k], v)
	}
	return out
}
