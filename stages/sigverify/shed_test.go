package sigverify

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/tpugo/tpu/packet"
)

// fillFrom appends n packets from addr to batches taken from pool, in
// arrival order; each packet's first byte numbers it within its address.
func fillFrom(pool *packet.Pool, batches []*packet.Batch, addr string, n int) []*packet.Batch {
	ap := netip.MustParseAddrPort(addr)
	for i := 0; i < n; i++ {
		if len(batches) == 0 || batches[len(batches)-1].Full() {
			batches = append(batches, pool.Get())
		}
		p := batches[len(batches)-1].Next()
		p.Fill([]byte{byte(i)})
		p.Meta.Addr = ap
	}
	return batches
}

// kept returns, per source IP, the first bytes of the packets not shed.
func kept(batches []*packet.Batch) map[string][]byte {
	out := map[string][]byte{}
	for _, b := range batches {
		for i := range b.Packets() {
			p := b.At(i)
			if !p.Discarded() {
				k := p.Meta.Addr.Addr().String()
				out[k] = append(out[k], p.Data()[0])
			}
		}
	}
	return out
}

func release(bs []*packet.Batch) {
	for _, b := range bs {
		b.Release()
	}
}

func TestShedFloodCannotPushOutQuietSources(t *testing.T) {
	pool, _ := packet.NewPool(packet.Config{BatchCap: 16})
	var bs []*packet.Batch
	bs = fillFrom(pool, bs, "10.0.0.1:1000", 50) // the flood, first in
	bs = fillFrom(pool, bs, "10.0.0.2:2000", 5)  // quiet
	bs = fillFrom(pool, bs, "10.0.0.1:1001", 50) // more flood, another port of the same IP
	bs = fillFrom(pool, bs, "10.0.0.3:3000", 5)  // quiet
	defer release(bs)
	var s Shedder
	// 30 places for 110 packets: round 1 gives 10, 5, 5 (ceil(30/3),
	// then the quiet ones take all they have), round 2 gives the flood
	// the 10 left.
	if shed := s.Shed(bs, 30); shed != 80 {
		t.Fatalf("shed %d, want 80", shed)
	}
	k := kept(bs)
	if len(k["10.0.0.2"]) != 5 || len(k["10.0.0.3"]) != 5 {
		t.Fatalf("quiet sources lost packets: %v", k)
	}
	if got := len(k["10.0.0.1"]); got != 20 {
		t.Fatalf("flood kept %d, want 20", got)
	}
	// The flood keeps its earliest packets (ports differ, the IP is one).
	for i, b := range k["10.0.0.1"] {
		if int(b) != i {
			t.Fatalf("flood kept %v, want its first 20 in order", k["10.0.0.1"])
		}
	}
	for _, b := range bs {
		for i := range b.Packets() {
			if p := b.At(i); p.Discarded() && p.Meta.Outcome != packet.OutcomeShed {
				t.Fatalf("outcome %v", p.Meta.Outcome)
			}
		}
	}
}

func TestShedTable(t *testing.T) {
	for _, c := range []struct {
		counts []int // packets per address
		max    int
		want   []int // kept per address
	}{
		{[]int{10, 10}, 30, []int{10, 10}}, // under capacity: nothing shed
		// Agave's arithmetic: each address's share is ceil(left /
		// addresses-this-round), with left shrinking as the round goes:
		// 5 then ceil(5/2)=3; next round 1 and 1.
		{[]int{10, 10}, 10, []int{6, 4}},
		// Round 1: 3 (all it has), 16 = ceil(47/3), 11 = ceil(31/3);
		// round 2: 10, 5; round 3: 3, 1; round 4: 1.
		{[]int{3, 100, 100}, 50, []int{3, 30, 17}},
		{[]int{7}, 0, []int{0}}, // no capacity: all shed
		{[]int{1, 1, 1, 1}, 2, []int{1, 1, 0, 0}},
	} {
		pool, _ := packet.NewPool(packet.Config{BatchCap: 64})
		var bs []*packet.Batch
		total := 0
		for i, n := range c.counts {
			bs = fillFrom(pool, bs, fmt.Sprintf("10.0.1.%d:9", i+1), n)
			total += n
		}
		var s Shedder
		shed := s.Shed(bs, c.max)
		k := kept(bs)
		sum := 0
		for i, w := range c.want {
			got := len(k[fmt.Sprintf("10.0.1.%d", i+1)])
			sum += got
			if got != w {
				t.Errorf("%v max %d: address %d kept %d, want %d", c.counts, c.max, i, got, w)
			}
		}
		if shed != total-sum {
			t.Errorf("%v max %d: shed %d, kept %d of %d", c.counts, c.max, shed, sum, total)
		}
		release(bs)
	}
}

func TestShedSkipsDiscarded(t *testing.T) {
	pool, _ := packet.NewPool(packet.Config{BatchCap: 8})
	bs := fillFrom(pool, nil, "10.0.0.9:1", 8)
	defer release(bs)
	for i := 0; i < 4; i++ {
		bs[0].At(i).Discard(packet.OutcomeParse)
	}
	var s Shedder
	if shed := s.Shed(bs, 4); shed != 0 {
		t.Fatalf("shed %d with 4 live packets and room for 4", shed)
	}
	if shed := s.Shed(bs, 1); shed != 3 || bs[0].At(4).Discarded() {
		t.Fatalf("shed %d; the earliest live packet must stay", shed)
	}
}

func TestShedAllocs(t *testing.T) {
	pool, _ := packet.NewPool(packet.Config{})
	var bs []*packet.Batch
	for i := 0; i < 20; i++ {
		bs = fillFrom(pool, bs, fmt.Sprintf("10.0.2.%d:9", i), 30)
	}
	defer release(bs)
	var s Shedder
	s.Shed(bs, 1000) // grow the scratch space
	a := testing.AllocsPerRun(50, func() {
		for _, b := range bs {
			for i := range b.Packets() {
				b.At(i).Meta.Flags, b.At(i).Meta.Outcome = 0, 0
			}
		}
		s.Shed(bs, 100)
	})
	if a != 0 {
		t.Fatalf("Shed allocated %.1f times per call", a)
	}
}
