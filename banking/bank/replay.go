package bank

import (
	"bytes"
	"crypto/sha256"
	"slices"

	"github.com/tpugo/tpu/banking"
)

// What a replay of recorded traffic needs beyond the banking stage's own
// calls (see bankingtrace and tpu replay).

// AccountsHash returns a hash of every account the bank holds with
// lamports, in key order: SHA-256 over each account's key and its
// encoding on disk (lamports, owner, executable, data). Two banks that
// executed the same transactions with the same outcomes have the same
// hash. Call it on the bank's goroutine with nothing executing.
func (b *Bank) AccountsHash() banking.Hash {
	accts := make([]*Account, 0, len(b.accounts))
	for _, a := range b.accounts {
		if a.Exists() {
			accts = append(accts, a)
		}
	}
	slices.SortFunc(accts, func(x, y *Account) int { return bytes.Compare(x.key[:], y.key[:]) })
	h := sha256.New()
	var buf []byte
	for _, a := range accts {
		buf = a.appendEncoding(append(buf[:0], a.key[:]...))
		h.Write(buf)
	}
	var out banking.Hash
	h.Sum(out[:0])
	return out
}
