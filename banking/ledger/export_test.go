package ledger

import "github.com/cockroachdb/pebble/v2"

// What the external tests (package ledger_test), which damage a ledger
// on purpose, read of its layout.

const (
	StatusLogName   = statusLogName
	RecordHeader    = recordHeader
	StatusRecordLen = statusRecordLen
	PrefixTxSlot    = prefixTxSlot
	PrefixHistory   = prefixHistory
	KeyLogEnd       = keyLogEnd
	KeyMeta         = keyMeta
	KeyFormat       = keyFormat
)

var SlotKey = slotKey

// StatusLoc is statusLoc with its fields named for the tests.
type StatusLoc struct{ Off, N uint64 }

func DecodeStatusLoc(b []byte) (StatusLoc, error) {
	l, err := decodeStatusLoc(b)
	return StatusLoc{Off: l.off, N: l.n}, err
}

func (l StatusLoc) Encode() []byte { return statusLoc{off: l.Off, n: l.N}.encode() }

func (s *Store) DB() *pebble.DB                                      { return s.db }
func (s *Store) Get(key []byte) ([]byte, error)                      { return s.get(key) }
func (s *Store) Scan(prefix []byte, f func(k, v []byte) error) error { return s.scan(prefix, f) }
func (s *Store) LogWritten() uint64                                  { return s.logWritten.Load() }
func (s *Store) CloseLog() error                                     { return s.log.Close() }
