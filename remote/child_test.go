package remote

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tpugo/tpu/packet/packettest"
	"github.com/tpugo/tpu/stages/sigverify"
	"github.com/tpugo/tpu/trace"
)

// The verifiers of these tests run in child processes (the test binary
// again, TestMain sending it to runChild): protoactor's remote.Start
// sets gRPC's global logger, which the race detector reports against
// any other remote already serving in the process. A child is also what
// a verifier is: another process, which a test can kill.

// isolatedEnv names the test a child process runs: each test that
// starts a leader runs in a process of its own (isolate), as its gRPC
// connections outlive it.
const isolatedEnv = "TPU_REMOTE_TEST_ISOLATED"

// isolate runs t in a child process and reports true, its result
// reported; in that child it reports false, and t goes on there.
func isolate(t *testing.T) bool {
	t.Helper()
	if os.Getenv(isolatedEnv) == t.Name() {
		return false
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), isolatedEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("%s in its own process: %v\n%s", t.Name(), err, out)
	}
	return true
}

// isolatedBench is isolate for a benchmark: one leader a process. The
// child's output is printed.
func isolatedBench(b *testing.B) bool {
	b.Helper()
	if os.Getenv(isolatedEnv) == "bench" {
		return false
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^"+b.Name()+"$", "-test.benchmem", "-test.benchtime="+benchtime())
	cmd.Env = append(os.Environ(), isolatedEnv+"=bench")
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("%s in its own process: %v\n%s", b.Name(), err, out)
	}
	fmt.Print(string(out))
	b.SkipNow()
	return true
}

// benchtime returns -test.benchtime's value.
func benchtime() string {
	if f := flag.Lookup("test.benchtime"); f != nil {
		return f.Value.String()
	}
	return "1s"
}

// childEnv names the child's mode: honest, one (honest, with one
// worker), flip (inverts its verdicts), refuse (refuses every packet),
// hold (never answers), slow (answers after childDelay).
const childEnv = "TPU_REMOTE_TEST_VERIFIER"

const childDelay = 600 * time.Millisecond

// clusterEnv, when set, makes the child a cluster member: its
// membership port, then the seeds, comma-separated.
const clusterEnv = "TPU_REMOTE_TEST_CLUSTER"

// traceEnv, when set, makes the child write its spans to this file
// (service name tpu-verifier).
const traceEnv = "TPU_REMOTE_TEST_TRACE"

// quietEnv, when set, makes the child print no "received" lines: the
// benchmarks' verifiers, so that neither process spends CPU a request
// on a line (a write there, a read and a wake-up in the leader: about
// 15 us of the leader's CPU a pass, perf says), which tpu verifier and
// tpu run do not.
const quietEnv = "TPU_REMOTE_TEST_QUIET"

// testRefresh is how often the tests' cluster members poll.
const testRefresh = 200 * time.Millisecond

// TestMain runs a child verifier, or the tests; it fails the run on a
// leaked packet batch (invariants build).
func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	packettest.Main(m)
}

// runChild serves a verifier on loopback in mode, prints its address,
// a line "received" as each request arrives, and, when its standard
// input closes, its stats as JSON.
func runChild(mode string) int {
	out := make(chan string, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for l := range out {
			fmt.Println(l)
		}
	}()
	var hook func(w *worker)
	switch mode {
	case "flip":
		hook = func(w *worker) { w.flip = true }
	case "refuse":
		hook = func(w *worker) { w.refuse = true }
	case "hold":
		hook = func(w *worker) { w.gate = make(chan struct{}) }
	case "slow":
		hook = func(w *worker) {
			g := make(chan struct{})
			w.gate = g
			w.onRecv = func() { go func() { time.Sleep(childDelay); g <- struct{}{} }() }
		}
	}
	workers := 2
	if mode == "one" {
		workers = 1
	}
	cfg := ServerConfig{Listen: "127.0.0.1:0", Verify: sigverify.VerifyConfig{Workers: workers}, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if c := os.Getenv(clusterEnv); c != "" {
		parts := strings.Split(c, ",")
		port, _ := strconv.Atoi(parts[0])
		cfg.Cluster = &ClusterConfig{Port: port, Seeds: parts[1:], Refresh: testRefresh}
	}
	if dir := os.Getenv(tlsEnv); dir != "" {
		c, err := LoadTLS(filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), filepath.Join(dir, "ca.pem"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		cfg.TLS = c
	}
	if path := os.Getenv(traceEnv); path != "" {
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer f.Close()
		prov, err := trace.Setup(context.Background(), trace.Config{ServiceName: "tpu-verifier", TraceWriter: f})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer prov.Shutdown(context.Background()) // before the stats line: the spans are written when it comes
		cfg.Trace = prov
	}
	s, err := Serve(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if hook != nil {
		hook(s.w)
	}
	if os.Getenv(quietEnv) == "" {
		prev := s.w.onRecv
		s.w.onRecv = func() {
			out <- "received"
			if prev != nil {
				prev()
			}
		}
	}
	out <- "addr " + s.Addr()
	io.Copy(io.Discard, os.Stdin)
	if mode != "hold" {
		s.Stop()
	}
	if cfg.Trace != nil {
		cfg.Trace.Shutdown(context.Background())
	}
	st, _ := json.Marshal(s.Stats())
	out <- "stats " + string(st)
	close(out)
	<-done
	return 0
}

// child is a verifier in a child process.
type child struct {
	addr     string
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	received chan struct{} // a value per request that arrived, while it has room
	stats    chan ServerStats
	exited   chan struct{}
}

// startChild starts a verifier process in mode; the test's cleanup
// kills it if the test has not stopped it.
func startChild(t testing.TB, mode string, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), childEnv+"="+mode), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, stdin: stdin, received: make(chan struct{}, 1024), stats: make(chan ServerStats, 1), exited: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		defer close(c.exited)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			l := sc.Text()
			switch {
			case strings.HasPrefix(l, "addr "):
				addr <- strings.TrimPrefix(l, "addr ")
			case l == "received":
				// Never blocks: a benchmark's thousands of requests
				// would fill the channel, and stall this reader and the
				// cleanup waiting for it.
				select {
				case c.received <- struct{}{}:
				default:
				}
			case strings.HasPrefix(l, "stats "):
				var st ServerStats
				if json.Unmarshal([]byte(strings.TrimPrefix(l, "stats ")), &st) == nil {
					c.stats <- st
				}
			}
		}
		cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-c.exited
	})
	select {
	case c.addr = <-addr:
	case <-c.exited:
		t.Fatal("the verifier process exited before it served")
	case <-time.After(time.Minute):
		t.Fatal("the verifier process did not start")
	}
	return c
}

// stop ends the child and returns its stats.
func (c *child) stop(t testing.TB) ServerStats {
	t.Helper()
	c.stdin.Close()
	select {
	case st := <-c.stats:
		return st
	case <-c.exited:
		// The stats come before the exit, but a select with both
		// ready picks either: look for them once more.
		select {
		case st := <-c.stats:
			return st
		default:
		}
		t.Fatal("the verifier process exited without its stats")
	case <-time.After(time.Minute):
		t.Fatal("the verifier process did not report its stats")
	}
	return ServerStats{}
}

// kill kills the child (SIGKILL) and waits for it to exit.
func (c *child) kill() {
	c.cmd.Process.Kill()
	<-c.exited
}
