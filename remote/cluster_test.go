package remote

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
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

// TestMembershipOnLoopback: a verifier that listens on loopback serves
// its cluster membership (/_health) on loopback too, not on every
// interface as the automanaged provider alone would: 127.0.0.2, which
// reaches a wildcard listener on Linux, does not reach it.
func TestMembershipOnLoopback(t *testing.T) {
	// The control: does 127.0.0.2 reach a listener on every interface
	// here? (On Linux all of 127/8 is the loopback's; elsewhere it may
	// not be configured, and the check below would prove nothing.)
	wild, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.2:%d", wild.Addr().(*net.TCPAddr).Port), 5*time.Second)
	wild.Close()
	if err != nil {
		t.Skipf("127.0.0.2 does not reach a wildcard listener here (%v): nothing to tell loopback from every interface by", err)
	}
	c.Close()

	port := freePort(t)
	startChild(t, "honest", fmt.Sprintf("%s=%d,127.0.0.1:%d", clusterEnv, port, port))
	var node struct {
		Kinds []string `json:"kinds"`
		Port  int      `json:"port"`
	}
	waitFor(t, "the membership endpoint", func() bool {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/_health", port))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&node) == nil
	})
	if !slices.Contains(node.Kinds, ActorName) || node.Port == 0 {
		t.Errorf("/_health: %+v, want the %s kind and the remote's port", node, ActorName)
	}
	if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.2:%d", port), 5*time.Second); err == nil {
		c.Close()
		t.Errorf("the membership port %d answers on 127.0.0.2: bound beyond loopback", port)
	}
}
