package runtime

import (
	"encoding/binary"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/txview"
)

// ExecMeta is what a transaction's execution leaves on record (its
// status and the meta getTransaction returns), and all LogMessages needs
// to rebuild its logs: no log is stored.
type ExecMeta struct {
	// Err is the transaction's error (zero: success).
	Err banking.TxError
	// Fee is the lamports charged to the fee payer.
	Fee uint64
	// Pre holds each static account's lamports before the transaction
	// (meta.preBalances). Only the System program's "insufficient
	// lamports" message reads it; nil or short leaves that one message
	// out.
	Pre []uint64
	// Inner is the instructions the transaction's programs invoked
	// (Result.Inner, ledger.TxMeta.Inner): each logs its own invoke and
	// outcome at its stack height.
	Inner []banking.Inner
}

// logBytesLimit is Agave's LogCollector limit (log_collector.rs,
// LOG_MESSAGES_BYTES_LIMIT): once the messages would reach 10,000 bytes,
// one "Log truncated" is logged and nothing more.
const logBytesLimit = 10_000

// LogMessages returns the logMessages Agave's runtime produces for a
// transaction tpu executed with outcome m, derived from the transaction
// and the outcome alone: tpu's programs (System, Compute Budget, memo)
// log deterministically. The caller owns the slice.
//
// It returns nil for a transaction that was not executed: one dropped
// before execution (fee payer, blockhash, already processed, compute
// budget) or whose programs failed to load (ProgramAccountNotFound,
// InvalidProgramForExecution: Agave's fee-only transactions, which have
// no logs).
//
// The messages follow Agave's program-runtime/src/stable_log.rs
// ("Program <id> invoke [1]", "Program <id> success", "Program <id>
// failed: <InstructionError Display>"), the System program's ic_msg!
// lines (programs/system/src/system_processor.rs transfer,
// transfer_verified: no "Program log:" prefix), the SPL memo program's
// msg! lines (memo/program/src/processor.rs process_instruction: "Program
// log: Signed by <key>", "Program log: Memo (len N): <Rust {:?} of the
// text>", "Program log: Invalid UTF-8, from byte N"), and, for memo
// alone (an on-chain program, not a builtin), the BPF loader's "Program
// <id> consumed N of M compute units", M being what the transaction's
// limit leaves when the instruction starts and N tpu's units for it.
// Where tpu differs from a real memo program it logs what tpu did: the
// memo's units are tpu's, a memo out of units fails with "Computational
// budget exceeded" as tpu's status says (on Agave, a program out of units
// fails with ProgramFailedToComplete), and memo v1's own messages are not
// reproduced.
func LogMessages(v txview.View, m ExecMeta) []string {
	if !executed(m.Err) {
		return nil
	}
	cb, err := v.ComputeBudget()
	if err != nil {
		return nil
	}
	l := logger{}
	limit := uint64(cb.UnitLimit)
	var units uint64
	bal := balancesBefore(v, m)
	it := v.Instructions()
	for i := 0; ; i++ {
		in, ok := it.Next()
		if !ok {
			break
		}
		prog := v.StaticKey(int(in.ProgramIndex))
		if isPrecompile(prog) {
			// Agave verifies precompiles without invoking them
			// (message_processor.rs process_message): no messages.
			if m.Err.Kind == banking.TxInstruction && int(m.Err.Index) == i {
				break
			}
			continue
		}
		id := programID(prog)
		l.log("Program " + id + " invoke [1]")
		failed := m.Err.Kind == banking.TxInstruction && int(m.Err.Index) == i
		cost := instrUnits(v, i, in, prog)
		over := failed && m.Err.Instr == banking.InstrComputationalBudgetExceeded
		switch *prog {
		case txview.SystemProgram:
			if failed && !over {
				systemLog(&l, v, in, m.Err, bal)
			} else if !failed {
				systemApply(in, bal)
			}
		case txview.MemoProgram:
			memoLog(&l, v, in, over)
		}
		innerLogs(&l, v, m, i, bal)
		if *prog == txview.MemoProgram || *prog == txview.MemoV1Program {
			used := min(cost, limit-units)
			l.log("Program " + id + " consumed " + strconv.FormatUint(used, 10) + " of " +
				strconv.FormatUint(limit-units, 10) + " compute units")
		}
		if failed {
			l.log("Program " + id + " failed: " + m.Err.InstrText())
			break
		}
		units += cost
		l.log("Program " + id + " success")
	}
	return l.msgs
}

// innerLogs logs the calls instruction i made (m.Inner), as Agave's
// stable_log does at stack height 2: "invoke [2]", the callee's own
// messages, then "success" or "failed: <error>" (the System program is
// the only callee tpu's programs have).
func innerLogs(l *logger, v txview.View, m ExecMeta, i int, bal []uint64) {
	for j := range m.Inner {
		ix := &m.Inner[j]
		if int(ix.Outer) != i || int(ix.Program) >= v.NumStaticKeys() {
			continue
		}
		id := programID(v.StaticKey(int(ix.Program)))
		depth := strconv.Itoa(int(ix.StackHeight))
		l.log("Program " + id + " invoke [" + depth + "]")
		in := txview.Instruction{ProgramIndex: ix.Program, Accounts: ix.Accounts, Data: ix.Data}
		if ix.Failed {
			systemLog(l, v, in, m.Err, bal)
			l.log("Program " + id + " failed: " + m.Err.InstrText())
			continue
		}
		systemApply(in, bal)
		l.log("Program " + id + " success")
	}
}

// knownIDs holds the base58 of the programs tpu runs: encoding costs a
// few microseconds a key.
var knownIDs = func() map[banking.Pubkey]string {
	m := map[banking.Pubkey]string{}
	for _, k := range []banking.Pubkey{txview.SystemProgram, txview.ComputeBudgetProgram, txview.MemoProgram, txview.MemoV1Program, banking.LookupTableProgram} {
		m[k] = base58.Encode(k[:])
	}
	return m
}()

// programID returns prog in base58.
func programID(prog *banking.Pubkey) string {
	if id, ok := knownIDs[*prog]; ok {
		return id
	}
	return base58.Encode(prog[:])
}

// executed reports whether a transaction with error e ran its
// instructions.
func executed(e banking.TxError) bool {
	if !e.IsErr() {
		return true
	}
	switch e.Kind {
	case banking.TxInstruction, banking.TxInsufficientFundsForRent:
		return true
	}
	return false
}

// isPrecompile reports whether prog is a precompile (ed25519,
// secp256k1), which Agave runs without logging.
func isPrecompile(prog *banking.Pubkey) bool {
	return *prog == txview.Ed25519Program || *prog == txview.Secp256k1Program
}

// instrUnits is what tpu's runtime charges instruction i, in, of
// program prog: the runtime's own figures (runtime.go), memo's from
// memoInstruction itself, which reads only the transaction.
func instrUnits(v txview.View, i int, in txview.Instruction, prog *banking.Pubkey) uint64 {
	switch *prog {
	case txview.SystemProgram:
		return SystemUnits
	case txview.ComputeBudgetProgram:
		return ComputeBudgetUnits
	case txview.MemoProgram, txview.MemoV1Program:
		units, _ := memoInstruction(&Tx{View: v}, i, in, *prog == txview.MemoV1Program)
		return units
	}
	return 0
}

// balancesBefore returns the static accounts' lamports once the fee is
// charged, nil if m.Pre does not cover them.
func balancesBefore(v txview.View, m ExecMeta) []uint64 {
	n := v.NumStaticKeys()
	if len(m.Pre) < n {
		return nil
	}
	bal := append([]uint64(nil), m.Pre[:n]...)
	bal[0] -= min(bal[0], m.Fee)
	return bal
}

// transfer decodes a System Transfer as runtime.go's systemInstruction
// does: ok only for a well-formed transfer with both accounts.
func transfer(in txview.Instruction) (from, to int, lamports uint64, ok bool) {
	d := in.Data
	if len(d) < 12 || binary.LittleEndian.Uint32(d) != systemTransferTag || len(in.Accounts) < 2 {
		return 0, 0, 0, false
	}
	return int(in.Accounts[0]), int(in.Accounts[1]), binary.LittleEndian.Uint64(d[4:]), true
}

// systemApply moves a successful transfer's lamports in bal.
func systemApply(in txview.Instruction, bal []uint64) {
	from, to, lamports, ok := transfer(in)
	if !ok || bal == nil || from >= len(bal) || to >= len(bal) {
		return
	}
	bal[from] -= lamports
	bal[to] += lamports
}

// systemLog logs what Agave's System program says of a failed transfer.
func systemLog(l *logger, v txview.View, in txview.Instruction, e banking.TxError, bal []uint64) {
	if len(in.Data) >= 4 && binary.LittleEndian.Uint32(in.Data) == sysAllocate {
		// The lookup table program's allocate of its table.
		if e.Instr == banking.InstrCustom && e.Custom == banking.CustomAccountAlreadyInUse && len(in.Accounts) > 0 && int(in.Accounts[0]) < v.NumStaticKeys() {
			k := v.StaticKey(int(in.Accounts[0]))
			l.log("Allocate: account Address { address: " + base58.Encode(k[:]) + ", base: None } already in use")
		}
		return
	}
	from, _, lamports, ok := transfer(in)
	if !ok {
		return // invalid data or too few accounts: no message of its own
	}
	switch {
	case e.Instr == banking.InstrMissingRequiredSignature:
		k := v.StaticKey(from)
		l.log("Transfer: `from` account " + base58.Encode(k[:]) + " must sign")
	case e.Instr == banking.InstrInvalidArgument:
		l.log("Transfer: `from` must not carry data")
	case e.Instr == banking.InstrCustom && e.Custom == banking.CustomResultWithNegativeLamports && bal != nil && from < len(bal):
		l.log("Transfer: insufficient lamports " + strconv.FormatUint(bal[from], 10) + ", need " + strconv.FormatUint(lamports, 10))
	}
}

// memoLog logs what the SPL memo program (v2) says: its signers, then
// its text or why it refused it. A memo out of units logs nothing of its
// own.
func memoLog(l *logger, v txview.View, in txview.Instruction, over bool) {
	if over {
		return
	}
	signed := true
	for _, a := range in.Accounts {
		if !v.IsSigner(int(a)) {
			signed = false
			continue
		}
		k := v.StaticKey(int(a))
		l.log("Program log: Signed by " + base58.Encode(k[:]))
	}
	if !signed {
		return
	}
	if n := validUpTo(in.Data); n < len(in.Data) {
		l.log("Program log: Invalid UTF-8, from byte " + strconv.Itoa(n))
		return
	}
	l.log("Program log: Memo (len " + strconv.Itoa(len(in.Data)) + "): " + rustDebug(string(in.Data)))
}

// validUpTo is Rust's Utf8Error::valid_up_to: the length of the longest
// valid UTF-8 prefix.
func validUpTo(b []byte) int {
	n := 0
	for n < len(b) {
		r, size := utf8.DecodeRune(b[n:])
		if r == utf8.RuneError && size <= 1 {
			return n
		}
		n += size
	}
	return n
}

// rustDebug quotes s as Rust's <str as Debug>::fmt does: in double
// quotes, with \t \r \n \\ \" \0 escaped, and \u{hex} for a character
// that is not printable or extends a grapheme (Go's unicode tables stand
// in for Rust's, which may follow another Unicode version).
func rustDebug(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		case '\n':
			b.WriteString(`\n`)
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case 0:
			b.WriteString(`\0`)
		default:
			if !unicode.IsPrint(r) || unicode.In(r, unicode.Mn, unicode.Me, unicode.Other_Grapheme_Extend) {
				b.WriteString(`\u{`)
				b.WriteString(strconv.FormatInt(int64(r), 16))
				b.WriteByte('}')
				continue
			}
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// logger collects messages as Agave's LogCollector does, up to
// logBytesLimit.
type logger struct {
	msgs      []string
	bytes     int
	truncated bool
}

func (l *logger) log(msg string) {
	if l.bytes+len(msg) >= logBytesLimit {
		if !l.truncated {
			l.truncated = true
			l.msgs = append(l.msgs, "Log truncated")
		}
		return
	}
	l.bytes += len(msg)
	l.msgs = append(l.msgs, msg)
}
