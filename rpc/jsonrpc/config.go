package jsonrpc

import "fmt"

// NonNegative returns an error wrapping errConfig if the limit named name
// is below zero, nil if not: in a server's Config a limit's zero value
// means its default, and a negative one is a mistake. errors.Join of a
// Config's checks drops the nils.
func NonNegative[T ~int | ~int64](errConfig error, name string, v T) error {
	if v < 0 {
		return fmt.Errorf("%w: %s %d is negative", errConfig, name, int64(v))
	}
	return nil
}

// Default sets *v to d if *v is its zero value: how a server's Config
// fills in the fields left zero.
func Default[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}
