package plugin

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"

	"gopkg.in/yaml.v3"
)

// Example is one manifest example: an input and, optionally, what calling
// the skill with it must produce. `skillhost plugin test` runs every
// example; the Agent Card lists the inputs.
type Example struct {
	// Input is compact JSON, valid against the skill's input_schema.
	Input json.RawMessage
	// Output, when not nil, is the expected output as compact JSON (valid
	// against the output_schema). The literal null matches an empty output,
	// which callers receive as null.
	Output json.RawMessage
	// Error, when not nil, expects the call to fail as described.
	Error *ExpectedError
	// NeedsNetwork marks an example whose call reaches the network
	// (http_fetch); `plugin test` skips it unless asked to run it.
	NeedsNetwork bool
	// Asks, when not nil, expects the call to end its turn asking for
	// input (an A2A task's input-required or auth-required) with a
	// question containing *Asks; Turns then answer it (a multi-turn skill).
	Asks *string
	// Turns are the follow-up messages of a multi-turn example, in order.
	Turns []Turn
}

// Turn is one follow-up message of a multi-turn example and what its turn
// ends in: a question (Asks), an output, an error, or just success.
type Turn struct {
	// Reply is the follow-up: a JSON string is sent as a text part (the
	// skill's input {"text": …}), any other JSON value as a data part.
	Reply  json.RawMessage
	Asks   *string
	Output json.RawMessage
	Error  *ExpectedError
}

// ExpectedError describes the failure an example expects; empty fields
// match anything, so an empty ExpectedError matches every failure.
type ExpectedError struct {
	// Code is the plugin's own error code (error data plugin_code, e.g.
	// "invalid_input"), written as a string in the manifest.
	Code string
	// RPCCode is the JSON-RPC error code (e.g. -32103), written as an
	// integer in the manifest's code field; 0 matches any.
	RPCCode int
	// Reason is the host's reason (e.g. "plugin_error", "timeout").
	Reason string
}

var reReason = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// exampleKeys are the fields of an example written as a mapping.
var exampleKeys = map[string]bool{"input": true, "output": true, "error": true, "needs_network": true, "asks": true, "turns": true}

// turnKeys are the fields of one turn of a multi-turn example.
var turnKeys = map[string]bool{"reply": true, "asks": true, "output": true, "error": true}

// maxTurns caps the follow-ups of one example.
const maxTurns = 32

// examples decodes a skill's examples: each is either a string holding the
// input as JSON text, or a mapping {input, output?, error?: {code?,
// reason?}, needs_network?} whose input and output are YAML values.
func (v *validator) examples(f string, raw []yaml.Node, s *Skill) {
	if len(raw) > maxListLen {
		v.add(f+".examples", "must have at most %d entries", maxListLen)
		return
	}
	for k := range raw {
		field := fmt.Sprintf("%s.examples[%d]", f, k)
		if ex, ok := v.example(field, &raw[k], s); ok {
			s.Examples = append(s.Examples, ex)
		}
	}
}

func (v *validator) example(field string, n *yaml.Node, s *Skill) (Example, bool) {
	var ex Example
	switch {
	case n.Kind == yaml.ScalarNode && n.Tag == "!!str":
		in, ok := v.exampleJSON(field, []byte(n.Value))
		if !ok {
			return ex, false
		}
		ex.Input = in
	case n.Kind == yaml.MappingNode:
		fields := map[string]*yaml.Node{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			fields[n.Content[i].Value] = n.Content[i+1]
		}
		in, ok := fields["input"]
		if !ok {
			v.add(field, "input is required (write a plain input as a JSON string: '{\"text\":\"hi\"}')")
			return ex, false
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if key := n.Content[i].Value; !exampleKeys[key] {
				v.add(field, "unknown field %s (want input, output, error, needs_network, asks, turns)", key)
				return ex, false
			}
		}
		if ex.Input, ok = v.exampleValue(field+".input", in); !ok {
			return ex, false
		}
		if out, has := fields["output"]; has {
			if ex.Output, ok = v.exampleValue(field+".output", out); !ok {
				return ex, false
			}
		}
		if e, has := fields["error"]; has {
			if ex.Error, ok = v.expectedError(field+".error", e); !ok {
				return ex, false
			}
			if ex.Output != nil {
				v.add(field, "output and error exclude each other")
				return ex, false
			}
		}
		if !v.turnsOf(field, fields, &ex) {
			return ex, false
		}
		if nn, has := fields["needs_network"]; has {
			if err := nn.Decode(&ex.NeedsNetwork); err != nil || nn.Tag != "!!bool" {
				v.add(field+".needs_network", "must be true or false")
				return ex, false
			}
		}
	default:
		v.add(field, "must be the input as a JSON string, or a mapping {input, output?, error?}")
		return ex, false
	}
	if s.input != nil && !v.matches(field, "input_schema", ex.Input, s.input.Validate) {
		return ex, false
	}
	if ex.Output != nil && s.output != nil && string(ex.Output) != "null" &&
		!v.matches(field+".output", "output_schema", ex.Output, s.output.Validate) {
		return ex, false
	}
	return ex, true
}

// turnsOf decodes a multi-turn example's asks and turns.
func (v *validator) turnsOf(field string, fields map[string]*yaml.Node, ex *Example) bool {
	if a, has := fields["asks"]; has {
		if ex.Asks, _ = v.asks(field+".asks", a); ex.Asks == nil {
			return false
		}
		if ex.Output != nil || ex.Error != nil {
			v.add(field, "asks excludes output and error (they go in the last of turns)")
			return false
		}
	}
	t, has := fields["turns"]
	if !has {
		return true
	}
	if ex.Asks == nil || t.Kind != yaml.SequenceNode || len(t.Content) == 0 || len(t.Content) > maxTurns {
		v.add(field+".turns", "must be a list of 1 to %d follow-ups {reply, asks?|output?|error?}, after asks", maxTurns)
		return false
	}
	for k, n := range t.Content {
		f := fmt.Sprintf("%s.turns[%d]", field, k)
		turn, ok := v.turn(f, n)
		if !ok {
			return false
		}
		if last := k == len(t.Content)-1; last != (turn.Asks == nil) {
			v.add(f, "every turn but the last asks again (asks), the last one does not")
			return false
		}
		ex.Turns = append(ex.Turns, turn)
	}
	return true
}

// turn decodes one follow-up {reply, asks?, output?, error?}.
func (v *validator) turn(field string, n *yaml.Node) (Turn, bool) {
	var t Turn
	if n.Kind != yaml.MappingNode {
		v.add(field, "must be a mapping {reply, asks?, output?, error?}")
		return t, false
	}
	ok := true
	for i := 0; ok && i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i].Value, n.Content[i+1]
		switch {
		case !turnKeys[key]:
			v.add(field, "unknown field %s (want reply, asks, output, error)", key)
			ok = false
		case key == "reply":
			t.Reply, ok = v.exampleValue(field+".reply", val)
		case key == "asks":
			t.Asks, ok = v.asks(field+".asks", val)
		case key == "output":
			t.Output, ok = v.exampleValue(field+".output", val)
		case key == "error":
			t.Error, ok = v.expectedError(field+".error", val)
		}
	}
	if ok && t.Reply == nil {
		v.add(field, "reply is required")
		ok = false
	}
	if ok && (t.Asks != nil && (t.Output != nil || t.Error != nil) || t.Output != nil && t.Error != nil) {
		v.add(field, "asks, output and error exclude each other")
		ok = false
	}
	return t, ok
}

// asks decodes the text an example expects a question to contain.
func (v *validator) asks(field string, n *yaml.Node) (*string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" || len(n.Value) > maxShortLen {
		v.add(field, "must be a string the question contains (at most %d bytes)", maxShortLen)
		return nil, false
	}
	s := n.Value
	return &s, true
}

// exampleJSON checks and compacts JSON text.
func (v *validator) exampleJSON(field string, text []byte) (json.RawMessage, bool) {
	if len(text) > examplesMaxSize {
		v.add(field, "must be at most %d bytes", examplesMaxSize)
		return nil, false
	}
	doc, err := decodeJSON(text)
	if err != nil {
		v.add(field, "is not valid JSON: %v", err)
		return nil, false
	}
	compact, _ := json.Marshal(doc) // decoded JSON always encodes
	return compact, true
}

// exampleValue turns a YAML value into compact JSON.
func (v *validator) exampleValue(field string, n *yaml.Node) (json.RawMessage, bool) {
	doc, err := yamlToJSON(n)
	if err != nil {
		v.add(field, "not representable as JSON: %v", err)
		return nil, false
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		v.add(field, "not representable as JSON: %v", err)
		return nil, false
	}
	return v.exampleJSON(field, raw)
}

// matches validates compact JSON against a compiled schema.
func (v *validator) matches(field, schema string, raw json.RawMessage, validate func(any) error) bool {
	doc, _ := decodeJSON(raw) // compacted from valid JSON
	if err := validate(doc); err != nil {
		v.add(field, "does not match %s: %s", schema, schemaMessage(err))
		return false
	}
	return true
}

// expectedError decodes {code?, reason?}: code is a plugin error code
// (string) or a JSON-RPC code (integer).
func (v *validator) expectedError(field string, n *yaml.Node) (*ExpectedError, bool) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return &ExpectedError{}, true
	}
	if n.Kind != yaml.MappingNode {
		v.add(field, "must be a mapping {code?, reason?}")
		return nil, false
	}
	e := &ExpectedError{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i].Value, n.Content[i+1]
		switch {
		case key == "code" && val.Tag == "!!int":
			c, err := strconv.Atoi(val.Value)
			if err != nil || c == 0 {
				v.add(field+".code", "%q is not a JSON-RPC error code", val.Value)
				return nil, false
			}
			e.RPCCode = c
		case key == "code" && val.Tag == "!!str" && val.Value != "" && len(val.Value) <= maxShortLen:
			e.Code = val.Value
		case key == "code":
			v.add(field+".code", "must be the plugin's error code (a string) or a JSON-RPC code (an integer)")
			return nil, false
		case key == "reason" && val.Tag == "!!str" && reReason.MatchString(val.Value):
			e.Reason = val.Value
		case key == "reason":
			v.add(field+".reason", "must be a host reason such as plugin_error, timeout or trap")
			return nil, false
		default:
			v.add(field, "unknown field %s (want code, reason)", key)
			return nil, false
		}
	}
	return e, true
}
