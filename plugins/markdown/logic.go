package main

import (
	"bytes"
	"html"
	"strings"
	"unicode/utf8"

	"github.com/skillhost/skillhost/sdk"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	ghtml "github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/util"
)

// RenderIn is the input of render.
type RenderIn struct {
	Markdown  string `json:"markdown"`
	AllowHTML bool   `json:"allow_html,omitempty"` // pass raw HTML through unescaped (unsafe)
}

// RenderOut is the output of render.
type RenderOut struct {
	HTML string `json:"html"`
}

// maxMarkdownBytes caps the input; maxQuoteDepth caps blockquote nesting,
// whose parsing cost grows with the square of the depth.
const (
	maxMarkdownBytes = 256 << 10
	maxQuoteDepth    = 100
)

// quoteDepth returns the deepest run of blockquote markers ('>' possibly
// separated by blanks) that starts a line.
func quoteDepth(md string) int {
	deepest := 0
	for line := range strings.SplitSeq(md, "\n") {
		n := 0
		for _, c := range []byte(line) {
			if c == '>' {
				n++
			} else if c != ' ' && c != '\t' {
				break
			}
		}
		deepest = max(deepest, n)
	}
	return deepest
}

// escapingRawHTML renders raw HTML (blocks and inline) as escaped text, so
// "<script>" shows up as the characters a reader typed and never runs.
type escapingRawHTML struct{}

// RegisterFuncs implements renderer.NodeRenderer.
func (escapingRawHTML) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindHTMLBlock, renderHTMLBlock)
	reg.Register(ast.KindRawHTML, renderRawHTML)
}

func renderHTMLBlock(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*ast.HTMLBlock)
	if entering {
		_, _ = w.WriteString("<p>")
		lines := n.Lines()
		for i := range lines.Len() {
			seg := lines.At(i)
			_, _ = w.WriteString(html.EscapeString(string(seg.Value(src))))
		}
		return ast.WalkContinue, nil
	}
	if n.HasClosure() {
		_, _ = w.WriteString(html.EscapeString(string(n.ClosureLine.Value(src))))
	}
	_, _ = w.WriteString("</p>\n")
	return ast.WalkContinue, nil
}

func renderRawHTML(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkSkipChildren, nil
	}
	n := node.(*ast.RawHTML)
	for i := range n.Segments.Len() {
		seg := n.Segments.At(i)
		_, _ = w.WriteString(html.EscapeString(string(seg.Value(src))))
	}
	return ast.WalkSkipChildren, nil
}

var (
	safe = goldmark.New(
		goldmark.WithExtensions(extension.GFM),
		goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(escapingRawHTML{}, 0))),
	)
	unsafe = goldmark.New(
		goldmark.WithExtensions(extension.GFM),
		goldmark.WithRendererOptions(ghtml.WithUnsafe()),
	)
)

func render(in RenderIn) (RenderOut, error) {
	if len(in.Markdown) > maxMarkdownBytes {
		return RenderOut{}, sdk.InvalidInput("markdown is %d bytes; the limit is %d", len(in.Markdown), maxMarkdownBytes)
	}
	if !utf8.ValidString(in.Markdown) {
		return RenderOut{}, sdk.InvalidInput("markdown is not valid UTF-8")
	}
	if d := quoteDepth(in.Markdown); d > maxQuoteDepth {
		return RenderOut{}, sdk.InvalidInput("blockquotes nest %d deep; the limit is %d", d, maxQuoteDepth)
	}
	md := safe
	if in.AllowHTML {
		md = unsafe
	}
	var out bytes.Buffer
	if err := md.Convert([]byte(in.Markdown), &out); err != nil {
		return RenderOut{}, sdk.Errorf("render_failed", "render: %v", err)
	}
	return RenderOut{HTML: out.String()}, nil
}
