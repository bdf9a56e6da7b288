package report

import (
	"strings"
	"testing"
)

// TestEscape: text from input files cannot leave its line, its table cell or its code
// span, nor open an HTML tag.
func TestEscape(t *testing.T) {
	hostile := "a|b\nc\r\nd\re\u2028f\u2029g\x1b[31mh\ti<script>"
	for name, got := range map[string]string{"Inline": Inline(hostile), "EscapeCell": EscapeCell(hostile), "OneLine": OneLine(hostile)} {
		if strings.ContainsAny(got, "\n\r\u2028\u2029\x1b\t") {
			t.Errorf("%s(%q) = %q keeps a line break or control character", name, hostile, got)
		}
	}
	if got := EscapeCell(hostile); strings.Contains(strings.ReplaceAll(got, `\|`, ""), "|") || strings.Contains(got, "<script>") {
		t.Errorf("EscapeCell = %q: an unescaped '|' or a tag", got)
	}
	if got := OneLine("plain | text"); got != "plain | text" {
		t.Errorf("OneLine changed plain text: %q", got)
	}
	for in, want := range map[string]string{"path": "`path`", "a`b": "`` a`b ``", "x``y": "``` x``y ```"} {
		if got := Code(in); got != want {
			t.Errorf("Code(%q) = %q, want %q", in, got, want)
		}
	}
}
