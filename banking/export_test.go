package banking

// What the external tests (package banking_test) read of the internals.

var ReservedNames = reservedNames
var MustKey = mustKey
