package packettest

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/tpugo/tpu/packet"
)

const leakEnv = "PACKETTEST_LEAK"

func TestMain(m *testing.M) { Main(m) }

// childPool returns a pool in the child of TestLeakFailsTheRun, and skips
// the test elsewhere.
func childPool(t *testing.T) *packet.Pool {
	t.Helper()
	if os.Getenv(leakEnv) == "" {
		t.Skip("the child of TestLeakFailsTheRun")
	}
	pool, err := packet.NewPool(packet.Config{BatchCap: 1})
	if err != nil {
		t.Fatal(err)
	}
	return pool
}

// TestLeakOne drops a referenced batch, in the child only.
func TestLeakOne(t *testing.T) { childPool(t).Get().Next() } // taken and never released

// TestNoLeak takes and releases a batch, in the child only.
func TestNoLeak(t *testing.T) { childPool(t).Get().Release() }

// A test binary whose tests pass but leak a batch fails, naming the
// leak, in the invariants build; one that releases its batch passes.
func TestLeakFailsTheRun(t *testing.T) {
	if !packet.Invariants {
		t.Skip("leaks are found only in the invariants build (-tags invariants)")
	}
	for _, c := range []struct {
		run  string
		fail bool
	}{{"^TestLeakOne$", true}, {"^TestNoLeak$", false}} {
		cmd := exec.Command(os.Args[0], "-test.run="+c.run)
		cmd.Env = append(os.Environ(), leakEnv+"=1")
		out, err := cmd.CombinedOutput()
		if c.fail {
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "1 packet batches were garbage-collected") || !strings.Contains(string(out), "TestLeakOne") {
				t.Fatalf("%s: %v, want exit 1 naming the leak and its taker:\n%s", c.run, err, out)
			}
		} else if err != nil {
			t.Fatalf("%s: %v\n%s", c.run, err, out)
		}
	}
}
