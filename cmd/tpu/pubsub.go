package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/tpugo/tpu/rpc"
	"github.com/tpugo/tpu/rpc/pubsub"
	"github.com/tpugo/tpu/stages"
	"github.com/tpugo/tpu/trace"
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

// startPubSub serves the websocket PubSub at wsAddr(f), if any, looking
// signatures up in rpcSrv's index when there is one, and logs its URL (msg=pubsub url=ws://...). stop closes it, before the RPC and
// the ledger close; it is safe to call more than once.
func startPubSub(f runFlags, g *stages.Graph, rpcSrv *rpc.Server, prov *trace.Provider, log *slog.Logger) (stop func(), err error) {
	addr, err := wsAddr(f)
	if err != nil || addr == "" {
		return func() {}, err
	}
	cfg := pubsub.Config{Addr: addr, Bank: g.Bank(), Logger: log}
	if rpcSrv != nil {
		cfg.Lookup = rpcSrv.SignatureStatus // its index, rather than a read of 150 slots
	}
	if prov != nil {
		cfg.Meter = prov.Meter()
	}
	srv, err := pubsub.Start(cfg)
	if err != nil {
		return nil, err
	}
	log.Info("pubsub", "url", srv.URL())
	return func() {
		if srv == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Close(ctx); err != nil {
			log.Warn("pubsub", "err", err)
		}
		srv = nil
	}, nil
}
