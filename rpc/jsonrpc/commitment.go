package jsonrpc

// Commitment is a level of commitment, as a client asks for one (the
// commitment and preflightCommitment options, a subscription's level)
// and as a transaction's status reports it (confirmationStatus). Levels
// are ordered: Processed < Confirmed < Finalized.
//
// What a level sees is the ledger's to say. In tpu, Processed and
// Confirmed are the last committed slot and Finalized the last durable
// one (Bank.DurableSlot: the same slot with --sync sync, up to a second
// older with nosync); a transaction is Finalized once its slot is
// durable, Confirmed until then.
type Commitment uint8

// The levels, Agave's CommitmentLevel and TransactionConfirmationStatus.
const (
	Processed Commitment = iota
	Confirmed
	Finalized
)

var commitmentNames = [...]string{Processed: "processed", Confirmed: "confirmed", Finalized: "finalized"}

// ParseCommitment reads a level by its name. None ("") is Solana's
// default, Finalized (Agave's CommitmentConfig::default); an unknown
// name is a CodeInvalidParams error worded as serde words it.
func ParseCommitment(s string) (Commitment, *Error) {
	switch s {
	case "processed":
		return Processed, nil
	case "confirmed":
		return Confirmed, nil
	case "", "finalized":
		return Finalized, nil
	}
	return 0, InvalidParams("Invalid params: unknown variant `%s`, expected one of `processed`, `confirmed`, `finalized`", s)
}

// String returns the level's name: "processed", "confirmed" or
// "finalized".
func (c Commitment) String() string {
	if int(c) < len(commitmentNames) {
		return commitmentNames[c]
	}
	return "invalid"
}

// MarshalText encodes the level as its name, so that a status's
// confirmationStatus is a JSON string.
func (c Commitment) MarshalText() ([]byte, error) { return []byte(c.String()), nil }
