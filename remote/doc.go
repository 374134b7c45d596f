// Package remote runs sigverify's signature checks in other processes,
// as protoactor-go remote actors over gRPC (tpu verifier, tpu run
// --verifiers).
//
// A verifier (Serve) hosts one worker actor, ActorName, that checks each
// request, a whole sigverify pass, with a sigverify.Verifier on every
// core, and answers a verdict per packet. It keeps nothing between
// requests, and refuses a packet whose parse differs from the leader's
// layout.
//
// The leader's Dispatcher takes passes from the sigverify stage
// (TryStart) while a verifier in service has a credit free: each has at
// most LeaderConfig.Credits passes in flight, the link's only
// backpressure. The batches never leave the leader: the request carries
// a copy of the live packets' bytes and parse layouts (wire.proto), and
// the verdicts are applied to the leader's own batches.
//
// Invariants:
//   - every pass TryStart takes ends exactly once, by its verifier's
//     verdicts or checked at the leader: a pass whose verifier dies,
//     stalls past the timeout, refuses it or fails the audit is checked
//     at the leader, and a reply that comes after that is ignored
//     (counted, Stats.Late);
//   - a verifier out of service holds no credit; one that stalled or
//     died is probed until it answers, one caught lying never again;
//   - one protoactor remote message is one gRPC message (the endpoint
//     writer's batch is 1), and a request stays under MaxRequestBytes,
//     well under the gRPC receive limit both sides set: gRPC refuses a
//     larger message without telling the sender, and protoactor's
//     default batch of 1,000 messages would pass it;
//   - the links are mutual TLS (TLS) or loopback: a verdict decides what
//     executes;
//   - a request is encoded into a buffer the leader reuses (encoded),
//     only once its pass was answered (gRPC had encoded it before the
//     verifier could read it) or never sent: a redone pass's buffer
//     may still wait in protoactor's endpoint writer, and is dropped.
package remote
