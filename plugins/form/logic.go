package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/skillhost/skillhost/sdk"
)

// Caps on a form.
const (
	maxFields      = 32
	maxFieldBytes  = 64
	maxAnswerBytes = 4 << 10
)

// form is the first message's data: the fields to fill, in order.
type form struct {
	Fields []string `json:"fields"`
}

// question is the data part sent with each question.
type question struct {
	Field string `json:"field"`
	Index int    `json:"index"` // 0-based
	Of    int    `json:"of"`
}

// fill reads the task's messages (the first names the fields, each later
// user message answers the next field; an empty answer is asked again) and
// either asks for the next field (sdk.AskInput) or returns the answers as a
// JSON object in the fields' order.
func fill(history []sdk.Message) ([]byte, error) {
	if len(history) == 0 || history[0].Role != "user" {
		return nil, sdk.InvalidInput("the task has no first message")
	}
	var f form
	if err := history[0].Decode(&f); err != nil {
		return nil, sdk.InvalidInput(`the first message must be a data part {"fields": [...]}: %v`, err)
	}
	if err := check(f.Fields); err != nil {
		return nil, err
	}
	var answers []string
	retry := ""
	for _, m := range history[1:] {
		if m.Role != "user" || len(answers) == len(f.Fields) {
			continue
		}
		a := strings.TrimSpace(m.Text)
		switch {
		case a == "":
			retry = "An empty answer does not fill it. "
		case len(a) > maxAnswerBytes:
			retry = fmt.Sprintf("That answer is over %d bytes. ", maxAnswerBytes)
		default:
			answers, retry = append(answers, a), ""
		}
	}
	if n := len(answers); n < len(f.Fields) {
		field := f.Fields[n]
		return nil, sdk.AskInput(fmt.Sprintf("%sPlease enter %s (%d of %d).", retry, field, n+1, len(f.Fields))).
			WithData(question{Field: field, Index: n, Of: len(f.Fields)})
	}
	var b strings.Builder // an object in the fields' order
	b.WriteByte('{')
	for i, field := range f.Fields {
		k, _ := json.Marshal(field) // strings always encode
		v, _ := json.Marshal(answers[i])
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

// check refuses an empty, oversized or repeated field list.
func check(fields []string) error {
	if len(fields) == 0 || len(fields) > maxFields {
		return sdk.InvalidInput("fields must list 1 to %d field names", maxFields)
	}
	seen := map[string]bool{}
	for _, f := range fields {
		switch {
		case strings.TrimSpace(f) == "" || len(f) > maxFieldBytes || !utf8.ValidString(f):
			return sdk.InvalidInput("a field name must be non-empty text of at most %d bytes", maxFieldBytes)
		case seen[f]:
			return sdk.InvalidInput("field %q is listed twice", f)
		}
		seen[f] = true
	}
	return nil
}
