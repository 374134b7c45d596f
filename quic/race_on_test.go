//go:build race

package quic

// raceEnabled: the race detector slows every goroutine about tenfold.
const raceEnabled = true
