package rpc

import (
	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/rpc/txjson"
	"github.com/tpugo/tpu/txview"
)

// innerSet is one top-level instruction's inner instructions (Agave's
// InnerInstructions): the calls it made, in order.
type innerSet struct {
	Index        uint8 // the top-level instruction's index
	Instructions []innerIx
}

// innerIx is one call a program made (Agave's InnerInstruction): the
// callee and its accounts as indexes into the transaction's accounts
// (static, then loaded), its data, and its stack height (2 for a call
// from a top-level instruction).
type innerIx struct {
	ProgramIDIndex uint8
	Accounts       []byte
	Data           []byte
	StackHeight    uint32
}

// innerOf returns the inner instructions a committed transaction's
// history record holds (ledger.TxMeta.InnerInstructions): every read of
// them (getTransaction, getBlock, in every encoding) goes through it.
func innerOf(_ txview.View, r ledger.TxRecord) []innerSet {
	return innerSets(r.InnerInstructions())
}

// innerSets groups inner instructions by the top-level instruction that
// made them (they are recorded in execution order).
func innerSets(inner []banking.Inner) []innerSet {
	var out []innerSet
	for i := range inner {
		in := &inner[i]
		if n := len(out); n == 0 || out[n-1].Index != in.Outer {
			out = append(out, innerSet{Index: in.Outer})
		}
		set := &out[len(out)-1]
		set.Instructions = append(set.Instructions, innerIx{ProgramIDIndex: in.Program, Accounts: in.Accounts, Data: in.Data, StackHeight: uint32(in.StackHeight)})
	}
	return out
}

// txKeys returns a transaction's account keys in base58: static, then
// loaded.
func txKeys(static []string, loaded []banking.Pubkey) []string {
	keys := append([]string(nil), static...)
	for i := range loaded {
		keys = append(keys, base58.Encode(loaded[i][:]))
	}
	return keys
}

// innerJSON is Agave's UiInnerInstructions: the index of the top-level
// instruction and its calls, raw (uiInstruction) or parsed.
type innerJSON struct {
	Index        uint8 `json:"index"`
	Instructions []any `json:"instructions"`
}

// rawInner renders inner instructions as the json and binary encodings
// do (UiCompiledInstruction, with its stack height).
func rawInner(sets []innerSet) []innerJSON {
	out := make([]innerJSON, 0, len(sets))
	for _, s := range sets {
		j := innerJSON{Index: s.Index, Instructions: make([]any, 0, len(s.Instructions))}
		for _, in := range s.Instructions {
			h := in.StackHeight
			accts := make([]int, len(in.Accounts))
			for i, a := range in.Accounts {
				accts[i] = int(a)
			}
			j.Instructions = append(j.Instructions, uiInstruction{
				Instruction: txjson.Instruction{ProgramIDIndex: in.ProgramIDIndex, Accounts: accts, Data: base58.Encode(in.Data)},
				StackHeight: &h,
			})
		}
		out = append(out, j)
	}
	return out
}

// parsedInner renders inner instructions as jsonParsed does (Agave's
// parse_ui_inner_instructions): each parsed when it can be, partially
// decoded otherwise. keys are the transaction's accounts, static then
// loaded.
func parsedInner(sets []innerSet, keys []string) ([]innerJSON, *Error) {
	out := make([]innerJSON, 0, len(sets))
	for _, s := range sets {
		j := innerJSON{Index: s.Index, Instructions: make([]any, 0, len(s.Instructions))}
		for _, in := range s.Instructions {
			h := in.StackHeight
			ix, e := parsedIx(keys, in.ProgramIDIndex, in.Accounts, in.Data, &h)
			if e != nil {
				return nil, e
			}
			j.Instructions = append(j.Instructions, ix)
		}
		out = append(out, j)
	}
	return out, nil
}
