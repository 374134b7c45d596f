package runtime

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/binary"
	"math/big"
	"strconv"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"github.com/tpugo/tpu/banking"

	secpecdsa "github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
	"golang.org/x/crypto/sha3"

	"github.com/tpugo/tpu/ed25519strict"
	"github.com/tpugo/tpu/txview"
)

// Cost model units per precompile signature (Agave cost-model
// block_cost_limits.rs: COMPUTE_UNIT_TO_US_RATIO 30 x 80, 223, 160;
// ed25519 at its verify_strict price, ED25519_VERIFY_STRICT_COST, since
// ed25519_precompile_verify_strict is active).
const (
	Ed25519VerifyCost   = 2400
	Secp256k1VerifyCost = 6690
	Secp256r1VerifyCost = 4800
)

// PrecompileError is Agave's PrecompileError (solana-precompile-error),
// numbered as it is: a failed precompile instruction i ends the
// transaction with InstructionError(i, Custom(code)) (InstructionError's
// From<PrecompileError>, e as u32). It is an error value that costs no
// allocation.
type PrecompileError uint32

// The PrecompileError variants.
const (
	PrecompileInvalidPublicKey           PrecompileError = 0
	PrecompileInvalidRecoveryID          PrecompileError = 1
	PrecompileInvalidSignature           PrecompileError = 2
	PrecompileInvalidDataOffsets         PrecompileError = 3
	PrecompileInvalidInstructionDataSize PrecompileError = 4
)

var precompileErrorNames = [...]string{
	PrecompileInvalidPublicKey:           "InvalidPublicKey",
	PrecompileInvalidRecoveryID:          "InvalidRecoveryId",
	PrecompileInvalidSignature:           "InvalidSignature",
	PrecompileInvalidDataOffsets:         "InvalidDataOffsets",
	PrecompileInvalidInstructionDataSize: "InvalidInstructionDataSize",
}

func (e PrecompileError) Error() string {
	if int(e) < len(precompileErrorNames) {
		return "banking: precompile: " + precompileErrorNames[e]
	}
	return "banking: precompile: error " + strconv.Itoa(int(e))
}

// sigCounts are the signatures a transaction's precompile instructions
// declare (Agave runtime-transaction signature_details.rs,
// PrecompileSignatureDetails: the first data byte of each instruction of
// each precompile, 0 for empty data; a declared count need not match
// what verification finds).
type sigCounts struct {
	ed25519, secp256k1, secp256r1 uint64
}

// precompileSigs counts the signatures v's precompile instructions
// declare. It allocates nothing.
func precompileSigs(v txview.View) sigCounts {
	var c sigCounts
	// Programs are static keys: a transaction without a precompile among
	// them (nearly all) is decided by a byte or two per key, without
	// walking its instructions.
	found := false
	for i, n := 0, v.NumStaticKeys(); i < n && !found; i++ {
		k := v.StaticKey(i)
		found = (k[0] == banking.Ed25519Program[0] || k[0] == banking.Secp256k1Program[0] || k[0] == banking.Secp256r1Program[0]) &&
			(*k == banking.Ed25519Program || *k == banking.Secp256k1Program || *k == banking.Secp256r1Program)
	}
	if !found {
		return c
	}
	it := v.Instructions()
	for in, ok := it.Next(); ok; in, ok = it.Next() {
		k := v.StaticKey(int(in.ProgramIndex))
		if k[0] != banking.Ed25519Program[0] && k[0] != banking.Secp256k1Program[0] && k[0] != banking.Secp256r1Program[0] {
			continue // the usual case, decided by one byte
		}
		var n uint64
		if len(in.Data) > 0 {
			n = uint64(in.Data[0])
		}
		switch *k {
		case banking.Ed25519Program:
			c.ed25519 += n
		case banking.Secp256k1Program:
			c.secp256k1 += n
		case banking.Secp256r1Program:
			c.secp256r1 += n
		}
	}
	return c
}

// signatureCount is the number of signatures the signature fee is paid
// on: the transaction's own and its precompiles' (Agave fee/src/lib.rs
// calculate_signature_fee, SignatureCounts). At most 255 per instruction,
// so the sum cannot overflow.
func signatureCount(v txview.View) uint64 {
	c := precompileSigs(v)
	return uint64(v.NumSignatures()) + c.ed25519 + c.secp256k1 + c.secp256r1
}

// signatureCost is the signature part of the cost model (Agave
// cost-model cost_model.rs get_signature_cost): SignatureCost per
// transaction signature plus each precompile's verify cost per declared
// signature.
func signatureCost(v txview.View) uint64 {
	c := precompileSigs(v)
	return SignatureCost*uint64(v.NumSignatures()) +
		Ed25519VerifyCost*c.ed25519 + Secp256k1VerifyCost*c.secp256k1 + Secp256r1VerifyCost*c.secp256r1
}

// precompileInstruction verifies instruction i of tx, a precompile's:
// zero compute units, and InstructionError(i, Custom(code)) if it fails.
func precompileInstruction(tx *Tx, i int, in txview.Instruction, prog *banking.Pubkey) (uint64, banking.TxError) {
	// Every instruction's data, as Agave hands the precompile
	// (instruction_datas): on the stack for up to 32 instructions.
	var buf [32][]byte
	datas := buf[:0]
	it := tx.View.Instructions()
	for d, ok := it.Next(); ok; d, ok = it.Next() {
		datas = append(datas, d.Data)
	}
	if err := verifyPrecompile(prog, in.Data, datas); err != nil {
		return 0, banking.CustomError(i, uint32(err.(PrecompileError)))
	}
	return 0, banking.TxError{}
}

// verifyPrecompile runs the verify function of precompile prog over an
// instruction's data, with datas the data of every instruction of the
// transaction (Agave precompiles/src/lib.rs verify_if_precompile). The
// error is nil or a PrecompileError. It borrows its arguments.
func verifyPrecompile(prog *banking.Pubkey, data []byte, datas [][]byte) error {
	switch *prog {
	case banking.Ed25519Program:
		return verifyEd25519(data, datas)
	case banking.Secp256k1Program:
		return verifySecp256k1(data, datas)
	case banking.Secp256r1Program:
		return verifySecp256r1(data, datas)
	}
	return nil
}

// Layout of the ed25519 and secp256r1 instruction data (Agave's
// solana-ed25519-program / solana-secp256r1-program): a count byte, a
// padding byte, then per signature 14 bytes of offsets, seven u16
// little-endian: signature offset, signature instruction index, public
// key offset, public key instruction index, message offset, message
// size, message instruction index. An instruction index of 0xffff means
// this instruction's own data.
const (
	offsetsStart    = 2
	offsetsSize     = 14
	selfInstruction = 0xffff
)

// sigOffsets is one entry of the offsets table.
type sigOffsets struct {
	sigOff, sigIx, keyOff, keyIx, msgOff, msgSize, msgIx uint16
}

func readOffsets(b []byte) sigOffsets {
	u := func(i int) uint16 { return binary.LittleEndian.Uint16(b[2*i:]) }
	return sigOffsets{u(0), u(1), u(2), u(3), u(4), u(5), u(6)}
}

// dataSlice returns size bytes at offset of instruction ix's data (data
// itself for 0xffff), as Agave's ed25519 and secp256r1 get_data_slice
// do: an index past the last instruction or a range past the end of the
// data is InvalidDataOffsets.
func dataSlice(data []byte, datas [][]byte, ix, offset uint16, size int) ([]byte, error) {
	in := data
	if ix != selfInstruction {
		if int(ix) >= len(datas) {
			return nil, PrecompileInvalidDataOffsets
		}
		in = datas[ix]
	}
	start := int(offset)
	end := start + size
	if end > len(in) {
		return nil, PrecompileInvalidDataOffsets
	}
	return in[start:end], nil
}

// verifyEd25519 is Agave precompiles/src/ed25519.rs verify: the count
// byte and the table's size checked first, then per signature the
// signature, public key and message sliced in that order, the key
// decoded (InvalidPublicKey), and the signature checked with
// verify_strict (ed25519_precompile_verify_strict, active on mainnet;
// ed25519strict.Verify, the rule sigverify applies to transaction
// signatures).
func verifyEd25519(data []byte, datas [][]byte) error {
	if len(data) < offsetsStart {
		return PrecompileInvalidInstructionDataSize
	}
	n := int(data[0])
	if n == 0 && len(data) > offsetsStart {
		return PrecompileInvalidInstructionDataSize
	}
	if len(data) < n*offsetsSize+offsetsStart {
		return PrecompileInvalidInstructionDataSize
	}
	for i := range n {
		o := readOffsets(data[offsetsStart+i*offsetsSize:])
		sig, err := dataSlice(data, datas, o.sigIx, o.sigOff, 64)
		if err != nil {
			return err
		}
		key, err := dataSlice(data, datas, o.keyIx, o.keyOff, 32)
		if err != nil {
			return err
		}
		if !ed25519strict.ValidPublicKey((*[32]byte)(key)) {
			return PrecompileInvalidPublicKey
		}
		msg, err := dataSlice(data, datas, o.msgIx, o.msgOff, int(o.msgSize))
		if err != nil {
			return err
		}
		if !ed25519strict.Verify((*[32]byte)(key), msg, (*[64]byte)(sig)) {
			return PrecompileInvalidSignature
		}
	}
	return nil
}

// The secp256k1 instruction data (Agave solana-secp256k1-program): a
// count byte, then per signature 11 bytes of offsets (bincode of
// SecpSignatureOffsets): signature offset u16, signature instruction
// index u8, eth address offset u16, eth address instruction index u8,
// message offset u16, message size u16, message instruction index u8.
// The signature is 64 bytes (r, s big-endian) followed by the recovery
// id; the eth address is the last 20 bytes of keccak256 of the 64-byte
// uncompressed public key.
const secp256k1OffsetsSize = 11

// secpSlice is Agave secp256k1.rs get_data_slice: an index past the last
// instruction is InvalidDataOffsets, a range past the end of the data
// InvalidSignature.
func secpSlice(datas [][]byte, ix uint8, offset uint16, size int) ([]byte, error) {
	if int(ix) >= len(datas) {
		return nil, PrecompileInvalidDataOffsets
	}
	in := datas[ix]
	start := int(offset)
	end := start + size
	if end > len(in) {
		return nil, PrecompileInvalidSignature
	}
	return in[start:end], nil
}

// verifySecp256k1 is Agave precompiles/src/secp256k1.rs verify, its
// checks in its order. Agave parses the signature with libsecp256k1
// (r and s below the group order, else InvalidSignature; high s
// accepted), reads the recovery id (0-3, else InvalidRecoveryId),
// hashes the message with keccak256, recovers the key and compares its
// eth address. Here the recovery is decred's secp256k1 (dcrd, v4:
// RecoverCompact, the same recovery with r and s in [1, N-1], high s
// accepted, r + N for recovery ids 2 and 3) and keccak256 is
// golang.org/x/crypto/sha3's legacy Keccak. Bytes no offset refers to
// are allowed (agave#10173, which would refuse them, was closed
// unmerged pending a SIMD).
func verifySecp256k1(data []byte, datas [][]byte) error {
	if len(data) == 0 {
		return PrecompileInvalidInstructionDataSize
	}
	n := int(data[0])
	if n == 0 && len(data) > 1 {
		return PrecompileInvalidInstructionDataSize
	}
	if len(data) < n*secp256k1OffsetsSize+1 {
		return PrecompileInvalidInstructionDataSize
	}
	for i := range n {
		b := data[1+i*secp256k1OffsetsSize:]
		sigOff, sigIx := binary.LittleEndian.Uint16(b), b[2]
		ethOff, ethIx := binary.LittleEndian.Uint16(b[3:]), b[5]
		msgOff, msgSize, msgIx := binary.LittleEndian.Uint16(b[6:]), binary.LittleEndian.Uint16(b[8:]), b[10]

		if int(sigIx) >= len(datas) {
			return PrecompileInvalidInstructionDataSize
		}
		sd := datas[sigIx]
		so := int(sigOff)
		sigEnd := so + 64
		if sigEnd >= len(sd) { // the recovery id follows the signature
			return PrecompileInvalidSignature
		}
		var r, s secp256k1.ModNScalar
		if r.SetByteSlice(sd[so:so+32]) || s.SetByteSlice(sd[so+32:sigEnd]) {
			return PrecompileInvalidSignature // r or s >= N
		}
		recID := sd[sigEnd]
		if recID >= 4 {
			return PrecompileInvalidRecoveryID
		}
		eth, err := secpSlice(datas, ethIx, ethOff, 20)
		if err != nil {
			return err
		}
		msg, err := secpSlice(datas, msgIx, msgOff, int(msgSize))
		if err != nil {
			return err
		}
		var hash [32]byte
		keccak(&hash, msg)
		var compact [65]byte
		compact[0] = 27 + recID // RecoverCompact's header: 27 + recovery id, uncompressed key
		copy(compact[1:], sd[so:sigEnd])
		pub, _, err := secpecdsa.RecoverCompact(compact[:], hash[:])
		if err != nil {
			return PrecompileInvalidSignature
		}
		var addr [32]byte
		keccak(&addr, pub.SerializeUncompressed()[1:])
		if [20]byte(addr[12:]) != [20]byte(eth) {
			return PrecompileInvalidSignature
		}
	}
	return nil
}

// keccak writes keccak256(b) (Ethereum's, not SHA3-256) to out.
func keccak(out *[32]byte, b []byte) {
	h := sha3.NewLegacyKeccak256()
	h.Write(b)
	h.Sum(out[:0])
}

// P-256's group order n and n/2 (Agave solana-secp256r1-program
// SECP256R1_ORDER_MINUS_ONE + 1 and SECP256R1_HALF_ORDER).
var (
	p256Order     = elliptic.P256().Params().N
	p256HalfOrder = new(big.Int).Rsh(p256Order, 1)
)

// Most signatures one secp256r1 instruction may carry (Agave
// secp256r1.rs: more is InvalidInstructionDataSize).
const maxSecp256r1Signatures = 8

// verifySecp256r1 is Agave precompiles/src/secp256r1.rs verify
// (SIMD-0075): at most 8 signatures, none is an error too; per
// signature the signature, 33-byte compressed public key and message
// sliced as for ed25519, then r in [1, n-1] and s in [1, n/2] (low S,
// so a signature is not malleable) else InvalidSignature, the key
// decoded (InvalidPublicKey), and ECDSA over SHA-256 of the message.
// crypto/ecdsa and crypto/elliptic do the curve work.
func verifySecp256r1(data []byte, datas [][]byte) error {
	if len(data) < offsetsStart {
		return PrecompileInvalidInstructionDataSize
	}
	n := int(data[0])
	if n == 0 || n > maxSecp256r1Signatures {
		return PrecompileInvalidInstructionDataSize
	}
	if len(data) < n*offsetsSize+offsetsStart {
		return PrecompileInvalidInstructionDataSize
	}
	for i := range n {
		o := readOffsets(data[offsetsStart+i*offsetsSize:])
		sig, err := dataSlice(data, datas, o.sigIx, o.sigOff, 64)
		if err != nil {
			return err
		}
		key, err := dataSlice(data, datas, o.keyIx, o.keyOff, 33)
		if err != nil {
			return err
		}
		msg, err := dataSlice(data, datas, o.msgIx, o.msgOff, int(o.msgSize))
		if err != nil {
			return err
		}
		r := new(big.Int).SetBytes(sig[:32])
		s := new(big.Int).SetBytes(sig[32:])
		if r.Sign() == 0 || r.Cmp(p256Order) >= 0 || s.Sign() == 0 || s.Cmp(p256HalfOrder) > 0 {
			return PrecompileInvalidSignature
		}
		x, y := elliptic.UnmarshalCompressed(elliptic.P256(), key)
		if x == nil {
			return PrecompileInvalidPublicKey
		}
		var raw [65]byte
		raw[0] = 4
		x.FillBytes(raw[1:33])
		y.FillBytes(raw[33:])
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), raw[:])
		if err != nil {
			return PrecompileInvalidPublicKey
		}
		hash := sha256.Sum256(msg)
		if !ecdsa.Verify(pub, hash[:], r, s) {
			return PrecompileInvalidSignature
		}
	}
	return nil
}
