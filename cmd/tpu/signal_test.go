package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tpugo/tpu/packet/packettest"
)

// childArgsEnv makes the test binary run the CLI with these arguments
// (joined by newlines) instead of the tests: a real process to signal.
const childArgsEnv = "TPU_TEST_CLI_ARGS"

func TestMain(m *testing.M) {
	if args := os.Getenv(childArgsEnv); args != "" {
		env := &cliEnv{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
		os.Exit(runCLI(env, strings.Split(args, "\n")))
	}
	os.Exit(packettest.Run(m)) // fails on a leaked batch (invariants build)
}

// child is tpu run in a child process: the test binary, which TestMain
// turns into the CLI. Its stderr (the log and the live lines) is read as
// it comes, so that a test can wait for a line the command prints.
type child struct {
	cmd     *exec.Cmd
	stdout  strings.Builder // read after the child exits
	mu      sync.Mutex
	lines   []string // stderr so far
	eof     bool
	more    chan struct{} // a line came, or the end
	drained chan struct{} // closed at the end of stderr
}

// startChild starts tpu with args in a child process; a cleanup kills it
// if the test has not stopped it.
func startChild(t *testing.T, args ...string) *child {
	t.Helper()
	return startChildEnv(t, nil, args...)
}

// startChildEnv is startChild with env (KEY=value) added to the child's
// environment.
func startChildEnv(t *testing.T, env []string, args ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), env...), childArgsEnv+"="+strings.Join(args, "\n"))
	c := &child{cmd: cmd, more: make(chan struct{}, 1), drained: make(chan struct{})}
	cmd.Stdout = &c.stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(c.drained)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			c.mu.Lock()
			c.lines = append(c.lines, sc.Text())
			c.mu.Unlock()
			c.notify()
		}
		c.mu.Lock()
		c.eof = true
		c.mu.Unlock()
		c.notify()
	}()
	t.Cleanup(func() {
		select {
		case <-c.drained:
		default:
			cmd.Process.Kill()
			<-c.drained
			cmd.Wait()
		}
	})
	return c
}

func (c *child) notify() {
	select {
	case c.more <- struct{}{}:
	default:
	}
}

// stderr returns what the child has written to stderr so far.
func (c *child) stderr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.lines, "\n")
}

// await waits up to 30 s for the nth stderr line that holds every one of
// words, and returns it.
func (c *child) await(t *testing.T, n int, words ...string) string {
	t.Helper()
	// Generous: signing the load before the first live line takes tens of
	// seconds under -race on a busy 2-core machine.
	timeout := time.After(90 * time.Second)
	for i := 0; ; {
		c.mu.Lock()
		lines, eof := c.lines, c.eof
		c.mu.Unlock()
	next:
		for ; i < len(lines); i++ {
			for _, w := range words {
				if !strings.Contains(lines[i], w) {
					continue next
				}
			}
			if n--; n == 0 {
				return lines[i]
			}
		}
		if eof {
			t.Fatalf("tpu exited without printing %q:\n%s\n%s", words, c.stderr(), c.stdout.String())
		}
		select {
		case <-c.more:
		case <-timeout:
			t.Fatalf("tpu did not print %q within 90 s:\n%s", words, c.stderr())
		}
	}
}

// logged returns the value of key in a line of tpu's log (key=value).
func logged(t *testing.T, line, key string) string {
	t.Helper()
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	t.Fatalf("no %s= in %q", key, line)
	return ""
}

// interrupt sends SIGINT and waits up to 30 s for the child to exit,
// returning how it exited and its stdout.
func (c *child) interrupt(t *testing.T) (string, error) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.drained:
	case <-time.After(30 * time.Second):
		t.Fatalf("no exit 30 s after SIGINT:\n%s", c.stderr())
	}
	err := c.cmd.Wait()
	return c.stdout.String(), err
}

// TestSignalDrains runs tpu run in a child process, scrapes /metrics while
// it runs, interrupts it with SIGINT, and checks that it drained,
// committed, printed its summary and exited 0. Its load lasts 10 s, long
// past the SIGINT; 10,000 transactions sign in seconds even under -race
// (about 2,700 a second a core).
func TestSignalDrains(t *testing.T) {
	dir := t.TempDir()
	c := startChild(t, "run", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "", "--ledger", filepath.Join(dir, "ledger"),
		"--duration", "60s", "--rate", "1000", "--count", "10000", "--accounts", "64", "--metrics-addr", "127.0.0.1:0")
	metrics := logged(t, c.await(t, 1, "msg=metrics"), "url")
	c.await(t, 2, " received ") // the second live line: the load has run a second
	resp, err := http.Get(metrics)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`tpu_packets_total{`, `outcome="executed_ok"`, `tpu_hop_queue_wait_seconds_bucket{`, `hop="sigverify"`, `tpu_hop_service_seconds`, `tpu_pool_live`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	out, err := c.interrupt(t)
	if err != nil {
		t.Fatalf("exit after SIGINT: %v\n%s\n%s", err, out, c.stderr())
	}
	if !strings.Contains(out, "accounting ok: true") || !strings.Contains(out, "live batches after drain: 0") {
		t.Fatalf("summary after SIGINT:\n%s", out)
	}
}

// TestSignalWhileSigning interrupts tpu run while it signs a large load
// (2,000,000 transactions, half a minute of signing here): it stops
// signing, drains, prints its summary and exits 0 at once.
func TestSignalWhileSigning(t *testing.T) {
	dir := t.TempDir()
	c := startChild(t, "run", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "", "--ledger", filepath.Join(dir, "ledger"),
		"--duration", "60s", "--count", "2000000", "--accounts", "64")
	c.await(t, 1, "signing 2000000 transactions")
	start := time.Now()
	out, err := c.interrupt(t)
	if err != nil {
		t.Fatalf("exit after SIGINT while signing: %v\n%s\n%s", err, out, c.stderr())
	}
	if !strings.Contains(c.stderr(), "stopped while signing the load") || !strings.Contains(out, "accounting ok: true") {
		t.Fatalf("no stop while signing, or no summary:\n%s\n%s", out, c.stderr())
	}
	t.Logf("exited %v after SIGINT", time.Since(start))
}

// TestSignalAtStartup interrupts tpu run at its first line, before the
// ledger is open and the ports bound: it starts, drains nothing, prints
// its summary and exits 0, rather than dying of the signal mid-open.
func TestSignalAtStartup(t *testing.T) {
	c := startChild(t, "run", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "", "--ledger", filepath.Join(t.TempDir(), "ledger"),
		"--no-gen", "--duration", "0", "--accounts", "16", "--metrics-addr", "127.0.0.1:0")
	c.await(t, 1, "msg=metrics") // printed before the graph starts
	out, err := c.interrupt(t)
	if err != nil || !strings.Contains(out, "accounting ok: true") {
		t.Fatalf("exit after SIGINT at startup: %v\n%s\n%s", err, out, c.stderr())
	}
	if !strings.Contains(c.stderr(), "signal: stopping") {
		t.Fatalf("the signal was not logged:\n%s", c.stderr())
	}
}

// TestSignalAtFastSlots: issue 26 found tpu run at --slot-time 100us with
// --sync sync ignoring SIGINT for 10 s, its slot clock queueing ticks
// faster than banking took them. Ticks now coalesce and the slot time is
// at least 1 ms: at that bound, under load, the run honours a SIGINT
// within the 1 s (it logs the signal and begins its drain), then
// drains, prints its summary and exits 0.
//
// "Honoured" is timed by the child's own log timestamps against the
// moment the signal was sent (one wall clock, one machine), so that this
// test's reading of the child's stderr, late on a loaded machine, does
// not count. The exit is bounded more loosely, at 5 s: it also takes
// the drain, the ledger's last commit (an fsync a slot with --sync
// sync), the second ceiling sample (300 ms) and the summary, which under
// -race on a busy 2-core machine took 1.3 s where plain took 0.4 s; the
// bug's 10 s stays well outside it.
func TestSignalAtFastSlots(t *testing.T) {
	c := startChild(t, "run", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "", "--ledger", filepath.Join(t.TempDir(), "ledger"),
		"--slot-time", "1ms", "--sync", "sync", "--duration", "60s", "--rate", "1000", "--count", "20000", "--accounts", "64")
	c.await(t, 3, " received ") // three live lines: three seconds of 1 ms slots under load
	sent := time.Now()
	if err := c.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	signalled := loggedAt(t, c.await(t, 1, "signal: stopping")).Sub(sent)
	draining := loggedAt(t, c.await(t, 1, "load stopped: draining")).Sub(sent)
	select {
	case <-c.drained:
	case <-time.After(30 * time.Second):
		t.Fatalf("no exit 30 s after SIGINT at 1 ms slots:\n%s", c.stderr())
	}
	exited := time.Since(sent)
	err := c.cmd.Wait()
	out := c.stdout.String()
	if err != nil || !strings.Contains(out, "accounting ok: true") {
		t.Fatalf("exit after SIGINT at 1 ms slots: %v\n%s\n%s", err, out, c.stderr())
	}
	t.Logf("SIGINT at 1 ms slots: logged after %v, the drain begun after %v, exited after %v (log times to the millisecond)", signalled, draining, exited)
	if signalled > time.Second || draining > time.Second {
		t.Fatalf("SIGINT at 1 ms slots: logged after %v and the drain begun after %v, want both within 1 s (issue 26)", signalled, draining)
	}
	if exited > 5*time.Second {
		t.Fatalf("exited %v after SIGINT at 1 ms slots, want within 5 s (the issue's 10 s was the bug)", exited)
	}
}

// loggedAt returns the time a line of tpu's log was logged (its time=,
// to the millisecond).
func loggedAt(t *testing.T, line string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, logged(t, line, "time"))
	if err != nil {
		t.Fatalf("the time of %q: %v", line, err)
	}
	return at
}
