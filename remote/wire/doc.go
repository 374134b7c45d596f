// Package wire holds the protobuf messages a leader and its remote
// verifiers exchange (wire.proto). It is generated code and nothing else.
package wire

//go:generate protoc --go_out=. --go_opt=paths=source_relative wire.proto
