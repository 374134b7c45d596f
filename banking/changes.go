package banking

import (
	"encoding/binary"
	"fmt"
)

// SlotChanges is a committed slot as its change listeners see it
// (Bank.OnCommitChanges): its record and the accounts it wrote, as the
// slot left them.
type SlotChanges struct {
	Record   SlotRecord
	accounts []byte // slotCommit.accounts's encoding
}

// EachAccount calls f with each account the slot wrote, as the slot left
// it: one the slot emptied has no lamports (Exists is false) and the
// System program as owner. f borrows a: it is valid until f returns.
func (c *SlotChanges) EachAccount(f func(a *Account)) error {
	for p := c.accounts; len(p) > 0; {
		if len(p) < 33 {
			return fmt.Errorf("%w: malformed slot changes", ErrStore)
		}
		key := Pubkey(p[:32])
		if p[32] == 0 {
			f(&Account{key: key, Owner: SystemProgram})
			p = p[33:]
			continue
		}
		if len(p) < 37 {
			return fmt.Errorf("%w: malformed slot changes", ErrStore)
		}
		n := int(binary.LittleEndian.Uint32(p[33:]))
		if len(p) < 37+n {
			return fmt.Errorf("%w: malformed slot changes", ErrStore)
		}
		a, err := decodeAccount(key, p[37:37+n])
		if err != nil {
			return fmt.Errorf("%w: slot %d: %w", ErrStore, c.Record.Slot, err)
		}
		f(a)
		p = p[37+n:]
	}
	return nil
}

// Clone returns a copy of c that the caller owns.
func (c *SlotChanges) Clone() *SlotChanges {
	return &SlotChanges{Record: c.Record, accounts: append([]byte(nil), c.accounts...)}
}

// OnCommitChanges registers f to be called, on the committer goroutine,
// after each slot is committed (after the OnCommit listeners), with the
// slot's changes. f borrows c: its bytes are reused once f returns (keep
// a Clone). f must not block: the next slot's commit waits for it.
func (b *Bank) OnCommitChanges(f func(c *SlotChanges)) {
	b.store.mu.Lock()
	b.store.changeListeners = append(b.store.changeListeners, f)
	b.store.mu.Unlock()
}
