module github.com/tpugo/tpu

go 1.26
