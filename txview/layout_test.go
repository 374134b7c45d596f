package txview

import (
	"reflect"
	"testing"
)

// TestLayoutRoundTrip: for every valid transaction of the corpus and of
// the benchmark shapes, the View that a Layout gives back over the same
// bytes, and over a copy, is the View Parse returns.
func TestLayoutRoundTrip(t *testing.T) {
	var txs [][]byte
	for _, e := range loadCorpus(t) {
		if e.Parsed.ParseError == nil && e.Parsed.SanitizeError == nil {
			txs = append(txs, mustHex(t, e.Hex))
		}
	}
	for _, c := range benchCases {
		txs = append(txs, c.make(t))
	}
	if len(txs) < 50 {
		t.Fatalf("only %d valid transactions to check", len(txs))
	}
	for i, tx := range txs {
		v, err := Parse(tx)
		if err != nil {
			t.Fatalf("tx %d: %v", i, err)
		}
		l := v.Layout()
		got, ok := l.View(tx)
		if !ok || !reflect.DeepEqual(got, v) {
			t.Fatalf("tx %d: Layout.View = %+v %v, want %+v", i, got, ok, v)
		}
		cp := append([]byte(nil), tx...)
		want, err := Parse(cp)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := l.View(cp); !ok || !reflect.DeepEqual(got, want) {
			t.Fatalf("tx %d: Layout.View of a copy = %+v %v, want %+v", i, got, ok, want)
		}
		if got, ok := v.Rebase(cp); !ok || !reflect.DeepEqual(got, want) || &got.Bytes()[0] != &cp[0] {
			t.Fatalf("tx %d: Rebase onto a copy = %+v %v, want %+v", i, got, ok, want)
		}
	}
}

// TestLayoutRefuses: a Layout that is not one (zero, poisoned) or that
// does not fit the bytes gives no View, so the caller parses.
func TestLayoutRefuses(t *testing.T) {
	tx := transferTx(t)
	v, err := Parse(tx)
	if err != nil {
		t.Fatal(err)
	}
	good := v.Layout()
	var poisoned Layout
	for i := range poisoned {
		poisoned[i] = 0xdb
	}
	trailing := good
	trailing[23] = 1
	for _, c := range []struct {
		name string
		l    Layout
		data []byte
	}{
		{"zero", Layout{}, tx},
		{"zero on empty bytes", Layout{}, nil},
		{"poisoned", poisoned, tx},
		{"not written by Layout", trailing, tx},
		{"shorter bytes", good, tx[:len(tx)-1]},
		{"longer bytes", good, append(append([]byte(nil), tx...), 0)},
		{"empty bytes", good, nil},
	} {
		if got, ok := c.l.View(c.data); ok || !reflect.DeepEqual(got, View{}) {
			t.Errorf("%s: View = %+v %v, want the zero View and false", c.name, got, ok)
		}
	}
	if (View{}).Layout() != (Layout{}) {
		t.Error("the zero View's Layout is not zero")
	}
	if _, ok := v.Rebase(tx[:10]); ok {
		t.Error("Rebase onto bytes of another length succeeded")
	}
	if _, ok := (View{}).Rebase(tx); ok {
		t.Error("Rebase of the zero View succeeded")
	}
}

func TestLayoutAllocs(t *testing.T) {
	tx := transferTx(t)
	v, _ := Parse(tx)
	if a := testing.AllocsPerRun(200, func() {
		l := v.Layout()
		if _, ok := l.View(tx); !ok {
			t.Fatal("round trip failed")
		}
	}); a != 0 {
		t.Fatalf("Layout round trip allocated %.1f times, want 0", a)
	}
}

// TestParsesCounts: in the invariants build every Parse call is counted,
// failures included; in the plain build nothing is.
func TestParsesCounts(t *testing.T) {
	tx := transferTx(t)
	before := Parses()
	Parse(tx)
	Parse(tx[:5])
	want := uint64(0)
	if Counting {
		want = 2
	}
	if got := Parses() - before; got != want {
		t.Fatalf("two Parse calls counted %d, want %d (Counting %v)", got, want, Counting)
	}
}

// BenchmarkLayout is what a consumer pays to get the View sigverify
// found, against parsing again.
func BenchmarkLayout(b *testing.B) {
	tx := transferTx(b)
	v, _ := Parse(tx)
	l := v.Layout()
	b.Run("op=view-from-layout", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(tx)))
		for b.Loop() {
			if _, ok := l.View(tx); !ok {
				b.Fatal("no view")
			}
		}
	})
	b.Run("op=parse", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(tx)))
		for b.Loop() {
			if _, err := Parse(tx); err != nil {
				b.Fatal(err)
			}
		}
	})
}
