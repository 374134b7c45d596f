package banktest

import (
	"strings"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// SickDisk is an errorfs injector for a ledger's file system
// (bank.Config.FS): while On, it fails every write (not the lock,
// closing a file or making a directory that exists) with Err, as a full
// disk (ENOSPC) or a read-only one (EROFS) would.
type SickDisk struct {
	On  atomic.Bool
	Err error
	SST bool // only the creation of sst files fails (a flush, and nothing else)
}

// MaybeError is errorfs.Injector's.
func (d *SickDisk) MaybeError(op errorfs.Op) error {
	if !d.On.Load() || op.Kind.ReadOrWrite() != errorfs.OpIsWrite || op.Kind == errorfs.OpLock || op.Kind == errorfs.OpFileClose || op.Kind == errorfs.OpMkdirAll {
		return nil
	}
	if d.SST && (op.Kind != errorfs.OpCreate || !strings.HasSuffix(op.Path, ".sst")) {
		return nil
	}
	return d.Err
}

func (d *SickDisk) String() string { return "sick disk" }
