//go:build !invariants

package packet

import "testing"

// Without the invariants tag a broken ownership rule is counted and
// survived.
func TestDoubleReleaseCounted(t *testing.T) {
	p := newPool(t, Config{BatchCap: 1})
	b := p.Get()
	b.Release()
	b.Release()
	b.Retain()
	s := p.Stats()
	if s.DoubleReleases != 2 || s.Puts != 1 || s.Live != 0 {
		t.Fatalf("%+v", s)
	}
	if b.Refs() != 0 {
		t.Fatalf("refs %d after violations, want 0", b.Refs())
	}
}
