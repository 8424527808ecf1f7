package record

import "testing"

// -o sql takes any byte: a NUL goes as a blob read back as text.
func TestSQLTakesNUL(t *testing.T) {
	if got := sqlValue("a\x00b'c"); got != "CAST(X'6100622763' AS TEXT)" {
		t.Errorf("got %s", got)
	}
	if got := sqlValue("it's"); got != "'it''s'" {
		t.Errorf("got %s", got)
	}
}
