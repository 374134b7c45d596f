// Package stages holds the actor shells of the pipeline (fetch,
// sigverify, banking), the messages between them, and the wiring of the
// stage graph, with its counters (Snapshot) and its gauges on the trace
// provider's meter (metrics.go); rendering them is cmd's. It is the only
// package that imports protoactor-go; the logic each actor runs lives in
// plain packages and is tested there.
package stages
