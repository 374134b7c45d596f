package runtime

import (
	"encoding/binary"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/txview"
)

// The program IDs as Agave's logs print them.
const (
	sysID  = "11111111111111111111111111111111"
	cbID   = "ComputeBudget111111111111111111111111111111"
	memoID = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr"
	memo1  = "Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo"
)

func logKey(k banking.Pubkey) string { return base58.Encode(k[:]) }

// unsignedTransfer is a System transfer whose from account does not sign.
func unsignedTransfer(from, to banking.Pubkey, lamports uint64) txview.Ix {
	d := make([]byte, 12)
	binary.LittleEndian.PutUint32(d, systemTransferTag)
	binary.LittleEndian.PutUint64(d[4:], lamports)
	return txview.Ix{Program: txview.SystemProgram, Data: d,
		Accounts: []txview.AccountMeta{{Key: from, Writable: true}, {Key: to, Writable: true}}}
}

func TestLogMessages(t *testing.T) {
	payer, to, other := banktest.Key(0), banktest.Pub(1), banktest.Pub(2)
	pk := banktest.Pub(0)
	bh := banking.Pubkey{9}
	memoV1 := func(d []byte) txview.Ix { return txview.Ix{Program: txview.MemoV1Program, Data: d} }
	cases := []struct {
		name string
		ixs  []txview.Ix
		meta ExecMeta
		want []string
	}{
		{
			name: "transfer",
			ixs:  []txview.Ix{txview.Transfer(pk, to, 1)},
			want: []string{"Program " + sysID + " invoke [1]", "Program " + sysID + " success"},
		},
		{
			// default limit: 2 builtins x 3,000 + memo 200,000
			name: "budget transfer signed memo",
			ixs:  []txview.Ix{txview.SetComputeUnitPrice(1), txview.Transfer(pk, to, 1), txview.Memo([]byte("hello"), pk)},
			want: []string{
				"Program " + cbID + " invoke [1]",
				"Program " + cbID + " success",
				"Program " + sysID + " invoke [1]",
				"Program " + sysID + " success",
				"Program " + memoID + " invoke [1]",
				"Program log: Signed by " + logKey(pk),
				`Program log: Memo (len 5): "hello"`,
				"Program " + memoID + " consumed {m} of 205700 compute units",
				"Program " + memoID + " success",
			},
		},
		{
			name: "memo escapes as Rust Debug",
			ixs:  []txview.Ix{txview.Memo([]byte("a\"b\\\n\t\r\x00\x7fé\u0301\u00a0'😀"))},
			want: []string{
				"Program " + memoID + " invoke [1]",
				`Program log: Memo (len 20): "a\"b\\\n\t\r\0\u{7f}é\u{301}\u{a0}'😀"`,
				"Program " + memoID + " consumed {m} of 200000 compute units",
				"Program " + memoID + " success",
			},
		},
		{
			name: "memo invalid utf-8",
			ixs:  []txview.Ix{txview.Memo([]byte("ab\xffc"))},
			meta: ExecMeta{Err: banking.InstructionError(0, banking.InstrInvalidInstructionData)},
			want: []string{
				"Program " + memoID + " invoke [1]",
				"Program log: Invalid UTF-8, from byte 2",
				"Program " + memoID + " consumed {m} of 200000 compute units",
				"Program " + memoID + " failed: invalid instruction data",
			},
		},
		{
			name: "memo v1 logs nothing of its own",
			ixs:  []txview.Ix{memoV1([]byte("x"))},
			want: []string{
				"Program " + memo1 + " invoke [1]",
				"Program " + memo1 + " consumed {m} of 200000 compute units",
				"Program " + memo1 + " success",
			},
		},
		{
			name: "insufficient lamports after the fee and an earlier transfer",
			ixs:  []txview.Ix{txview.Transfer(pk, to, 1_000), txview.Transfer(pk, other, 2_000_000)},
			meta: ExecMeta{Err: banking.CustomError(1, banking.CustomResultWithNegativeLamports), Fee: 5_000, Pre: []uint64{1_000_000, 7, 0, 1}},
			want: []string{
				"Program " + sysID + " invoke [1]",
				"Program " + sysID + " success",
				"Program " + sysID + " invoke [1]",
				"Transfer: insufficient lamports 994000, need 2000000",
				"Program " + sysID + " failed: custom program error: 0x1",
			},
		},
		{
			name: "insufficient lamports without balances",
			ixs:  []txview.Ix{txview.Transfer(pk, to, 2_000_000)},
			meta: ExecMeta{Err: banking.CustomError(0, banking.CustomResultWithNegativeLamports)},
			want: []string{
				"Program " + sysID + " invoke [1]",
				"Program " + sysID + " failed: custom program error: 0x1",
			},
		},
		{
			name: "from must sign",
			ixs:  []txview.Ix{unsignedTransfer(other, to, 5)},
			meta: ExecMeta{Err: banking.InstructionError(0, banking.InstrMissingRequiredSignature)},
			want: []string{
				"Program " + sysID + " invoke [1]",
				"Transfer: `from` account " + logKey(other) + " must sign",
				"Program " + sysID + " failed: missing required signature for instruction",
			},
		},
		{
			name: "read-only recipient",
			ixs:  []txview.Ix{txview.Transfer(pk, to, 5)},
			meta: ExecMeta{Err: banking.InstructionError(0, banking.InstrReadonlyLamportChange)},
			want: []string{
				"Program " + sysID + " invoke [1]",
				"Program " + sysID + " failed: instruction changed the balance of a read-only account",
			},
		},
		{
			name: "unsigned memo",
			ixs:  []txview.Ix{{Program: txview.MemoProgram, Data: []byte("m"), Accounts: []txview.AccountMeta{{Key: pk, Signer: true}, {Key: other}}}},
			meta: ExecMeta{Err: banking.InstructionError(0, banking.InstrMissingRequiredSignature)},
			want: []string{
				"Program " + memoID + " invoke [1]",
				"Program log: Signed by " + logKey(pk),
				"Program " + memoID + " consumed {m} of 200000 compute units",
				"Program " + memoID + " failed: missing required signature for instruction",
			},
		},
		{
			name: "memo out of units",
			ixs:  []txview.Ix{txview.SetComputeUnitLimit(200), txview.Memo([]byte("x"))},
			meta: ExecMeta{Err: banking.InstructionError(1, banking.InstrComputationalBudgetExceeded)},
			want: []string{
				"Program " + cbID + " invoke [1]",
				"Program " + cbID + " success",
				"Program " + memoID + " invoke [1]",
				"Program " + memoID + " consumed 50 of 50 compute units",
				"Program " + memoID + " failed: Computational budget exceeded",
			},
		},
		{
			name: "builtin out of units",
			ixs:  []txview.Ix{txview.SetComputeUnitLimit(200), txview.Transfer(pk, to, 1)},
			meta: ExecMeta{Err: banking.InstructionError(1, banking.InstrComputationalBudgetExceeded)},
			want: []string{
				"Program " + cbID + " invoke [1]",
				"Program " + cbID + " success",
				"Program " + sysID + " invoke [1]",
				"Program " + sysID + " failed: Computational budget exceeded",
			},
		},
		{
			name: "rent failure after every instruction ran",
			ixs:  []txview.Ix{txview.Transfer(pk, to, 1)},
			meta: ExecMeta{Err: banking.NewTxErrorAt(banking.TxInsufficientFundsForRent, 1)},
			want: []string{"Program " + sysID + " invoke [1]", "Program " + sysID + " success"},
		},
		{name: "program not found", ixs: []txview.Ix{txview.Transfer(pk, to, 1)}, meta: ExecMeta{Err: banking.NewTxError(banking.TxProgramAccountNotFound)}},
		{name: "invalid program", ixs: []txview.Ix{txview.Transfer(pk, to, 1)}, meta: ExecMeta{Err: banking.NewTxError(banking.TxInvalidProgramForExecution)}},
		{name: "fee payer", ixs: []txview.Ix{txview.Transfer(pk, to, 1)}, meta: ExecMeta{Err: banking.NewTxError(banking.TxInsufficientFundsForFee)}},
		{name: "blockhash", ixs: []txview.Ix{txview.Transfer(pk, to, 1)}, meta: ExecMeta{Err: banking.NewTxError(banking.TxBlockhashNotFound)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raw := banktest.SignTx(t, bh, payer, c.ixs)
			v, err := txview.Parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			got := LogMessages(v, c.meta)
			// {m}: the memo instruction's units, the runtime's figure
			// (TestSimulateAgreesWithExecution checks it against execute).
			want := append([]string(nil), c.want...)
			it := v.Instructions()
			for i := 0; ; i++ {
				in, ok := it.Next()
				if !ok {
					break
				}
				if p := v.StaticKey(int(in.ProgramIndex)); *p == txview.MemoProgram || *p == txview.MemoV1Program {
					for j := range want {
						want[j] = strings.Replace(want[j], "{m}", strconv.FormatUint(instrUnits(v, i, in, p), 10), 1)
					}
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("logs:\n got %q\nwant %q", got, want)
			}
		})
	}
}

func TestLoggerTruncates(t *testing.T) {
	var l logger
	line := strings.Repeat("x", 999)
	for i := 0; i < 12; i++ {
		l.log(line)
	}
	// 10 lines of 999 bytes make 9,990; the 11th would reach the limit.
	if len(l.msgs) != 11 || l.msgs[10] != "Log truncated" {
		t.Fatalf("got %d messages, last %q", len(l.msgs), l.msgs[len(l.msgs)-1])
	}
}

func TestTxErrorText(t *testing.T) {
	cases := []struct {
		e    banking.TxError
		want string
	}{
		{banking.CustomError(0, 1), "Error processing Instruction 0: custom program error: 0x1"},
		{banking.CustomError(2, 0x1773), "Error processing Instruction 2: custom program error: 0x1773"},
		{banking.InstructionError(1, banking.InstrReadonlyLamportChange), "Error processing Instruction 1: instruction changed the balance of a read-only account"},
		{banking.NewTxError(banking.TxBlockhashNotFound), "Blockhash not found"},
		{banking.NewTxError(banking.TxAlreadyProcessed), "This transaction has already been processed"},
		{banking.NewTxError(banking.TxAccountNotFound), "Attempt to debit an account but found no record of a prior credit."},
		{banking.NewTxError(banking.TxInsufficientFundsForFee), "Insufficient funds for fee"},
		{banking.NewTxErrorAt(banking.TxInsufficientFundsForRent, 1), "Transaction results in an account (1) with insufficient funds for rent"},
		{banking.NewTxErrorAt(banking.TxDuplicateInstruction, 2), "Transaction contains a duplicate instruction (2) that is not allowed"},
	}
	for _, c := range cases {
		if got := c.e.Text(); got != c.want {
			t.Errorf("%v: got %q, want %q", c.e, got, c.want)
		}
	}
}
