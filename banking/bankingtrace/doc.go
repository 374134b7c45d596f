// Package bankingtrace records the traffic that enters banking and reads
// it back, after Agave's banking trace: every call made to banking's
// scheduler driver (scheduler.DriverConfig.OnEvent), in the driver's
// order: each packet batch as the driver takes it (each packet's bytes
// and metadata, and when), each work batch booked (with its worker), each
// slot tick, commit, flush and abort, and every slot start, in rotating
// files under a size cap, so that `tpu replay` can make the same calls
// on a fresh bank built from the recorded genesis, with the recorded
// scheduler, and reach the run's state (Replay).
//
// # Format (version 3)
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
// the bank and the scheduler: the genesis config (the key seed, the
// account count and balances, and the blockhash seed that fixes the
// genesis blockhash, so that the replayed bank has the recorded
// blockhashes; a recording needs one), the cost limits, the scheduler's
// config (method, workers, buffer capacity, batch size, look-ahead,
// queued batches per worker, account locks) and whether every driver
// call is recorded (Header.Driven). The other records are a batch
// (KindBatch: when the driver took it, then each packet's size, flags,
// outcome, source address, receive time and bytes), a slot start
// (KindSlot: the slot and when banking started it), a step (KindStep:
// another driver call, its kind (scheduler.EventKind), its argument (the
// worker whose batch was booked, or the slot committed) and its time),
// and a gap (KindGap: how many batches, and slot starts and steps, the
// recorder had to drop before this point). All integers are
// little-endian; times are packet.Now units (nanoseconds since the
// recording process's epoch). Version 2 (batches recorded as sigverify
// sent them, no steps) and older are refused with ErrVersion: their slot
// starts are not in order with their batches.
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
// shell banking talks to: Event (Batch, Slot, Step) never waits; it hands
// the work to the recorder's own goroutine through a bounded queue. A
// full queue drops that record (counted, and marked in the trace by a gap
// record, after which a replay is no longer exact); a write that fails
// (a full disk, a removed directory) stops the recording with one error
// logged, and from then on every batch is released at once, counted. Neither ever stops or slows the pipeline.
//
// # Ownership
//
// Recorder.Batch (and Event, for a batch) consumes one reference to its
// batch: the recorder
// releases it once the batch is written, or at once when it drops it.
// Writer.Batch borrows its batch. Packets returned by the reader are valid
// until the next call to Next.
package bankingtrace
