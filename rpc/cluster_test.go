package rpc

import (
	"context"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
)

// discover posts method with params (a JSON array, "" for none) and returns
// its result, failing on an error.
func discover(t *testing.T, url, method, params string) json.RawMessage {
	t.Helper()
	if params == "" {
		params = "[]"
	}
	_, b, err := post(t, context.Background(), url, rpcCall(1, method, params))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Result json.RawMessage
		Error  *struct{ Message string }
	}
	if err := json.Unmarshal(b, &r); err != nil || r.Error != nil {
		t.Fatalf("%s %s: %v %s", method, params, err, b)
	}
	return r.Result
}

// TestDiscovery: a client that looks up the leader the standard way
// finds tpu's identity, and its QUIC TPU in getClusterNodes.
func TestDiscovery(t *testing.T) {
	s := startFake(t, &fakeLedger{}, Config{TPUQUIC: netip.MustParseAddrPort("127.0.0.1:15")})
	s.SetPubSubAddr(netip.MustParseAddrPort("127.0.0.1:16"))
	url := s.URL()
	var id struct{ Identity string }
	json.Unmarshal(discover(t, url, "getIdentity", ""), &id)
	if id.Identity == "" {
		t.Fatal("no identity")
	}
	var nodes []map[string]any
	if err := json.Unmarshal(discover(t, url, "getClusterNodes", ""), &nodes); err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 1 {
		t.Fatalf("nodes %v", nodes)
	}
	n := nodes[0]
	want := map[string]any{"pubkey": id.Identity, "tpu": "127.0.0.1:9", "tpuQuic": "127.0.0.1:15", "tpuForwardsQuic": "127.0.0.1:15",
		"rpc": s.Addr(), "pubsub": "127.0.0.1:16", "gossip": nil, "tpuVote": nil}
	for k, v := range want {
		if got, ok := n[k]; !ok || got != v {
			t.Errorf("%s: %v, want %v", k, got, v)
		}
	}
	var leader string
	json.Unmarshal(discover(t, url, "getSlotLeader", ""), &leader)
	var leaders []string
	json.Unmarshal(discover(t, url, "getSlotLeaders", "[100, 3]"), &leaders)
	if leader != id.Identity || len(leaders) != 3 || leaders[2] != id.Identity {
		t.Fatalf("leader %q, leaders %v", leader, leaders)
	}
	if _, b, _ := post(t, context.Background(), url, rpcCall(1, "getSlotLeaders", "[0, 5001]")); !strings.Contains(string(b), "max 5000") {
		t.Fatalf("a limit over 5,000: %s", b)
	}
	var sched map[string][]uint64
	json.Unmarshal(discover(t, url, "getLeaderSchedule", ""), &sched)
	if s := sched[id.Identity]; len(sched) != 1 || len(s) != slotsPerEpoch || s[0] != 0 || s[slotsPerEpoch-1] != slotsPerEpoch-1 {
		t.Fatalf("schedule of %d identities, %d slots", len(sched), len(sched[id.Identity]))
	}
	for _, p := range []string{`[null, {"identity": "11111111111111111111111111111111"}]`, `[{"identity": "11111111111111111111111111111111"}]`} {
		sched = nil
		json.Unmarshal(discover(t, url, "getLeaderSchedule", p), &sched)
		if sched == nil || len(sched) != 0 {
			t.Fatalf("%s: another identity's schedule has %d entries", p, len(sched))
		}
	}
	var es epochSchedule
	json.Unmarshal(discover(t, url, "getEpochSchedule", ""), &es)
	if es.SlotsPerEpoch != slotsPerEpoch || es.Warmup {
		t.Fatalf("epoch schedule %+v", es)
	}
}
