package remote

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// TestLinkCodecSplice: a protoactor batch with a large payload, marshalled
// by the links' codec, reads back as the same message (every field of
// the batch and its envelopes, the small payload's too), and its large
// payload is sent from where it lies: one of the result's buffers is
// the payload itself, not a copy. A batch of small payloads, and any
// other message, is proto.Marshal's bytes.
func TestLinkCodecSplice(t *testing.T) {
	large := bytes.Repeat([]byte{0xcd}, spliceMin+1)
	pid := func(id string) *actor.PID { return actor.NewPID("127.0.0.1:9", id) }
	header := &remote.MessageHeader{HeaderData: map[string]string{"a": "b"}}
	msg := &remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: &remote.MessageBatch{
		TypeNames: []string{"tpu.remote.VerifyRequest", "tpu.remote.Probe"},
		Targets:   []*actor.PID{pid("sigverify")},
		Senders:   []*actor.PID{pid("$1"), pid("$2")},
		Envelopes: []*remote.MessageEnvelope{
			{TypeId: 0, MessageData: large, Target: 0, Sender: 1, SerializerId: 0, MessageHeader: header, TargetRequestId: 3, SenderRequestId: 4},
			{TypeId: 1, MessageData: []byte{1, 2, 3}, Sender: 1, SenderRequestId: 5},
			{TypeId: 0, MessageData: large[1:], Target: 0, Sender: 0, TargetRequestId: 6},
		},
	}}}
	data, err := linkCodec{}.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	aliased := 0
	for _, b := range data {
		d := b.ReadOnlyData()
		if len(d) >= spliceMin && (unsafe.SliceData(d) == &large[0] || unsafe.SliceData(d) == &large[1]) {
			aliased++
		}
	}
	if aliased != 2 {
		t.Errorf("%d of the 2 large payloads sent from where they lie", aliased)
	}
	var back remote.RemoteMessage
	if err := proto.Unmarshal(data.Materialize(), &back); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&back, msg) {
		t.Errorf("read back as another message:\n%v\nwant\n%v", &back, msg)
	}
	if n := data.Len(); n != proto.Size(msg) {
		t.Errorf("%d bytes, proto.Size says %d", n, proto.Size(msg))
	}

	small := &remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: &remote.MessageBatch{
		TypeNames: []string{"tpu.remote.VerifyReply"},
		Envelopes: []*remote.MessageEnvelope{{MessageData: bytes.Repeat([]byte{1}, spliceMin-1)}},
	}}}
	for _, m := range []proto.Message{small, &remote.RemoteMessage{MessageType: &remote.RemoteMessage_ConnectRequest{ConnectRequest: &remote.ConnectRequest{}}}} {
		data, err := linkCodec{}.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if got := data.Materialize(); !bytes.Equal(got, want) {
			t.Errorf("%T: not proto.Marshal's bytes", m)
		}
		data.Free()
	}
}

// BenchmarkLinkMarshal compares the links' codec marshalling protoactor's
// envelope of a 1,024-packet pass's request (about 230 KB, as a leader
// sends it) spliced (way=spliced: the request's bytes left where they
// are) with the copy into a pooled buffer it made before
// (way=copied), in the same process. ns/op is the CPU of the encoding on
// the writer's goroutine; the copy also left gRPC one more buffer to
// return to the pool.
func BenchmarkLinkMarshal(b *testing.B) {
	req := bytes.Repeat([]byte{0xcd}, 1024*225)
	msg := &remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: &remote.MessageBatch{
		TypeNames: []string{"tpu.remote.VerifyRequest"},
		Targets:   []*actor.PID{actor.NewPID("127.0.0.1:9", "sigverify")},
		Senders:   []*actor.PID{actor.NewPID("127.0.0.1:8", "$1")},
		Envelopes: []*remote.MessageEnvelope{{MessageData: req, Sender: 0, Target: 0, SenderRequestId: 1}},
	}}}
	for _, w := range []struct {
		name string
		f    func(proto.Message) (mem.BufferSlice, error)
	}{{"spliced", func(m proto.Message) (mem.BufferSlice, error) { return linkCodec{}.Marshal(m) }}, {"copied", marshalCopy}} {
		b.Run("way="+w.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(req)))
			for b.Loop() {
				data, err := w.f(msg)
				if err != nil {
					b.Fatal(err)
				}
				data.Free()
			}
		})
	}
}
