package remote

import (
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// spliceMin is the smallest envelope payload linkCodec sends from where
// it lies rather than copying it into gRPC's buffer: a pass's request.
const spliceMin = 32 << 10

// marshalSpliced encodes rm, a protoactor message batch, as gRPC's
// codec would, but for the large payloads of its envelopes (a pass's
// VerifyRequest, whose bytes are the leader's encoded buffer): each of
// those is a buffer of the result of its own, the envelope's bytes, not
// a copy of them. It reports false, having done nothing, for any other
// message. The payload field is encoded after the envelope's other
// fields rather than among them, which any protobuf reader accepts
// (fields may come in any order) and decodes to the same message.
//
// Ownership: the result refers to the payloads until gRPC has written
// them, which is before the peer can have read them, hence before it
// can answer them: a leader reuses a request's buffer only once it is
// answered (encoded).
func marshalSpliced(v any) (mem.BufferSlice, bool, error) {
	rm, ok := v.(*remote.RemoteMessage)
	if !ok {
		return nil, false, nil
	}
	batch := rm.GetMessageBatch()
	if batch == nil {
		return nil, false, nil
	}
	large := false
	for _, e := range batch.Envelopes {
		if len(e.MessageData) >= spliceMin {
			large = true
			break
		}
	}
	if !large {
		return nil, false, nil
	}
	// The batch's other fields, then each envelope: its bytes but for a
	// large payload, which follows them.
	rest, err := proto.Marshal(&remote.MessageBatch{TypeNames: batch.TypeNames, Targets: batch.Targets, Senders: batch.Senders})
	if err != nil {
		return nil, false, err
	}
	type part struct{ head, data []byte }
	parts := make([]part, len(batch.Envelopes))
	batchLen := len(rest)
	for i, e := range batch.Envelopes {
		var p part
		if len(e.MessageData) >= spliceMin {
			p.data = e.MessageData
			p.head, err = proto.Marshal(&remote.MessageEnvelope{TypeId: e.TypeId, Target: e.Target, Sender: e.Sender,
				SerializerId: e.SerializerId, MessageHeader: e.MessageHeader, TargetRequestId: e.TargetRequestId,
				SenderRequestId: e.SenderRequestId})
			p.head = protowire.AppendTag(p.head, 2, protowire.BytesType)
			p.head = protowire.AppendVarint(p.head, uint64(len(p.data)))
		} else {
			p.head, err = proto.Marshal(e)
		}
		if err != nil {
			return nil, false, err
		}
		n := len(p.head) + len(p.data)
		batchLen += protowire.SizeTag(3) + protowire.SizeBytes(n)
		parts[i] = p
	}
	// RemoteMessage.message_batch (field 1), its length, the batch.
	head := make([]byte, 0, 16+len(rest)+len(parts[0].head))
	head = protowire.AppendTag(head, 1, protowire.BytesType)
	head = protowire.AppendVarint(head, uint64(batchLen))
	head = append(head, rest...)
	out := make(mem.BufferSlice, 0, 2*len(parts)+1)
	for _, p := range parts {
		head = protowire.AppendTag(head, 3, protowire.BytesType)
		head = protowire.AppendVarint(head, uint64(len(p.head)+len(p.data)))
		head = append(head, p.head...)
		if p.data != nil {
			out = append(out, mem.SliceBuffer(head), mem.SliceBuffer(p.data))
			head = nil
		}
	}
	if len(head) > 0 {
		out = append(out, mem.SliceBuffer(head))
	}
	return out, true, nil
}
