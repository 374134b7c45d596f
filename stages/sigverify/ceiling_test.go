package sigverify

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/tpugo/tpu/txview"
)

// recordingBackend records the signatures it is asked to check and
// checks them with a real backend.
type recordingBackend struct {
	real Backend
	sigs [][64]byte
	bad  int // checks that failed
}

func (r *recordingBackend) Name() string { return "recording" }

func (r *recordingBackend) Verify(pub *[32]byte, msg []byte, sig *[64]byte) bool {
	r.sigs = append(r.sigs, *sig)
	ok := r.real.Verify(pub, msg, sig)
	if !ok {
		r.bad++
	}
	return ok
}

// stepClock returns a clock that moves by step at each call.
func stepClock(step time.Duration) func() time.Time {
	t := time.Unix(1000, 0)
	return func() time.Time {
		t = t.Add(step)
		return t
	}
}

// TestCeilingCounts runs Ceiling on a clock that moves 1 ms per reading:
// over 4 ms it checks 4 transactions (a reading before the first and after
// each; the one after the fourth, 4 ms on, ends it), every signature of
// each, cycling through the ones that parse in order, and reports
// 4 / 4 ms x cores.
func TestCeilingCounts(t *testing.T) {
	k1, k2 := testKey(1), testKey(2)
	two := signed(t, txview.Message{
		Payer:        txview.PublicKey(k1),
		Blockhash:    testAddr(200),
		Instructions: []txview.Ix{txview.Transfer(txview.PublicKey(k2), testAddr(9), 5)},
	}, k1, k2)
	a, c := transfer(t, 3), transfer(t, 4)
	txs := [][]byte{a, {0x01, 0x02}, two, c}
	sigsOf := func(tx []byte) [][64]byte {
		v, err := txview.Parse(tx)
		if err != nil {
			t.Fatal(err)
		}
		var out [][64]byte
		for s := range v.NumSignatures() {
			out = append(out, *v.Signature(s))
		}
		return out
	}
	if len(sigsOf(two)) != 2 {
		t.Fatalf("the two-signer transaction has %d signatures", len(sigsOf(two)))
	}
	var want [][64]byte
	for _, tx := range [][]byte{a, two, c, a} {
		want = append(want, sigsOf(tx)...)
	}
	for _, cores := range []int{1, 3} {
		b := &recordingBackend{real: mustBackend(t, DefaultBackend)}
		got := ceiling(b, txs, cores, 4*time.Millisecond, stepClock(time.Millisecond))
		if wantRate := 4 / 0.004 * float64(cores); math.Abs(got-wantRate) > 1e-6*wantRate {
			t.Errorf("%d cores: ceiling %v, want %v", cores, got, wantRate)
		}
		if len(b.sigs) != len(want) {
			t.Fatalf("%d cores: %d signatures checked, want %d", cores, len(b.sigs), len(want))
		}
		for i := range want {
			if !bytes.Equal(b.sigs[i][:], want[i][:]) {
				t.Errorf("%d cores: check %d is not of the expected transaction's signature", cores, i)
			}
		}
		if b.bad != 0 {
			t.Errorf("%d of the checks failed: the message or key handed over is wrong", b.bad)
		}
	}
}

// TestCeilingCapsDistinct: at most CeilingTxs transactions are cycled
// through; the next check after them is the first again.
func TestCeilingCapsDistinct(t *testing.T) {
	tx := transfer(t, 1)
	other := transfer(t, 2)
	txs := make([][]byte, CeilingTxs+1)
	for i := range CeilingTxs {
		txs[i] = tx
	}
	txs[CeilingTxs] = other // beyond the cap: never checked
	b := &recordingBackend{real: mustBackend(t, DefaultBackend)}
	ceiling(b, txs, 1, (CeilingTxs+1)*time.Millisecond, stepClock(time.Millisecond))
	if len(b.sigs) != CeilingTxs+1 {
		t.Fatalf("%d checks, want %d", len(b.sigs), CeilingTxs+1)
	}
	v, _ := txview.Parse(other)
	for i, s := range b.sigs {
		if s == *v.Signature(0) {
			t.Fatalf("check %d is of transaction %d, beyond the cap", i, CeilingTxs)
		}
	}
}

func TestCeilingNothingToMeasure(t *testing.T) {
	b := &recordingBackend{real: mustBackend(t, DefaultBackend)}
	for _, tc := range []struct {
		name string
		txs  [][]byte
		d    time.Duration
	}{
		{"no transactions", nil, time.Millisecond},
		{"none parses", [][]byte{{0}, {1, 2, 3}}, time.Millisecond},
		{"no time", [][]byte{transfer(t, 1)}, 0},
	} {
		if got := Ceiling(b, tc.txs, 4, tc.d); got != 0 {
			t.Errorf("%s: %v, want 0", tc.name, got)
		}
	}
	if len(b.sigs) != 0 {
		t.Errorf("%d signatures checked", len(b.sigs))
	}
}

// TestCeilingRestsOnWork: a clock that passes the duration at its first
// step (the goroutine descheduled between the first two readings) still
// gets one check, every signature of the transaction, and a figure from
// it: 1 transaction in an hour, x cores. It returned 0 from no check when
// the clock was read twice before any.
func TestCeilingRestsOnWork(t *testing.T) {
	two := signed(t, txview.Message{
		Payer:        txview.PublicKey(testKey(1)),
		Blockhash:    testAddr(200),
		Instructions: []txview.Ix{txview.Transfer(txview.PublicKey(testKey(2)), testAddr(9), 5)},
	}, testKey(1), testKey(2))
	b := &recordingBackend{real: mustBackend(t, DefaultBackend)}
	got := ceiling(b, [][]byte{two}, 3, 5*time.Millisecond, stepClock(time.Hour))
	if want := 1 / time.Hour.Seconds() * 3; math.Abs(got-want) > 1e-6*want || len(b.sigs) != 2 || b.bad != 0 {
		t.Fatalf("ceiling %v after %d checks (%d failed), want %v after 2", got, len(b.sigs), b.bad, want)
	}
	r := &recordingMulti{lanesBackend: lanesBackend{path: portablePath}}
	if got := ceiling(r, [][]byte{two}, 1, 5*time.Millisecond, stepClock(time.Hour)); got <= 0 || len(r.chunks) != 1 {
		t.Fatalf("multi: ceiling %v after %d chunks, want one", got, len(r.chunks))
	}
}

// TestCeilingRealClock checks the real clock's path: a positive rate,
// from at least one check.
func TestCeilingRealClock(t *testing.T) {
	b := &recordingBackend{real: mustBackend(t, DefaultBackend)}
	if got := Ceiling(b, [][]byte{transfer(t, 1), transfer(t, 2)}, 2, 5*time.Millisecond); got <= 0 || len(b.sigs) == 0 {
		t.Fatalf("ceiling %v after %d checks", got, len(b.sigs))
	}
}

// recordingMulti is a multi-signature backend that records the chunks it
// is given and checks them with the lanes backend.
type recordingMulti struct {
	lanesBackend
	chunks [][][64]byte
}

func (r *recordingMulti) verifyChecks(checks []sigCheck) {
	var chunk [][64]byte
	for _, c := range checks {
		chunk = append(chunk, *c.sig)
	}
	r.chunks = append(r.chunks, chunk)
	r.lanesBackend.verifyChecks(checks)
	for _, c := range checks {
		if !c.ok {
			panic("ceiling: a valid signature failed")
		}
	}
}

// TestCeilingMulti: a backend that checks several signatures per call
// gets chunks of whole transactions, at least chunkSignatures signatures
// each, and a transaction counts once for each time it is in a chunk.
func TestCeilingMulti(t *testing.T) {
	k1, k2 := testKey(1), testKey(2)
	two := signed(t, txview.Message{
		Payer:        txview.PublicKey(k1),
		Blockhash:    testAddr(200),
		Instructions: []txview.Ix{txview.Transfer(txview.PublicKey(k2), testAddr(9), 5)},
	}, k1, k2)
	txs := [][]byte{transfer(t, 3), two, transfer(t, 4)} // 4 signatures in a cycle
	r := &recordingMulti{lanesBackend: lanesBackend{path: portablePath}}
	// A reading before the first chunk and after each: the one after the
	// second, 2 ms on, ends it.
	got := ceiling(r, txs, 2, 2*time.Millisecond, stepClock(time.Millisecond))
	if len(r.chunks) != 2 {
		t.Fatalf("%d chunks, want 2", len(r.chunks))
	}
	for i, c := range r.chunks {
		if len(c) != chunkFor(r) {
			t.Errorf("chunk %d: %d signatures, want %d (two cycles of 4)", i, len(c), chunkFor(r))
		}
	}
	// 6 transactions per chunk (two cycles of 3), 12 in 2 ms, x 2 cores.
	if want := 12 / 0.002 * 2; math.Abs(got-want) > 1e-6*want {
		t.Errorf("ceiling %v, want %v", got, want)
	}
}
