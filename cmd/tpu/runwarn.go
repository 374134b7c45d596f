package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/tpugo/tpu/banking/bank"

	"github.com/tpugo/tpu/stages"
	"github.com/tpugo/tpu/trace"
)

// The warnings tpu run gives of what would make its figures misleading:
// a load that outlives its blockhash, a trace file with holes, a socket
// buffer the kernel capped.

// expiryWarning says when the load will outlive its blockhash, which is
// taken before signing and lives bank.MaxProcessingAge slots: what is
// sent after that fails as blockhash_not_found. The life is an estimate,
// from slotTime: a slot clock that falls behind lengthens it. slot says
// where slotTime comes from ("--slot-time 400ms" in tpu run), remedy
// what to change when signing alone outlives it. Empty when the load
// ends in time, or sends until it is sent (no --duration).
func expiryWarning(signing, sending, slotTime time.Duration, slot, remedy string) string {
	life := bank.MaxProcessingAge * slotTime
	if sending <= 0 || slotTime <= 0 || signing+sending <= life {
		return ""
	}
	if signing >= life {
		return fmt.Sprintf("warning: signing took longer than the load's blockhash lives (about %v: %d slots of %s): every transaction will fail as blockhash_not_found; %s",
			life, bank.MaxProcessingAge, slot, remedy)
	}
	return fmt.Sprintf("warning: the load's blockhash lives about %v (%d slots of %s), %v of it left after signing: what is sent after that fails as blockhash_not_found",
		life, bank.MaxProcessingAge, slot, (life - signing).Round(time.Millisecond))
}

// fileDroppedMsg begins the warning of a trace file that lacks spans.
const fileDroppedMsg = "trace file lacks spans"

// warnFileDropped warns, after prov's Shutdown, when the trace file at
// path lacks spans its queue had no room for (trace.Provider.FileDropped).
func warnFileDropped(log *slog.Logger, prov *trace.Provider, path string) {
	if n := prov.FileDropped(); n > 0 {
		log.Warn(fileDroppedMsg+": dropped, its queue full while the writer was behind", "dropped", n, "file", path)
	}
}

// otlpDroppedMsg begins the warning of an OTLP endpoint that lacks spans.
const otlpDroppedMsg = "OTLP endpoint lacks spans"

// warnOTLPDropped warns, after prov's Shutdown, when the OTLP endpoint
// did not receive every recorded span (trace.Provider.OTLPDropped).
func warnOTLPDropped(log *slog.Logger, prov *trace.Provider, endpoint string) {
	if n := prov.OTLPDropped(); n > 0 {
		args := []any{"dropped", n, "endpoint", endpoint}
		if err := prov.OTLPErr(); err != nil {
			args = append(args, "err", err)
		}
		log.Warn(otlpDroppedMsg+": exports failed, or were still queued at shutdown", args...)
	}
}

// warnOTLPProbe warns at start when endpoint does not accept a
// connection within a second: its spans would be lost.
func warnOTLPProbe(log *slog.Logger, endpoint string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := trace.ProbeOTLP(ctx, endpoint); err != nil {
		log.Warn("OTLP endpoint unreachable: its spans will be lost, and counted at the end", "endpoint", endpoint, "err", err)
	}
}

// warnReadBuffer warns when the kernel capped the receive buffer of g's
// fetch sockets below what fetch asks for.
func warnReadBuffer(log *slog.Logger, g *stages.Graph) {
	if got, asked := g.ReadBuffer(); got > 0 && got < asked {
		log.Warn("fetch socket buffer capped by the kernel", "got_bytes", got, "asked_bytes", asked,
			"note", "a burst the readers are behind on beyond this is dropped, counted as socket_dropped; raise net.core.rmem_max to lift the cap")
	}
}
