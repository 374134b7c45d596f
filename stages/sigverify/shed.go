package sigverify

import (
	"net/netip"
	"slices"

	"github.com/tpugo/tpu/packet"
)

// Shedder discards the packets that exceed what sigverify can verify,
// fairly by source IP address, as Agave's discard_excess_packets does: the
// budget is shared out round by round, each address keeping its earliest
// packets. A single flooding address therefore cannot push out the
// packets of quiet ones. The arithmetic is Agave's, quirk included: within
// a round each address may take ceil(left / addresses in the round), where
// left shrinks as the round goes, so 10 places for two addresses of 10
// packets each come out 6 and 4. Addresses take their turns in address
// order (Agave's follow its hash map).
//
// A Shedder reuses its scratch space between calls and is not safe for
// concurrent use.
type Shedder struct {
	entries []shedEntry
	groups  []shedGroup
}

type shedEntry struct {
	addr netip.Addr
	seq  int // arrival order
	p    *packet.Packet
}

type shedGroup struct {
	start, n int // entries[start:start+n], in arrival order
	keep     int
	left     int // packets not yet granted a place
}

// Shed keeps at most max of the live packets of batches and discards the
// rest with outcome packet.OutcomeShed, returning how many it discarded.
// It borrows the batches; the caller must hold the sole reference of each.
// Packets already discarded are neither kept nor counted.
func (s *Shedder) Shed(batches []*packet.Batch, max int) int {
	s.entries = s.entries[:0]
	seq := 0
	for _, b := range batches {
		pkts := b.Packets()
		for i := range pkts {
			if p := &pkts[i]; !p.Discarded() {
				s.entries = append(s.entries, shedEntry{addr: p.Meta.Addr.Addr(), seq: seq, p: p})
				seq++
			}
		}
	}
	if len(s.entries) <= max {
		return 0
	}
	if max < 0 {
		max = 0
	}
	slices.SortFunc(s.entries, func(a, b shedEntry) int {
		if c := a.addr.Compare(b.addr); c != 0 {
			return c
		}
		return a.seq - b.seq
	})
	s.groups = s.groups[:0]
	for i := 0; i < len(s.entries); {
		j := i + 1
		for j < len(s.entries) && s.entries[j].addr == s.entries[i].addr {
			j++
		}
		s.groups = append(s.groups, shedGroup{start: i, n: j - i, left: j - i})
		i = j
	}

	// Share out max round by round, as Agave does: in each round every
	// address still waiting may take ceil(remaining / addresses) more.
	remaining := max
	active := len(s.groups)
	for remaining > 0 && active > 0 {
		round := active
		for g := range s.groups {
			gr := &s.groups[g]
			if gr.left == 0 {
				continue
			}
			limit := (remaining + round - 1) / round
			take := min(gr.left, limit)
			gr.keep += take
			gr.left -= take
			remaining -= take
			if gr.left == 0 {
				active--
			}
		}
	}
	shed := 0
	for _, gr := range s.groups {
		for _, e := range s.entries[gr.start+gr.keep : gr.start+gr.n] {
			e.p.Discard(packet.OutcomeShed)
			shed++
		}
	}
	clear(s.entries) // drop packet pointers: the batches go back to the pool
	return shed
}
