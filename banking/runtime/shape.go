package runtime

import (
	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/txview"
)

// Shape is what one pass over a transaction's instructions tells the
// scheduler.
type Shape struct {
	dataLen  uint64 // instruction data bytes
	programs uint64 // bit i: static key i is invoked as a program
}

// ShapeOf makes one pass over v's instructions.
func ShapeOf(v txview.View) Shape {
	var sh Shape
	it := v.Instructions()
	for in, ok := it.Next(); ok; in, ok = it.Next() {
		sh.dataLen += uint64(len(in.Data))
		sh.programs |= 1 << in.ProgramIndex
	}
	return sh
}

// Cost is CostOf with the instruction pass already done.
func (sh Shape) Cost(v txview.View, cb txview.ComputeBudget) TxCost {
	return costFrom(v, cb, sh.dataLen)
}

// Writable returns the static accounts a transaction may write, loaded
// being the addresses its lookups loaded (DemotedWritable, reserved.go).
func (sh Shape) Writable(v txview.View, loaded []banking.Pubkey) uint64 {
	return banking.DemotedWritable(v, sh.programs, loaded)
}

// HasDuplicateKey reports whether a static key appears twice (Agave:
// AccountLoadedTwice).
func HasDuplicateKey(v txview.View) bool {
	n := v.NumStaticKeys()
	for i := 1; i < n; i++ {
		k := v.StaticKey(i)
		for j := 0; j < i; j++ {
			if *k == *v.StaticKey(j) {
				return true
			}
		}
	}
	return false
}
