//go:build race

package pubsub_test

// raceEnabled: the race detector slows every goroutine about tenfold.
const raceEnabled = true
