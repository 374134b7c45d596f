package rpc

import (
	"testing"

	"github.com/tpugo/tpu/packet/packettest"
)

// TestMain fails the run on a leaked packet batch (invariants build).
func TestMain(m *testing.M) { packettest.Main(m) }
