package txview

import (
	"lukechampine.com/blake3"
	"lukechampine.com/blake3/guts"
)

// messageHashDomain is prepended to the message before hashing
// (solana-sdk VersionedMessage::hash_raw_message).
const messageHashDomain = "solana-tx-message-v1"

// MessageHash returns Solana's message hash: BLAKE3 over
// "solana-tx-message-v1" followed by Message(). It does not allocate.
func (v View) MessageHash() [32]byte { return HashMessage(v.Message()) }

// HashMessage returns the message hash of the serialized message msg. Up
// to PacketSize bytes it hashes on the stack, without allocating.
func HashMessage(msg []byte) [32]byte {
	if len(msg) > PacketSize {
		return blake3.Sum256(append([]byte(messageHashDomain), msg...))
	}
	var buf [len(messageHashDomain) + PacketSize]byte
	n := copy(buf[:], messageHashDomain)
	n += copy(buf[n:], msg)
	return sum256TwoChunks(buf[:n])
}

// sum256TwoChunks is BLAKE3-256 of b, len(b) <= 2 chunks (2048 bytes),
// built from the library's compression functions: blake3.Sum256 lets a
// buffer of this size escape to the heap. TestHashMatchesBlake3 checks it
// against blake3.Sum256 at every length.
func sum256TwoChunks(b []byte) [32]byte {
	var root guts.Node
	if len(b) <= guts.ChunkSize {
		root = guts.CompressChunk(b, &guts.IV, 0, 0)
	} else {
		left := guts.ChainingValue(guts.CompressChunk(b[:guts.ChunkSize], &guts.IV, 0, 0))
		right := guts.ChainingValue(guts.CompressChunk(b[guts.ChunkSize:], &guts.IV, 1, 0))
		root = guts.ParentNode(left, right, &guts.IV, 0)
	}
	root.Flags |= guts.FlagRoot
	out := guts.WordsToBytes(guts.CompressNode(root))
	return [32]byte(out[:32])
}
