package loadgen

import (
	"fmt"

	bankrt "github.com/tpugo/tpu/banking/runtime"
	"github.com/tpugo/tpu/txview"
)

// Padding a transfer to a size (Config.Size): a load of the largest
// transactions a packet holds, which still verify and execute, for what
// the pipeline's handling of a packet costs by its size (tpu bench
// handoff). The padding is a memo instruction (the SPL memo program, no
// signer: it checks that its data is UTF-8 and logs it) of ASCII bytes,
// and the transaction's compute-unit limit grows by what the memo
// consumes, so that it still executes.

// padTries bounds the compiles that find the memo's length: the first
// guess is exact unless a compact-u16 length grows by a byte.
const padTries = 4

// padded compiles m, with a memo that makes the signed transaction (one
// signature) size bytes long when size is not zero. m's second
// instruction must be its compute-unit limit (SetComputeUnitLimit): it is
// raised by the memo's units. m is left with the memo and the raised
// limit.
//
// One size in each range a memo's data length crosses 127 bytes cannot
// be met by one memo (127 bytes of data give size-1, 128 give size+1):
// it gets a second, empty memo, three bytes more.
func padded(m *txview.Message, size int) ([]byte, error) {
	if size == 0 {
		return m.Compile()
	}
	const sig = 1 + 64 // the signature count and one signature
	base, err := m.Compile()
	if err != nil {
		return nil, err
	}
	plain := len(m.Instructions)
	for empty := range 2 {
		// A memo adds its program's key (32, once), the instruction's
		// program index (1), account count (1), data length (1 or 2)
		// and data.
		n := size - sig - len(base) - 32 - 3 - 3*empty
		for range padTries {
			if n < 0 {
				break
			}
			m.Instructions = append(m.Instructions[:plain], txview.Memo(memoData(n)))
			units := bankrt.MemoUnits(n, 0)
			if empty == 1 {
				m.Instructions = append(m.Instructions, txview.Memo(nil))
				units += bankrt.MemoUnits(0, 0)
			}
			m.Instructions[1] = txview.SetComputeUnitLimit(ComputeUnits + uint32(units))
			msg, err := m.Compile()
			if err != nil {
				return nil, err
			}
			got := sig + len(msg)
			if got == size {
				return msg, nil
			}
			n += size - got
		}
	}
	return nil, fmt.Errorf("%w: a transfer cannot be padded to %d bytes (%d without a memo)", ErrConfig, size, sig+len(base))
}

// memoData returns n bytes of printable ASCII.
func memoData(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return b
}
