package gpu

import (
	"regexp"
	"strings"
	"testing"
)

// slug is the regexp it replaced: runs of anything but a-z0-9 one "-",
// none at the ends, in lower case, whatever the bytes.
func TestSlug(t *testing.T) {
	nonWord := regexp.MustCompile(`[^a-z0-9]+`)
	for _, s := range []string{"", "-", "AMD EPYC 9654 96-Core Processor", "  NVIDIA H200 ", "Épyc—Ω/x86_64", "a\xffb", "--a--b--", "Intel(R) Xeon(R) Platinum 8480+"} {
		want := strings.Trim(nonWord.ReplaceAllString(strings.ToLower(s), "-"), "-")
		if got := slug(s); got != want {
			t.Errorf("slug(%q) = %q, want %q", s, got, want)
		}
	}
}
