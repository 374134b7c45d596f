//go:build !invariants

package txview

// Counting reports whether Parses counts: only in the invariants build.
const Counting = false

// Parses returns how many times Parse has been called in this process, in
// the invariants build; in this build it is always 0 and Parse counts
// nothing (it costs nothing).
func Parses() uint64 { return 0 }

func countParse() {}
