package rpc

import (
	"encoding/json"
	"net/netip"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/rpc/jsonrpc"
	"github.com/tpugo/tpu/txview"
)

// Discovery, as real clients find a leader's TPU: getClusterNodes lists
// tpu's identity with its ports (tpuQuic among them), and the leader
// schedule names that identity for every slot, so that a client looking
// up the current or next leaders' QUIC port the standard way (Agave's
// tpu-client, solana-web3.js's) finds tpu's. tpu is a one-node cluster:
// it is the leader of every slot of every epoch.

// identity returns the node's identity, base58.
func (s *Server) identity() string {
	k := txview.PublicKey(bank.CollectorKey(s.cfg.Seed))
	return base58.Encode(k[:])
}

// addrText is a for JSON: its "ip:port", or nil (JSON null) when a is
// the zero AddrPort.
func addrText(a netip.AddrPort) any {
	if !a.IsValid() {
		return nil
	}
	return a.String()
}

// clusterNode is one entry of getClusterNodes, Agave's RpcContactInfo.
type clusterNode struct {
	Pubkey          string  `json:"pubkey"`
	Gossip          any     `json:"gossip"`
	TPU             any     `json:"tpu"`
	TPUQUIC         any     `json:"tpuQuic"`
	TPUForwards     any     `json:"tpuForwards"`
	TPUForwardsQUIC any     `json:"tpuForwardsQuic"`
	TPUVote         any     `json:"tpuVote"`
	ServeRepair     any     `json:"serveRepair"`
	RPC             any     `json:"rpc"`
	PubSub          any     `json:"pubsub"`
	Version         string  `json:"version"`
	FeatureSet      *uint32 `json:"featureSet"`
	ShredVersion    *uint16 `json:"shredVersion"`
}

// getClusterNodes lists the one node: its UDP and QUIC TPU, its RPC and
// PubSub. It takes forwarded transactions on the same ports (there is
// no separate forwards port), and has no gossip, vote or repair port.
func getClusterNodes(s *Server, q *call, params []json.RawMessage) (any, *Error) {
	if e := jsonrpc.WantParams(params, 0, 0); e != nil {
		return nil, e
	}
	rpcAddr, _ := netip.ParseAddrPort(s.Addr())
	s.mu.RLock()
	ps := s.pubsubAddr
	s.mu.RUnlock()
	return []clusterNode{{
		Pubkey: s.identity(), TPU: addrText(s.cfg.TPU), TPUQUIC: addrText(s.cfg.TPUQUIC),
		TPUForwards: addrText(s.cfg.TPU), TPUForwardsQUIC: addrText(s.cfg.TPUQUIC),
		RPC: addrText(rpcAddr), PubSub: addrText(ps), Version: s.cfg.Version,
	}}, nil
}

// SetPubSubAddr tells getClusterNodes where the PubSub listens (it starts
// after the RPC).
func (s *Server) SetPubSubAddr(a netip.AddrPort) {
	s.mu.Lock()
	s.pubsubAddr = a
	s.mu.Unlock()
}

// maxSlotLeaders is the most leaders getSlotLeaders returns (Agave's
// MAX_GET_SLOT_LEADERS).
const maxSlotLeaders = 5000

// getSlotLeader names the leader of the current slot: tpu.
func getSlotLeader(s *Server, q *call, params []json.RawMessage) (any, *Error) {
	if e := jsonrpc.WantParams(params, 0, 1); e != nil {
		return nil, e
	}
	if _, e := s.parseConfig(params, 0); e != nil {
		return nil, e
	}
	return s.identity(), nil
}

// getSlotLeaders names the leaders of limit slots from start: tpu, each.
func getSlotLeaders(s *Server, q *call, params []json.RawMessage) (any, *Error) {
	if e := jsonrpc.WantParams(params, 2, 2); e != nil {
		return nil, e
	}
	var start, limit uint64
	if json.Unmarshal(params[0], &start) != nil || json.Unmarshal(params[1], &limit) != nil {
		return nil, jsonrpc.InvalidParams("Invalid params: want a start slot and a limit")
	}
	if limit < 1 || limit > maxSlotLeaders {
		return nil, jsonrpc.InvalidParams("Invalid limit; max %d", maxSlotLeaders)
	}
	id := s.identity()
	out := make([]string, limit)
	for i := range out {
		out[i] = id
	}
	return out, nil
}

// getLeaderSchedule maps tpu's identity to every slot index of the epoch
// of the slot asked (the current one by default); filtered by another
// identity it is empty.
func getLeaderSchedule(s *Server, q *call, params []json.RawMessage) (any, *Error) {
	if e := jsonrpc.WantParams(params, 0, 2); e != nil {
		return nil, e
	}
	var opts struct {
		Identity string `json:"identity"`
	}
	ci := 1 // the options object's index
	if len(params) > 0 && string(params[0]) != "null" {
		var slot uint64
		if json.Unmarshal(params[0], &slot) != nil {
			ci = 0 // the options object in the slot's place, as Agave takes it
		}
	}
	if ci < len(params) && string(params[ci]) != "null" {
		if err := json.Unmarshal(params[ci], &opts); err != nil {
			return nil, jsonrpc.InvalidParams("Invalid params: %v", err)
		}
	}
	id := s.identity()
	if opts.Identity != "" && opts.Identity != id {
		return map[string][]uint64{}, nil
	}
	slots := make([]uint64, slotsPerEpoch)
	for i := range slots {
		slots[i] = uint64(i)
	}
	return map[string][]uint64{id: slots}, nil
}

// epochSchedule is Agave's EpochSchedule: fixed-length epochs, no warmup.
type epochSchedule struct {
	SlotsPerEpoch            uint64 `json:"slotsPerEpoch"`
	LeaderScheduleSlotOffset uint64 `json:"leaderScheduleSlotOffset"`
	Warmup                   bool   `json:"warmup"`
	FirstNormalEpoch         uint64 `json:"firstNormalEpoch"`
	FirstNormalSlot          uint64 `json:"firstNormalSlot"`
}

func getEpochSchedule(s *Server, q *call, params []json.RawMessage) (any, *Error) {
	if e := jsonrpc.WantParams(params, 0, 0); e != nil {
		return nil, e
	}
	return epochSchedule{SlotsPerEpoch: slotsPerEpoch, LeaderScheduleSlotOffset: slotsPerEpoch}, nil
}
