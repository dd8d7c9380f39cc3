package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/skillhost/skillhost/sdk"
)

func TestRender(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   RenderIn
		want string
	}{
		{"heading and emphasis", RenderIn{Markdown: "# Title\n\nSome *emphasis* and **bold**."},
			"<h1>Title</h1>\n<p>Some <em>emphasis</em> and <strong>bold</strong>.</p>\n"},
		{"table", RenderIn{Markdown: "| a | b |\n|---|---|\n| 1 | 2 |"},
			"<table>\n<thead>\n<tr>\n<th>a</th>\n<th>b</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td>1</td>\n<td>2</td>\n</tr>\n</tbody>\n</table>\n"},
		{"strikethrough", RenderIn{Markdown: "~~old~~"}, "<p><del>old</del></p>\n"},
		{"inline html escaped", RenderIn{Markdown: "hi <b onclick=\"x()\">there</b>"},
			"<p>hi &lt;b onclick=&#34;x()&#34;&gt;there&lt;/b&gt;</p>\n"},
		{"script block escaped", RenderIn{Markdown: "<script>alert(1)</script>\n"},
			"<p>&lt;script&gt;alert(1)&lt;/script&gt;\n</p>\n"},
		{"javascript link dropped", RenderIn{Markdown: "[x](javascript:alert(1))"}, "<p><a href=\"\">x</a></p>\n"},
		{"html allowed", RenderIn{Markdown: "hi <b>there</b>", AllowHTML: true}, "<p>hi <b>there</b></p>\n"},
		{"empty", RenderIn{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := render(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got.HTML); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestRenderRefusesHostileInput(t *testing.T) {
	t.Parallel()
	for name, md := range map[string]string{
		"too large":     strings.Repeat("a", maxMarkdownBytes+1),
		"invalid utf8":  "a\xffb",
		"deep quotes":   strings.Repeat(">", 50000) + " x",
		"spaced quotes": "text\n" + strings.Repeat("> ", maxQuoteDepth+1) + "x",
	} {
		_, err := render(RenderIn{Markdown: md})
		var se *sdk.Error
		if !errors.As(err, &se) || se.Code != sdk.CodeInvalidInput {
			t.Errorf("%s: error = %v, want invalid_input", name, err)
		}
	}
}

// TestRenderDeepNesting: pathological nesting within the size cap renders
// without blowing up.
func TestRenderDeepNesting(t *testing.T) {
	t.Parallel()
	for _, md := range []string{strings.Repeat("> ", maxQuoteDepth) + "x", strings.Repeat("[", 50000), strings.Repeat("*a ", 50000), strings.Repeat("- ", 50000)} {
		if _, err := render(RenderIn{Markdown: md}); err != nil {
			t.Errorf("render(%.10q…) = %v", md, err)
		}
	}
}
