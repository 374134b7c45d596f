package parsed

import (
	"encoding/binary"
	"unicode/utf8"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/txview"
)

// Program names, as Agave's ParsableProgram serializes them.
const (
	ProgramSystem      = "system"
	ProgramLookupTable = "address-lookup-table"
	ProgramMemo        = "spl-memo"
)

// Parsed is Agave's ParsedInstructionEnum: an instruction's type and
// what it says.
type Parsed struct {
	Info map[string]any `json:"info"`
	Type string         `json:"type"`
}

// Instruction parses one instruction of program, with data, whose
// accounts are already resolved to their base58 keys, as Agave's
// parse_instruction::parse does: the program's name and the parsed
// value (a Parsed, or a memo's text), or ok false for a program Agave
// has no parser for or an instruction its parser refuses (Agave's
// caller then renders it partially decoded). It keeps none of its
// arguments.
func Instruction(program *[32]byte, data []byte, accounts []string) (name string, v any, ok bool) {
	switch *program {
	case txview.SystemProgram:
		p, ok := system(data, accounts)
		return ProgramSystem, p, ok
	case banking.LookupTableProgram:
		p, ok := lookupTable(data, accounts)
		return ProgramLookupTable, p, ok
	case txview.MemoProgram, txview.MemoV1Program:
		// parse_memo: the data as UTF-8 text.
		if !utf8.Valid(data) {
			return ProgramMemo, nil, false
		}
		return ProgramMemo, string(data), true
	}
	return "", nil, false
}

// reader reads bincode (fixed-width little-endian integers, u64-length
// strings and vectors) from data, trailing bytes allowed, as
// bincode::deserialize does; ok turns false at the first read past the
// end or a malformed value, and every read after returns zero values.
type reader struct {
	b  []byte
	ok bool
}

func (r *reader) take(n int) []byte {
	if !r.ok || n < 0 || n > len(r.b) {
		r.ok = false
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) u8() uint8 {
	b := r.take(1)
	if b == nil {
		return 0
	}
	return b[0]
}

func (r *reader) u32() uint32 {
	b := r.take(4)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

func (r *reader) u64() uint64 {
	b := r.take(8)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

// pubkey reads a 32-byte key, in base58.
func (r *reader) pubkey() string {
	b := r.take(32)
	if b == nil {
		return ""
	}
	return base58.Encode(b)
}

// str reads a bincode String: a u64 length and UTF-8 bytes.
func (r *reader) str() string {
	n := r.u64()
	if n > uint64(len(r.b)) {
		r.ok = false
		return ""
	}
	b := r.take(int(n))
	if !utf8.Valid(b) {
		r.ok = false
		return ""
	}
	return string(b)
}

// System instruction tags: SystemInstruction's bincode variant index.
const (
	sysCreateAccount = iota
	sysAssign
	sysTransfer
	sysCreateAccountWithSeed
	sysAdvanceNonce
	sysWithdrawNonce
	sysInitializeNonce
	sysAuthorizeNonce
	sysAllocate
	sysAllocateWithSeed
	sysAssignWithSeed
	sysTransferWithSeed
	sysUpgradeNonce
)

// system is Agave's parse_system: the thirteen System instructions
// (CreateAccount .. UpgradeNonceAccount), each with the accounts it
// needs at least (check_num_system_accounts).
func system(data []byte, a []string) (Parsed, bool) {
	r := &reader{b: data, ok: true}
	tag := r.u32()
	var p Parsed
	need := 0
	switch tag {
	case sysCreateAccount:
		lamports, space, owner := r.u64(), r.u64(), r.pubkey()
		need = 2
		p = Parsed{Type: "createAccount", Info: map[string]any{"lamports": lamports, "space": space, "owner": owner}}
		p.set(a, "source", 0, "newAccount", 1)
	case sysAssign:
		owner := r.pubkey()
		need = 1
		p = Parsed{Type: "assign", Info: map[string]any{"owner": owner}}
		p.set(a, "account", 0)
	case sysTransfer:
		lamports := r.u64()
		need = 2
		p = Parsed{Type: "transfer", Info: map[string]any{"lamports": lamports}}
		p.set(a, "source", 0, "destination", 1)
	case sysCreateAccountWithSeed:
		base, seed, lamports, space, owner := r.pubkey(), r.str(), r.u64(), r.u64(), r.pubkey()
		need = 2
		p = Parsed{Type: "createAccountWithSeed", Info: map[string]any{"base": base, "seed": seed, "lamports": lamports, "space": space, "owner": owner}}
		p.set(a, "source", 0, "newAccount", 1)
	case sysAdvanceNonce:
		need = 3
		p = Parsed{Type: "advanceNonce", Info: map[string]any{}}
		p.set(a, "nonceAccount", 0, "recentBlockhashesSysvar", 1, "nonceAuthority", 2)
	case sysWithdrawNonce:
		lamports := r.u64()
		need = 5
		p = Parsed{Type: "withdrawFromNonce", Info: map[string]any{"lamports": lamports}}
		p.set(a, "nonceAccount", 0, "destination", 1, "recentBlockhashesSysvar", 2, "rentSysvar", 3, "nonceAuthority", 4)
	case sysInitializeNonce:
		authority := r.pubkey()
		need = 3
		p = Parsed{Type: "initializeNonce", Info: map[string]any{"nonceAuthority": authority}}
		p.set(a, "nonceAccount", 0, "recentBlockhashesSysvar", 1, "rentSysvar", 2)
	case sysAuthorizeNonce:
		authority := r.pubkey()
		need = 2
		p = Parsed{Type: "authorizeNonce", Info: map[string]any{"newAuthorized": authority}}
		p.set(a, "nonceAccount", 0, "nonceAuthority", 1)
	case sysAllocate:
		space := r.u64()
		need = 1
		p = Parsed{Type: "allocate", Info: map[string]any{"space": space}}
		p.set(a, "account", 0)
	case sysAllocateWithSeed:
		base, seed, space, owner := r.pubkey(), r.str(), r.u64(), r.pubkey()
		need = 2
		p = Parsed{Type: "allocateWithSeed", Info: map[string]any{"base": base, "seed": seed, "space": space, "owner": owner}}
		p.set(a, "account", 0)
	case sysAssignWithSeed:
		base, seed, owner := r.pubkey(), r.str(), r.pubkey()
		need = 2
		p = Parsed{Type: "assignWithSeed", Info: map[string]any{"base": base, "seed": seed, "owner": owner}}
		p.set(a, "account", 0)
	case sysTransferWithSeed:
		lamports, seed, owner := r.u64(), r.str(), r.pubkey()
		need = 3
		p = Parsed{Type: "transferWithSeed", Info: map[string]any{"lamports": lamports, "sourceSeed": seed, "sourceOwner": owner}}
		p.set(a, "source", 0, "sourceBase", 1, "destination", 2)
	case sysUpgradeNonce:
		need = 1
		p = Parsed{Type: "upgradeNonce", Info: map[string]any{}}
		p.set(a, "nonceAccount", 0)
	default:
		return Parsed{}, false
	}
	if !r.ok || len(a) < need {
		return Parsed{}, false
	}
	return p, true
}

// set names accounts: pairs of an info key and an index into a, those
// past a's end left out (the caller refuses an instruction with fewer
// accounts than it needs).
func (p *Parsed) set(a []string, pairs ...any) {
	for i := 0; i+1 < len(pairs); i += 2 {
		if j := pairs[i+1].(int); j < len(a) {
			p.Info[pairs[i].(string)] = a[j]
		}
	}
}

// Lookup-table instruction tags: ProgramInstruction's bincode variant
// index.
const (
	altCreate = iota
	altFreeze
	altExtend
	altDeactivate
	altClose
)

// lookupTable is Agave's parse_address_lookup_table.
func lookupTable(data []byte, a []string) (Parsed, bool) {
	r := &reader{b: data, ok: true}
	tag := r.u32()
	var p Parsed
	need := 0
	switch tag {
	case altCreate:
		slot, bump := r.u64(), r.u8()
		need = 4
		p = Parsed{Type: "createLookupTable", Info: map[string]any{"recentSlot": slot, "bumpSeed": bump}}
		p.set(a, "lookupTableAccount", 0, "lookupTableAuthority", 1, "payerAccount", 2, "systemProgram", 3)
	case altFreeze:
		need = 2
		p = Parsed{Type: "freezeLookupTable", Info: map[string]any{}}
		p.set(a, "lookupTableAccount", 0, "lookupTableAuthority", 1)
	case altExtend:
		n := r.u64()
		if n > uint64(len(r.b)/32) {
			return Parsed{}, false
		}
		addrs := make([]string, n)
		for i := range addrs {
			addrs[i] = r.pubkey()
		}
		need = 2
		p = Parsed{Type: "extendLookupTable", Info: map[string]any{"newAddresses": addrs}}
		p.set(a, "lookupTableAccount", 0, "lookupTableAuthority", 1)
		if len(a) >= 4 { // the payer and the System program are optional
			p.set(a, "payerAccount", 2, "systemProgram", 3)
		}
	case altDeactivate:
		need = 2
		p = Parsed{Type: "deactivateLookupTable", Info: map[string]any{}}
		p.set(a, "lookupTableAccount", 0, "lookupTableAuthority", 1)
	case altClose:
		need = 3
		p = Parsed{Type: "closeLookupTable", Info: map[string]any{}}
		p.set(a, "lookupTableAccount", 0, "lookupTableAuthority", 1, "recipient", 2)
	default:
		return Parsed{}, false
	}
	if !r.ok || len(a) < need {
		return Parsed{}, false
	}
	return p, true
}
