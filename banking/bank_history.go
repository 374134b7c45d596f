package banking

import "encoding/binary"

// appendHistory books an executed transaction into the working slot's
// history buffer (Config.NoTxHistory: nothing). bal holds the
// accounts' balances (static, then loaded) before, then after, the
// transaction: 2n values; loaded, the addresses its lookups loaded.
func (b *Bank) appendHistory(tx []byte, index uint32, fee, units, price, writable uint64, err TxError, bal []uint64, loaded []Pubkey) {
	if b.cfg.NoTxHistory {
		return
	}
	n := len(bal) / 2
	size := 4 + 4 + historyHeader + 8*len(bal) + len(tx) + 32*len(loaded)
	if cap(b.history)-len(b.history) < size {
		b.history = append(make([]byte, 0, max(2*cap(b.history), 64<<10, size)), b.history...)
	}
	h := binary.LittleEndian.AppendUint32(b.history, uint32(size-4))
	h = binary.BigEndian.AppendUint32(h, index)
	h = binary.LittleEndian.AppendUint64(h, fee)
	h = binary.LittleEndian.AppendUint64(h, units)
	h = binary.LittleEndian.AppendUint64(h, price)
	h = binary.LittleEndian.AppendUint64(h, writable)
	h = AppendTxError(h, err)
	h = append(h, byte(n))
	for _, v := range bal {
		h = binary.LittleEndian.AppendUint64(h, v)
	}
	h = append(h, tx...)
	for i := range loaded {
		h = append(h, loaded[i][:]...)
	}
	b.history = h
}

// HistoryEnabled reports whether the bank keeps transaction history.
func (b *Bank) HistoryEnabled() bool { return !b.cfg.NoTxHistory }
