package mcp_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/internal/mcp"
	"github.com/skillhost/skillhost/host/internal/plugin"
)

// A tool is the card's view of a skill plus the manifest's input schema,
// which must describe an object.
func TestTool(t *testing.T) {
	t.Parallel()
	p := &plugin.Plugin{Manifest: &plugin.Manifest{Name: "text", Version: "1.0.0"}}
	tests := []struct {
		name       string
		skill      plugin.Skill
		wantSchema map[string]any
		wantDesc   string
		wantErr    bool
	}{
		{"no schema", plugin.Skill{ID: "up", Description: "Upper-cases"}, map[string]any{"type": "object"}, "Upper-cases", false},
		{"object schema", plugin.Skill{ID: "up", Description: "d", InputSchema: json.RawMessage(`{"type":"object","required":["text"]}`)},
			map[string]any{"type": "object", "required": []any{"text"}}, "d", false},
		{"untyped schema", plugin.Skill{ID: "up", InputSchema: json.RawMessage(`{"properties":{"n":{"type":"number"}}}`)},
			map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "number"}}}, "up (plugin text)", false},
		{"string schema", plugin.Skill{ID: "up", InputSchema: json.RawMessage(`{"type":"string"}`)}, nil, "", true},
		{"not an object", plugin.Skill{ID: "up", InputSchema: json.RawMessage(`true`)}, nil, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tool, err := mcp.Tool(p, &tt.skill)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if tool.Name != tt.skill.ID || tool.Description != tt.wantDesc {
				t.Errorf("name %q description %q", tool.Name, tool.Description)
			}
			if diff := cmp.Diff(tt.wantSchema, tool.InputSchema); diff != "" {
				t.Errorf("input schema (-want +got):\n%s", diff)
			}
		})
	}
}
