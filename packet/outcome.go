package packet

// Outcome is the terminal outcome of a packet: every packet that enters tpu
// ends in exactly one (DESIGN.md, "Accounting"). Stages that own a packet
// record it in Meta.Outcome when they discard it; later stages, which share
// the batch, count their outcomes without writing to the packet.
type Outcome uint8

const (
	// OutcomeNone: no terminal outcome yet (alive or buffered).
	OutcomeNone Outcome = iota

	// fetch

	// OutcomeOversize: the datagram was longer than Size.
	OutcomeOversize
	// OutcomeNoCredits: the next stage's budget of batches in flight was
	// used up.
	OutcomeNoCredits

	// sigverify

	// OutcomeParse: the bytes do not frame as a transaction.
	OutcomeParse
	// OutcomeSanitize: the transaction frames but breaks a sanitize rule.
	OutcomeSanitize
	// OutcomeDuplicate: the same bytes were seen recently.
	OutcomeDuplicate
	// OutcomeBadSignature: a signature does not verify.
	OutcomeBadSignature
	// OutcomeShed: discarded to keep up under load.
	OutcomeShed

	// banking: dropped without being executed or charged

	// OutcomeBlockhashNotFound: the recent blockhash is not among the last
	// 150.
	OutcomeBlockhashNotFound
	// OutcomeAlreadyProcessed: the signature is in the status cache.
	OutcomeAlreadyProcessed
	// OutcomeFeePayerCannotPay: the fee payer is missing or cannot pay.
	OutcomeFeePayerCannotPay
	// OutcomeTooManyAccountLocks: more than 64 accounts locked.
	OutcomeTooManyAccountLocks
	// OutcomeInvalidComputeBudget: a compute-budget instruction is invalid
	// or duplicated.
	OutcomeInvalidComputeBudget
	// OutcomeAccountLoadedTwice: an account key appears twice.
	OutcomeAccountLoadedTwice
	// OutcomeLookupTableNotFound: an address-table lookup names a table
	// that does not exist or is deactivated.
	OutcomeLookupTableNotFound
	// OutcomeLookupTableInvalidOwner, OutcomeLookupTableInvalidData,
	// OutcomeLookupTableInvalidIndex: a lookup names an account the
	// lookup table program does not own, a table whose data does not
	// decode, or an index past the table's usable addresses.
	OutcomeLookupTableInvalidOwner
	OutcomeLookupTableInvalidData
	OutcomeLookupTableInvalidIndex
	// OutcomeEvicted: pushed out of a full buffer by higher priority.
	OutcomeEvicted
	// OutcomeShutdown: still buffered when the pipeline stopped without
	// being able to wait for it (a drain that timed out, an actor's
	// panic).
	OutcomeShutdown

	// banking: executed

	// OutcomeExecutedOK: executed and committed successfully.
	OutcomeExecutedOK
	// OutcomeExecutedFailed: executed, failed with a Solana error, and the
	// fee was charged.
	OutcomeExecutedFailed

	// banking: dropped, added last so that the numbers before keep
	// their meaning (banking traces record a packet's outcome as a byte)

	// OutcomeLedgerFailed: still buffered, or received after, when the
	// ledger failed (a full disk, a read-only file system): nothing more
	// could commit, so it never ran.
	OutcomeLedgerFailed

	// NumOutcomes is the number of outcomes, OutcomeNone included; use it to
	// size counter arrays indexed by Outcome.
	NumOutcomes
)

var outcomeNames = [NumOutcomes]string{
	OutcomeNone:                    "none",
	OutcomeOversize:                "oversize",
	OutcomeNoCredits:               "no_credits",
	OutcomeParse:                   "parse",
	OutcomeSanitize:                "sanitize",
	OutcomeDuplicate:               "duplicate",
	OutcomeBadSignature:            "bad_signature",
	OutcomeShed:                    "shed",
	OutcomeBlockhashNotFound:       "blockhash_not_found",
	OutcomeAlreadyProcessed:        "already_processed",
	OutcomeFeePayerCannotPay:       "fee_payer_cannot_pay",
	OutcomeTooManyAccountLocks:     "too_many_account_locks",
	OutcomeInvalidComputeBudget:    "invalid_compute_budget",
	OutcomeAccountLoadedTwice:      "account_loaded_twice",
	OutcomeLookupTableNotFound:     "lookup_table_not_found",
	OutcomeLookupTableInvalidOwner: "lookup_table_invalid_owner",
	OutcomeLookupTableInvalidData:  "lookup_table_invalid_data",
	OutcomeLookupTableInvalidIndex: "lookup_table_invalid_index",
	OutcomeEvicted:                 "evicted",
	OutcomeShutdown:                "shutdown",
	OutcomeExecutedOK:              "executed_ok",
	OutcomeExecutedFailed:          "executed_failed",
	OutcomeLedgerFailed:            "ledger_failed",
}

// String returns the outcome's name as used in metrics and summaries
// ("bad_signature").
func (o Outcome) String() string {
	if o < NumOutcomes {
		return outcomeNames[o]
	}
	return "unknown"
}

// Terminal lists every terminal outcome (all but OutcomeNone), in order.
func Terminal() []Outcome {
	out := make([]Outcome, 0, NumOutcomes-1)
	for o := OutcomeNone + 1; o < NumOutcomes; o++ {
		out = append(out, o)
	}
	return out
}

// ParseOutcome returns the outcome named s, or false.
func ParseOutcome(s string) (Outcome, bool) {
	for i, n := range outcomeNames {
		if n == s {
			return Outcome(i), true
		}
	}
	return OutcomeNone, false
}
