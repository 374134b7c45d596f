package ledger_test

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/banking/ledger"
)

func TestReset(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, dir string) // dir does not exist yet
		wantErr error
		keep    string // a file that must survive
	}{
		{"missing", func(*testing.T, string) {}, nil, ""},
		{"empty", func(t *testing.T, dir string) { mkdir(t, dir) }, nil, ""},
		{"ledger", func(t *testing.T, dir string) {
			runSlots(t, bank.Config{Dir: dir, Genesis: bank.GenesisConfig{Seed: banktest.Seed, Accounts: 4}}, 0, 1, 2)
		}, nil, ""},
		{"stray-file", func(t *testing.T, dir string) {
			mkdir(t, dir)
			write(t, filepath.Join(dir, "notes.txt"))
		}, ledger.ErrNotLedger, "notes.txt"},
		{"ledger-and-stray-file", func(t *testing.T, dir string) {
			runSlots(t, bank.Config{Dir: dir, Genesis: bank.GenesisConfig{Seed: banktest.Seed, Accounts: 4}}, 0)
			write(t, filepath.Join(dir, "notes.txt"))
		}, ledger.ErrNotLedger, "notes.txt"},
		{"pebble-without-status-log", func(t *testing.T, dir string) {
			mkdir(t, dir)
			write(t, filepath.Join(dir, "000001.log"))
		}, ledger.ErrNotLedger, "000001.log"},
		{"subdirectory", func(t *testing.T, dir string) { mkdir(t, filepath.Join(dir, "sub")) }, ledger.ErrNotLedger, "sub"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ledger")
			tc.prepare(t, dir)
			b, err := bank.Open(bank.Config{Dir: dir, Reset: true, Genesis: bank.GenesisConfig{Seed: banktest.Seed, Accounts: 4}})
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.keep) {
					t.Fatalf("reset: %v, want %v naming %s", err, tc.wantErr, tc.keep)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				defer b.Close()
				if b.Slot() != 1 {
					t.Fatalf("after reset the ledger is at slot %d, not a new one", b.Slot())
				}
			}
			if tc.keep != "" {
				if _, err := os.Stat(filepath.Join(dir, tc.keep)); err != nil {
					t.Fatalf("reset removed %s: %v", tc.keep, err)
				}
			}
		})
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A ledger another process holds is refused, by bank.Open and by a reset,
// which leaves it as it is.
func TestLedgerInUse(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	}()
	if !bufio.NewScanner(stdout).Scan() { // it has committed a slot
		t.Fatal("child exited early")
	}
	before := size(t, filepath.Join(dir, ledger.StatusLogName))
	for _, reset := range []bool{false, true} {
		_, err := bank.Open(bank.Config{Dir: dir, Reset: reset, Genesis: bank.GenesisConfig{Seed: banktest.Seed, Accounts: 64}})
		if !errors.Is(err, ledger.ErrInUse) || !strings.Contains(err.Error(), "in use by another process") {
			t.Fatalf("reset %v: opened a ledger another process holds: %v", reset, err)
		}
	}
	if size(t, filepath.Join(dir, ledger.StatusLogName)) < before {
		t.Fatal("the status log shrank under its owner")
	}
	// In this process, too.
	held := t.TempDir()
	b := banktest.OpenBank(t, bank.Config{Dir: held})
	defer b.Close()
	if _, err := bank.Open(bank.Config{Dir: held}); !errors.Is(err, ledger.ErrInUse) {
		t.Fatalf("opened a ledger twice: %v", err)
	}
}

// A ledger directory the process may not write is reported as a
// permission error, not as a ledger another process holds: both reach
// the lock as EACCES, one from creating its file, the other from
// locking it.
func TestOpenPermissionDenied(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o700) }) // so that TempDir can remove it
	probe := filepath.Join(dir, "probe")
	if err := os.WriteFile(probe, nil, 0o600); err == nil {
		os.Remove(probe)
		t.Skip("a write into a 0500 directory succeeded: running as root (or with CAP_DAC_OVERRIDE), which permissions do not stop")
	}
	_, err := ledger.Open(ledger.Config{Dir: dir})
	if err == nil {
		t.Fatal("opened a ledger in a directory it cannot write")
	}
	if errors.Is(err, ledger.ErrInUse) || strings.Contains(err.Error(), "in use") {
		t.Fatalf("a permission error reported as a ledger in use: %v", err)
	}
	if !errors.Is(err, os.ErrPermission) || !errors.Is(err, ledger.ErrStore) || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("want a ledger error saying permission denied: %v", err)
	}
}

// lockFS is the OS's file system whose Lock fails with err, as
// pebble.LockDirectory sees it: an *fs.PathError from creating the lock
// file, a bare errno from locking it.
type lockFS struct {
	vfs.FS
	err error
}

func (f lockFS) Lock(string) (io.Closer, error) { return nil, f.err }

// The classification TestOpenPermissionDenied checks, through Open's own
// path, with the errors injected: it runs as root too, where chmod
// stops nothing. Creating the lock file denied (EACCES or EPERM in an
// *fs.PathError) is a permission error; a bare EACCES or EAGAIN from
// fcntl, or pebble's "held by current process", is another holder; a
// read-only file system is neither.
func TestOpenLockErrors(t *testing.T) {
	lockFile := func(errno syscall.Errno) error {
		return &fs.PathError{Op: "open", Path: "LOCK", Err: errno}
	}
	for _, tc := range []struct {
		name       string
		err        error
		inUse      bool
		permission bool
		say        string
	}{
		{"create-eacces", lockFile(syscall.EACCES), false, true, "permission denied: cannot create its lock file"},
		{"create-eperm", lockFile(syscall.EPERM), false, true, "permission denied: cannot create its lock file"},
		{"create-erofs", lockFile(syscall.EROFS), false, false, "read-only file system"},
		{"fcntl-eacces", syscall.EACCES, true, false, "in use by another process"},
		{"fcntl-eagain", syscall.EAGAIN, true, false, "in use by another process"},
		{"this-process", errors.New("lock held by current process"), true, false, "in use by another process"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ledger.Open(ledger.Config{Dir: t.TempDir(), FS: lockFS{vfs.Default, tc.err}})
			if err == nil {
				t.Fatal("opened a ledger it could not lock")
			}
			if !errors.Is(err, ledger.ErrStore) || !strings.Contains(err.Error(), tc.say) {
				t.Fatalf("want a ledger error saying %q: %v", tc.say, err)
			}
			if got := errors.Is(err, ledger.ErrInUse); got != tc.inUse {
				t.Fatalf("ErrInUse %v, want %v: %v", got, tc.inUse, err)
			}
			if got := strings.Contains(err.Error(), "in use"); got != tc.inUse {
				t.Fatalf("says \"in use\": %v, want %v: %v", got, tc.inUse, err)
			}
			if got := strings.Contains(err.Error(), "cannot create its lock file"); got != tc.permission {
				t.Fatalf("reported as the directory's permissions: %v, want %v: %v", got, tc.permission, err)
			}
			if tc.permission && !errors.Is(err, os.ErrPermission) {
				t.Fatalf("not an os.ErrPermission: %v", err)
			}
		})
	}
}
