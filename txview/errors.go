package txview

// Error is a parse or sanitize failure. Every failure is one of the
// package's sentinel values below, so errors compare with == (or
// errors.Is) and returning one never allocates.
type Error struct {
	msg      string
	sanitize bool
}

func (e *Error) Error() string { return e.msg }

// Sanitize reports whether the bytes framed as a transaction but broke a
// sanitize rule (true), or did not frame at all (false).
func (e *Error) Sanitize() bool { return e.sanitize }

// IsSanitize reports whether err is a sanitize failure of this package.
func IsSanitize(err error) bool {
	e, ok := err.(*Error)
	return ok && e.sanitize
}

func parseErr(msg string) *Error    { return &Error{msg: "txview: " + msg} }
func sanitizeErr(msg string) *Error { return &Error{msg: "txview: " + msg, sanitize: true} }

// Parse (framing) failures, in the order the parser meets them.
var (
	ErrTruncated      = parseErr("truncated")
	ErrSignatureCount = parseErr("signature count out of range")
	ErrVersion        = parseErr("unsupported message version")
	ErrStaticKeyCount = parseErr("static key count out of range")
	ErrCompactU16     = parseErr("bad compact-u16")
	ErrLookupCount    = parseErr("too many address table lookups")
	ErrTrailingBytes  = parseErr("trailing bytes")
)

// Sanitize failures, in the order Agave's sanitize checks them.
var (
	ErrOversize            = sanitizeErr("larger than a packet")
	ErrSignatureMismatch   = sanitizeErr("signature count differs from required signatures")
	ErrTooFewStaticKeys    = sanitizeErr("fewer static keys than signatures")
	ErrReadonlyUnsigned    = sanitizeErr("readonly unsigned accounts overlap signers")
	ErrNoWritableFeePayer  = sanitizeErr("fee payer is not writable")
	ErrTooManyAccounts     = sanitizeErr("more than 256 accounts")
	ErrTooManyInstructions = sanitizeErr("more than 64 instructions")
	ErrProgramIndex        = sanitizeErr("program index out of range")
	ErrProgramIsFeePayer   = sanitizeErr("program index is the fee payer")
	ErrAccountIndex        = sanitizeErr("account index out of range")
	ErrEmptyLookup         = sanitizeErr("address table lookup with no indexes")
)
