package bank

// What the external tests (package bank_test) read of the internals.

const PDAMarker = pdaMarker

var ErrOnCurve = errOnCurve

func (m *TableMeta) ActiveLen(cur uint64, n int) (int, bool) { return m.activeLen(cur, n) }
