package scheduler

import (
	"testing"

	"github.com/tpugo/tpu/packet/packettest"
)

// TestMain fails the run on a batch a test leaked (invariants build).
func TestMain(m *testing.M) { packettest.Main(m) }
