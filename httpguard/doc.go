// Package httpguard holds what tpu's HTTP servers (JSON-RPC, PubSub's
// websocket upgrade, /metrics) share to stay up under hostile clients: a
// listener that caps the connections open at once and those from one
// address, and reclaims idle keep-alive connections when the cap is
// reached (as nginx reuses its keep-alive connections when it runs out
// of them); and the rule for what an address exposes (Loopback, Local).
//
// Invariants: a Listener never has more than its cap of connections
// open, nor more than its per-address cap from one address (an IPv6
// address counts by its /64, which one host usually holds whole); a
// connection it refuses or reclaims is counted (Stats) and closed, never
// left waiting.
package httpguard
