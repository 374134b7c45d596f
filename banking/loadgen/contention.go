package loadgen

import "fmt"

// Contention is a load's write-lock contention mode, as Agave's
// banking-bench names them: the benchmark harness and the load generator
// both shape their transfers by it.
type Contention uint8

const (
	// ContentionNone: no two transactions of an iteration write the same
	// account.
	ContentionNone Contention = iota
	// ContentionSameBatchOnly: the transactions of one batch write one
	// shared account; batches do not share.
	ContentionSameBatchOnly
	// ContentionFull: every transaction writes the same account.
	ContentionFull
)

var contentionNames = [...]string{"none", "same-batch-only", "full"}

func (c Contention) String() string { return contentionNames[c] }

// ParseContention reads none, same-batch-only or full.
func ParseContention(s string) (Contention, error) {
	for i, n := range contentionNames {
		if n == s {
			return Contention(i), nil
		}
	}
	return 0, fmt.Errorf("banking: unknown write-lock contention %q (none, same-batch-only, full)", s)
}

// MarshalText returns the mode's name, so that a flag.TextVar shows it.
func (c Contention) MarshalText() ([]byte, error) {
	if int(c) >= len(contentionNames) {
		return nil, fmt.Errorf("banking: write-lock contention %d out of range", c)
	}
	return []byte(contentionNames[c]), nil
}

// UnmarshalText reads a mode's name as ParseContention does.
func (c *Contention) UnmarshalText(b []byte) error {
	v, err := ParseContention(string(b))
	if err != nil {
		return err
	}
	*c = v
	return nil
}
