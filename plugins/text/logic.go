package main

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/skillhost/skillhost/sdk"
	"golang.org/x/text/unicode/norm"
)

// TextIn is the input of every text skill.
type TextIn struct {
	Text string `json:"text"`
}

// TextOut is the output of the transforming text skills.
type TextOut struct {
	Text string `json:"text"`
}

// CountOut is the output of word_count.
type CountOut struct {
	Words int `json:"words"`
	Chars int `json:"chars"`
	Lines int `json:"lines"`
}

// TruncateIn is the input of truncate.
type TruncateIn struct {
	Text     string  `json:"text"`
	N        int     `json:"n"`
	Ellipsis *string `json:"ellipsis,omitempty"`
}

// TruncateOut is the output of truncate.
type TruncateOut struct {
	Text      string `json:"text"`
	Truncated bool   `json:"truncated"`
}

// maxTextBytes caps the text any skill accepts (the manifest schema says so
// too; this is the guest's own guard).
const maxTextBytes = 256 << 10

func checkText(s string) error {
	if len(s) > maxTextBytes {
		return sdk.InvalidInput("text is %d bytes; the limit is %d", len(s), maxTextBytes)
	}
	if !utf8.ValidString(s) {
		return sdk.InvalidInput("text is not valid UTF-8")
	}
	return nil
}

func upper(in TextIn) (TextOut, error) {
	if err := checkText(in.Text); err != nil {
		return TextOut{}, err
	}
	return TextOut{Text: strings.ToUpper(in.Text)}, nil
}

func lower(in TextIn) (TextOut, error) {
	if err := checkText(in.Text); err != nil {
		return TextOut{}, err
	}
	return TextOut{Text: strings.ToLower(in.Text)}, nil
}

// title upper-cases the first letter of every word and lower-cases the rest.
// A word starts after any rune that is not a letter, digit or apostrophe.
func title(in TextIn) (TextOut, error) {
	if err := checkText(in.Text); err != nil {
		return TextOut{}, err
	}
	var b strings.Builder
	b.Grow(len(in.Text))
	inWord := false
	for _, r := range in.Text {
		isWordRune := unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'' || r == '’'
		switch {
		case isWordRune && !inWord:
			b.WriteRune(unicode.ToTitle(r))
		case isWordRune:
			b.WriteRune(unicode.ToLower(r))
		default:
			b.WriteRune(r)
		}
		inWord = isWordRune
	}
	return TextOut{Text: b.String()}, nil
}

// count counts words (runs of non-space runes), characters (runes) and lines
// (the number of line breaks, plus one for a final line without one; "" has
// zero lines).
func count(in TextIn) (CountOut, error) {
	if err := checkText(in.Text); err != nil {
		return CountOut{}, err
	}
	out := CountOut{
		Words: len(strings.Fields(in.Text)),
		Chars: utf8.RuneCountInString(in.Text),
		Lines: strings.Count(in.Text, "\n"),
	}
	if in.Text != "" && !strings.HasSuffix(in.Text, "\n") {
		out.Lines++
	}
	return out, nil
}

// slugify turns text into a lower-case ASCII slug: accents are stripped,
// runs of anything that is not a letter or digit become one "-", and leading
// or trailing dashes are dropped.
func slugify(in TextIn) (TextOut, error) {
	if err := checkText(in.Text); err != nil {
		return TextOut{}, err
	}
	var b strings.Builder
	dash := false
	for _, r := range norm.NFKD.String(in.Text) {
		switch {
		case unicode.Is(unicode.Mn, r): // combining accent: drop
		case r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(unicode.ToLower(r))
		default:
			dash = true
		}
	}
	return TextOut{Text: b.String()}, nil
}

// maxTruncate caps n: beyond the text limit it is meaningless.
const maxTruncate = maxTextBytes

// truncate keeps at most n runes of the text; when it cuts, the result ends
// with the ellipsis (default "…") and still has at most n runes. It never
// splits a rune.
func truncate(in TruncateIn) (TruncateOut, error) {
	if err := checkText(in.Text); err != nil {
		return TruncateOut{}, err
	}
	if in.N < 0 || in.N > maxTruncate {
		return TruncateOut{}, sdk.InvalidInput("n must be between 0 and %d, got %d", maxTruncate, in.N)
	}
	ellipsis := "…"
	if in.Ellipsis != nil {
		ellipsis = *in.Ellipsis
	}
	if err := checkText(ellipsis); err != nil {
		return TruncateOut{}, err
	}
	runes := []rune(in.Text)
	if len(runes) <= in.N {
		return TruncateOut{Text: in.Text}, nil
	}
	ell := []rune(ellipsis)
	if len(ell) > in.N {
		ell = ell[:in.N]
	}
	keep := in.N - len(ell)
	return TruncateOut{Text: string(runes[:keep]) + string(ell), Truncated: true}, nil
}

// reverse reverses the text rune by rune, keeping combining marks attached to
// their base character.
func reverse(in TextIn) (TextOut, error) {
	if err := checkText(in.Text); err != nil {
		return TextOut{}, err
	}
	// Split into clusters: a base rune followed by its combining marks.
	var clusters []string
	start := 0
	for i, r := range in.Text {
		if i > 0 && !unicode.In(r, unicode.Mn, unicode.Me) && r != '\u200d' {
			clusters = append(clusters, in.Text[start:i])
			start = i
		}
	}
	if start < len(in.Text) {
		clusters = append(clusters, in.Text[start:])
	}
	var b strings.Builder
	b.Grow(len(in.Text))
	for i := len(clusters) - 1; i >= 0; i-- {
		b.WriteString(clusters[i])
	}
	return TextOut{Text: b.String()}, nil
}
