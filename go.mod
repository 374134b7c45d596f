module github.com/tpugo/tpu

go 1.26

require (
	github.com/mr-tron/base58 v1.3.0
	lukechampine.com/blake3 v1.4.1
)

require github.com/klauspost/cpuid/v2 v2.0.9 // indirect
