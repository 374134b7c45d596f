package remote

import (
	"errors"
	"fmt"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/remote/wire"
	"github.com/tpugo/tpu/trace"
	"github.com/tpugo/tpu/txview"
)

// MaxRequestBytes is the largest VerifyRequest a leader sends, encoded:
// a pass larger than this is checked at the leader (counted, TooBig).
// gRPC's own default limit is 4 MiB, and both sides here raise their
// receive limit to maxMessageBytes, leaving room for protoactor's
// envelope.
const MaxRequestBytes = 4 << 20

// maxMessageBytes is the gRPC receive limit both sides set (grpc's
// default, 4 MiB, silently refuses a larger message).
const maxMessageBytes = 8 << 20

// maxRequestPackets bounds the packets one request may carry, so that a
// verifier reading a request allocates in proportion to what it was
// sent.
const maxRequestPackets = MaxRequestBytes / 64

// Errors a verifier answers a request it cannot read with.
var (
	errShape   = errors.New("remote: request sizes and layouts disagree with its data")
	errTooMany = errors.New("remote: request carries too many packets")
)

// parent returns the span context req carries (the zero one if none, or
// if it is malformed).
func parent(req *wire.VerifyRequest) trace.SpanContext {
	var sc trace.SpanContext
	if len(req.TraceId) != len(sc.TraceID) || len(req.SpanId) != len(sc.SpanID) {
		return trace.SpanContext{}
	}
	copy(sc.TraceID[:], req.TraceId)
	copy(sc.SpanID[:], req.SpanId)
	sc.Flags = byte(req.TraceFlags)
	return sc
}

// checkShape reports whether req's sizes, layouts and data agree, and
// every size is a packet's.
func checkShape(req *wire.VerifyRequest) error {
	n := len(req.Sizes)
	if n > maxRequestPackets {
		return fmt.Errorf("%w: %d", errTooMany, n)
	}
	if len(req.Layouts) != n*txview.LayoutSize {
		return errShape
	}
	total := 0
	for _, s := range req.Sizes {
		if s == 0 || s > packet.Size {
			return errShape
		}
		total += int(s)
	}
	if total != len(req.Data) {
		return errShape
	}
	return nil
}
