package rpc

import (
	"testing"

	"github.com/tpugo/tpu/packet/packettest"
	"github.com/tpugo/tpu/stages/sigverify"
)

// TestMain fails the run on a leaked packet batch (invariants build).
func TestMain(m *testing.M) { packettest.Main(m) }

// testVerifier is the Config.Verifier of the package's tests: the
// default backend, as tpu run's.
func testVerifier(t testing.TB) Verifier {
	t.Helper()
	b, err := sigverify.NewBackend("")
	if err != nil {
		t.Fatal(err)
	}
	return b
}
