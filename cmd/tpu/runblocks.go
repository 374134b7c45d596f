package main

import (
	"fmt"
	"io"

	"github.com/tpugo/tpu/stages"
)

// blockWindow is what banking's blocks held over a stretch of a run:
// the slots that ended, those whose block filled (a transaction found no
// room under the block cost limit), and the compute units charged. When
// most blocks fill, the block cost limit bounds the run's rate, whatever
// the pipeline's speed: with mainnet's 100M units in a 400 ms slot,
// about 148k a second of the load generator's transfers (about 1,690
// units each, as a run's blocks were charged).
type blockWindow struct {
	Slots uint64 `json:"slots"`
	Full  uint64 `json:"full_slots"`
	Units uint64 `json:"units"`
}

// blocksBetween returns the blocks of the slots that ended between two
// snapshots.
func blocksBetween(prev, cur stages.Snapshot) blockWindow {
	return blockWindow{Slots: cur.Slots - prev.Slots, Full: cur.FullSlots - prev.FullSlots, Units: cur.BlockUnits - prev.BlockUnits}
}

// full reports whether most of the slots filled their block: the block
// cost limit, not the pipeline, bounded what they executed.
func (b blockWindow) full() bool { return b.Slots > 0 && 2*b.Full > b.Slots }

func (b blockWindow) String() string {
	return fmt.Sprintf("the block cost limit, %d of %d slots full", b.Full, b.Slots)
}

// printBlocks writes what the blocks held while the load was offered,
// when any filled.
func (s summary) printBlocks(w io.Writer) {
	b := s.Blocks
	if b == nil || b.Full == 0 {
		return
	}
	fmt.Fprintf(w, "  blocks: %d of %d slots while the load ran were full (block cost limit %d CU; %.0f CU a block on average)",
		b.Full, b.Slots, s.BlockCostLimit, float64(b.Units)/float64(max(b.Slots, 1)))
	if b.full() {
		fmt.Fprint(w, ": the limit, not the pipeline, bounded the rate (--block-cost-limit lifts it)")
	}
	fmt.Fprintln(w)
}
