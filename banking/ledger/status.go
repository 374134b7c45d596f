package ledger

import (
	"encoding/binary"

	"github.com/tpugo/tpu/banking"
)

// Status is a processed transaction's status.
type Status struct {
	Slot uint64          // the slot it was executed in
	Err  banking.TxError // zero: succeeded
}

// Status encoding on disk: slot (8), recent blockhash (32), error (8:
// set, kind, index, instr, custom u32).
func appendStatus(b []byte, st Status, blockhash banking.Hash) []byte {
	b = binary.LittleEndian.AppendUint64(b, st.Slot)
	b = append(b, blockhash[:]...)
	return banking.AppendTxError(b, st.Err)
}

const statusRecordLen = 8 + 32 + 8

func decodeStatus(b []byte) (Status, banking.Hash, bool) {
	if len(b) != statusRecordLen || b[40] > 1 {
		return Status{}, banking.Hash{}, false
	}
	st := Status{Slot: binary.LittleEndian.Uint64(b)}
	var h banking.Hash
	copy(h[:], b[8:40])
	st.Err = banking.DecodeTxError(b[40:])
	return st, h, true
}

// StatusSize is the bytes AppendStatus adds: a signature and its status
// record.
const StatusSize = 64 + statusRecordLen

// AppendStatus appends a transaction's entry in its slot's status value
// (SlotCommit.Statuses): its first signature, then its status and recent
// blockhash.
func AppendStatus(b []byte, sig *[64]byte, st Status, blockhash banking.Hash) []byte {
	return appendStatus(append(b, sig[:]...), st, blockhash)
}
