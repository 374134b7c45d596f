package banking

import "encoding/binary"

// Status is a processed transaction's status.
type Status struct {
	Slot uint64  // the slot it was executed in
	Err  TxError // zero: succeeded
}

// Status encoding on disk: slot (8), recent blockhash (32), error (8:
// set, kind, index, instr, custom u32).
func appendStatus(b []byte, st Status, blockhash Hash) []byte {
	b = binary.LittleEndian.AppendUint64(b, st.Slot)
	b = append(b, blockhash[:]...)
	return AppendTxError(b, st.Err)
}

const statusRecordLen = 8 + 32 + 8

func decodeStatus(b []byte) (Status, Hash, bool) {
	if len(b) != statusRecordLen || b[40] > 1 {
		return Status{}, Hash{}, false
	}
	st := Status{Slot: binary.LittleEndian.Uint64(b)}
	var h Hash
	copy(h[:], b[8:40])
	st.Err = DecodeTxError(b[40:])
	return st, h, true
}
