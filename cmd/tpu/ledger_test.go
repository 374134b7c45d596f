package main

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tpugo/tpu/stages"
)

// runLedger runs tpu run --no-gen briefly on ledger with extra flags.
func runLedger(t *testing.T, ledger string, extra ...string) (int, string) {
	t.Helper()
	args := append([]string{"run", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "", "--ledger", ledger,
		"--no-gen", "--duration", "200ms", "--accounts", "16"}, extra...)
	code, _, errOut := run(t, "", args...)
	return code, errOut
}

// --reset refuses a directory that holds anything but a tpu ledger, and
// leaves it as it was.
func TestRunResetRefusesStrayFiles(t *testing.T) {
	dir := t.TempDir()
	stray := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(stray, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, errOut := runLedger(t, dir, "--reset")
	if code != 1 || !strings.Contains(errOut, "not a tpu ledger") || !strings.Contains(errOut, "notes.txt") {
		t.Fatalf("reset of a directory with a stray file: exit %d\n%s", code, errOut)
	}
	if _, err := os.Stat(stray); err != nil {
		t.Fatalf("the stray file is gone: %v", err)
	}
}

// A run with --reset whose port is taken fails before the ledger is
// touched.
func TestRunResetPortInUse(t *testing.T) {
	ledger := filepath.Join(t.TempDir(), "ledger")
	if code, errOut := runLedger(t, ledger); code != 0 {
		t.Fatalf("first run: exit %d\n%s", code, errOut)
	}
	before, err := os.ReadDir(ledger)
	if err != nil || len(before) == 0 {
		t.Fatalf("ledger %v %v", before, err)
	}
	busy, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	code, _, errOut := run(t, "", "run", "--tpu-addr", busy.LocalAddr().String(), "--rpc-addr", "", "--ledger", ledger,
		"--no-gen", "--duration", "200ms", "--accounts", "16", "--reset")
	if code != 1 || !strings.Contains(errOut, "--reset") || !strings.Contains(errOut, "address already in use") {
		t.Fatalf("reset with the port taken: exit %d\n%s", code, errOut)
	}
	// The ledger resumes where it was.
	code, errOut = runLedger(t, ledger)
	if code != 0 || strings.Contains(errOut, "slot=1 ") {
		t.Fatalf("the ledger was reset although the run failed: exit %d\n%s", code, errOut)
	}
}

// A ledger a running tpu holds is refused, with or without --reset, and
// the server keeps it.
func TestRunLedgerInUse(t *testing.T) {
	ledger := filepath.Join(t.TempDir(), "ledger")
	c := startChild(t, "run", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "", "--ledger", ledger,
		"--no-gen", "--duration", "0", "--accounts", "16")
	c.await(t, 1, "msg=tpu ")
	for _, extra := range [][]string{nil, {"--reset"}} {
		code, errOut := runLedger(t, ledger, extra...)
		if code != 1 || !strings.Contains(errOut, "is in use by another process") {
			t.Fatalf("%v on a ledger in use: exit %d\n%s", extra, code, errOut)
		}
	}
	if out, err := c.interrupt(t); err != nil {
		t.Fatalf("the server, after the refused runs: %v\n%s\n%s", err, out, c.stderr())
	}
}

// tpu run warns when the kernel gave fetch's sockets less receive buffer
// than they asked for (net.core.rmem_max), and only then.
func TestRunWarnsCappedReadBuffer(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/core/rmem_max")
	if err != nil {
		t.Skipf("no /proc/sys/net/core/rmem_max (%v): the cap is Linux's", err)
	}
	max, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	code, errOut := runLedger(t, filepath.Join(t.TempDir(), "ledger"))
	capped := max < stages.FetchReadBuffer
	if code != 0 || strings.Contains(errOut, "fetch socket buffer capped") != capped ||
		capped && !strings.Contains(errOut, "got_bytes="+strconv.Itoa(max)+" ") {
		t.Fatalf("rmem_max %d, asked %d: exit %d, capped warning should be %v:\n%s", max, stages.FetchReadBuffer, code, capped, errOut)
	}
}
