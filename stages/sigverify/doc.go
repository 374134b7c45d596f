// Package sigverify is the logic of the sigverify stage, plain Go tested
// without actors:
//
//   - Backend checks one ed25519 signature with Solana's exact rule,
//     ed25519-dalek's verify_strict, with four interchangeable
//     implementations (voi, stdlib, circl, lanes) that agree on every
//     conformance case in the project's testdata/; lanes checks eight
//     signatures per pass, one per lane (lanes.go), the Verifier hands it
//     a chunk at a time;
//   - Verifier parses every packet of a batch in place, discards those that
//     do not frame, do not sanitize or carry a bad signature, and spreads
//     the signature checks over a pooled worker set in tasks of many
//     signatures; Start does so without waiting, so that the sigverify
//     stage prepares its next pass while the workers check this one;
//   - Deduper discards packets whose bytes were seen recently, with a
//     bounded false-positive rate;
//   - Shedder discards what exceeds the stage's capacity, fairly by source;
//   - Ceiling measures what the stage could do with every core: one core's
//     verify rate over a set of transactions, times the cores.
//
// Every function that takes a *packet.Batch borrows it, and mutates its
// packets: the caller must hold the batch's sole reference. A discarded
// packet carries its outcome in Meta.Outcome; the first outcome recorded
// wins, so each packet is counted once.
package sigverify
