package stages_test

import (
	goruntime "runtime"
	"testing"

	"github.com/tpugo/tpu/banking/loadgen"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/stages"
)

// With FetchConfig.GRO the load generator's segmented sends reach fetch
// coalesced and come out as the same transactions, every one executed;
// the snapshot says the socket drop count is then a lower bound (on
// Linux, where the kernel coalesces), and says nothing of the kind
// without GRO.
func TestFetchGRO(t *testing.T) {
	for _, gro := range []bool{false, true} {
		g := startGraph(t, stages.Config{Fetch: stages.FetchConfig{GRO: gro}})
		const n = 3000
		load, err := loadgen.Build(loadgen.Config{Seed: seed, Accounts: 64, Blockhash: latestBlockhash(t, g), Count: n})
		if err != nil {
			t.Fatal(err)
		}
		res, err := load.Send(loadgen.SendConfig{Target: g.Addr(), Rate: 20000})
		if err != nil || res.Sent != n {
			t.Fatalf("gro=%v: sent %d: %v", gro, res.Sent, err)
		}
		waitSettled(t, g, n)
		s := stop(t, g)
		if s.Outcomes[packet.OutcomeExecutedOK] != n || s.Received != n || s.SocketDropped != 0 {
			t.Fatalf("gro=%v: received %d, socket dropped %d, outcomes %v", gro, s.Received, s.SocketDropped, s.Outcomes)
		}
		if want := gro && goruntime.GOOS == "linux"; s.SocketDroppedLowerBound != want {
			t.Fatalf("gro=%v: SocketDroppedLowerBound %v, want %v", gro, s.SocketDroppedLowerBound, want)
		}
	}
}
