package sigverify

import (
	"time"

	"github.com/tpugo/tpu/txview"
)

// CeilingTxs is how many distinct transactions Ceiling cycles through at
// most.
const CeilingTxs = 1024

// Ceiling measures what sigverify could do with every core and nothing
// else: one core's rate of checking the signatures of txs (transactions
// per second, every signature of each checked with b) for d, times cores.
// A tpu run compares its end-to-end rate with it.
//
// It cycles through the first CeilingTxs of txs that parse (the others
// are skipped), because the run checks a stream of different signatures:
// one signature checked over and over trains the branch predictor on its
// digits and reads 1-6% faster. It returns 0 when none parses or d is not
// positive. It borrows txs for the call; whether the signatures are valid
// does not matter to the rate. A backend that checks several signatures
// per call (lanes) gets chunks of them, as the Verifier gives it.
func Ceiling(b Backend, txs [][]byte, cores int, d time.Duration) float64 {
	return ceiling(b, txs, cores, d, time.Now)
}

// ceiling is Ceiling on a given clock: now is called once before the
// first transaction (or chunk) and once after each, and the figure is the
// transactions checked over the last reading's time since the first. So it
// always rests on work: a clock that passes d before the first check (the
// goroutine descheduled between two readings) still gets one check, and
// a figure from it, rather than 0 from none.
func ceiling(b Backend, txs [][]byte, cores int, d time.Duration, now func() time.Time) float64 {
	if d <= 0 {
		return 0
	}
	var views []txview.View
	for _, tx := range txs {
		if len(views) == CeilingTxs {
			break
		}
		if v, err := txview.Parse(tx); err == nil {
			views = append(views, v)
		}
	}
	if len(views) == 0 {
		return 0
	}
	m, multi := b.(multiBackend)
	chunk := chunkFor(b)
	checks := make([]sigCheck, 0, chunk+txview.MaxSignatures)
	n, t0 := 0, now()
	for {
		if multi {
			// A chunk of whole transactions, as the Verifier hands over.
			checks = checks[:0]
			for len(checks) < chunk {
				v := &views[n%len(views)]
				for s := range v.NumSignatures() {
					checks = append(checks, sigCheck{pub: v.StaticKey(s), sig: v.Signature(s), msg: v.Message()})
				}
				n++
			}
			m.verifyChecks(checks)
		} else {
			v := &views[n%len(views)]
			for s := range v.NumSignatures() {
				b.Verify(v.StaticKey(s), v.Message(), v.Signature(s))
			}
			n++
		}
		if elapsed := now().Sub(t0); elapsed >= d {
			return float64(n) / elapsed.Seconds() * float64(cores)
		}
	}
}
