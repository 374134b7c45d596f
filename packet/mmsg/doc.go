// Package mmsg moves many UDP datagrams per call between a socket and
// caller-owned buffers, without allocating: fetch reads straight into
// pooled packets with it, and the load generator sends with it.
//
// On Linux a Read is one recvmmsg and a Write one sendmmsg, through the
// runtime's poller (golang.org/x/net's ReadBatch would allocate an address
// per datagram). Where the kernel segments UDP (UDP_SEGMENT, Linux 4.18),
// Write sends each run of equal-size datagrams of at most packet.Size bytes
// as one message that the kernel cuts up, so the send path runs once per
// run rather than once per datagram; the receiver sees the same datagrams
// either way, and a path that cannot segment falls back to a message per
// datagram. With EnableGRO (UDP_GRO, Linux 5.0) the kernel hands Read
// such runs whole, and Read cuts them back into datagrams: the reader's
// CPU per datagram falls several times, but the kernel's drop count then
// counts a dropped run once. On other systems the same API takes the portable path: one
// ReadFromUDPAddrPort or WriteToUDPAddrPort per datagram.
//
// # Invariants
//
//   - Read and Write borrow the Datagrams and their buffers: nothing is kept
//     after the call returns.
//   - A datagram larger than its buffer is cut, and its N is its real size,
//     so the caller can count it as oversize; on both paths.
//   - Steady-state reads and writes allocate nothing (tested on both paths).
//   - A Conn borrows its socket: deadlines set on the socket apply, and the
//     caller closes it.
package mmsg
