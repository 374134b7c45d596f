package ledger

import (
	"encoding/binary"
	"fmt"

	"github.com/tpugo/tpu/banking"
)

// SlotChanges is a committed slot as its change listeners see it
// (OnCommitChanges): its record and the accounts it wrote, as the slot
// left them.
type SlotChanges struct {
	Record   SlotRecord
	accounts []byte // SlotCommit.accounts's encoding
}

// Each calls f with each account the slot wrote, as the slot left it: the
// account's encoding, or nil for one the slot emptied. f borrows key and
// enc: they are valid until f returns.
func (c *SlotChanges) Each(f func(key *banking.Pubkey, enc []byte) error) error {
	for p := c.accounts; len(p) > 0; {
		if len(p) < 33 {
			return fmt.Errorf("%w: malformed slot changes", ErrStore)
		}
		key := (*banking.Pubkey)(p[:32])
		if p[32] == 0 {
			if err := f(key, nil); err != nil {
				return err
			}
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
		if err := f(key, p[37:37+n]); err != nil {
			return err
		}
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
func (s *Store) OnCommitChanges(f func(c *SlotChanges)) {
	s.mu.Lock()
	s.changeListeners = append(s.changeListeners, f)
	s.mu.Unlock()
}
