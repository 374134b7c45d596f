package txjson

import (
	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/txview"
)

// Transaction is a transaction's signatures and message.
type Transaction struct {
	Signatures []string `json:"signatures"`
	Message    Message  `json:"message"`
}

// Message is a message's fields, as Agave's UiRawMessage names them.
// Every list is present, empty rather than null: AddressTableLookups too,
// for a legacy message, which has none.
type Message struct {
	Header              Header        `json:"header"`
	AccountKeys         []string      `json:"accountKeys"` // the static keys
	RecentBlockhash     string        `json:"recentBlockhash"`
	Instructions        []Instruction `json:"instructions"`
	AddressTableLookups []Lookup      `json:"addressTableLookups"`
}

// Header is a message header (Agave's UiMessageHeader).
type Header struct {
	NumRequiredSignatures       uint8 `json:"numRequiredSignatures"`
	NumReadonlySignedAccounts   uint8 `json:"numReadonlySignedAccounts"`
	NumReadonlyUnsignedAccounts uint8 `json:"numReadonlyUnsignedAccounts"`
}

// Instruction is a compiled instruction: Agave's UiCompiledInstruction
// without the stackHeight that only an executed one has.
type Instruction struct {
	ProgramIDIndex uint8  `json:"programIdIndex"`
	Accounts       []int  `json:"accounts"` // indexes into the account keys
	Data           string `json:"data"`     // base58
}

// Lookup is an address-table lookup (Agave's UiAddressTableLookup).
type Lookup struct {
	AccountKey      string `json:"accountKey"`
	WritableIndexes []int  `json:"writableIndexes"`
	ReadonlyIndexes []int  `json:"readonlyIndexes"`
}

// Encode renders v.
func Encode(v txview.View) Transaction {
	h := v.Header()
	m := Message{
		Header:              Header{h.NumRequiredSignatures, h.NumReadonlySignedAccounts, h.NumReadonlyUnsignedAccounts},
		AccountKeys:         AccountKeys(v),
		RecentBlockhash:     base58.Encode(v.RecentBlockhash()[:]),
		Instructions:        make([]Instruction, 0, v.NumInstructions()),
		AddressTableLookups: Lookups(v),
	}
	it := v.Instructions()
	for in, ok := it.Next(); ok; in, ok = it.Next() {
		m.Instructions = append(m.Instructions, Instruction{ProgramIDIndex: in.ProgramIndex, Accounts: ints(in.Accounts), Data: base58.Encode(in.Data)})
	}
	return Transaction{Signatures: Signatures(v), Message: m}
}

// Signatures returns v's signatures in base58.
func Signatures(v txview.View) []string {
	out := make([]string, v.NumSignatures())
	for i := range out {
		out[i] = base58.Encode(v.Signature(i)[:])
	}
	return out
}

// AccountKeys returns v's static account keys in base58.
func AccountKeys(v txview.View) []string {
	out := make([]string, v.NumStaticKeys())
	for i := range out {
		out[i] = base58.Encode(v.StaticKey(i)[:])
	}
	return out
}

// Lookups returns v's address-table lookups: empty, not nil, for a
// legacy message or a v0 one without any.
func Lookups(v txview.View) []Lookup {
	out := make([]Lookup, 0, v.NumLookups())
	it := v.Lookups()
	for l, ok := it.Next(); ok; l, ok = it.Next() {
		out = append(out, Lookup{AccountKey: base58.Encode(l.Table[:]), WritableIndexes: ints(l.Writable), ReadonlyIndexes: ints(l.Readonly)})
	}
	return out
}

// ints widens account indexes, which encoding/json would write as
// base64 bytes.
func ints(b []byte) []int {
	out := make([]int, len(b))
	for i, x := range b {
		out[i] = int(x)
	}
	return out
}
