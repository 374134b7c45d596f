package loadgen

import (
	"flag"
	"io"
	"testing"
)

// Each mode's name reads back as the mode, through ParseContention and
// through a flag.TextVar (how tpu run and tpu gen read it); other names
// are refused.
func TestContentionText(t *testing.T) {
	for _, tc := range []struct {
		name string
		want Contention
		ok   bool
	}{
		{"none", ContentionNone, true},
		{"same-batch-only", ContentionSameBatchOnly, true},
		{"full", ContentionFull, true},
		{"", 0, false},
		{"Full", 0, false},
		{"some", 0, false},
	} {
		got, err := ParseContention(tc.name)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseContention(%q) = %v, %v; want %v, ok %v", tc.name, got, err, tc.want, tc.ok)
		}
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var c Contention
		fs.TextVar(&c, "contention", ContentionFull, "")
		if err := fs.Parse([]string{"--contention", tc.name}); (err == nil) != tc.ok || (tc.ok && c != tc.want) {
			t.Errorf("--contention %q: %v, %v; want %v, ok %v", tc.name, c, err, tc.want, tc.ok)
		}
		if tc.ok {
			if b, err := tc.want.MarshalText(); err != nil || string(b) != tc.name || tc.want.String() != tc.name {
				t.Errorf("%v: MarshalText %q, %v; String %q; want %q", tc.want, b, err, tc.want.String(), tc.name)
			}
		}
	}
	if _, err := (ContentionFull + 1).MarshalText(); err == nil {
		t.Error("MarshalText of an unknown mode: no error")
	}
}
