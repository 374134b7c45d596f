package banking

import "github.com/tpugo/tpu/txview"

// txShape is what one pass over a transaction's instructions tells the
// scheduler.
type txShape struct {
	dataLen  uint64 // instruction data bytes
	programs uint64 // bit i: static key i is invoked as a program
}

func shapeOf(v txview.View) txShape {
	var sh txShape
	it := v.Instructions()
	for in, ok := it.Next(); ok; in, ok = it.Next() {
		sh.dataLen += uint64(len(in.Data))
		sh.programs |= 1 << in.ProgramIndex
	}
	return sh
}

// cost is CostOf with the instruction pass already done.
func (sh txShape) cost(v txview.View, cb txview.ComputeBudget) TxCost {
	return costFrom(v, cb, sh.dataLen)
}

// writable returns the static accounts a transaction may write, loaded
// being the addresses its lookups loaded (demotedWritable, reserved.go).
func (sh txShape) writable(v txview.View, loaded []Pubkey) uint64 {
	return demotedWritable(v, sh.programs, loaded)
}

// hasDuplicateKey reports whether a static key appears twice (Agave:
// AccountLoadedTwice).
func hasDuplicateKey(v txview.View) bool {
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
