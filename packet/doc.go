// Package packet holds the unit that moves through tpu: a Packet is one
// datagram of at most Size bytes plus its Meta, and a Batch is a
// reference-counted group of packets recycled by a Pool.
//
// # Ownership
//
// A Batch is owned through references. The rules, from DESIGN.md:
//
//  1. Pool.Get returns a batch with one reference, owned by the caller.
//  2. Every function that takes a *Batch says whether it borrows it (must
//     not keep it after returning) or consumes it (the caller must not touch
//     it afterwards, even on error).
//  3. Sending a batch in a message consumes the sender's reference. To fan
//     out to two receivers, Retain first.
//  4. Each reference is released exactly once. The last Release returns the
//     batch to its pool.
//  5. Bytes taken from a packet (Packet.Data, a txview.View over them) borrow
//     the batch: they are valid only while their holder owns a reference.
//  6. Only the holder of the sole reference may mutate packets.
//
// A packet carries the parse result of its bytes (Meta.Parsed, a
// txview.Layout that sigverify stores), so that its consumers do not
// parse it again; Clone copies it with the bytes, and since its offsets
// are relative to the first byte the copy needs no rebasing.
//
// # Invariants build
//
// Built with -tags invariants, the package checks these rules at run time:
// a released batch has every packet buffer overwritten with Poison, a
// release beyond the last reference panics, and a batch collected by the
// garbage collector while it still holds references is reported as a leak
// (Pool.Stats().Leaks, and the pool's LeakHook, or the log and
// LoggedLeaks, which packettest.Main turns into a failed test run),
// naming where it was taken. Without the tag the checks
// cost nothing; a release beyond the last one is counted in
// Stats().DoubleReleases and otherwise ignored.
package packet
