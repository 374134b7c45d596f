package parsed

import (
	"errors"
	"strconv"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/txview"
)

// Account program names, as Agave's ParsableAccount serializes them.
const (
	AccountNonce       = "nonce"
	AccountLookupTable = "address-lookup-table"
)

// Data is Agave's ParsedAccount: an account's data as jsonParsed
// renders it.
type Data struct {
	Program string `json:"program"`
	Parsed  any    `json:"parsed"`
	Space   int    `json:"space"`
}

// Typed is an account state with Agave's serde tag "type" and content
// "info"; a unit variant (uninitialized) has no info.
type Typed struct {
	Type string `json:"type"`
	Info any    `json:"info,omitempty"`
}

// NonceData is Agave's UiNonceData.
type NonceData struct {
	Authority     string        `json:"authority"`
	Blockhash     string        `json:"blockhash"`
	FeeCalculator FeeCalculator `json:"feeCalculator"`
}

// FeeCalculator is Agave's UiFeeCalculator: the amount a string.
type FeeCalculator struct {
	LamportsPerSignature string `json:"lamportsPerSignature"`
}

// LookupTable is Agave's UiLookupTable: slots as strings, the
// authority left out for a frozen table.
type LookupTable struct {
	DeactivationSlot           string   `json:"deactivationSlot"`
	LastExtendedSlot           string   `json:"lastExtendedSlot"`
	LastExtendedSlotStartIndex uint8    `json:"lastExtendedSlotStartIndex"`
	Authority                  string   `json:"authority,omitempty"`
	Addresses                  []string `json:"addresses"`
}

// Account parses the data of an account owned by owner as Agave's
// parse_account_data does for tpu's programs: a System account as a
// nonce account, a lookup-table program account as a table. ok false
// means Agave would fall back to base64: an owner it has no parser for,
// or data its parser refuses. It keeps none of its arguments.
func Account(owner *[32]byte, data []byte) (Data, bool) {
	switch *owner {
	case txview.SystemProgram:
		v, ok := nonce(data)
		return Data{Program: AccountNonce, Parsed: v, Space: len(data)}, ok
	case banking.LookupTableProgram:
		v, ok := table(data)
		return Data{Program: AccountLookupTable, Parsed: v, Space: len(data)}, ok
	}
	return Data{}, false
}

// nonce is Agave's parse_nonce: bincode nonce Versions (u32: 0 legacy,
// 1 current), State (u32: 0 uninitialized, 1 initialized), then the
// authority, the durable nonce and the fee calculator's lamports per
// signature, trailing bytes allowed. An uninitialized state is refused,
// as Agave refuses it: an empty System account of any length would
// otherwise read as one.
func nonce(data []byte) (Typed, bool) {
	r := &reader{b: data, ok: true}
	version, state := r.u32(), r.u32()
	if !r.ok || version > 1 || state != 1 {
		return Typed{}, false
	}
	authority, hash, fee := r.pubkey(), r.take(32), r.u64()
	if !r.ok {
		return Typed{}, false
	}
	return Typed{Type: "initialized", Info: NonceData{
		Authority:     authority,
		Blockhash:     base58.Encode(hash),
		FeeCalculator: FeeCalculator{LamportsPerSignature: strconv.FormatUint(fee, 10)},
	}}, true
}

// table is Agave's parse_address_lookup_table: a table, or
// "uninitialized" for a table account not yet made one.
func table(data []byte) (Typed, bool) {
	m, addrs, err := bank.DecodeTable(data)
	if errors.Is(err, bank.ErrTableUninitialized) {
		return Typed{Type: "uninitialized"}, true
	}
	if err != nil {
		return Typed{}, false
	}
	t := LookupTable{
		DeactivationSlot:           strconv.FormatUint(m.DeactivationSlot, 10),
		LastExtendedSlot:           strconv.FormatUint(m.LastExtendedSlot, 10),
		LastExtendedSlotStartIndex: m.LastExtendedStart,
		Addresses:                  make([]string, 0, len(addrs)/32),
	}
	if m.HasAuthority {
		t.Authority = base58.Encode(m.Authority[:])
	}
	for ; len(addrs) >= 32; addrs = addrs[32:] {
		t.Addresses = append(t.Addresses, base58.Encode(addrs[:32]))
	}
	return Typed{Type: "lookupTable", Info: t}, true
}
