package main

import (
	"fmt"
	"net"
	"strconv"
)

// wsAuto is --ws-addr's default: the RPC port + 1.
const wsAuto = "auto"

// wsAddr returns the PubSub address of the flags: --ws-addr, or with
// "auto" the --rpc-addr's host and port + 1 (Agave: RPC 8899, PubSub
// 8900), port 0 (a free one) when the RPC's is 0; empty for none.
func wsAddr(f runFlags) (string, error) {
	if f.wsAddr != wsAuto {
		return f.wsAddr, nil
	}
	if f.rpcAddr == "" {
		return "", nil
	}
	host, port, err := net.SplitHostPort(f.rpcAddr)
	if err != nil {
		return "", fmt.Errorf("--ws-addr auto: --rpc-addr %q: %w", f.rpcAddr, err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 65535 {
		return "", fmt.Errorf("--ws-addr auto: --rpc-addr %q has no port with one after it; give --ws-addr", f.rpcAddr)
	}
	if p == 0 {
		return net.JoinHostPort(host, "0"), nil
	}
	return net.JoinHostPort(host, strconv.FormatUint(p+1, 10)), nil
}
