//go:build invariants

package txview

import "sync/atomic"

// Counting reports whether Parses counts: only in the invariants build.
const Counting = true

var parses atomic.Uint64

// Parses returns how many times Parse has been called in this process, in
// the invariants build, where tests check that a transaction is parsed
// once on its way through the pipeline; in the plain build it is always 0.
func Parses() uint64 { return parses.Load() }

func countParse() { parses.Add(1) }
