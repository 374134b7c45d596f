package remote

import (
	"fmt"
	"net"
	"strings"
	"testing"
)

// freePort returns a TCP port free on loopback now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestClusterJoinLeave: verifiers found through cluster membership
// (automanaged provider): a leader with no list puts each in service as
// it joins, sends it work, and takes it out when it leaves.
func TestClusterJoinLeave(t *testing.T) {
	if isolate(t) {
		return
	}
	ports := []int{freePort(t), freePort(t)}
	seeds := fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", ports[0], ports[1])
	x := startLeader(t, LeaderConfig{Cluster: &ClusterConfig{Seeds: strings.Split(seeds, ","), Refresh: testRefresh}})
	a := startChild(t, "honest", fmt.Sprintf("%s=%d,%s", clusterEnv, ports[0], seeds))
	waitFor(t, "the first verifier in service", func() bool { return x.Stats().Verifiers == 1 })
	b := startChild(t, "honest", fmt.Sprintf("%s=%d,%s", clusterEnv, ports[1], seeds))
	waitFor(t, "the second verifier in service", func() bool { return x.Stats().Verifiers == 2 })
	if st := x.Stats(); st.Credits != 2*DefaultCredits {
		t.Errorf("%d credits free, want %d", st.Credits, 2*DefaultCredits)
	}
	pool := newPool(t)
	var passes []*pass
	for i := range 8 {
		p := newPass(t, pool, 1, 30, 0, 100*i)
		passes = append(passes, p)
		p.start(t, x)
	}
	x.Wait()
	for _, p := range passes {
		p.check(t)
		p.release()
	}
	if st := x.Stats(); st.Remote != 8 {
		t.Errorf("stats %+v: want 8 passes checked remotely", st)
	}
	sa := a.stop(t) // it leaves: its process exits, its membership with it
	<-a.exited
	waitFor(t, "the first verifier out of service", func() bool { return x.Stats().Verifiers == 1 })
	sb := b.stop(t)
	if sa.Requests == 0 || sb.Requests == 0 || sa.Requests+sb.Requests != 8 {
		t.Errorf("requests %d and %d: want both verifiers used, 8 in all", sa.Requests, sb.Requests)
	}
}
