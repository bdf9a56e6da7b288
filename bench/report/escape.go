package report

import (
	"strings"
	"unicode"
)

// Inline makes text from an input file (a case name, a reason, a meta value, a path) safe
// inside one line of Markdown: OneLine, and '<' written "&lt;" so that it cannot open an
// HTML tag.
func Inline(s string) string {
	return strings.ReplaceAll(OneLine(s), "<", "&lt;")
}

// OneLine replaces line breaks (\r, \n, U+2028, U+2029), tabs and other control
// characters in s with spaces, so that the text cannot end its line and start a heading, a
// list item or a table row of its own (nor move a terminal's cursor).
func OneLine(s string) string {
	if strings.IndexFunc(s, breaksLine) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if breaksLine(r) {
			return ' '
		}
		return r
	}, s)
}

// breaksLine reports whether OneLine replaces r.
func breaksLine(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || r == '\uFEFF'
}

// EscapeCell makes s safe as one cell of a Markdown table: Inline, and '|' escaped, so that
// text from an input file cannot end the cell or the row or add rows.
func EscapeCell(s string) string {
	return strings.ReplaceAll(Inline(s), "|", `\|`)
}

// Code returns s as an inline code span that s cannot end (fenced by one backtick more
// than the longest run of backticks in it), after Inline.
func Code(s string) string {
	s = Inline(s)
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if longest > 0 {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}
