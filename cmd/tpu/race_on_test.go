//go:build race

package main

// raceEnabled: the race detector slows every goroutine about tenfold.
const raceEnabled = true
