package banktest

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"math/big"
	"testing"

	secpecdsa "github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
	"golang.org/x/crypto/sha3"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/txview"
)

// EdEntry is one signature of an ed25519 or secp256r1 instruction: where
// its parts are (0xffff: this instruction) and, for the builder, the
// parts to place in this instruction's data when they are here.
type EdEntry struct {
	SigOff, SigIx, KeyOff, KeyIx, MsgOff, MsgSize, MsgIx uint16
}

// PrecompileIx returns an instruction of program prog with data.
func PrecompileIx(prog banking.Pubkey, data []byte) txview.Ix {
	return txview.Ix{Program: prog, Data: data}
}

// Ed25519Ix returns an ed25519 precompile instruction checking priv's
// signature of each of msgs.
func Ed25519Ix(priv ed25519.PrivateKey, msgs ...[]byte) txview.Ix {
	var keys, sigs [][]byte
	for _, m := range msgs {
		keys = append(keys, priv.Public().(ed25519.PublicKey))
		sigs = append(sigs, ed25519.Sign(priv, m))
	}
	return PrecompileIx(banking.Ed25519Program, SigVerifyData(keys, sigs, msgs))
}

// SigVerifyData lays out an ed25519 (keySize 32) or secp256r1 (33)
// instruction with one self-contained entry per (key, sig, msg), as
// Agave's new_ed25519_instruction does: count, padding, offsets, then
// each key, signature and message.
func SigVerifyData(keys, sigs, msgs [][]byte) []byte {
	n := len(keys)
	data := []byte{byte(n), 0}
	data = append(data, make([]byte, n*offsetsSize)...)
	for i := range keys {
		e := EdEntry{SigIx: selfInstruction, KeyIx: selfInstruction, MsgIx: selfInstruction}
		e.KeyOff = uint16(len(data))
		data = append(data, keys[i]...)
		e.SigOff = uint16(len(data))
		data = append(data, sigs[i]...)
		e.MsgOff, e.MsgSize = uint16(len(data)), uint16(len(msgs[i]))
		data = append(data, msgs[i]...)
		PutEntry(data, i, e)
	}
	return data
}

// PutEntry writes entry i's offsets into data.
func PutEntry(data []byte, i int, e EdEntry) {
	b := data[offsetsStart+i*offsetsSize:]
	for j, v := range []uint16{e.SigOff, e.SigIx, e.KeyOff, e.KeyIx, e.MsgOff, e.MsgSize, e.MsgIx} {
		binary.LittleEndian.PutUint16(b[2*j:], v)
	}
}

// EdTable is Agave's test_case: one entry of offsets e over 2 bytes of
// count and padding, the other instruction 100 zero bytes.
func EdTable(count byte, e EdEntry) ([]byte, [][]byte) {
	data := make([]byte, offsetsStart+offsetsSize)
	data[0] = count
	PutEntry(data, 0, e)
	return data, [][]byte{data, make([]byte, 100)}
}

// The layout of a signature-verify instruction's data (Agave
// precompiles: SIGNATURE_OFFSETS_START, SIGNATURE_OFFSETS_SERIALIZED_SIZE,
// and the instruction index that means "this instruction").
const (
	offsetsStart    = 2
	offsetsSize     = 14
	selfInstruction = 0xffff
)

// SecpData lays out a secp256k1 instruction with one self-contained
// signature, as Agave's new_secp256k1_instruction does: count, offsets
// (all in instruction index ix), then eth address, signature and
// recovery id, message.
func SecpData(ix byte, eth, sig65, msg []byte) []byte {
	data := make([]byte, 1+secp256k1OffsetsSize)
	data[0] = 1
	ethOff := len(data)
	data = append(data, eth...)
	sigOff := len(data)
	data = append(data, sig65...)
	msgOff := len(data)
	data = append(data, msg...)
	b := data[1:]
	binary.LittleEndian.PutUint16(b, uint16(sigOff))
	b[2] = ix
	binary.LittleEndian.PutUint16(b[3:], uint16(ethOff))
	b[5] = ix
	binary.LittleEndian.PutUint16(b[6:], uint16(msgOff))
	binary.LittleEndian.PutUint16(b[8:], uint16(len(msg)))
	b[10] = ix
	return data
}

// SecpSign signs msg as Agave's sign_message does: keccak256 of the
// message, r || s || recovery id.
func SecpSign(key *secp256k1.PrivateKey, msg []byte) []byte {
	var h [32]byte
	keccak(&h, msg)
	c := secpecdsa.SignCompact(key, h[:], false) // 27 + recovery id, r, s
	return append(append([]byte{}, c[1:]...), c[0]-27)
}

// K1Key derives a secp256k1 key from label.
func K1Key(label string) *secp256k1.PrivateKey {
	h := sha256.Sum256([]byte(label))
	return secp256k1.PrivKeyFromBytes(h[:])
}

// EthAddress returns the Ethereum address of key.
func EthAddress(key *secp256k1.PrivateKey) []byte {
	var h [32]byte
	keccak(&h, key.PubKey().SerializeUncompressed()[1:])
	return h[12:]
}

// P256Sign signs msg with key over SHA-256 and returns r || s with s
// made low, as SIMD-0075 requires, and the compressed public key.
func P256Sign(t testing.TB, key *ecdsa.PrivateKey, msg []byte, lowS bool) (sig, pub []byte) {
	h := sha256.Sum256(msg)
	r, s, err := ecdsa.Sign(rand.Reader, key, h[:])
	if err != nil {
		t.Fatal(err)
	}
	n := elliptic.P256().Params().N
	half := new(big.Int).Rsh(n, 1)
	if (s.Cmp(half) > 0) == lowS {
		s.Sub(n, s)
	}
	sig = make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return sig, elliptic.MarshalCompressed(elliptic.P256(), key.X, key.Y)
}

// secp256k1OffsetsSize is SIGNATURE_OFFSETS_SERIALIZED_SIZE of the
// secp256k1 program.
const secp256k1OffsetsSize = 11

func keccak(out *[32]byte, b []byte) {
	h := sha3.NewLegacyKeccak256()
	h.Write(b)
	h.Sum(out[:0])
}
