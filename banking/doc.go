// Package banking holds the bank and the banking logic: bank state, the
// runtime (System transfer, Compute Budget, memo), the cost model, the
// scheduler with account locks, the executor on a pooled worker set, and
// the persistence of committed slots.
//
// It is plain Go, tested without actors; package stages wraps it in an
// actor. It may import packet, txview, ants and Pebble.
package banking
