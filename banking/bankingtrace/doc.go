// Package bankingtrace records the traffic that enters banking and reads
// it back, after Agave's banking trace: every packet batch handed to the
// banking stage (each packet's bytes and metadata, and when the batch
// arrived) and every slot boundary, in rotating files under a size cap,
// so that `tpu replay` can feed the same traffic to a fresh bank built
// from the recorded genesis.
//
// # Format (version 2)
//
// A trace is a directory of files named trace-NNNNNNNNNN.btr, numbered
// from 1 in the order written. Each file is the 8-byte magic "TPUBTRC\x00",
// a little-endian uint32 version, then records. A record is
//
//	length  uint32 LE   bytes of kind + payload
//	crc     uint32 LE   CRC-32C (Castagnoli) of kind + payload
//	kind    uint8
//	payload
//
// The first record of every file is a header (KindHeader), so each file
// can be read alone: the file's sequence number, the wall-clock time and
// the packet.Now value of the same instant (to turn the recorded
// monotonic times into wall-clock times), and what replay needs to rebuild
// the bank: the genesis config (the key seed, the account count and
// balances, and the blockhash seed that fixes the genesis blockhash, so
// that the replayed bank has the recorded blockhashes; a recording needs
// one) and the cost limits. The other records are a batch (KindBatch: its arrival time, then each packet's size, flags,
// outcome, source address, receive time and bytes), a slot start
// (KindSlot: the slot and when banking started it), and a gap (KindGap:
// how many batches and slot starts the recorder had to drop before this
// point). All integers are little-endian; times are packet.Now units
// (nanoseconds since the recording process's epoch).
//
// # Damage
//
// The reader refuses a damaged trace with an error wrapping ErrCorrupt
// that names the file and the offset of the bad record: a checksum that
// does not match, a length out of range, a malformed payload, a record cut
// short in any file but the newest. A record cut short at the end of the
// newest file is what a crash or a full disk leaves: the reader reports it
// (Reader.Torn) and stops there, as at the end of the trace.
//
// # Recording
//
// Writer is the plain, synchronous part: it encodes records, rotates
// files when the current one reaches Config.FileBytes, and deletes the
// oldest files when the trace exceeds Config.MaxBytes. Recorder is the
// shell banking talks to: Batch and Slot never wait; they hand the work to
// the recorder's own goroutine through a bounded queue. A full queue
// drops that batch's recording (counted, and marked in the trace by a gap
// record); a write that fails (a full disk, a removed directory) stops
// the recording with one error logged, and from then on every batch is
// released at once, counted. Neither ever stops or slows the pipeline.
//
// # Ownership
//
// Recorder.Batch consumes one reference to its batch: the recorder
// releases it once the batch is written, or at once when it drops it.
// Writer.Batch borrows its batch. Packets returned by the reader are valid
// until the next call to Next.
package bankingtrace
