package remote

import (
	"math"
	"math/rand/v2"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/remote/wire"
	"github.com/tpugo/tpu/stages/sigverify"
)

// auditor checks a sample of a verifier's verdicts again here. It is
// the dispatcher's: one goroutine.
//
// The sample is checked as a batch by the leader's Verifier, on copies
// of the packets: its backend checks signatures several at a time (the
// lanes backend eight), where one packet at a time
// (sigverify.CheckParsed) takes its single-signature path, several
// times the CPU a signature. The sample is drawn by geometric gaps
// rather than a random number a packet.
type auditor struct {
	rate     float64 // LeaderConfig.Audit
	verifier *sigverify.Verifier
	pool     *packet.Pool
	sample   []int           // indexes into the pass, in order
	batches  []*packet.Batch // the copies
}

// gap returns how many packets to pass over before the next one
// sampled: geometric, so that each packet is sampled with probability
// rate, independently.
func (a *auditor) gap() int {
	if a.rate >= 1 {
		return 0
	}
	// 1 - Float64 is in (0, 1]: its log is finite.
	g := math.Log(1-rand.Float64()) / math.Log1p(-a.rate)
	if g >= math.MaxInt32 {
		return math.MaxInt32
	}
	return int(g)
}

// check audits pkts' verdicts vs (wire.Verdict bytes, one a packet):
// it returns how many it checked, and the index of the first wrong
// one, or -1. It borrows pkts, reading their bytes.
func (a *auditor) check(pkts []*packet.Packet, vs []byte) (audited, wrong int) {
	if a.rate == 0 {
		return 0, -1
	}
	a.sample = a.sample[:0]
	for i := a.gap(); i < len(pkts); i += 1 + a.gap() {
		a.sample = append(a.sample, i)
	}
	if len(a.sample) == 0 {
		return 0, -1
	}
	var b *packet.Batch
	for _, i := range a.sample {
		if b == nil || b.Full() {
			b = a.pool.Get()
			a.batches = append(a.batches, b)
		}
		b.Next().Fill(pkts[i].Data())
	}
	a.verifier.Verify(a.batches...)
	wrong, k := -1, 0
	for _, b := range a.batches {
		for j := range b.Packets() {
			i := a.sample[k]
			k++
			ok := !b.At(j).Discarded()
			if wrong < 0 && ok != (wire.Verdict(vs[i]) == wire.Verdict_VERDICT_VERIFIED) {
				wrong = i
			}
		}
		b.Release()
	}
	clear(a.batches)
	a.batches = a.batches[:0]
	return len(a.sample), wrong
}
