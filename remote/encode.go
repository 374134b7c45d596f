package remote

import (
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/runtime/protoiface"

	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/remote/wire"
	"github.com/tpugo/tpu/trace"
	"github.com/tpugo/tpu/txview"
)

// encoded is a VerifyRequest the leader encoded itself (encode), in a
// buffer it reuses from pass to pass. To protoactor it is a
// VerifyRequest (its descriptor, hence its type name, is one's), and
// proto.Marshal, which protoactor's serializer calls on each message it
// sends, returns buf itself rather than a copy (encodedMethods). So a
// pass's bytes are copied once on the leader before gRPC's framing,
// from the packets into buf, into memory already faulted in: the
// generated VerifyRequest took a copy into fresh slices, then
// proto.Marshal another into a fresh buffer, each pass.
//
// Ownership: buf is read by the leader's endpoint writer and gRPC's
// transport until gRPC has written the message to its connection (the
// codec sends buf from where it lies, marshalSpliced), which is before
// the verifier can have read it, hence before it can reply to it. So an
// encoded whose pass was answered may be reused; one whose pass was
// redone for lack of an answer may still wait in the writer's mailbox
// or gRPC's, and is left to the garbage collector.
type encoded struct {
	protoreflect.Message // an empty VerifyRequest's, shared: read only
	buf                  []byte
}

// requestReflect is what every encoded embeds: its descriptor names
// the type protoactor sends.
var requestReflect = (&wire.VerifyRequest{}).ProtoReflect()

func newEncoded() *encoded { return &encoded{Message: requestReflect} }

// ProtoReflect makes an encoded a proto.Message.
func (e *encoded) ProtoReflect() protoreflect.Message { return e }

// Interface returns e, not the empty VerifyRequest it embeds.
func (e *encoded) Interface() protoreflect.ProtoMessage { return e }

// ProtoMethods gives proto.Marshal e's bytes as they are.
func (e *encoded) ProtoMethods() *protoiface.Methods { return &encodedMethods }

var encodedMethods = protoiface.Methods{
	Flags: protoiface.SupportMarshalDeterministic,
	Marshal: func(in protoiface.MarshalInput) (protoiface.MarshalOutput, error) {
		buf := in.Message.(*encoded).buf
		if len(in.Buf) == 0 {
			return protoiface.MarshalOutput{Buf: buf}, nil
		}
		return protoiface.MarshalOutput{Buf: append(in.Buf, buf...)}, nil
	},
	CheckInitialized: func(protoiface.CheckInitializedInput) (protoiface.CheckInitializedOutput, error) {
		return protoiface.CheckInitializedOutput{}, nil
	},
}

// collect appends the live packets of batches to pkts, and returns it
// with the sum of their sizes (data) and of their sizes' varints
// (sizes): what encode needs to lay the request out.
func collect(pkts []*packet.Packet, batches []*packet.Batch) (_ []*packet.Packet, data, sizes int) {
	for _, b := range batches {
		for i := range b.Packets() {
			if p := b.At(i); !p.Discarded() {
				pkts = append(pkts, p)
				data += int(p.Meta.Size)
				sizes += protowire.SizeVarint(uint64(p.Meta.Size))
			}
		}
	}
	return pkts, data, sizes
}

// encode makes buf the VerifyRequest of pass id carrying pkts (their
// bytes back to back, sizes and layouts) and sc as the verifier span's
// parent, byte for byte what proto.Marshal makes of that VerifyRequest
// built field by field. data and sizes are collect's sums for pkts. It
// reads the packets' bytes, once each, in one sweep that writes the
// three fields at once (their lengths are known beforehand); it keeps
// no reference to them.
func (e *encoded) encode(id uint64, pkts []*packet.Packet, data, sizes int, sc trace.SpanContext) {
	layouts := len(pkts) * txview.LayoutSize
	// 64: the tags and lengths, the trace context's 16 + 8 bytes and
	// flags, with room to spare.
	need := data + sizes + layouts + 64
	b := e.buf[:0]
	if cap(b) < need {
		b = make([]byte, 0, need)
	}
	if id != 0 {
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, id)
	}
	if len(pkts) > 0 {
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(data))
		d := len(b) // the packets' bytes
		b = b[:d+data]
		b = protowire.AppendTag(b, 3, protowire.BytesType) // packed
		b = protowire.AppendVarint(b, uint64(sizes))
		s := len(b) // their sizes
		b = b[:s+sizes]
		b = protowire.AppendTag(b, 4, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(layouts))
		l := len(b) // their layouts
		b = b[:l+layouts]
		for _, p := range pkts {
			d += copy(b[d:], p.Data())
			s = len(protowire.AppendVarint(b[:s], uint64(p.Meta.Size)))
			l += copy(b[l:], p.Meta.Parsed[:])
		}
	}
	if sc.IsValid() {
		b = protowire.AppendTag(b, 5, protowire.BytesType)
		b = protowire.AppendBytes(b, sc.TraceID[:])
		b = protowire.AppendTag(b, 6, protowire.BytesType)
		b = protowire.AppendBytes(b, sc.SpanID[:])
		if sc.Flags != 0 {
			b = protowire.AppendTag(b, 7, protowire.VarintType)
			b = protowire.AppendVarint(b, uint64(sc.Flags))
		}
	}
	e.buf = b
}
