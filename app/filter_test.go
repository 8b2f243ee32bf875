package app_test

import (
	"testing"

	"github.com/queuehq/queue/app"
)

// A kind prefix's upper bound is ASCII (a PostgreSQL database in LATIN1 or
// SQL_ASCII cannot take a parameter past it), and every kind or tag that
// starts with the prefix sorts below it.
func TestPrefixEndIsASCIIAndBoundsEveryKind(t *testing.T) {
	const kindChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:-"
	for _, prefix := range []string{"", "a", "email.", "z", "Z9:-_"} {
		end := app.PrefixEnd(prefix)
		for i := 0; i < len(end); i++ {
			if end[i] >= 0x80 {
				t.Fatalf("PrefixEnd(%q) = %q: byte %d is past ASCII", prefix, end, i)
			}
		}
		for _, c := range kindChars {
			k := prefix + string(c) + "zzz"
			if app.ValidateKind(k) != nil || app.ValidateTag(k) != nil {
				t.Fatalf("%q: not a kind or tag; the test's characters are wrong", k)
			}
			if !(k >= prefix && k < end) || !app.InPrefixRange(k, prefix) {
				t.Errorf("kind %q falls outside [%q, %q)", k, prefix, end)
			}
		}
		if prefix != "" && (app.InPrefixRange(prefix[:len(prefix)-1], prefix) || app.InPrefixRange(prefix+"\x7f", prefix)) {
			t.Errorf("the range of %q holds a string that does not start with it", prefix)
		}
	}
	if app.ValidateKind("a\x7f") == nil || app.ValidateTag("a\x7f") == nil || app.ValidateKind("aé") == nil {
		t.Error("a kind or tag may hold DEL or a letter past ASCII; PrefixEnd's bound would not hold it")
	}
}
